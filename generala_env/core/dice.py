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

from generala_env.core.checks import is_whole

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


_FACE_VALUES = np.arange(1, FACES + 1)
KEY_WEIGHTS = 6 ** np.arange(FACES, dtype=np.int64)

ROLLS = np.array(list(itertools.combinations_with_replacement(range(1, FACES + 1), DICE)), dtype=np.int8)
NUM_ROLLS = len(ROLLS)  # 252
ROLL_COUNTS = (ROLLS[:, :, None] == _FACE_VALUES).sum(axis=1, dtype=np.int8)
FIVE_ALIKE = ROLL_COUNTS.max(axis=1) == DICE  # [roll]: five dice of one face (a generala)
FIVE_ALIKE.flags.writeable = False

KEEPS_LIST = [k for n in range(DICE + 1) for k in itertools.combinations_with_replacement(range(1, FACES + 1), n)]
NUM_KEEPS = len(KEEPS_LIST)  # 462
KEEP_COUNTS = np.array([[k.count(f) for f in range(1, FACES + 1)] for k in KEEPS_LIST], dtype=np.int8)
KEEP_SIZE = KEEP_COUNTS.sum(axis=1).astype(np.int8)

_KEY_SPACE = 6**FACES
ROLL_OF_KEY = np.full(_KEY_SPACE, -1, dtype=np.int16)
KEEP_OF_KEY = np.full(_KEY_SPACE, -1, dtype=np.int16)
ROLL_OF_KEY[ROLL_COUNTS.astype(np.int64) @ KEY_WEIGHTS] = np.arange(NUM_ROLLS)
KEEP_OF_KEY[KEEP_COUNTS.astype(np.int64) @ KEY_WEIGHTS] = np.arange(NUM_KEEPS)


def checked_faces(what: str, values, count: int | None = None, most: int = DICE) -> list[int]:
    """``values`` as faces: whole numbers (``TypeError`` otherwise), each from 1 to 6, ``count``
    of them (or at most ``most``), else ``ValueError`` naming ``what``. The one check of given faces."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{what} must be a sequence of faces, got {values!r}")
    vs = values.ravel().tolist() if isinstance(values, np.ndarray) else list(values)
    if not all(is_whole(v) for v in vs):
        raise TypeError(f"{what} must be whole numbers, got {vs}")
    fs = [int(v) for v in vs]
    if (len(fs) != count if count is not None else len(fs) > most) or any(not 1 <= f <= FACES for f in fs):
        words = ("no", "one", "two", "three", "four", "five")
        many = words[count] if count is not None and count <= DICE else f"{count}" if count is not None else f"at most {words[most]}"
        raise ValueError(f"{what} must be {many} faces from 1 to {FACES}, got {fs}")
    return fs


def roll_index(faces) -> int:
    """Index in ``ROLLS`` of five faces given in any order."""
    return int(ROLL_OF_KEY[_key(counts_of(checked_faces("a roll", faces, DICE)))])


def keep_index(faces) -> int:
    """Index in ``KEEPS`` of zero to five faces given in any order."""
    return int(KEEP_OF_KEY[_key(counts_of(checked_faces("a keep", faces)))])


# HOLD_KEEP[r, m]: the keep made by holding mask m of roll r (bit i of m holds die i).
_HELD = (np.arange(NUM_MASKS)[:, None] >> np.arange(DICE)) & 1  # (mask, die)
_HELD_COUNTS = np.einsum("md,rdf->rmf", _HELD, (ROLLS[:, :, None] == _FACE_VALUES).astype(np.int64))
HOLD_KEEP = KEEP_OF_KEY[_HELD_COUNTS @ KEY_WEIGHTS].astype(np.int16)


def _contains(big: np.ndarray, small: np.ndarray) -> np.ndarray:
    """``out[i, j]``: counts ``big[i]`` hold every die of counts ``small[j]`` (multiset inclusion)."""
    out = np.ones((len(big), len(small)), dtype=bool)
    for f in range(FACES):
        out &= big[:, f, None] >= small[None, :, f]
    return out


# KEEP_CONTAINS[k1, k2]: keep k1 holds every die of keep k2.
KEEP_CONTAINS = _contains(KEEP_COUNTS, KEEP_COUNTS)
# ROLL_CONTAINS_KEEP[r, k]: roll r holds every die of keep k.
ROLL_CONTAINS_KEEP = _contains(ROLL_COUNTS, KEEP_COUNTS)

# KEEP_ROLL_PROB[k, r]: the chance that rerolling the dice not in keep k ends on roll r:
# n! / (d1! ... d6!) / 6**n for the n missing dice with face counts d, where roll r
# contains keep k (0 elsewhere). The counts are exact integers; one division each.
_FACTORIAL = np.array([factorial(n) for n in range(DICE + 1)], dtype=np.int64)
_K, _R = np.nonzero(ROLL_CONTAINS_KEEP.T)
_MISSING = (ROLL_COUNTS[_R] - KEEP_COUNTS[_K]).astype(np.int64)
_N = DICE - KEEP_SIZE[_K].astype(np.int64)
KEEP_ROLL_PROB = np.zeros((NUM_KEEPS, NUM_ROLLS), dtype=np.float64)
KEEP_ROLL_PROB[_K, _R] = (_FACTORIAL[_N] // _FACTORIAL[_MISSING].prod(axis=1)) / FACES ** _N.astype(np.float64)
EMPTY_KEEP = keep_index([])
FULL_ROLL_PROB = KEEP_ROLL_PROB[EMPTY_KEEP].copy()  # probabilities of the 252 first rolls

# Every distinct proper keep of each roll (the rerolls worth considering), padded with -1.
_proper = [sorted(set(row)) for row in HOLD_KEEP[:, : NUM_MASKS - 1].tolist()]
ROLL_PROPER_KEEPS = np.full((NUM_ROLLS, max(map(len, _proper))), -1, dtype=np.int16)
for _r, _ks in enumerate(_proper):
    ROLL_PROPER_KEEPS[_r, : len(_ks)] = _ks
# One hold mask that makes each (roll, keep) pair: the lowest one (for agents that think in keeps).
MASK_FOR_KEEP = np.full((NUM_ROLLS, NUM_KEEPS), -1, dtype=np.int8)
for _m in range(NUM_MASKS - 1, -1, -1):  # lower masks overwrite higher ones
    MASK_FOR_KEEP[np.arange(NUM_ROLLS), HOLD_KEEP[:, _m]] = _m
del _HELD, _HELD_COUNTS, _K, _R, _MISSING, _N, _proper


def roll_dice(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` fair dice drawn from ``rng`` now, one call of ``rng.integers(1, 7, size=n)``.

    One of several draws: a :class:`DiceCup` takes a numpy generator's faces in blocks and
    calls this only for other generator-like objects; the vector env draws its own throws;
    seats, opponents' seeds and exploring starts come from the env's generator too.
    """
    return rng.integers(1, FACES + 1, size=n, dtype=np.int8)


