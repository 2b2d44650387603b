"""``generala play``: Generala in the terminal, people and agents at one table.

    generala play --opponents greedy,optimal --rules classic
    generala play --seats human,ppo-classic-2p,human --seed 7

Moves are typed as people say them: ``keep 4 4 4``, ``hold 6 6``, ``reroll 1 2``,
``roll all``, ``write fours``, ``fours``, ``score full house``, ``cross out ones``;
``help`` lists the legal moves, ``hint`` shows what the optimal player would do,
``sheet`` shows the sheets again, ``quit`` ends the game. A move the game does not
accept is explained and asked again; nothing typed ends the game but ``quit`` or the
end of input.

The game is :class:`generala_env.game.Game`; agents see exactly what they see in the
environments (:class:`~generala_env.encoding.Encoder` and :func:`~generala_env.env.make_info`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from dataclasses import dataclass

import numpy as np

from generala_env.dice import ALL_HELD, KEEP_COUNTS, MASK_FOR_KEEP, NUM_MASKS, ROLL_COUNTS, keep_index
from generala_env.encoding import Encoder
from generala_env.env import make_info
from generala_env.game import MAX_PLAYERS, OPEN, Game
from generala_env.render import PIPS, line_label
from generala_env.rules import NUMBER_LINES, RuleSet, load_rules
from generala_env.scoring import generala_scored

from .options import seed_int

HUMAN = "human"
YES = ("y", "yes", "yeah", "yep", "sure", "ok", "si", "sí")
NO = ("n", "no", "nope", "cancel")
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


def _faces_text(faces) -> str:
    return " ".join(str(int(f)) for f in faces) or "nothing"


def _plural_face(tok: str) -> int | None:
    """4 for ``fours`` / ``4s``; None otherwise."""
    for n, line in enumerate(NUMBER_LINES, start=1):
        if tok in (line, f"{n}s", f"{n}'s"):
            return n
    return None


def _count_word(tok: str) -> int | None:
    if tok.isdigit() and len(tok) == 1 and 1 <= int(tok) <= 5:
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
        if _plural_face(t) is not None:
            f = _plural_face(t)
            if have[f - 1] == 0:
                raise MoveError(f"you have no {f} to {what} (your dice: {_faces_text(dice)})")
            faces += [f] * have[f - 1]
        elif t.isdigit() and all(c in "123456" for c in t):
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
                raise MoveError(f"you have no {f} to {what} (your dice: {_faces_text(dice)})")
            raise MoveError(f"you have only {_count_text(have[f - 1])} {f}{'s' if have[f - 1] > 1 else ''} to {what} (your dice: {_faces_text(dice)})")
    return faces


def _count_text(n: int) -> str:
    return ("no", "one", "two", "three", "four", "five")[n]


def _locked_faces(game: Game) -> list[int]:
    c = KEEP_COUNTS[game.locked]
    return [f + 1 for f in range(6) for _ in range(int(c[f]))]


def _hold_move(game: Game, keep: list[int], asked: str) -> Move:
    """The hold mask keeping exactly ``keep`` (plus any locked dice), checked by the game."""
    if game.served_generala_pending():
        raise MoveError(game.why_illegal(0))
    if game.rolls_left == 0:
        raise MoveError("no rolls left this turn: write the dice on an open line (e.g. 'write fours' or 'cross out ones')")
    note = None
    locked = _locked_faces(game)
    if game.rules.locked_holds and locked:
        merged = []
        for f in range(1, 7):
            merged += [f] * max(keep.count(f), locked.count(f))
        if sorted(merged) != sorted(keep):
            if asked == "reroll":
                back = [f for f in range(1, 7) for _ in range(max(0, locked.count(f) - keep.count(f)))]
                raise MoveError(f"locked holds: {_faces_text(back)} kept earlier this turn cannot go back in the cup")
            note = f"{_faces_text(locked)} kept earlier this turn stay held (locked holds)"
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
            action, confirm=f"your dice {_faces_text(game.dice)} score 0 on {line_label(line)}: that crosses it out. Cross out {line_label(line)}? (y/n)"
        )
    return Move(action)


def _open_lines(game: Game) -> list[str]:
    return [line_label(l) for l, v in zip(game.rules.lines, game.sheets[game.player], strict=True) if v == OPEN]


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
            return _hold_move(game, _minus(dice, drop), "reroll")
        if body in (["all"], ["everything"], ["all", "five"], ["every", "one"]):
            return _hold_move(game, [int(d) for d in dice], "keep")
        return _hold_move(game, _dice_phrase(body, game, "keep"), "keep")

    if head in ROLL_VERBS:
        body = [t for t in rest if t not in FILLERS and t not in ("again", "over")]
        if not body or body in (["all"], ["everything"], ["all", "five"], ["every", "one"]):
            locked = _locked_faces(game) if game.rules.locked_holds else []
            return _hold_move(game, locked, "keep")
        if body[0] in ("all", "everything") and len(body) > 1 and body[1] in ("but", "except"):
            return _hold_move(game, _dice_phrase(body[2:], game, "keep"), "keep")
        drop = _dice_phrase(body, game, "reroll")
        return _hold_move(game, _minus(dice, drop), "reroll")

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
                raise MoveError(f"your dice {_faces_text(dice)} score {pts} on {name}, not {claimed}: type 'write {name}' to write {pts}")
            move = Move(move.action, note=move.note)  # the points were said: no question
        return move

    phrase = _phrase(tokens)
    if phrase in lines and not (phrase.isdigit() or phrase in FACE_WORDS):
        return _write_move(game, lines[phrase], False)
    if len(tokens) == 1 and (head.isdigit() and len(head) == 1 or head in FACE_WORDS):
        n = int(head) if head.isdigit() else FACE_WORDS.index(head) + 1
        if 1 <= n <= 6:
            raise MoveError(f"'{head}' could mean 'keep {n}' or 'write {NUMBER_LINES[n - 1]}': say which")
    if all(t.isdigit() and set(t) <= set("123456") for t in tokens):
        return _hold_move(game, _dice_phrase(tokens, game, "keep"), "keep")
    raise MoveError(f"I don't understand {text.strip()!r}. Try 'keep 4 4', 'reroll 1 2', 'roll all', 'write fours', 'cross out ones', or 'help'")


def _hint_words(rest: list[str]) -> tuple[list[str], int | None]:
    """The words of a write as a hint says it: ``12 on fours``, ``35 on full house (served,
    +5)``: the line's words, and the points named first (``None`` if none)."""
    if rest and rest[-1].isdigit() and len(rest) >= 2 and rest[-2] == "served":
        rest = rest[:-2]
    elif rest and rest[-1] == "served":
        rest = rest[:-1]
    if len(rest) >= 2 and rest[0].isdigit() and rest[1] in ("on", "in", "as", "to", "for", "into"):
        return rest[2:], int(rest[0])
    return rest, None


