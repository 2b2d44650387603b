"""Moves in the words people say: typed text read into a legal action, and actions described.

:func:`parse_move` reads ``keep 4 4 4``, ``hold 6 6``, ``reroll 1 2``, ``roll all``, ``write
fours``, ``fours``, ``score full house``, ``cross out ones`` (and the commands ``help``,
``hint``, ``quit``, ``sheet``); :func:`describe` says an action before it is played, in the
same words, so that what a hint or a replay says can be typed back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from generala_env.core.dice import ALL_HELD, KEEP_COUNTS, MASK_FOR_KEEP, NUM_MASKS, ROLL_COUNTS, keep_index
from generala_env.core.game import OPEN, Game
from generala_env.core.rules import NUMBER_LINES
from generala_env.rendering.render import line_label

FACE_WORDS = ("one", "two", "three", "four", "five", "six")
COMMANDS = {
    "help": ("help", "?", "h", "moves", "options", "commands"),
    "hint": ("hint", "advice", "suggest", "suggestion", "tip"),
    "quit": ("quit", "exit", "q", "bye", "stop", "resign"),
    "show": ("sheet", "sheets", "show", "board", "dice", "status", "look", "score", "scores", "table"),
}
KEEP_VERBS = ("keep", "hold", "save", "k")
ROLL_VERBS = ("reroll", "roll", "r", "throw", "rethrow")
WRITE_VERBS = ("write", "score", "take", "put", "mark", "enter", "use", "fill", "book", "w")
CROSS_VERBS = ("cross", "scratch", "strike", "zero", "x", "tachar", "tacho")
FILLERS = {
    "the",
    "it",
    "them",
    "on",
    "in",
    "into",
    "as",
    "to",
    "my",
    "line",
    "box",
    "please",
    "for",
    "a",
    "an",
    "of",
    "out",
    "off",
    "down",
    "with",
    "and",
    "me",
    "these",
    "those",
    "dice",
    "die",
}

LINE_ALIASES = {
    "ones": ("ones", "1s", "aces", "unos"),
    "twos": ("twos", "2s", "deuces", "doses"),
    "threes": ("threes", "3s", "treys", "treses"),
    "fours": ("fours", "4s", "cuatros"),
    "fives": ("fives", "5s", "cincos"),
    "sixes": ("sixes", "6s", "seises"),
    "straight": ("straight", "escalera", "run", "str", "large straight"),
    "full_house": ("full house", "full", "fh", "house", "boat"),
    "four_of_a_kind": ("four of a kind", "4 of a kind", "poker", "póker", "quads", "4oak", "4k", "fourofakind"),
    "generala": ("generala", "yahtzee", "yacht", "five of a kind", "5 of a kind"),
    "double_generala": ("double generala", "double", "doble", "doble generala", "generala doble", "second generala", "2nd generala"),
    "three_of_a_kind": ("three of a kind", "3 of a kind", "trips", "3oak", "3k", "threeofakind"),
}


class MoveError(ValueError):
    """Typed text that is not a move the game accepts now; the message says why."""


@dataclass
class Move:
    """A legal action, with an optional note to show and a question to confirm first."""

    action: int
    note: str | None = None
    confirm: str | None = None


# -- reading what people type ------------------------------------------------------------


def _digits(text: str) -> bool:
    """Whether ``text`` is ASCII digits (``str.isdigit`` is true of ``"²"`` too, which ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def _phrase(tokens) -> str:
    return " ".join(t for t in tokens if t not in FILLERS)


def _line_table() -> dict[str, str]:
    """Normalised phrase → line name, for every line of every sheet (the rules decide later)."""
    table = {}
    for line, aliases in LINE_ALIASES.items():
        for alias in aliases + (line.replace("_", " "), line):
            table[_phrase(_tokens(alias))] = line
    for n, line in enumerate(NUMBER_LINES, start=1):  # number lines by number or word
        table[str(n)] = line
        table[FACE_WORDS[n - 1]] = line
    return table


def _tokens(text: str) -> list[str]:
    """Lower-case words, punctuation and hyphens gone: ``Re-roll 4,4!`` → ``reroll 4 4``."""
    text = text.lower().replace("re-roll", "reroll").replace("re roll", "reroll")
    text = re.sub(r"[_\-,;.!:/+()]+", " ", text)
    return text.split()


LINE_TABLE = _line_table()


def faces_text(faces) -> str:
    """Faces as people write them: ``4 4 6``, or ``nothing``."""
    return " ".join(str(int(f)) for f in faces) or "nothing"


def _plural_face(tok: str) -> int | None:
    """4 for ``fours`` / ``4s``; None otherwise."""
    for n, line in enumerate(NUMBER_LINES, start=1):
        if tok in (line, f"{n}s", f"{n}'s"):
            return n
    return None


def _count_word(tok: str) -> int | None:
    if _digits(tok) and len(tok) == 1 and 1 <= int(tok) <= 5:
        return int(tok)
    return FACE_WORDS.index(tok) + 1 if tok in FACE_WORDS[:5] else None


def _dice_phrase(tokens: list[str], game: Game, what: str) -> list[int]:
    """Faces named by ``4 4 4``, ``444``, ``three fours``, ``the sixes``, ``one 5``, checked against the dice."""
    dice = game.dice
    have = [int(c) for c in ROLL_COUNTS[game.roll]]
    faces: list[int] = []
    toks = [t for t in tokens if t not in FILLERS and t not in ("both", "all")]
    i = 0
    while i < len(toks):
        t = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        count = _count_word(t)
        # "three fours", "2 sixes", "one 5": a count, then the face (a digit counts only before a plural)
        if count is not None and nxt is not None and (_plural_face(nxt) is not None or (t in FACE_WORDS and (nxt in FACE_WORDS or nxt in tuple("123456")))):
            f = _plural_face(nxt) or (FACE_WORDS.index(nxt) + 1 if nxt in FACE_WORDS else int(nxt))
            faces += [f] * count
            i += 2
            continue
        plural = _plural_face(t)
        if plural is not None:
            f = plural
            if have[f - 1] == 0:
                raise MoveError(f"you have no {f} to {what} (your dice: {faces_text(dice)})")
            faces += [f] * have[f - 1]
        elif _digits(t) and all(c in "123456" for c in t):
            faces += [int(c) for c in t]
        elif t in FACE_WORDS:
            faces.append(FACE_WORDS.index(t) + 1)
        else:
            raise MoveError(f"I don't know which dice {t!r} means: name the faces, e.g. '{what} 4 4 4'")
        i += 1
    for f in range(1, 7):
        n = faces.count(f)
        if n > have[f - 1]:
            if have[f - 1] == 0:
                raise MoveError(f"you have no {f} to {what} (your dice: {faces_text(dice)})")
            raise MoveError(f"you have only {_count_text(have[f - 1])} {f}{'s' if have[f - 1] > 1 else ''} to {what} (your dice: {faces_text(dice)})")
    return faces


def _count_text(n: int) -> str:
    return ("no", "one", "two", "three", "four", "five")[n]


def locked_faces(game: Game) -> list[int]:
    """The faces held for good this turn (locked holds), lowest first."""
    c = KEEP_COUNTS[game.locked]
    return [f + 1 for f in range(6) for _ in range(int(c[f]))]


def _hold_move(game: Game, keep: list[int], asked: str) -> Move:
    """The hold mask keeping exactly ``keep`` (plus any locked dice), checked by the game."""
    if game.served_generala_pending():
        raise MoveError(game.why_illegal(0))
    if game.rolls_left == 0:
        raise MoveError("no rolls left this turn: write the dice on an open line (e.g. 'write fours' or 'cross out ones')")
    note = None
    locked = locked_faces(game)
    if game.rules.locked_holds and locked:
        merged = []
        for f in range(1, 7):
            merged += [f] * max(keep.count(f), locked.count(f))
        if sorted(merged) != sorted(keep):
            if asked == "reroll":
                back = [f for f in range(1, 7) for _ in range(max(0, locked.count(f) - keep.count(f)))]
                raise MoveError(f"locked holds: {faces_text(back)} kept earlier this turn cannot go back in the cup")
            note = f"{faces_text(locked)} kept earlier this turn stay held (locked holds)"
            keep = merged
    if len(keep) == 5:
        raise MoveError(game.why_illegal(ALL_HELD))
    mask = int(MASK_FOR_KEEP[game.roll, keep_index(keep)])
    why = game.why_illegal(mask)
    if why is not None:
        raise MoveError(why)
    return Move(mask, note=note)


def _write_move(game: Game, line: str, crossing: bool) -> Move:
    rules = game.rules
    if line not in rules.lines:
        raise MoveError(f"there is no {line_label(line)} line in these rules; the lines are: {', '.join(line_label(l) for l in rules.lines)}")
    l = rules.lines.index(line)
    action = NUM_MASKS + l
    if game.served_generala_pending() and line != "generala":
        raise MoveError(game.why_illegal(action))
    v = int(game.sheets[game.player, l])
    if v != OPEN:
        how = "crossed out" if v == 0 else f"you wrote {v} there"
        raise MoveError(f"{line_label(line)} is already filled ({how}); open lines: {', '.join(_open_lines(game))}")
    why = game.why_illegal(action)
    if why is not None:
        raise MoveError(why)
    pts, _ = points_if_written(game, l)
    if crossing and pts > 0:
        return Move(action, note=f"your dice score {pts} on {line_label(line)}, so {pts} goes down, not a cross")
    if not crossing and pts == 0:
        return Move(
            action, confirm=f"your dice {faces_text(game.dice)} score 0 on {line_label(line)}: that crosses it out. Cross out {line_label(line)}? (y/n)"
        )
    return Move(action)


def _open_lines(game: Game) -> list[str]:
    return [line_label(l) for l, v in zip(game.rules.lines, game.sheets[game.player], strict=True) if v == OPEN]


# long: each kind of typed move, and each way it can be wrong, with its own sentence for the player
def parse_move(text: str, game: Game) -> Move | str:
    """A typed line → a :class:`Move`, or a command name (``help``, ``hint``, ``quit``, ``show``).

    Raises :class:`MoveError` with a sentence for the player when the text is not a
    move the game accepts now.
    """
    tokens = _tokens(text)
    if not tokens:
        raise MoveError("type a move, e.g. 'keep 4 4', 'roll all', 'write fours'; or 'help'")
    for name, words in COMMANDS.items():
        if len(tokens) == 1 and tokens[0] in words or (name in ("help", "hint", "quit") and tokens[0] in words[:1]):
            return name
    head, rest = tokens[0], tokens[1:]
    lines = LINE_TABLE
    dice = game.dice

    if head in KEEP_VERBS:
        body = [t for t in rest if t not in FILLERS]
        for i, t in enumerate(body):  # "keep 4 4 4 and roll the rest"
            if t in ROLL_VERBS:
                body = body[:i]
                break
        if not body:
            raise MoveError("keep which dice? e.g. 'keep 4 4 4' (or 'roll all' to keep none)")
        if body[0] in ("nothing", "none", "no", "zero"):
            return _hold_move(game, [], "keep")
        if body[0] in ("all", "everything", "every") and len(body) > 1 and body[1] in ("but", "except"):
            drop = _dice_phrase(body[2:], game, "reroll")
            return _hold_move(game, dice_without(dice, drop), "reroll")
        if body in (["all"], ["everything"], ["all", "five"], ["every", "one"]):
            return _hold_move(game, [int(d) for d in dice], "keep")
        return _hold_move(game, _dice_phrase(body, game, "keep"), "keep")

    if head in ROLL_VERBS:
        body = [t for t in rest if t not in FILLERS and t not in ("again", "over")]
        if not body or body in (["all"], ["everything"], ["all", "five"], ["every", "one"]):
            locked = locked_faces(game) if game.rules.locked_holds else []
            return _hold_move(game, locked, "keep")
        if body[0] in ("all", "everything") and len(body) > 1 and body[1] in ("but", "except"):
            return _hold_move(game, _dice_phrase(body[2:], game, "keep"), "keep")
        drop = _dice_phrase(body, game, "reroll")
        return _hold_move(game, dice_without(dice, drop), "reroll")

    crossing = head in CROSS_VERBS
    if crossing or head in WRITE_VERBS:
        rest, claimed = _hint_words(rest)
        phrase = _phrase(rest)
        if not phrase:
            raise MoveError(f"{head} which line? e.g. '{'cross out ones' if crossing else 'write fours'}'; open lines: {', '.join(_open_lines(game))}")
        if phrase not in lines:
            raise MoveError(f"there is no line called {' '.join(rest)!r}; open lines: {', '.join(_open_lines(game))}")
        move = _write_move(game, lines[phrase], crossing)
        if claimed is not None:  # "write 40 on four of a kind", as a hint says it
            pts = points_if_written(game, move.action - NUM_MASKS)[0]
            if pts != claimed:
                name = line_label(lines[phrase])
                raise MoveError(f"your dice {faces_text(dice)} score {pts} on {name}, not {claimed}: type 'write {name}' to write {pts}")
            move = Move(move.action, note=move.note)  # the points were said: no question
        return move

    phrase = _phrase(tokens)
    if phrase in lines and not (_digits(phrase) or phrase in FACE_WORDS):
        return _write_move(game, lines[phrase], False)
    if len(tokens) == 1 and (_digits(head) and len(head) == 1 or head in FACE_WORDS):
        n = int(head) if _digits(head) else FACE_WORDS.index(head) + 1
        if 1 <= n <= 6:
            raise MoveError(f"'{head}' could mean 'keep {n}' or 'write {NUMBER_LINES[n - 1]}': say which")
    if all(_digits(t) and set(t) <= set("123456") for t in tokens):
        return _hold_move(game, _dice_phrase(tokens, game, "keep"), "keep")
    raise MoveError(f"I don't understand {text.strip()!r}. Try 'keep 4 4', 'reroll 1 2', 'roll all', 'write fours', 'cross out ones', or 'help'")


def _hint_words(rest: list[str]) -> tuple[list[str], int | None]:
    """The words of a write as a hint says it: ``12 on fours``, ``35 on full house (served,
    +5)``: the line's words, and the points named first (``None`` if none)."""
    if rest and _digits(rest[-1]) and len(rest) >= 2 and rest[-2] == "served":
        rest = rest[:-2]
    elif rest and rest[-1] == "served":
        rest = rest[:-1]
    if len(rest) >= 2 and _digits(rest[0]) and rest[1] in ("on", "in", "as", "to", "for", "into"):
        return rest[2:], int(rest[0])
    return rest, None


def dice_without(dice, drop: list[int]) -> list[int]:
    """``dice`` less one die of each face in ``drop`` (every one of them among the dice)."""
    keep = [int(d) for d in dice]
    for f in drop:
        keep.remove(f)
    return keep


# -- describing the game -----------------------------------------------------------------
def points_if_written(game: Game, line: int) -> tuple[int, int]:
    """(points, served bonus within them) that writing the dice on ``line`` would give now."""
    g = game.clone()
    out = g.apply(NUM_MASKS + line, [1] * 5)
    return out.points, out.bonus


def describe(game: Game, action: int) -> str:
    """An action, before it is played, in words: ``keep 4 4 4, reroll 2`` or ``write 12 on fours``."""
    if action < NUM_MASKS:
        held = [int(d) for i, d in enumerate(game.dice) if action >> i & 1]
        if not held:
            return "roll all five again"
        return f"keep {faces_text(held)}, reroll {5 - len(held)}"
    l = action - NUM_MASKS
    pts, bonus = points_if_written(game, l)
    name = line_label(game.rules.lines[l])
    if pts == 0:
        return f"cross out {name}"
    return f"write {pts} on {name}" + (f" (served, +{bonus})" if bonus else "")
