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
from .scoring import blocked_line, line_max, points_table

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
        points = points_table(rules)
        self.points_now = np.ascontiguousarray((points.astype(np.float32) / self.line_max[:, None, None]).transpose(1, 2, 0))
        written = np.arange(max(int(points.max()), 0) + 2)
        written[-1] = 0
        self.points_obs = (written[None, :] / self.line_max[:, None].astype(np.float64)).astype(np.float32)  # as int / float32 rounds
        self._generala, self._double = rules.generala_line, rules.double_generala_line
        self._served_win = rules.served_generala_wins(num_players)
        # the slices' starts, as the numba encoders take them (-1: absent)
        s = self.layout
        assert s["dice_sorted"].start == s["dice_counts"].stop  # they write both from one table row
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
        from . import batched  # numba, when it is there (loaded on first use: importing the package stays light)

        self._kernel = batched.encode_game if batched.NUMBA else None

    def encode(self, game: Game, seat: int) -> np.ndarray:
        """The observation of ``game`` from ``seat``: compiled when numba is there, else NumPy
        (the two agree bit for bit; tests check it)."""
        if self._kernel is None:
            return self.encode_numpy(game, seat)
        out = np.empty(self.size, dtype=np.float32)
        self._kernel(
            out,
            game.roll,
            game.rolls_left,
            game.locked,
            game.player,
            game.sheets,
            seat,
            self.points_now,
            self.points_obs,
            self.total_max,
            self.starts,
            self.opponent_starts,
            self._generala,
            self._double,
            self._served_win,
        )
        return out

    def encode_numpy(self, game: Game, seat: int) -> np.ndarray:
        """:meth:`encode` in NumPy (without numba, and the reference the compiled encoder is
        tested against). Divisions are ``int / float32`` in float64, rounded to float32 once."""
        s = self.layout
        obs = np.zeros(self.size, dtype=np.float32)
        r, rolls_left = game.roll, game.rolls_left
        obs[: s["first_roll"].stop] = _DICE_OBS[r, rolls_left]  # dice_counts, dice_sorted, rolls_left, first_roll
        obs[s["locked_counts"].start : s["served_generala"].stop] = _LOCKED_OBS[game.locked, int(game.served_generala_pending())]
        sheet = game.sheets[seat]
        open_ = sheet == OPEN
        now = self.points_now[r, int(rolls_left == ROLLS_PER_TURN - 1)] * open_  # 0 where the line is closed
        blocked = blocked_line(self.rules, game.generala_scored(seat))
        if blocked >= 0:
            now[blocked] = 0.0
        obs[s["points_now"]] = now
        own = float(np.maximum(sheet, 0).sum())
        obs[s["own_open"]] = open_
        obs[s["own_points"]] = np.maximum(sheet, 0) / self.line_max
        obs[s["own_total"]] = own / self.total_max
        obs[s["round"]] = (~open_).sum() / len(sheet)
        if self.num_players > 1:
            best = -np.inf
            for k in range(1, self.num_players):
                other = game.sheets[(seat + k) % self.num_players]
                total = float(np.maximum(other, 0).sum())
                obs[s[f"opponent_{k}_open"]] = other == OPEN
                obs[s[f"opponent_{k}_points"]] = np.maximum(other, 0) / self.line_max
                obs[s[f"opponent_{k}_total"]] = total / self.total_max
                best = max(best, total)
            obs[s["score_lead"]] = min(max((own - best) / self.total_max, -1.0), 1.0)
        return obs
