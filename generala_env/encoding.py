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
from .game import OPEN, ROLLS_PER_TURN, Game
from .rules import RuleSet
from .scoring import line_max

LAYOUT_VERSION = 1

# The slices that depend on the dice alone, precomputed (float64 → float32 as a slice
# assignment would round them): dice_counts … first_roll by (roll, rolls_left), and
# locked_counts + served_generala by (locked keep, served generala pending).
_DICE_OBS = np.array(
    [[np.concatenate([ROLL_COUNTS[r] / 5.0, ROLLS[r] / 6.0, np.eye(3)[rl], [rl == ROLLS_PER_TURN - 1]]) for rl in range(3)] for r in range(len(ROLLS))],
    dtype=np.float32,
)
_LOCKED_OBS = np.array([[np.concatenate([KEEP_COUNTS[k] / 5.0, [p]]) for p in (0.0, 1.0)] for k in range(len(KEEP_COUNTS))], dtype=np.float32)


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
    """Turns a :class:`Game` into observations for any seat."""

    def __init__(self, rules: RuleSet, num_players: int):
        self.rules = rules
        self.num_players = num_players
        self.layout = observation_layout(rules, num_players)
        self.size = observation_size(rules, num_players)
        self.line_max = line_max(rules)
        self.total_max = float(self.line_max.sum())
        s = self.layout
        self._s = s
        self._opp = [(s[f"opponent_{k}_open"], s[f"opponent_{k}_points"], s[f"opponent_{k}_total"]) for k in range(1, num_players)]
        dmax = rules.lines.index("double_generala") if "double_generala" in rules.lines else -1
        self._double = dmax
        self._generala = rules.lines.index("generala") if "generala" in rules.lines else -1
        # encode() joins four pieces; they must be the layout's slices in order
        assert s["rolls_left"].start == 11 and s["locked_counts"].start == 15 and s["points_now"].start == 22
        assert s["own_open"].start == s["points_now"].stop
        self._points_of: np.ndarray | None = None  # the points table _points_now was made from
        self._points_now: np.ndarray | None = None
        self._sheets_key: tuple | None = None
        self._sheets_part: tuple[np.ndarray, np.ndarray] | None = None

    def encode(self, game: Game, seat: int) -> np.ndarray:
        r, first = game.roll, int(game.rolls_left == ROLLS_PER_TURN - 1)
        if game.points is not self._points_of:  # points / line max, for every roll: (252, 2, L) float32
            self._points_now = np.ascontiguousarray((game.points.astype(np.float32) / self.line_max[:, None, None]).transpose(1, 2, 0))
            self._points_of = game.points
        counts_now, sheet_part = self._sheet_part(game.sheets, seat)
        return np.concatenate(
            (
                _DICE_OBS[r, game.rolls_left],  # dice_counts, dice_sorted, rolls_left, first_roll
                _LOCKED_OBS[game.locked, int(game.served_generala_pending())],  # locked_counts, served_generala
                self._points_now[r, first] * counts_now,  # points_now: 0 where the line is closed
                sheet_part,  # own_open … score_lead
            )
        )

    def _sheet_part(self, sheets: np.ndarray, seat: int) -> tuple[np.ndarray, np.ndarray]:
        """What the sheets alone decide: which lines' points count now (1.0 / 0.0) and the
        slices from ``own_open`` to the end. Recomputed only when the sheets change."""
        key = (seat, sheets.tobytes())
        if key == self._sheets_key:
            return self._sheets_part
        s = self._s
        obs = np.zeros(self.size, dtype=np.float32)
        sheet = sheets[seat]
        open_ = sheet == OPEN
        counts_now = open_.astype(np.float32)
        if self._double >= 0 and not sheet[self._generala] > 0:
            counts_now[self._double] = 0.0  # double generala needs points on the generala line
        obs[s["own_open"]] = open_
        written = np.where(open_, 0, sheet)
        obs[s["own_points"]] = written / self.line_max
        own_total = float(written.sum())
        obs[s["own_total"]] = own_total / self.total_max
        obs[s["round"]] = (~open_).sum() / len(sheet)

        if self.num_players > 1:
            best = -np.inf
            for k, (so, sp, st) in enumerate(self._opp, start=1):
                other = sheets[(seat + k) % self.num_players]
                o_open = other == OPEN
                o_written = np.where(o_open, 0, other)
                obs[so] = o_open
                obs[sp] = o_written / self.line_max
                t = float(o_written.sum())
                obs[st] = t / self.total_max
                best = max(best, t)
            obs[s["score_lead"]] = np.clip((own_total - best) / self.total_max, -1.0, 1.0)
        self._sheets_key, self._sheets_part = key, (counts_now, obs[s["own_open"].start :])
        return self._sheets_part
