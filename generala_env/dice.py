"""The finite world of five dice, precomputed once.

* ``ROLLS``: the 252 distinct rolls (multisets of five faces), each as sorted faces.
* ``KEEPS``: the 462 multisets of zero to five faces a player can hold back.
* ``HOLD_KEEP[roll, mask]``: which keep a 5-bit hold mask makes of a roll (bit ``i``
  holds the ``i``-th die of the sorted roll).
* ``KEEP_ROLL_PROB[keep, roll]``: probability of ending on ``roll`` after rerolling
  the dice not in ``keep``.

Everything is indexed by small integers so that a game step is table look-ups.
"""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np

FACES = 6
DICE = 5
NUM_MASKS = 1 << DICE  # 32 hold masks
ALL_HELD = NUM_MASKS - 1


def _key(counts) -> int:
    """Base-6 key of a count vector (counts of faces 1..6, each 0..5)."""
    k = 0
    for c in reversed(list(counts)):
        k = k * 6 + int(c)
    return k


def counts_of(faces) -> np.ndarray:
    c = np.zeros(FACES, dtype=np.int8)
    for f in faces:
        c[int(f) - 1] += 1
    return c


ROLLS = np.array(list(itertools.combinations_with_replacement(range(1, FACES + 1), DICE)), dtype=np.int8)
NUM_ROLLS = len(ROLLS)  # 252
ROLL_COUNTS = np.array([counts_of(r) for r in ROLLS], dtype=np.int8)

KEEPS_LIST = [k for n in range(DICE + 1) for k in itertools.combinations_with_replacement(range(1, FACES + 1), n)]
NUM_KEEPS = len(KEEPS_LIST)  # 462
KEEP_COUNTS = np.array([counts_of(k) for k in KEEPS_LIST], dtype=np.int8)
KEEP_SIZE = KEEP_COUNTS.sum(axis=1).astype(np.int8)

_KEY_SPACE = 6**FACES
ROLL_OF_KEY = np.full(_KEY_SPACE, -1, dtype=np.int16)
KEEP_OF_KEY = np.full(_KEY_SPACE, -1, dtype=np.int16)
for _i, _c in enumerate(ROLL_COUNTS):
    ROLL_OF_KEY[_key(_c)] = _i
for _i, _c in enumerate(KEEP_COUNTS):
    KEEP_OF_KEY[_key(_c)] = _i
KEY_WEIGHTS = 6 ** np.arange(FACES, dtype=np.int64)


def roll_index(faces) -> int:
    """Index in ``ROLLS`` of five faces given in any order."""
    if len(faces) != DICE or any(not 1 <= int(f) <= FACES for f in faces):
        raise ValueError(f"a roll is five faces from 1 to 6, got {list(faces)}")
    return int(ROLL_OF_KEY[_key(counts_of(faces))])


def keep_index(faces) -> int:
    """Index in ``KEEPS`` of zero to five faces given in any order."""
    if len(faces) > DICE or any(not 1 <= int(f) <= FACES for f in faces):
        raise ValueError(f"a keep is at most five faces from 1 to 6, got {list(faces)}")
    return int(KEEP_OF_KEY[_key(counts_of(faces))])


# HOLD_KEEP[r, m]: the keep made by holding mask m of roll r.
HOLD_KEEP = np.zeros((NUM_ROLLS, NUM_MASKS), dtype=np.int16)
for _r, _faces in enumerate(ROLLS):
    for _m in range(NUM_MASKS):
        HOLD_KEEP[_r, _m] = keep_index([f for i, f in enumerate(_faces) if _m >> i & 1])

# KEEP_CONTAINS[k1, k2]: keep k1 holds every die of keep k2 (multiset inclusion).
KEEP_CONTAINS = np.all(KEEP_COUNTS[:, None, :] >= KEEP_COUNTS[None, :, :], axis=2)
# ROLL_CONTAINS_KEEP[r, k]: roll r holds every die of keep k.
ROLL_CONTAINS_KEEP = np.all(ROLL_COUNTS[:, None, :] >= KEEP_COUNTS[None, :, :], axis=2)


