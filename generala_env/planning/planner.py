"""The rule facts a planner reads, in one place: the solvers, td-search and the baselines ask here.

A planner (an exact solver, a search, a baseline that scores the dice) needs a few facts of a
decision that the game states once in :mod:`generala_env.core.engine` for the compiled loops: whether
the dice were served (thrown at the turn's first roll), what each line would score now (the
double generala line blocked while the generala line holds no points), and how a turn's
values become the values of its actions. They are given here for NumPy, vectorised over
sheets where a planner solves many sheets at once.
"""

from __future__ import annotations

import numpy as np

from generala_env.core.dice import HOLD_KEEP, NUM_MASKS
from generala_env.core.engine import FIRST_ROLL, OPEN
from generala_env.core.rules import RuleSet
from generala_env.core.scoring import blocked_line, generala_scored, points_table


def served(rolls_left):
    """Whether dice with ``rolls_left`` were served: thrown at the turn's first roll (a bool,
    or an array of them for an array)."""
    return np.asarray(rolls_left) == FIRST_ROLL if np.ndim(rolls_left) else rolls_left == FIRST_ROLL


def points_now(rules: RuleSet, sheets, roll: int, rolls_left: int) -> np.ndarray:
    """Points each line would get for the dice ``roll`` written now, for a sheet (``(L,)``, open
    lines :data:`~generala_env.core.engine.OPEN`) or sheets (``(..., L)``): the points table at the
    dice's served-ness, the blocked double generala line at 0. Filled lines are not masked."""
    sheets = np.asarray(sheets)
    pts = np.array(np.broadcast_to(points_table(rules)[:, roll, int(served(rolls_left))], sheets.shape), dtype=np.int64)
    blocked = rules.double_generala_line
    if blocked >= 0:
        pts[..., blocked] = np.where(generala_scored(rules, sheets), pts[..., blocked], 0)
    return pts


def write_points(rules: RuleSet, scored) -> np.ndarray:
    """``points[s, l, r, served]``: what writing roll ``r`` on line ``l`` scores for sheets whose
    generala line holds points (``scored[s]``) or not: the points table with the blocked line
    at 0 (what a solver adds to the value of the sheet that follows)."""
    scored = np.asarray(scored, dtype=bool)
    pts = np.broadcast_to(points_table(rules)[None], (len(scored), *points_table(rules).shape)).astype(np.float64)
    for flag in (False, True):
        line = blocked_line(rules, flag)
        if line >= 0:
            pts[scored == flag, line] = 0.0
    return pts


def sheet_index(rules: RuleSet, filled_mask, generala_is_scored):
    """The solvers' index of a sheet (an int, or an array for arrays): ``2 * filled_mask + flag``,
    ``flag`` being whether the generala line holds points where a double generala line exists
    (the one fact of a sheet beyond which lines are filled that changes what is left to score),
    else 0. Every table of a seat's sheet (the one- and two-player solvers, td-search, win-max)
    is indexed so."""
    flag = np.asarray(generala_is_scored, dtype=bool) & (rules.double_generala_line >= 0)
    index = np.asarray(filled_mask, dtype=np.int64) * 2 + flag
    return int(index) if index.ndim == 0 else index


def sheet_id(rules: RuleSet, sheet) -> int:
    """The solvers' index (:func:`sheet_index`) of one seat's sheet: its line values, open lines
    :data:`~generala_env.core.engine.OPEN`."""
    sheet = np.asarray(sheet)
    mask = int(((sheet != OPEN) << np.arange(len(sheet))).sum())
    return sheet_index(rules, mask, bool(generala_scored(rules, sheet)))


def turn_action_values(write: np.ndarray, K1: np.ndarray, K2: np.ndarray, roll: int, rolls_left: int, worst: float = -np.inf) -> np.ndarray:
    """The value of every action (hold masks 0..31, writes ``32 + l``) at a decision of a turn:
    a write is worth ``write[l, roll, served]``; a hold is worth the turn's value of the keep it
    makes, ``K1`` after the first roll and ``K2`` after the second (indexed by keep). Holding all
    five dice, and any hold with no roll left, is ``worst`` (not an action)."""
    vals = np.full(NUM_MASKS + write.shape[0], worst)
    vals[NUM_MASKS:] = write[:, roll, int(served(rolls_left))]
    if rolls_left > 0:
        vals[: NUM_MASKS - 1] = (K1 if served(rolls_left) else K2)[HOLD_KEEP[roll, : NUM_MASKS - 1]]
    return vals