def _minus(dice, drop: list[int]) -> list[int]:
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
        return f"keep {_faces_text(held)}, reroll {5 - len(held)}"
    l = action - NUM_MASKS
    pts, bonus = points_if_written(game, l)
    name = line_label(game.rules.lines[l])
    if pts == 0:
        return f"cross out {name}"
    return f"write {pts} on {name}" + (f" (served, +{bonus})" if bonus else "")


class Style:
    """ANSI colour, or none."""

    def __init__(self, on: bool):
        self.on = on

    def _w(self, code: str, s: str) -> str:
        return f"\033[{code}m{s}\033[0m" if self.on else s

    def bold(self, s):
        return self._w("1", s)

    def dim(self, s):
        return self._w("2", s)

    def red(self, s):
        return self._w("31", s)

    def green(self, s):
        return self._w("32", s)

    def yellow(self, s):
        return self._w("33", s)

    def cyan(self, s):
        return self._w("36", s)

    def die(self, s):
        return self._w("1;30;47", s)


def _pad(s: str, width: int, style_fn=None, left=False) -> str:
    body = s.ljust(width) if left else s.rjust(width)
    return style_fn(body) if style_fn else body


class Table:
    """A game at one table: seats, the game, reading moves and printing what happens."""

    def __init__(self, rules: RuleSet, seats: list[str], seed: int, color: bool, unicode: bool, out=None):
        self.rules = rules
        self.seats = seats
        self.n = len(seats)
        self.game = Game(rules, self.n)
        self.encoder = Encoder(rules, self.n)
        ss = np.random.SeedSequence(seed)
        dice_ss, *agent_ss = ss.spawn(1 + self.n)
        self.rng = np.random.default_rng(dice_ss)
        self.agent_seeds = [int(s.generate_state(1)[0]) for s in agent_ss]
        self.seed = seed
        self.style = Style(color)
        self.unicode = unicode
        self._out = out
        humans = [s for s, who in enumerate(seats) if who == HUMAN]
        self.labels = []
        for s, who in enumerate(seats):
            if who == HUMAN:
                self.labels.append("you" if len(humans) == 1 else f"human {humans.index(s) + 1}")
            else:
                self.labels.append(who)
        self.agents: dict[int, object] = {}
        self._optimal = None
        self._optimal_2p = None  # the win-maximiser, loaded at the first hint of a two-player game

    # -- output ---------------------------------------------------------------------
    @property
    def out(self):
        return self._out or sys.stdout

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def who(self, seat: int) -> str:
        return f"P{seat} {self.labels[seat]}"

    def dice_text(self, faces=None) -> str:
        faces = self.game.dice if faces is None else faces
        if self.unicode:
            return "  ".join(self.style.die(f" {PIPS[int(d) - 1]} {int(d)} ") for d in faces)
        return "  ".join(self.style.die(f"[{int(d)}]") for d in faces)

    def status(self) -> str:
        g = self.game
        rolls_done = 3 - g.rolls_left
        left = {2: "2 rerolls left", 1: "1 reroll left", 0: "no rerolls left: write"}[g.rolls_left]
        head = self.style.bold(f"{self.who(g.player)} · round {g.turn + 1}/{g.num_lines} · roll {rolls_done} of 3 ({left})")
        lines = [head, f"  dice: {self.dice_text()}"]
        locked = _locked_faces(g)
        if g.rules.locked_holds and locked:
            lines[-1] += self.style.dim(f"   held for good: {_faces_text(locked)}")
        if g.served_generala_pending():
            lines.append(self.style.yellow(self.style.bold("  SERVED GENERALA! Write it on generala: it wins the game.")))
        return "\n".join(lines)

    def sheets(self, preview: bool = False) -> str:
        """Every sheet side by side; with ``preview``, what the mover's dice score on each open line now."""
        g, st = self.game, self.style
        width = max(len(line_label(l)) for l in g.rules.lines) + 2
        cols = [self.who(s) for s in range(self.n)]
        cw = [max(7, len(c) + 2) for c in cols]
        mover = None if g.over else g.player
        legal = g.legal_mask() if preview and mover is not None else None
        head = " " * width + ("   now" if preview else "")
        for s, c in enumerate(cols):
            head += _pad(c, cw[s], st.bold if s == mover else None)
        rows = [head]
        for l, line in enumerate(g.rules.lines):
            row = _pad(line_label(line), width, left=True)
            if preview:
                if legal is not None and legal[NUM_MASKS + l]:
                    pts, bonus = points_if_written(g, l)
                    row += _pad(f"{pts}", 6, st.green if pts else st.dim)
                else:
                    row += " " * 6
            for s in range(self.n):
                v = int(g.sheets[s, l])
                if v == OPEN:
                    cell = _pad(".", cw[s], st.dim)
                elif v == 0:
                    cell = _pad("x", cw[s], st.red)
                else:
                    cell = _pad(str(v), cw[s], st.bold if s == mover else None)
                row += cell
            rows.append(row)
        totals = g.totals()
        row = _pad("total", width, left=True) + (" " * 6 if preview else "")
        best = totals.max()
        for s in range(self.n):
            row += _pad(str(int(totals[s])), cw[s], st.yellow if totals[s] == best and best > 0 else st.bold)
        rows.append(row)
        return "\n".join(rows)

    def show(self, preview: bool) -> None:
        self.say(self.sheets(preview))
        if not self.game.over:
            self.say(self.status())

    def done(self, action: int, before_dice, outcome) -> str:
        """What a move did, in words, once played: ``kept 6 6, rerolled 3 → 2 6 6 6 6``."""
        if action < NUM_MASKS:
            held = [int(d) for i, d in enumerate(before_dice) if action >> i & 1]
            what = f"kept {_faces_text(held)}, rerolled {5 - len(held)}" if held else "rerolled all five"
            return f"{what} → {_faces_text(self.game.dice)}"
        name = line_label(self.rules.lines[action - NUM_MASKS])
        if outcome.points == 0:
            return f"crossed out {name}"
        served = f" (served, +{outcome.bonus})" if outcome.bonus else ""
        if outcome.served_generala_win:
            served = " (served generala: wins the game)"
        return f"wrote {outcome.points} on {name}{served}"

    # -- agents ---------------------------------------------------------------------
    trust_zip = False  # SB3 .zip seats load only when the command says --trust-zip

    def load_agents(self) -> None:
        """Build every agent seat; raises ``ValueError`` naming the seat that cannot be built."""
        import agents

        for s, who in enumerate(self.seats):
            if who == HUMAN:
                continue
            try:
                self.agents[s] = agents.load(who, rules=self.rules, seed=self.agent_seeds[s], trust_zip=self.trust_zip)
            except agents.AgentError as e:  # an unknown name or spec, a checkpoint for other rules
                raise ValueError(f"seat {s}: {e}") from None

    def optimal(self):
        if self._optimal is None:
            import agents

            self._optimal = agents.load("optimal", rules=self.rules)
        return self._optimal

    def agent_action(self, seat: int) -> int:
        g = self.game
        agent = self.agents[seat]
        try:
            a = agent.act(self.encoder.encode(g, seat), make_info(g, seat))
            why = g.why_illegal(a)
            if why is None:
                return int(a)
            problem = f"played an illegal move ({why})"
        except Exception as e:  # an agent that fails must not end the people's game
            problem = f"failed: {type(e).__name__}: {e}"
        import agents

        self.say(self.style.red(f"{self.who(seat)} {problem}; greedy plays this seat from now on"))
        self.agents[seat] = agents.load("greedy", rules=self.rules)
        self.labels[seat] += "→greedy"
        return int(self.agents[seat].act(self.encoder.encode(g, seat), make_info(g, seat)))

    # -- hints and help -------------------------------------------------------------
    def hint(self) -> str:
        g = self.game
        if g.served_generala_pending():
            return "write generala: a served generala wins the game on the spot"
        from agents.base import SeatView

        opt = self.optimal()
        v = SeatView.from_info(make_info(g, g.player))
        s = opt.solver
        values = s.action_values(v.filled_mask, generala_scored(self.rules, v.sheet), v.roll, v.rolls_left, v.locked)
        legal = g.legal_mask()
        total = float(g.totals()[g.player])
        best: dict[tuple, tuple[float, int]] = {}  # one entry per distinct move (masks that keep the same dice)
        for a in np.flatnonzero(legal):
            key = ("keep", tuple(sorted(int(d) for i, d in enumerate(g.dice) if a >> i & 1))) if a < NUM_MASKS else ("write", int(a))
            if key not in best or values[a] > best[key][0]:
                best[key] = (float(values[a]), int(a))
        ranked = sorted(best.values(), key=lambda x: -x[0])
        top = ranked[0]
        msg = [f"the optimal player would {describe(g, top[1])}: expected final total {total + top[0]:.1f}"]
        if len(ranked) > 1:
            msg.append("next best: " + "; ".join(f"{describe(g, a)} ({total + v:.1f})" for v, a in ranked[1:3]))
        msg.append(self.style.dim("(the optimal player maximises its own expected total, as if playing alone)"))
        if self.n == 2:
            msg.extend(self.win_hint(best))
        return "\n  ".join(msg)

    def win_hint(self, moves: dict[tuple, tuple[float, int]]) -> list[str]:
        """The best moves by the chance to win (P(win) + 1/2 P(draw)) from the exact
        two-player solution, for the distinct legal ``moves``."""
        from agents.solver2p import SolveTooBigError

        g = self.game
        if self._optimal_2p is None or isinstance(self._optimal_2p, str) and "not in the cache" in self._optimal_2p:
            from .replay import two_player_table

            try:  # only a cached table: a hint never blocks the game on a solve of minutes
                self._optimal_2p = two_player_table(self.rules)
            except SolveTooBigError as e:
                self._optimal_2p = str(e)
        if isinstance(self._optimal_2p, str):
            return [self.style.dim(f"(no chance-to-win hint: {self._optimal_2p})")]
        values = self._optimal_2p.action_values(make_info(g, g.player))
        ranked = sorted(((float(values[a]), a) for _, a in moves.values()), key=lambda x: -x[0])
        out = [f"to win, the two-player optimum would {describe(g, ranked[0][1])}: chance to win {ranked[0][0]:.1%}"]
        if len(ranked) > 1:
            out.append("next best for winning: " + "; ".join(f"{describe(g, a)} ({v:.1%})" for v, a in ranked[1:3]))
        out.append(self.style.dim("(chance to win: P(win) + 1/2 P(draw), both players playing to win from here)"))
        return out

    def help(self) -> str:
        """The legal moves now, in the words the parser takes."""
        g = self.game
        lines = [f"your dice: {_faces_text(g.dice)}"]
        legal = g.legal_mask()
        if g.served_generala_pending():
            lines.append("  the only move: write generala (a served generala wins the game)")
            return "\n".join(lines)
        if g.rolls_left > 0:
            locked = _locked_faces(g) if g.rules.locked_holds else []
            extra = f"; {_faces_text(locked)} must stay held (locked holds)" if locked else ""
            lines.append(f"  keep any of the dice and reroll the rest ({g.rolls_left} reroll{'s' if g.rolls_left > 1 else ''} left{extra}), e.g.")
            counts = ROLL_COUNTS[g.roll]
            face = max(range(6), key=lambda f: (counts[f], f)) + 1
            most = [face] * int(counts[face - 1])
            others = _minus(g.dice, most)
            examples = [f"keep {_faces_text(most)}", f"keep the {NUMBER_LINES[face - 1]}"]
            if others:
                examples.append(f"reroll {_faces_text(others)}")
            examples.append("roll all")
            lines.append("    " + " · ".join(examples))
        else:
            lines.append("  no rerolls left: write the dice on an open line")
        lines.append("  write the dice on an open line (points now):")
        zero = []
        for l, line in enumerate(g.rules.lines):
            if legal[NUM_MASKS + l]:
                pts, bonus = points_if_written(g, l)
                if pts == 0:
                    zero.append(line_label(line))
                else:
                    lines.append(f"    write {line_label(line):<16} {pts:>3}" + (f"  (served, +{bonus})" if bonus else ""))
        if zero:
            lines.append(f"    cross out (0 points): {', '.join(zero)}")
        lines.append("  other: hint (what the optimal player would do), sheet, help, quit")
        return "\n".join(lines)

    # -- playing --------------------------------------------------------------------
    def read(self, prompt: str) -> str:
        """One typed line; ``EOFError`` at the end of input."""
        stdin = sys.stdin
        if _isatty(stdin) and _isatty(self.out):
            with contextlib.suppress(ImportError):
                import readline  # noqa: F401  (line editing and history for input())
            try:
                return input(prompt)
            except EOFError:  # Ctrl-D: end the prompt's line
                self.say()
                raise
        self.out.write(prompt)
        self.out.flush()
        line = stdin.readline()
        if not line:
            self.say()
            raise EOFError
        self.out.write(line if line.endswith("\n") else line + "\n")  # echo: a transcript reads like the screen
        return line

    def human_move(self, seat: int) -> int | None:
        """Ask until a legal move is typed; ``None`` to quit."""
        prompt = f"{self.who(seat)} > "
        text = None
        while True:
            if text is None:
                text = self.read(prompt)
            try:
                got = parse_move(text, self.game)
            except MoveError as e:
                self.say(self.style.yellow(f"  {'✗' if self.unicode else '!'} {e}"))
                text = None
                continue
            except Exception as e:  # a reading bug must not cost the game: say so, ask again
                self.say(self.style.red(f"  could not read {text.strip()!r} ({type(e).__name__}: {e}); please say it another way"))
                text = None
                continue
            text = None
            if got == "quit":
                return None
            if got == "help":
                self.say(self.help())
                continue
            if got == "hint":
                self.say("  hint: " + self.hint())
                continue
            if got == "show":
                self.show(preview=True)
                continue
            if got.confirm:
                answer = self.read(f"  {got.confirm} ").strip()
                if answer.lower() not in YES:
                    if answer.lower() in NO or not answer:
                        self.say("  not written; your move")
                    else:
                        text = answer  # another move typed instead of an answer
                    continue
            if got.note:
                self.say(self.style.dim(f"  ({got.note})"))
            return got.action

    def play(self) -> int:
        g = self.game
        g.reset(self.rng)
        for agent in self.agents.values():
            if hasattr(agent, "reset"):
                agent.reset()
        humans = HUMAN in self.seats
        turn_start = True
        try:
            while not g.over:
                seat = g.player
                human = self.seats[seat] == HUMAN
                if turn_start:
                    if human:
                        self.say()
                        self.show(preview=True)
                    else:
                        self.say(f"{self.who(seat)} rolls {_faces_text(g.dice)}")
                        if g.served_generala_pending():
                            self.say(self.style.yellow("  served generala!"))
                before = g.dice.copy()
                action = self.human_move(seat) if human else self.agent_action(seat)
                if action is None:
                    self.say(f"{'You' if self.labels[seat] == 'you' else self.who(seat)} quit. The sheets as they stand:")
                    self.say(self.sheets())
                    return 0
                outcome = g.step(action, self.rng)
                text = f"  {self.who(seat)}: {self.done(action, before, outcome)}"
                if action < NUM_MASKS:
                    self.say(text)
                    turn_start = False
                    if human:
                        self.say(self.status())
                else:
                    self.say(self.style.cyan(text))
                    turn_start = True
                    if not humans and seat == self.n - 1 and not g.over:
                        self.say(self.sheets())
        except (EOFError, KeyboardInterrupt) as e:
            why = "Input ended" if isinstance(e, EOFError) else "\nInterrupted"
            self.say(f"{why}: the game stops here. The sheets as they stand:")
            self.say(self.sheets())
            return 0
        self.say()
        self.say(self.style.bold("Game over."))
        self.say(self.sheets())
        self.say(self.result())
        if self.n > 1:
            order = sorted(range(self.n), key=lambda s: -int(self.game.totals()[s]))
            self.say("Final: " + ", ".join(f"{self.who(s)} {int(self.game.totals()[s])}" for s in order))
        return 0

    def result(self) -> str:
        g, st = self.game, self.style
        totals = g.totals()
        you = [s for s in range(self.n) if self.labels[s] == "you"]

        def name(s: int) -> str:
            return "You" if s in you else self.who(s)

        if g.served_generala_winner is not None:
            w = g.served_generala_winner
            return st.green(st.bold(f"{name(w)} win{'' if w in you else 's'} with a served generala!"))
        if self.n == 1:
            return st.bold(f"{'Your' if you else self.who(0) + chr(39) + 's'} final score: {int(totals[0])}")
        winners = g.winners()
        if len(winners) == 1:
            w = winners[0]
            return st.green(st.bold(f"{name(w)} win{'' if w in you else 's'} with {int(totals[w])} points!"))
        return st.green(st.bold(f"Shared win at {int(totals[winners[0]])} points: {', '.join(self.who(w) for w in winners)}."))


