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

import numpy as np

from .dice import KEEP_COUNTS, ROLL_COUNTS, ROLLS
from .game import OPEN_LINES, ROLLS_PER_TURN, Game
from .rules import RuleSet
from .scoring import line_max, points_table

LAYOUT_VERSION = 1

# The slices that depend on the dice alone, precomputed (float64 → float32 as a slice
# assignment would round them): dice_counts … first_roll by (roll, rolls_left), and
# locked_counts + served_generala by (locked keep, served generala pending).
_DICE_OBS = np.array(
    [[np.concatenate([ROLL_COUNTS[r] / 5.0, ROLLS[r] / 6.0, np.eye(3)[rl], [rl == ROLLS_PER_TURN - 1]]) for rl in range(3)] for r in range(len(ROLLS))],
    dtype=np.float32,
)
_LOCKED_OBS = np.array([[np.concatenate([KEEP_COUNTS[k] / 5.0, [p]]) for p in (0.0, 1.0)] for k in range(len(KEEP_COUNTS))], dtype=np.float32)
# the same rows as nested lists (a list look-up is cheaper than numpy indexing)
_DICE_ROWS = [list(rows) for rows in _DICE_OBS]
_LOCKED_ROWS = [list(rows) for rows in _LOCKED_OBS]


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

    Tables shared with the batched env: ``points_now[roll, first, line]`` (points the
    line would take now / line max) and ``points_obs[line, v]`` (``v`` points written /
    line max; the last column is 0, so an open line's ``-1`` reads 0).
    """

    def __init__(self, rules: RuleSet, num_players: int):
        self.rules = rules
        self.num_players = num_players
        self.layout = observation_layout(rules, num_players)
        self.size = observation_size(rules, num_players)
        self.line_max = line_max(rules)
        self.total_max = float(self.line_max.sum())
        L = self.num_lines = rules.num_lines
        points = points_table(rules)
        self.points_now = np.ascontiguousarray((points.astype(np.float32) / self.line_max[:, None, None]).transpose(1, 2, 0))
        self._points_rows = [list(rows) for rows in self.points_now]
        written = np.arange(max(int(points.max()), 0) + 2)
        written[-1] = 0
        self.points_obs = (written[None, :] / self.line_max[:, None].astype(np.float64)).astype(np.float32)  # as int / float32 rounds
        self._lines = np.arange(L)
        self._double = rules.lines.index("double_generala") if "double_generala" in rules.lines else -1
        self._generala = rules.lines.index("generala") if "generala" in rules.lines else -1
        s = self.layout
        # encode() joins four pieces; they must be the layout's slices in order
        assert s["rolls_left"].start == 11 and s["locked_counts"].start == 15 and s["points_now"].start == 22
        assert s["own_open"].start == s["points_now"].stop
        # _sheet_part() fills own_open … score_lead in layout order: each seat's open, points, total
        assert s["own_points"].start == s["own_open"].stop and s["own_total"].start == s["own_points"].stop
        assert s["round"].start == s["own_total"].stop
        self._part_start = s["own_open"].start
        # the slices' starts, as the numba encoders take them (-1: absent)
        assert s["dice_sorted"].start == s["dice_counts"].stop  # they write both from one table row
        names = ("dice_counts", "rolls_left", "first_roll", "locked_counts", "served_generala", "points_now", "own_open", "own_points", "own_total", "round", "score_lead")
        self.starts = np.array([s[k].start if k in s else -1 for k in names], dtype=np.int64)
        self.opponent_starts = np.array(
            [[s[f"opponent_{k}_{part}"].start for part in ("open", "points", "total")] for k in range(1, num_players)], dtype=np.int64
        ).reshape(num_players - 1, 3)
        from . import batched  # numba, when it is there (loaded on first use: importing the package stays light)

        self._kernel = batched.encode_game if batched.NUMBA else None
        self._counts_now: dict[tuple[int, bool], np.ndarray] = {}
        self._sheets_key: tuple | None = None
        self._sheets_part: tuple[np.ndarray, np.ndarray] | None = None

    def encode(self, game: Game, seat: int) -> np.ndarray:
        """The observation of ``game`` from ``seat``: compiled when numba is there, else NumPy
        (the two agree bit for bit; tests check it)."""
        if self._kernel is None:
            return self.encode_numpy(game, seat)
        out = np.empty(self.size, dtype=np.float32)
        blocked = self._double if self._double >= 0 and not game.sheets[seat, self._generala] > 0 else -1
        self._kernel(out, game.roll, game.rolls_left, game.locked, game.served_generala_pending(), game.sheets, seat,
                     self.points_now, self.points_obs, self.total_max, self.starts, self.opponent_starts, blocked)
        return out

    def encode_numpy(self, game: Game, seat: int) -> np.ndarray:
        """:meth:`encode` in NumPy, with the slices the sheets decide kept until they change."""
        r, rolls_left = game.roll, game.rolls_left
        counts_now, sheet_part = self._sheet_part(game, seat)
        return np.concatenate(
            (
                _DICE_ROWS[r][rolls_left],  # dice_counts, dice_sorted, rolls_left, first_roll
                _LOCKED_ROWS[game.locked][game.served_generala_pending()],  # locked_counts, served_generala
                self._points_rows[r][rolls_left == ROLLS_PER_TURN - 1] * counts_now,  # points_now: 0 where closed
                sheet_part,  # own_open … score_lead
            )
        )

    def _sheet_part(self, game: Game, seat: int) -> tuple[np.ndarray, np.ndarray]:
        """What the sheets alone decide: which lines' points count now (1.0 / 0.0) and the
        slices from ``own_open`` to the end. Recomputed only when the sheets change, with
        table look-ups (a numpy ufunc on a row of 11 costs about a microsecond)."""
        sheets = game.sheets
        key = (seat, sheets.tobytes())
        if key == self._sheets_key:
            return self._sheets_part
        totals, filled, open_bits = game._sheet_facts()
        L, s = self.num_lines, self.layout
        part = np.empty(self.size - self._part_start, dtype=np.float32)
        part[:L] = OPEN_LINES[L][open_bits[seat]]  # own_open
        part[L : 2 * L] = self.points_obs[self._lines, sheets[seat]]  # own_points
        part[2 * L] = totals[seat] / self.total_max  # own_total (float64, rounded to float32 once)
        part[2 * L + 1] = filled[seat] / L  # round
        if self.num_players > 1:
            best = -np.inf
            for k in range(1, self.num_players):  # opponent_k_open, opponent_k_points, opponent_k_total
                other = (seat + k) % self.num_players
                at = s[f"opponent_{k}_open"].start - self._part_start
                part[at : at + L] = OPEN_LINES[L][open_bits[other]]
                part[at + L : at + 2 * L] = self.points_obs[self._lines, sheets[other]]
                part[at + 2 * L] = totals[other] / self.total_max
                best = max(best, float(totals[other]))
            lead = (float(totals[seat]) - best) / self.total_max
            part[-1] = min(max(lead, -1.0), 1.0)  # score_lead
        generala_scored = self._generala >= 0 and sheets[seat, self._generala] > 0
        ckey = (open_bits[seat], generala_scored)
        counts_now = self._counts_now.get(ckey)
        if counts_now is None:
            counts_now = OPEN_LINES[L][open_bits[seat]].astype(np.float32)
            if self._double >= 0 and not generala_scored:
                counts_now[self._double] = 0.0  # double generala needs points on the generala line
            self._counts_now[ckey] = counts_now
        self._sheets_key, self._sheets_part = key, (counts_now, part)
        return self._sheets_part
