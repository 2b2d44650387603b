"""What the exact solvers advise at a move, and the legal moves listed: the terminal game's
``hint`` and ``help``, the browser game's and the replays' two-player table.

The advice is in the words :func:`generala_play.moves.parse_move` reads back. ``style`` is the
terminal's colouring (:class:`generala_play.table.Style`); only its ``dim`` is used.
"""

from __future__ import annotations

import numpy as np

from generala_env.core.dice import NUM_MASKS, ROLL_COUNTS
from generala_env.core.game import Game
from generala_env.core.rules import NUMBER_LINES
from generala_env.core.scoring import generala_scored
from generala_env.envs.env import make_info
from generala_env.rendering.render import line_label

from .moves import describe, dice_without, faces_text, locked_faces, points_if_written

# the distinct legal moves (masks that keep the same dice are one move), each with its best
# value and the action that reaches it
Moves = dict[tuple, tuple[float, int]]


def two_player_table(rules, solve: bool = False):
    """``optimal-2p`` for ``rules`` if its table is cached (or ``solve``), else a sentence why not.
    Without ``solve`` nothing here can start a solve: the table comes from the cache or not at all."""
    from generala_agents.optimal import OptimalTwoPlayerAgent
    from generala_agents.solver2p import cache_path, shared_table

    if solve:
        return OptimalTwoPlayerAgent(rules)
    table = shared_table(rules)
    if table is None:
        return (
            f"the two-player table of the {rules.name!r} rules is not in the cache "
            f"({cache_path(rules)}); 'generala solve --players 2 --rules {rules.name}' makes it once (minutes for the presets)"
        )
    return OptimalTwoPlayerAgent(rules, table=table)


def optimal_advice(game: Game, solver, style) -> tuple[list[str], Moves]:
    """The one-player optimum's best move and the next two, by expected final total, for the
    player to move; and the distinct legal moves with their values."""
    from generala_agents.base import SeatView

    g = game
    v = SeatView.from_info(make_info(g, g.player))
    values = solver.action_values(v.filled_mask, generala_scored(g.rules, v.sheet), v.roll, v.rolls_left, v.locked)
    legal = g.legal_mask()
    total = float(g.totals()[g.player])
    best: Moves = {}
    for a in np.flatnonzero(legal):
        key = ("keep", tuple(sorted(int(d) for i, d in enumerate(g.dice) if a >> i & 1))) if a < NUM_MASKS else ("write", int(a))
        if key not in best or values[a] > best[key][0]:
            best[key] = (float(values[a]), int(a))
    ranked = sorted(best.values(), key=lambda x: -x[0])
    top = ranked[0]
    msg = [f"the optimal player would {describe(g, top[1])}: expected final total {total + top[0]:.1f}"]
    if len(ranked) > 1:
        msg.append("next best: " + "; ".join(f"{describe(g, a)} ({total + v:.1f})" for v, a in ranked[1:3]))
    msg.append(style.dim("(the optimal player maximises its own expected total, as if playing alone)"))
    return msg, best


def win_advice(game: Game, two_player, moves: Moves, style) -> list[str]:
    """The best of the distinct legal ``moves`` by the chance to win (P(win) + 1/2 P(draw))
    from the exact two-player solution ``two_player``, or the sentence saying why there is none."""
    if isinstance(two_player, str):
        return [style.dim(f"(no chance-to-win hint: {two_player})")]
    g = game
    values = two_player.action_values(make_info(g, g.player))
    ranked = sorted(((float(values[a]), a) for _, a in moves.values()), key=lambda x: -x[0])
    out = [f"to win, the two-player optimum would {describe(g, ranked[0][1])}: chance to win {ranked[0][0]:.1%}"]
    if len(ranked) > 1:
        out.append("next best for winning: " + "; ".join(f"{describe(g, a)} ({v:.1%})" for v, a in ranked[1:3]))
    out.append(style.dim("(chance to win: P(win) + 1/2 P(draw), both players playing to win from here)"))
    return out


def moves_help(game: Game) -> str:
    """The legal moves now, in the words the parser takes."""
    g = game
    lines = [f"your dice: {faces_text(g.dice)}"]
    legal = g.legal_mask()
    if g.served_generala_pending():
        lines.append("  the only move: write generala (a served generala wins the game)")
        return "\n".join(lines)
    if g.rolls_left > 0:
        locked = locked_faces(g) if g.rules.locked_holds else []
        extra = f"; {faces_text(locked)} must stay held (locked holds)" if locked else ""
        lines.append(f"  keep any of the dice and reroll the rest ({g.rolls_left} reroll{'s' if g.rolls_left > 1 else ''} left{extra}), e.g.")
        counts = ROLL_COUNTS[g.roll]
        face = max(range(6), key=lambda f: (counts[f], f)) + 1
        most = [face] * int(counts[face - 1])
        others = dice_without(g.dice, most)
        examples = [f"keep {faces_text(most)}", f"keep the {NUMBER_LINES[face - 1]}"]
        if others:
            examples.append(f"reroll {faces_text(others)}")
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