# -- the command -------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from agents.specs import HELP, TRUST_ZIP_HELP

    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="generala play",
        description="Play Generala in the terminal against agents (or friends at the same keyboard).",
        epilog="In the game: keep 4 4 4 · reroll 1 2 · roll all · write fours · cross out ones · help · hint · quit",
    )
    who = p.add_mutually_exclusive_group()
    who.add_argument(
        "--opponents",
        help="comma-separated agents playing after you, e.g. greedy,optimal (default: greedy; 'none' to play alone); each is " + HELP,
    )
    who.add_argument("--seats", help="every seat in play order, 'human' for a person, e.g. human,greedy,human")
    p.add_argument("--rules", default="classic", help="rule set: classic, double, sixty, or a YAML file (default classic)")
    p.add_argument("--seed", type=seed_int, default=None, help="seed for the dice and the agents (default: a fresh one, printed)")
    p.add_argument("--trust-zip", action="store_true", help=TRUST_ZIP_HELP)
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="ANSI colour (auto: when stdout is a terminal and NO_COLOR is unset)")
    return p


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _seats(args) -> list[str]:
    if args.seats is not None:
        seats = [s.strip() for s in args.seats.split(",") if s.strip()]
    elif args.opponents is None:
        seats = [HUMAN, "greedy"]
    elif args.opponents.strip().lower() in ("", "none"):
        seats = [HUMAN]
    else:
        seats = [HUMAN] + [s.strip() for s in args.opponents.split(",") if s.strip()]
    return [HUMAN if s.lower() in (HUMAN, "you", "me", "person") else s for s in seats]


