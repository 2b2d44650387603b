"""Observation encoding: a game state as one flat float32 vector, from a seat's view.

The layout depends only on the rule set (its ``L`` lines) and the number of players.
:func:`observation_layout` names every slice; :data:`LAYOUT_VERSION` changes whenever
the layout does, so checkpoints can refuse an encoding they were not trained on.

Slices, in order (all values lie in ``[-1, 1]``):

=========================  =====  ===================================================
name                       size   meaning
=========================  =====  ===================================================
``dice_counts``            6      how many dice show each face, / 5
``dice_sorted``            5      the five faces, sorted (hold-bit order), / 6
``rolls_left``             3      one-hot: 0, 1 or 2 rolls left
``first_roll``             1      1 right after the turn's first roll (served rolls)
``locked_counts``          6      faces that may not go back in the cup, / 5
``served_generala``        1      1 when a served generala wins on the spot now
``points_now``             L      points each open line would take now, / line max
``own_open``               L      1 where the seat's line is open
``own_points``             L      points on the seat's lines, / line max
``own_total``              1      the seat's total, / most points possible
``round``                  1      lines the seat has filled, / L
``opponent_k_open``        L      (k = 1 … P-1, in play order after the seat)
``opponent_k_points``      L
``opponent_k_total``       1
``score_lead``             1      seat total − best opponent total, / most possible
=========================  =====  ===================================================

The opponent slices and ``score_lead`` exist only with two or more players.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .dice import KEEP_COUNTS, ROLL_COUNTS, ROLLS
from .engine import FIRST_ROLL, OPEN, blocked_line
from .game import Game
from .rules import RuleSet
from .scoring import line_max, points_table

LAYOUT_VERSION = 1

# The slices the dice decide, by table row (float64 -> float32 as an assignment would round
# them), the same for every rule set: dice_counts ... first_roll (15) by (roll, rolls_left),
# locked_counts and served_generala (7) by (locked keep, served generala pending). Module
# constants: compiled, numba builds them into the loops.
DICE_OBS = np.array(
    [[np.concatenate([ROLL_COUNTS[r] / 5.0, ROLLS[r] / 6.0, np.eye(3)[rl], [rl == FIRST_ROLL]]) for rl in range(3)] for r in range(len(ROLLS))],
    dtype=np.float32,
)
LOCKED_OBS = np.array([[np.concatenate([KEEP_COUNTS[k] / 5.0, [p]]) for p in (0.0, 1.0)] for k in range(len(KEEP_COUNTS))], dtype=np.float32)


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
# Plain Python over one game's numbers and the tables (generala_env.batched compiles these into
# its loops over games; the single env calls one compiled game of them). The float arithmetic
# is NumPy's: int / float is done in float64 and rounded to float32 once. Indices are unsigned
# (U): compiled, numba then skips its fix-up of negative indices, which costs more than half
# of these loops; signed and unsigned must not mix in index arithmetic (it would give a float).
U = np.uint64


def encode_turn(out, j, e: EncodingTables, roll, rolls_left, locked, pending, sheets, g, seat) -> None:
    """The slices the turn decides (``dice_counts`` to ``points_now``), from ``seat``'s view of
    game ``g`` of ``sheets``; ``pending``: a served generala is pending
    (:func:`~generala_env.engine.served_pending`)."""
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


ENCODING = (encode_turn, sheet_slices, encode_sheets, encode_game)  # what generala_env.batched compiles


def observation_layout(rules: RuleSet, num_players: int = 1) -> dict[str, slice]:
    """Name → slice of the observation vector, in order."""
    L = rules.num_lines
    sizes = [
        ("dice_counts", 6),
        ("dice_sorted", 5),
        ("rolls_left", 3),
        ("first_roll", 1),
        ("locked_counts", 6),
        ("served_generala", 1),
        ("points_now", L),
        ("own_open", L),
        ("own_points", L),
        ("own_total", 1),
        ("round", 1),
    ]
    for k in range(1, num_players):
        sizes += [(f"opponent_{k}_open", L), (f"opponent_{k}_points", L), (f"opponent_{k}_total", 1)]
    if num_players > 1:
        sizes.append(("score_lead", 1))
    layout, start = {}, 0
    for name, n in sizes:
        layout[name] = slice(start, start + n)
        start += n
    return layout


def observation_size(rules: RuleSet, num_players: int = 1) -> int:
    return list(observation_layout(rules, num_players).values())[-1].stop


class Encoder:
    """Turns a :class:`Game` into observations for any seat.

    :attr:`tables` are the :class:`EncodingTables` the batched env encodes with too:
    ``points_now[roll, first, line]`` (points the line would take now / line max) and
    ``points_obs[line, v]`` (``v`` points written / line max; the last column is 0, so an
    open line's ``-1`` reads 0).
    """

    def __init__(self, rules: RuleSet, num_players: int):
        self.rules = rules
        self.num_players = num_players
        self.layout = observation_layout(rules, num_players)
        self.size = observation_size(rules, num_players)
        self.line_max = line_max(rules)
        self.total_max = float(self.line_max.sum())
        points = points_table(rules)
        self.points_now = np.ascontiguousarray((points.astype(np.float32) / self.line_max[:, None, None]).transpose(1, 2, 0))
        written = np.arange(max(int(points.max()), 0) + 2)
        written[-1] = 0
        self.points_obs = (written[None, :] / self.line_max[:, None].astype(np.float64)).astype(np.float32)  # as int / float32 rounds
        s = self.layout
        assert s["dice_sorted"].start == s["dice_counts"].stop  # they are written from one table row
        names = (
            "dice_counts",
            "rolls_left",
            "first_roll",
            "locked_counts",
            "served_generala",
            "points_now",
            "own_open",
            "own_points",
            "own_total",
            "round",
            "score_lead",
        )
        self.starts = np.array([s[k].start if k in s else -1 for k in names], dtype=np.int64)
        self.opponent_starts = np.array(
            [[s[f"opponent_{k}_{part}"].start for part in ("open", "points", "total")] for k in range(1, num_players)], dtype=np.int64
        ).reshape(num_players - 1, 3)
        self.tables = EncodingTables(
            points_now=self.points_now,
            points_obs=self.points_obs,
            total_max=self.total_max,
            **{
                f"{k}_at": int(v)
                for k, v in zip(
                    ("dice", "rolls_left", "first", "locked", "served", "now", "open", "points", "total", "round", "lead"), self.starts, strict=True
                )
            },
            opponent_at=self.opponent_starts,
            generala_line=rules.generala_line,
            double_line=rules.double_generala_line,
        )
        from . import batched  # numba, when it is there (loaded on first use: importing the package stays light)

        # compiled, the tables go as a plain tuple (numba takes one faster than a NamedTuple)
        self._kernel: Callable[..., None] = batched.encode_game if batched.NUMBA else encode_game
        self._args: tuple = tuple(self.tables) if batched.NUMBA else self.tables

    def encode(self, game: Game, seat: int) -> np.ndarray:
        """The observation of ``game`` from ``seat`` (:func:`encode_game`, compiled when numba is there)."""
        out = np.empty(self.size, dtype=np.float32)
        self._kernel(out, self._args, game.roll, game.rolls_left, game.locked, game.served_generala_pending(), game.sheets, seat)
        return out
