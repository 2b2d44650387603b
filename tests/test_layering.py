"""The layers and what importing them costs.

``generala_env`` stands alone (it imports neither ``agents`` nor ``training``, not even
inside a function), playing against agents loads no torch, and the dice tables that are
built at import are the ones the plain loops of the game's definition give.
"""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np

from generala_env import dice


# -- the dice tables, built with arrays at import, against the definition -------------------
def keep_roll_prob_by_loops() -> np.ndarray:
    """``KEEP_ROLL_PROB`` as the definition says it, one pair of keep and roll at a time."""

    def multinomial_prob(counts) -> float:
        n = int(sum(counts))
        ways = factorial(n)
        for c in counts:
            ways //= factorial(int(c))
        return ways / dice.FACES**n

    out = np.zeros((dice.NUM_KEEPS, dice.NUM_ROLLS), dtype=np.float64)
    for k, kc in enumerate(dice.KEEP_COUNTS):
        for r, rc in enumerate(dice.ROLL_COUNTS):
            d = rc - kc
            if (d >= 0).all():
                out[k, r] = multinomial_prob(d)
    return out


def test_keep_roll_prob_is_the_multinomial_of_the_missing_dice():
    assert dice.KEEP_ROLL_PROB.dtype == np.float64
    assert np.array_equal(dice.KEEP_ROLL_PROB, keep_roll_prob_by_loops())  # bit for bit
    assert np.allclose(dice.KEEP_ROLL_PROB.sum(axis=1), 1.0)
    assert dice.FULL_ROLL_PROB[dice.roll_index([6] * 5)] == 1 / 6**5


def test_the_other_tables_by_loops():
    rolls = list(itertools.combinations_with_replacement(range(1, 7), 5))
    keeps = [k for n in range(6) for k in itertools.combinations_with_replacement(range(1, 7), n)]
    assert dice.ROLLS.tolist() == [list(r) for r in rolls]
    assert dice.KEEPS_LIST == keeps
    assert dice.ROLL_COUNTS.tolist() == [dice.counts_of(r).tolist() for r in rolls]
    assert dice.KEEP_COUNTS.tolist() == [dice.counts_of(k).tolist() for k in keeps]
    for r, faces in enumerate(rolls):
        assert dice.roll_index(faces[::-1]) == r
        for m in range(dice.NUM_MASKS):
            held = [f for i, f in enumerate(faces) if m >> i & 1]
            assert dice.HOLD_KEEP[r, m] == dice.keep_index(held)
        for k in range(dice.NUM_KEEPS):
            made_by = [m for m in range(dice.NUM_MASKS) if dice.HOLD_KEEP[r, m] == k]
            assert dice.MASK_FOR_KEEP[r, k] == (min(made_by) if made_by else -1)
        proper = sorted({int(dice.HOLD_KEEP[r, m]) for m in range(dice.NUM_MASKS - 1)})
        assert dice.ROLL_PROPER_KEEPS[r].tolist() == proper + [-1] * (dice.ROLL_PROPER_KEEPS.shape[1] - len(proper))
    kc, rc = dice.KEEP_COUNTS, dice.ROLL_COUNTS
    assert np.array_equal(dice.KEEP_CONTAINS, np.all(kc[:, None, :] >= kc[None, :, :], axis=2))
    assert np.array_equal(dice.ROLL_CONTAINS_KEEP, np.all(rc[:, None, :] >= kc[None, :, :], axis=2))
    assert [dice.keep_index(k) for k in keeps] == list(range(dice.NUM_KEEPS))