def main(argv=None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    err = sys.stderr
    seats = _seats(args)
    if not 1 <= len(seats) <= MAX_PLAYERS:
        print(f"generala play: error: a game has 1 to {MAX_PLAYERS} seats, got {len(seats)}", file=err)
        return 2
    try:
        rules = load_rules(args.rules)
    except ValueError as e:
        print(f"generala play: error: {e}", file=err)
        return 2
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().generate_state(1)[0] % 1_000_000)
    out = sys.stdout
    color = _isatty(out) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb" if args.color == "auto" else args.color == "always"
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "")
    table = Table(rules, seats, seed, color=color, unicode=encoding.startswith("utf"))
    try:
        table.trust_zip = args.trust_zip
        table.load_agents()
    except ValueError as e:
        print(f"generala play: error: {e}", file=err)
        return 2
    table.say(f"Generala, {rules.name} rules ({rules.num_lines} lines), seed {seed}. Seats: " + ", ".join(table.who(s) for s in range(table.n)))
    if HUMAN in seats:
        table.say("Type moves as you would say them: keep 4 4 4 · reroll 1 2 · roll all · write fours · cross out ones.")
        table.say("'help' lists your moves, 'hint' asks the optimal player, 'sheet' shows the sheets, 'quit' ends.")
    return table.play()


if __name__ == "__main__":
    sys.exit(main())