class DiceCup:
    """An environment's dice: faces drawn from its generator in blocks, handed out in order.

    A numpy draw has a fixed cost that a throw of a few dice does not repay, so the cup
    draws ``block`` faces at once (``docs/performance.md``). The faces are still a
    function of the generator alone: same seed, same dice, same game, and a pickled cup
    carries the faces it has not handed out yet.

    A generator-like object that is not a ``numpy.random.Generator`` (a replay of
    recorded dice, a test's scripted faces) is asked for each throw as it comes, so it
    sees exactly the game's requests.
    """

    def __init__(self, rng, block: int = 1024):
        if not is_whole(block) or block < DICE:
            raise ValueError(f"block must be a whole number of faces, at least {DICE} (a throw), got {block!r}")
        self.rng = rng
        self.block = int(block) if isinstance(rng, np.random.Generator) else 0
        self.faces = np.zeros(0, dtype=np.int8)  # drawn so far; at[0] is the next to hand out (a compiled step checks both)
        self.at = np.zeros(2, dtype=np.int64)  # [next, len(faces)]: what a compiled game step reads and moves

    def throw(self, n: int) -> list[int]:
        """The next ``n`` faces."""
        if not self.block:
            return [int(f) for f in roll_dice(self.rng, n)]
        i = int(self.at[0])
        if i + n > len(self.faces):
            self.refill()
            i = 0
        self.at[0] = i + n
        return self.faces[i : i + n].tolist()

    def refill(self) -> None:
        """The faces not handed out yet, then a new block from the generator (what :meth:`throw`
        does when too few are left; a compiled step asks for it the same way)."""
        self.faces = np.concatenate((self.faces[int(self.at[0]) :], self.rng.integers(1, FACES + 1, size=self.block, dtype=np.int8)))
        self.at[:] = 0, len(self.faces)

    def __setstate__(self, state: dict) -> None:
        """Unpickling; a cup pickled when it kept its faces as a list gets them as an array."""
        if "_faces" in state:
            faces, i = state.pop("_faces"), state.pop("_next")
            state["faces"], state["at"] = np.array(faces, dtype=np.int8), np.array([i, len(faces)], dtype=np.int64)
        self.__dict__.update(state)


def cup_for(cup: DiceCup | None, rng) -> DiceCup:
    """``cup`` while it draws from ``rng``; a new cup once the generator was replaced
    (``reset(seed=...)`` makes a new one, and tests set their own)."""
    return cup if cup is not None and cup.rng is rng else DiceCup(rng)


def throw(rng, n: int):
    """``n`` faces from a :class:`DiceCup` or from a generator (``integers(low, high, size=, dtype=)``)."""
    return rng.throw(n) if rng.__class__ is DiceCup else roll_dice(rng, n)
