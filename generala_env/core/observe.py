"""The observation encoding, once: one game's observation as small functions over its numbers.

:class:`~generala_env.core.encoding.Encoder` (the layout, the tables) encodes one game with
:func:`encode_game`, compiled by :mod:`generala_env.compiled.batched` when numba is there and plain
Python otherwise; the batched env compiles :func:`encode_turn` and :func:`encode_sheets` into
its loop over games. No framework imports.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from generala_env.core.dice import KEEP_COUNTS, ROLL_COUNTS, ROLLS
from generala_env.core.engine import FIRST_ROLL, OPEN, blocked_line

# The slices the dice decide, by table row (float64 -> float32 as an assignment would round
# them), the same for every rule set: dice_counts ... first_roll (15) by (roll, rolls_left),
# locked_counts and served_generala (7) by (locked keep, served generala pending). Module
# constants: compiled, numba builds them into the loops.
_R, _K = len(ROLLS), len(KEEP_COUNTS)
DICE_OBS = np.concatenate(
    [
        np.broadcast_to((ROLL_COUNTS / 5.0)[:, None], (_R, 3, 6)),
        np.broadcast_to((ROLLS / 6.0)[:, None], (_R, 3, 5)),
        np.broadcast_to(np.eye(3), (_R, 3, 3)),
        np.broadcast_to((np.arange(3) == FIRST_ROLL)[:, None], (_R, 3, 1)),
    ],
    axis=2,
).astype(np.float32, order="C")  # C order: numba builds a C or F array into the loops (another it cannot cache)
LOCKED_OBS = np.concatenate(
    [np.broadcast_to((KEEP_COUNTS / 5.0)[:, None], (_K, 2, 6)), np.broadcast_to(np.array([0.0, 1.0])[:, None], (_K, 2, 1))], axis=2
).astype(np.float32, order="C")


class EncodingTables(NamedTuple):
    """What the encoding reads besides the game: its tables and where each slice starts."""

    points_now: Any  # [roll, first, line]: points the line would take now / line max (float32)
    points_obs: Any  # [line, v]: v points written / line max, rounded to float32 (the last column is 0)
    total_max: float  # the most points possible
    # where the slices start (numbers, not an array: the loops keep them in registers)
    dice_at: int  # dice_counts, then dice_sorted
    rolls_left_at: int
    first_at: int
    locked_at: int
    served_at: int
    now_at: int  # points_now
    open_at: int  # own_open: the first of the slices the sheets decide
    points_at: int
    total_at: int
    round_at: int
    lead_at: int  # score_lead (-1: absent)
    opponent_at: Any  # [k - 1]: opponent k's open, points and total starts
    generala_line: int
    double_line: int


# -- the encoding, once: one game's observation into row j of out -------------------------------
# Plain Python over one game's numbers and the tables (generala_env.compiled.batched compiles these into
# its loops over games; the single env calls one compiled game of them). The float arithmetic
# is NumPy's: int / float is done in float64 and rounded to float32 once. Indices are unsigned
# (U): compiled, numba then skips its fix-up of negative indices, which costs more than half
# of these loops; signed and unsigned must not mix in index arithmetic (it would give a float).
U = np.uint64


def encode_turn(out, j, e: EncodingTables, roll, rolls_left, locked, pending, sheets, g, seat) -> None:
    """The slices the turn decides (``dice_counts`` to ``points_now``), from ``seat``'s view of
    game ``g`` of ``sheets``; ``pending``: a served generala is pending
    (:func:`~generala_env.core.engine.served_pending`)."""
    r, me = U(roll), U(seat)
    at, rl = U(e.dice_at), U(rolls_left)
    for i in range(U(15)):
        out[j, at + i] = DICE_OBS[r, rl, i]
    at, k, served = U(e.locked_at), U(locked), U(1) if pending else U(0)
    for i in range(U(7)):
        out[j, at + i] = LOCKED_OBS[k, served, i]
    at, first = U(e.now_at), U(1) if rolls_left == FIRST_ROLL else U(0)
    for l in range(U(sheets.shape[2])):  # without branches: open lines are unpredictable
        out[j, at + l] = e.points_now[r, first, l] * np.float32(sheets[g, me, l] == OPEN)
    if e.double_line >= 0:  # else nothing is blocked: the sheet need not be read
        blocked = blocked_line(e.double_line, sheets[g, me, e.generala_line])
        if blocked >= 0:
            out[j, at + U(blocked)] = 0.0


def sheet_slices(out, j, e: EncodingTables, sheets, g, who, open_at, points_at) -> tuple[int, int]:
    """Seat ``who``'s open and points slices; its total and filled lines."""
    total, filled, a, b = 0, 0, U(open_at), U(points_at)
    for l in range(U(sheets.shape[2])):
        v = sheets[g, who, l]
        if v == OPEN:
            out[j, a + l] = 1.0
            out[j, b + l] = 0.0
        else:
            out[j, a + l] = 0.0
            out[j, b + l] = e.points_obs[l, U(v)]
            total += v
            filled += 1
    return total, filled


def encode_sheets(out, j, e: EncodingTables, sheets, g, seat) -> None:
    """The slices the sheets decide (``own_open`` to the end), from ``seat``'s view of game ``g``."""
    num_players, num_lines = sheets.shape[1], sheets.shape[2]
    own, filled = sheet_slices(out, j, e, sheets, g, seat, e.open_at, e.points_at)
    out[j, e.total_at] = np.float32(own / e.total_max)
    out[j, e.round_at] = np.float32(filled / num_lines)
    if num_players > 1:
        best = -np.inf
        for q in range(1, num_players):
            starts = e.opponent_at
            total, _ = sheet_slices(out, j, e, sheets, g, (seat + q) % num_players, starts[q - 1, 0], starts[q - 1, 1])
            out[j, starts[q - 1, 2]] = np.float32(total / e.total_max)
            best = max(best, float(total))
        out[j, e.lead_at] = np.float32(min(max((own - best) / e.total_max, -1.0), 1.0))


def encode_game(out, e: EncodingTables, roll, rolls_left, locked, pending, sheets, seat) -> None:
    """One game's observation into ``out`` (1-D; ``sheets``: its ``(players, lines)``)."""
    row, games = out.reshape((1, out.shape[0])), sheets.reshape((1, sheets.shape[0], sheets.shape[1]))
    encode_turn(row, 0, e, roll, rolls_left, locked, pending, games, 0, seat)
    encode_sheets(row, 0, e, games, 0, seat)


ENCODING = (encode_turn, sheet_slices, encode_sheets, encode_game)  # what generala_env.compiled.batched compiles
