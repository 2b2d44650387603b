"""Text rendering of a game: the dice and every score sheet."""

from __future__ import annotations

from generala_env.core.dice import KEEP_COUNTS, ROLLS
from generala_env.core.game import OPEN, Game

PIPS = "⚀⚁⚂⚃⚄⚅"


def line_label(line: str) -> str:
    return line.replace("_", " ")


def render_text(game: Game, seat: int | None = None, unicode: bool = True) -> str:
    """The dice, rolls left and the sheets as a table; ``seat`` is marked as "you"."""
    out = []
    dice = ROLLS[game.roll]
    faces = " ".join(f"{PIPS[d - 1]} {d}" if unicode else str(d) for d in dice)
    if game.over and game.num_players == 1:  # a game alone has a score, not a winner
        out.append(f"Game over: final score {int(game.totals()[0])}")
    elif game.over:
        winners = game.winners()
        how = " (served generala)" if game.served_generala_winner is not None else ""
        who = ", ".join(f"P{w}" for w in winners)
        out.append(f"Game over{how}: {'winner' if len(winners) == 1 else 'shared win'} {who}")
    else:
        rolls_done = 3 - game.rolls_left
        out.append(f"Player {game.player} to move, round {game.turn + 1}/{game.num_lines}, roll {rolls_done} of 3")
        locked = KEEP_COUNTS[game.locked]
        lock_txt = ""
        if locked.sum():
            lock_txt = "  locked: " + " ".join(str(f + 1) for f in range(6) for _ in range(int(locked[f])))
        out.append(f"Dice: {faces}{lock_txt}")
    names = [f"P{p}" + ("*" if p == seat else "") for p in range(game.num_players)]
    width = max(len(line_label(l)) for l in game.rules.lines) + 2
    out.append(" " * width + "".join(f"{n:>6}" for n in names))
    for l, line in enumerate(game.rules.lines):
        cells = []
        for p in range(game.num_players):
            v = int(game.sheets[p, l])
            cells.append(f"{'.' if v == OPEN else ('x' if v == 0 else v):>6}")
        out.append(f"{line_label(line):<{width}}" + "".join(cells))
    out.append(f"{'total':<{width}}" + "".join(f"{int(t):>6}" for t in game.totals()))
    return "\n".join(out)