def _multinomial_prob(counts) -> float:
    n = int(sum(counts))
    ways = factorial(n)
    for c in counts:
        ways //= factorial(int(c))
    return ways / FACES**n


KEEP_ROLL_PROB = np.zeros((NUM_KEEPS, NUM_ROLLS), dtype=np.float64)
for _k, _kc in enumerate(KEEP_COUNTS):
    for _r, _rc in enumerate(ROLL_COUNTS):
        _d = _rc - _kc
        if (_d >= 0).all():
            KEEP_ROLL_PROB[_k, _r] = _multinomial_prob(_d)
EMPTY_KEEP = keep_index([])
FULL_ROLL_PROB = KEEP_ROLL_PROB[EMPTY_KEEP].copy()  # probabilities of the 252 first rolls

# Every distinct proper keep of each roll (the rerolls worth considering), padded with -1.
_proper = [sorted({int(HOLD_KEEP[r, m]) for m in range(NUM_MASKS - 1)}) for r in range(NUM_ROLLS)]
ROLL_PROPER_KEEPS = np.full((NUM_ROLLS, max(map(len, _proper))), -1, dtype=np.int16)
for _r, _ks in enumerate(_proper):
    ROLL_PROPER_KEEPS[_r, : len(_ks)] = _ks
# One hold mask that makes each (roll, keep) pair: the lowest one (for agents that think in keeps).
MASK_FOR_KEEP = np.full((NUM_ROLLS, NUM_KEEPS), -1, dtype=np.int8)
for _r in range(NUM_ROLLS):
    for _m in range(NUM_MASKS - 1, -1, -1):
        MASK_FOR_KEEP[_r, HOLD_KEEP[_r, _m]] = _m


def roll_dice(rng: np.random.Generator, n: int) -> np.ndarray:
    """Draw ``n`` fair dice from ``rng`` (the only place the game draws randomness)."""
    return rng.integers(1, FACES + 1, size=n, dtype=np.int8)


class DiceCup:
    """An environment's dice: faces drawn from its generator in blocks, handed out in order.

    A numpy draw costs about as much as the rest of a game step, whatever its size, so
    the cup draws ``block`` faces at once (one call per ~200 decisions). The faces are
    still a function of the generator alone: same seed, same dice, same game, and a
    pickled cup carries the faces it has not handed out yet.

    A generator-like object that is not a ``numpy.random.Generator`` (a replay of
    recorded dice, a test's scripted faces) is asked for each throw as it comes, so it
    sees exactly the game's requests.
    """

    def __init__(self, rng, block: int = 1024):
        self.rng = rng
        self.block = block if isinstance(rng, np.random.Generator) else 0
        self._faces: list[int] = []
        self._next = 0

    def throw(self, n: int) -> list[int]:
        """The next ``n`` faces."""
        if not self.block:
            return [int(f) for f in roll_dice(self.rng, n)]
        i = self._next
        if i + n > len(self._faces):
            self._faces = self._faces[i:] + self.rng.integers(1, FACES + 1, size=self.block, dtype=np.int8).tolist()
            i = 0
        self._next = i + n
        return self._faces[i : i + n]


def cup_for(cup: DiceCup | None, rng) -> DiceCup:
    """``cup`` while it draws from ``rng``; a new cup once the generator was replaced
    (``reset(seed=...)`` makes a new one, and tests set their own)."""
    return cup if cup is not None and cup.rng is rng else DiceCup(rng)


def throw(rng, n: int):
    """``n`` faces from a :class:`DiceCup` or from a generator (``integers(low, high, size=, dtype=)``)."""
    return rng.throw(n) if rng.__class__ is DiceCup else roll_dice(rng, n)


def reroll(keep: int, drawn) -> int:
    """The roll made by a keep plus freshly drawn faces."""
    c = KEEP_COUNTS[keep].astype(np.int64)
    for f in drawn:
        c[int(f) - 1] += 1
    return int(ROLL_OF_KEY[int(c @ KEY_WEIGHTS)])
