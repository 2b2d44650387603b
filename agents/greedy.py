"""The greedy player, written once: the open line worth the most points now.

Reroll rule: while rolls are left and no open combination line (straight … double generala)
scores with the dice, hold every die of the most common face (the higher face on ties; under
``locked_holds`` plus the locked dice) and reroll the rest. Ties between lines go to the line
with the smallest possible worth, so a zero crosses out the cheapest line.

:func:`greedy_actions` is that rule as a loop over games compiled by numba (like the env's own
loops in :mod:`generala_env.compiled.batched`); :class:`~generala_agents.baselines.GreedyAgent` plays it
for its one game and :class:`~generala_agents.batched.BatchedGreedy` for many games of a vector env.
"""

from __future__ import annotations

import numpy as np

from generala_env.compiled.batched import FIRST_ROLL, GameState, U, blocked_line, cached_njit
from generala_env.core.dice import FACES, KEEP_COUNTS, KEEP_OF_KEY, KEY_WEIGHTS, MASK_FOR_KEEP, NUM_MASKS, ROLL_COUNTS, ROLLS
from generala_env.core.encoding import Encoder
from generala_env.core.game import OPEN
from generala_env.core.rules import RuleSet
from generala_env.core.scoring import points_table

from .base import COMBOS

# greedy's reroll: every die of the most common face (the higher face on ties)
TOP_FACE = np.array([max(range(FACES), key=lambda f: (c[f], f)) for c in ROLL_COUNTS])
TOP_KEEP = KEEP_OF_KEY[ROLL_COUNTS[np.arange(len(ROLLS)), TOP_FACE].astype(np.int64) * KEY_WEIGHTS[TOP_FACE]].astype(np.int64)
MASK_FOR_KEEP_I = MASK_FOR_KEEP.astype(np.int64)
KEEP_COUNTS_I = KEEP_COUNTS.astype(np.int64)
KEY_WEIGHTS_I = KEY_WEIGHTS.astype(np.int64)
KEEP_OF_KEY_I = KEEP_OF_KEY.astype(np.int64)


def greedy_tables(rules: RuleSet) -> tuple:
    """What :func:`greedy_actions` reads for ``rules``: points, tiebreak, combo lines, the
    reroll's keep and mask tables, and the rules' numbers (gen, dbl, locked_holds)."""
    points = points_table(rules).astype(np.float64)  # greedy scores in float
    tiebreak = Encoder(rules, 1).line_max / 1000.0  # float32: cross out the cheapest line on ties
    combo = np.array([line in COMBOS for line in rules.lines])
    return (points, tiebreak, combo, TOP_KEEP, MASK_FOR_KEEP_I, rules.generala_line, rules.double_generala_line, rules.locked_holds)


@cached_njit(error_model="numpy")  # blocked_line is inlined from generala_env.core.engine: the cache is keyed on it too
def greedy_actions(games, masks, state, greedy):
    """``GreedyAgent.act`` for each game (legal ``masks[j]``, the mover's view): ``state`` is the
    games' :class:`~generala_env.core.engine.GameState` as a tuple, ``greedy`` the greedy's tables
    (points, tiebreak, combo, top_keep, mask_for_keep) and the rules' numbers (gen, dbl,
    locked_holds)."""
    st = GameState(*state)
    roll, rolls_left, locked, player, sheets = st.roll, st.rolls_left, st.locked, st.player, st.sheets
    points, tiebreak, combo, top_keep, mask_for_keep, gen, dbl, locked_holds = greedy
    num_lines = U(sheets.shape[2])
    out = np.empty(len(games), dtype=np.int64)
    pts = np.empty(num_lines)
    for j in range(U(len(games))):  # unsigned indices: see encode()
        g = U(games[j])
        r, me = U(roll[g]), U(player[g])
        served = U(1) if rolls_left[g] == FIRST_ROLL else U(0)
        blocked = blocked_line(dbl, sheets[g, me, gen])
        combo_scores = False
        for l in range(num_lines):
            pts[l] = 0.0 if l == blocked else points[l, r, served]
            if combo[l] and sheets[g, me, l] == OPEN and pts[l] > 0:
                combo_scores = True
        if rolls_left[g] > 0 and not combo_scores:
            keep = top_keep[r]  # every die of the most common face (the higher on ties)
            if locked_holds:  # plus the locked dice
                key = 0
                for f in range(6):
                    key += max(KEEP_COUNTS_I[keep, f], KEEP_COUNTS_I[locked[g], f]) * KEY_WEIGHTS_I[f]
                keep = KEEP_OF_KEY_I[key]
            hold = mask_for_keep[r, keep]
            if masks[j, hold]:
                out[j] = hold
                continue
        best, best_v = -1, -np.inf
        for l in range(num_lines):
            v = pts[l] - tiebreak[l]
            if masks[j, U(NUM_MASKS) + l] and (best < 0 or v > best_v):
                best, best_v = np.int64(l), v
        out[j] = NUM_MASKS + best
    return out
