"""Per-game random streams in arrays: numpy's ``Generator(PCG64)`` draws, bit for bit, inside
compiled loops over many games.

A single env draws everything from ``np_random``, ``Generator(PCG64(SeedSequence(seed)))``
(gymnasium's ``seeding.np_random``): its seat, exploring starts, its opponents' seeds and its
dice (a :class:`~generala_env.core.dice.DiceCup` takes the faces 1024 at a time). A vector env of
``N`` games keeps one such stream per game as a row of one array and draws from it with the
functions below, which advance a row exactly as numpy advances its generator: game ``i`` of a
vector env seeded ``s`` can play what a single env seeded ``s + i`` plays.

The state of the streams, ``pcg``: ``(N, 6)`` ``uint64``, one row per game, numpy's
``PCG64.state`` spelled out (:data:`STATE_HI` ... :data:`UINTEGER`):

====  ==============  =====================================================================
col   name            what it is
====  ==============  =====================================================================
0     ``STATE_HI``    the 128-bit LCG state, high 64 bits (``state["state"]["state"] >> 64``)
1     ``STATE_LO``    its low 64 bits
2     ``INC_HI``      the 128-bit increment (odd), high 64 bits (``state["state"]["inc"]``)
3     ``INC_LO``      its low 64 bits
4     ``HAS_UINT32``  1 while half of the last 64-bit draw waits to be the next 32-bit draw
5     ``UINTEGER``    that half (numpy keeps it after it is handed out: so does the row)
====  ==============  =====================================================================

From Python: :func:`streams_from_seeds` (``N`` rows, each seeded as gymnasium seeds a
generator), :func:`stream_from_generator` and :func:`generator_from_stream` (the exact state,
both ways: a slow path can hand a row to numpy and take it back).

Compiled (``numba.njit(inline="always")``, or plain Python without numba or with
``GENERALA_NUMBA=0``: same draws, only slow), each taking the streams and a game's row ``g``
and advancing that row as the named numpy call advances its generator:

* :func:`next_uint64`, :func:`next_uint32`: the bit generator's raw draws;
* :func:`faces_into`: ``integers(1, 7, size=count, dtype=np.int8)`` (what a cup refill asks);
* :func:`below`: ``integers(n)`` (a seat, a random opponent's pick); ``integers(low, high)``
  is ``low + below(high - low)``, and ``integers(low, high, size=k)`` in the default
  ``int64`` is ``k`` such draws in turn (``prefilled_sheets`` draws its line count and its
  faces so);
* :func:`seed63`: ``integers(2**63)`` (an opponent's seed);
* :func:`uniform`: ``random()`` (whether an exploring start fires);
* :func:`permutation_into`: ``permutation(n)`` (an exploring start's lines);
* :func:`seeded_row`: the row of ``np.random.default_rng(seed)`` (an opponent reseeded in a loop).

A cup per game (:func:`empty_cups`, :func:`cup_fill`, :func:`cup_face`) hands out faces as a
:class:`~generala_env.core.dice.DiceCup` does (same blocks from the same stream, same order), from a
row of faces drawn a block at a time.

The arithmetic is numpy's (``pcg64.h``, ``distributions.c``, ``SeedSequence``): PCG64's 128-bit
LCG in 64-bit halves with XSL-RR output, Lemire's bounded draws with their rejections, the
byte buffer of the ``uint8`` path (local to one call, as in numpy), the ``uint32`` buffer kept
in the row across calls.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.core.dice import FACES

# The switch of generala_env.compiled.batched, read here too: this module is for batched's loops to
# inline, and does not import batched.
try:
    if os.environ.get("GENERALA_NUMBA", "1") == "0":
        raise ImportError("disabled by GENERALA_NUMBA=0")
    from numba import njit

    NUMBA = True
except ImportError:  # plain Python: same draws, much slower
    NUMBA = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]  # numba's njit, as a no-op
        return (lambda f: f) if not args or not callable(args[0]) else args[0]


STATE_HI, STATE_LO, INC_HI, INC_LO, HAS_UINT32, UINTEGER = range(6)
ROW = 6  # numbers in a game's row of the streams

BLOCK = 1024  # faces a cup draws at once (DiceCup's block)

# A game's cup: the faces a DiceCup holds, in a row of ``faces`` ``(N, CUP_FACES)`` int8 with ``at``
# ``(N, 2)`` int64, the next face and the end of each row. When a throw needs more faces than are
# left, the faces left move to the row's front and a block of BLOCK faces drawn from the game's
# stream follows them (DiceCup.refill). A row is 1,032 bytes a game, 4 MB for 4,096 games. Cups
# of 88 bytes a game that drew each face again, from a copy of the stream, as it was handed out
# were slower: with them (and the ends of games in Python) the vector env stepped 0.93x as fast at
# N = 4096 (`benchmarks/engine_ab.py --base c38cf5d`: this code 1.074x [1.041-1.098] that one).
CUP_FACES = BLOCK + 8  # a block and the faces left from the last one (fewer than a throw), rounded up

# Every constant the compiled functions use is a uint64: numba would make a float of a uint64
# mixed with an int64, and numpy checks no overflow of uint64 shifts and masks.
_U0, _U1, _U3 = np.uint64(0), np.uint64(1), np.uint64(3)
_U8, _U11, _U16, _U32 = np.uint64(8), np.uint64(11), np.uint64(16), np.uint64(32)
_U58, _U63, _U64 = np.uint64(58), np.uint64(63), np.uint64(64)
_M8, _M32, _M64 = np.uint64(0xFF), np.uint64(0xFFFF_FFFF), np.uint64(0xFFFF_FFFF_FFFF_FFFF)
_MASK64 = (1 << 64) - 1

# PCG64's multiplier (PCG_DEFAULT_MULTIPLIER_128), in halves.
_MULT_HI, _MULT_LO = np.uint64(2549297995355413924), np.uint64(4865540595714422341)
_TO_DOUBLE = 1.0 / 9007199254740992.0  # 2**-53: a double in [0, 1) from the top 53 bits

# A face: a byte scaled by 6 (Lemire); a product whose low byte is below (256 - 6) % 6 is drawn again.
_SIDES = np.uint64(FACES)
_FACE_THRESHOLD = np.uint64((256 - FACES) % FACES)

# SeedSequence's hash constants (numpy/random/bit_generator.pyx), on 32-bit words.
_INIT_A, _MULT_A = np.uint64(0x43B0D7E5), np.uint64(0x931E8875)
_INIT_B, _MULT_B = np.uint64(0x8B51F9DD), np.uint64(0x58F38DED)
_MIX_MULT_L, _MIX_MULT_R = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
_TWO32 = np.uint64(1 << 32)


# The arithmetic under PCG64, on uint64, wrapping. Compiled, numba's uint64 operations wrap and
# the 128-bit product is one LLVM multiply; numpy's scalars would wrap too but warn, so plain
# Python computes on Python ints.
if NUMBA:
    from llvmlite import ir  # type: ignore[import-untyped]
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def _mul_high(typingctx, a, b):
        """The high 64 bits of ``a * b`` (two uint64): one 128-bit multiply in LLVM."""

        def codegen(context, builder, signature, args):
            wide = ir.IntType(128)
            product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
            return builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))

        return types.uint64(types.uint64, types.uint64), codegen


def _add_compiled(a, b):
    """``a + b`` mod 2**64 (two uint64)."""
    return a + b


def _mul_compiled(a, b):
    """``a * b`` mod 2**64 (two uint64)."""
    return a * b


def _mul_wide_compiled(a, b):
    """``a * b`` of two uint64 as 128 bits: ``(high, low)``."""
    return _mul_high(a, b), a * b


def _add_python(a, b):
    """``a + b`` mod 2**64 (two uint64)."""
    return np.uint64((int(a) + int(b)) & _MASK64)


def _mul_python(a, b):
    """``a * b`` mod 2**64 (two uint64)."""
    return np.uint64((int(a) * int(b)) & _MASK64)


def _mul_wide_python(a, b):
    """``a * b`` of two uint64 as 128 bits: ``(high, low)``."""
    product = int(a) * int(b)
    return np.uint64(product >> 64), np.uint64(product & _MASK64)


_inline = njit(inline="always", error_model="numpy")
_add = _inline(_add_compiled) if NUMBA else _add_python
_mul = _inline(_mul_compiled) if NUMBA else _mul_python
_mul_wide = _inline(_mul_wide_compiled) if NUMBA else _mul_wide_python


@njit(inline="always", error_model="numpy")
def next_uint64(pcg, g):
    """The next 64 bits of game ``g``'s stream (``bit_generator.random_raw()``): the LCG steps
    (``state * MULT + inc`` mod 2**128), then XSL-RR of the new state."""
    s_hi, s_lo = pcg[g, STATE_HI], pcg[g, STATE_LO]
    hi, lo = _mul_wide(s_lo, _MULT_LO)
    hi = _add(hi, _add(_mul(s_lo, _MULT_HI), _mul(s_hi, _MULT_LO)))
    new_lo = _add(lo, pcg[g, INC_LO])
    carry = _U1 if new_lo < lo else _U0
    new_hi = _add(_add(hi, pcg[g, INC_HI]), carry)
    pcg[g, STATE_HI], pcg[g, STATE_LO] = new_hi, new_lo
    x, rot = new_hi ^ new_lo, new_hi >> _U58
    return (x >> rot) | (x << ((_U64 - rot) & _U63))


@njit(inline="always", error_model="numpy")
def next_uint32(pcg, g):
    """The next 32 bits (as a uint64): the low half of a new 64-bit draw, whose high half is
    kept in the row for the next call (numpy's ``has_uint32``)."""
    if pcg[g, HAS_UINT32] != _U0:
        pcg[g, HAS_UINT32] = _U0
        return pcg[g, UINTEGER]
    x = next_uint64(pcg, g)
    pcg[g, HAS_UINT32], pcg[g, UINTEGER] = _U1, x >> _U32
    return x & _M32


@njit(inline="always", error_model="numpy")
def _face(pcg, g, buf, left):
    """The next face of an ``integers(1, 7, size=..., dtype=np.int8)`` call on game ``g``'s
    stream, with the call's byte buffer ``buf`` and its ``left`` bytes: ``(face, buf, left)``.
    A face is one byte of a 32-bit draw (four a draw), a byte that would bias it drawn again."""
    while True:
        if left == _U0:
            buf, left = next_uint32(pcg, g), _U3
        else:
            buf, left = buf >> _U8, left - _U1
        m = (buf & _M8) * _SIDES
        if (m & _M8) >= _FACE_THRESHOLD:
            return _U1 + (m >> _U8), buf, left


@njit(inline="always", error_model="numpy")
def faces_into(pcg, g, out, start, count):
    """``out[start:start + count]`` = ``integers(1, 7, size=count, dtype=np.int8)`` of game ``g``
    (the bytes left in the buffer at the end of the call are dropped, as numpy drops them)."""
    buf, left = _U0, _U0
    for i in range(count):
        face, buf, left = _face(pcg, g, buf, left)
        out[start + i] = face


@njit(inline="always", error_model="numpy")
def _bounded(pcg, g, rng):
    """A number from 0 to ``rng`` (uint64, inclusive) as ``integers`` draws one:
    none for ``rng`` 0, Lemire on a 32-bit draw up to 2**32 - 1, else on a 64-bit draw."""
    if rng == _U0:
        return _U0
    if rng == _M64:
        return next_uint64(pcg, g)
    if rng == _M32:
        return next_uint32(pcg, g)
    if rng < _M32:
        excl = rng + _U1
        m = next_uint32(pcg, g) * excl
        if (m & _M32) < excl:
            threshold = (_M32 - rng) % excl
            while (m & _M32) < threshold:
                m = next_uint32(pcg, g) * excl
        return m >> _U32
    excl = rng + _U1
    x = next_uint64(pcg, g)
    if _mul(x, excl) < excl:
        threshold = (_M64 - rng) % excl
        while _mul(x, excl) < threshold:
            x = next_uint64(pcg, g)
    return _mul_wide(x, excl)[0]


@njit(inline="always", error_model="numpy")
def below(pcg, g, n):
    """``integers(n)`` of game ``g``: an int64 from 0 to ``n - 1`` (``n`` from 1 to 2**63 - 1)."""
    return np.int64(_bounded(pcg, g, np.uint64(n - 1)))


_SEED_RNG = np.uint64(2**63 - 1)


@njit(inline="always", error_model="numpy")
def seed63(pcg, g):
    """``integers(2**63)`` of game ``g`` (the seed an env gives each opponent at reset)."""
    return np.int64(_bounded(pcg, g, _SEED_RNG))


@njit(inline="always", error_model="numpy")
def uniform(pcg, g):
    """``random()`` of game ``g``: a float64 in [0, 1) from the top 53 bits of a 64-bit draw."""
    return np.float64(next_uint64(pcg, g) >> _U11) * _TO_DOUBLE


@njit(inline="always", error_model="numpy")
def _interval(pcg, g, most):
    """A number from 0 to ``most`` (uint64) as a shuffle draws one (``random_interval``): the
    smallest all-ones mask over ``most``, drawn again while above it."""
    if most == _U0:
        return _U0
    mask = most
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(shift)
    if most <= _M32:
        value = next_uint32(pcg, g) & mask
        while value > most:
            value = next_uint32(pcg, g) & mask
        return value
    value = next_uint64(pcg, g) & mask
    while value > most:
        value = next_uint64(pcg, g) & mask
    return value


@njit(inline="always", error_model="numpy")
def permutation_into(pcg, g, out, n):
    """``out[:n]`` = ``permutation(n)`` of game ``g``: 0 to ``n - 1`` shuffled as numpy shuffles
    (Fisher-Yates from the last place down, each swapped with a place drawn at or below it)."""
    for i in range(n):
        out[i] = i
    for i in range(n - 1, 0, -1):
        j = np.int64(_interval(pcg, g, np.uint64(i)))
        out[i], out[j] = out[j], out[i]


@njit(inline="always", error_model="numpy")
def _hashmix(value, hash_const):
    """SeedSequence's ``hashmix`` on 32-bit words (uint64 holding them): ``(value, hash_const)``."""
    value ^= hash_const
    hash_const = (hash_const * _MULT_A) & _M32
    value = (value * hash_const) & _M32
    return value ^ (value >> _U16), hash_const


@njit(inline="always", error_model="numpy")
def _mix(x, y):
    """SeedSequence's ``mix``: ``MIX_MULT_L * x - MIX_MULT_R * y`` on 32 bits, xor-shifted."""
    result = (((_MIX_MULT_L * x) & _M32) + _TWO32 - ((_MIX_MULT_R * y) & _M32)) & _M32
    return result ^ (result >> _U16)


@njit(inline="always", error_model="numpy")
def _pool_into(pool, src, dst, hash_const):
    """One step of SeedSequence's mixing: pool word ``dst`` mixed with the hash of word ``src``."""
    h, hash_const = _hashmix(pool[src], hash_const)
    pool[dst] = _mix(pool[dst], h)
    return hash_const


@njit(inline="always", error_model="numpy")
def _state_word(word, hash_const):
    """One 32-bit word of ``generate_state`` from one pool word: ``(word, hash_const)``."""
    word ^= hash_const
    hash_const = (hash_const * _MULT_B) & _M32
    word = (word * hash_const) & _M32
    return word ^ (word >> _U16), hash_const


@njit(inline="always", error_model="numpy")
def seeded_row(pcg, g, seed):
    """Row ``g`` := the stream of ``np.random.default_rng(seed)`` (``seed`` from 0 to 2**64 - 1;
    from Python, one from 2**63 up as a ``np.uint64``):
    SeedSequence hashes the seed's 32-bit words into a pool of four, draws four 64-bit words
    from it, and PCG64 is seeded with the first two as its state and the last two as its
    stream. The pool is kept in the row while it is mixed (its first four numbers)."""
    seed = np.uint64(seed)
    words = 1 if seed <= _M32 else 2
    pool = pcg[g]
    hash_const = _INIT_A
    for i in range(4):
        word = (seed & _M32 if i == 0 else seed >> _U32) if i < words else _U0
        pool[i], hash_const = _hashmix(word, hash_const)
    for src in range(4):
        for dst in range(4):
            if src != dst:
                hash_const = _pool_into(pool, src, dst, hash_const)
    p0, p1, p2, p3 = pool[0], pool[1], pool[2], pool[3]
    hash_const = _INIT_B
    w0, hash_const = _state_word(p0, hash_const)
    w1, hash_const = _state_word(p1, hash_const)
    w2, hash_const = _state_word(p2, hash_const)
    w3, hash_const = _state_word(p3, hash_const)
    w4, hash_const = _state_word(p0, hash_const)
    w5, hash_const = _state_word(p1, hash_const)
    w6, hash_const = _state_word(p2, hash_const)
    w7, hash_const = _state_word(p3, hash_const)
    init_hi, init_lo, seq_hi, seq_lo = w0 | (w1 << _U32), w2 | (w3 << _U32), w4 | (w5 << _U32), w6 | (w7 << _U32)
    # PCG's srandom: state 0, increment (seq << 1) | 1; a step; the state plus init; a step.
    pcg[g, INC_HI], pcg[g, INC_LO] = (seq_hi << _U1) | (seq_lo >> _U63), (seq_lo << _U1) | _U1
    pcg[g, STATE_HI], pcg[g, STATE_LO] = _U0, _U0
    pcg[g, HAS_UINT32], pcg[g, UINTEGER] = _U0, _U0
    next_uint64(pcg, g)
    lo = _add(pcg[g, STATE_LO], init_lo)
    carry = _U1 if lo < init_lo else _U0
    pcg[g, STATE_HI], pcg[g, STATE_LO] = _add(_add(pcg[g, STATE_HI], init_hi), carry), lo
    next_uint64(pcg, g)


@njit(inline="always", error_model="numpy")
def cup_fill(pcg, faces, at, g, n):
    """What ``DiceCup.throw(n)`` does first: when game ``g``'s cup holds fewer than ``n`` faces
    (at most :data:`~generala_env.core.dice.DICE`), the faces it holds move to the front of its row and
    a block of :data:`BLOCK` faces drawn from the game's stream now follows them."""
    i, end = at[g, 0], at[g, 1]
    if end - i >= n:
        return
    k = 0
    for j in range(i, end):
        faces[g, k] = faces[g, j]
        k += 1
    buf, left = _U0, _U0  # one integers(1, 7, size=BLOCK) call: its own byte buffer
    for d in range(BLOCK):
        face, buf, left = _face(pcg, g, buf, left)
        faces[g, k + d] = face
    at[g, 0], at[g, 1] = 0, k + BLOCK


@njit(inline="always", error_model="numpy")
def cup_face(faces, at, g):
    """The next face game ``g``'s cup hands out (one it holds: :func:`cup_fill` first)."""
    i = at[g, 0]
    at[g, 0] = i + 1
    return faces[g, i]


def empty_cups(num_games: int) -> tuple[np.ndarray, np.ndarray]:
    """Cups holding no faces (each a new ``DiceCup``): ``faces`` ``(num_games, CUP_FACES)`` int8
    and ``at`` ``(num_games, 2)`` int64."""
    return np.zeros((num_games, CUP_FACES), dtype=np.int8), np.zeros((num_games, 2), dtype=np.int64)


def _seed_value(seed) -> int:
    if not is_whole(seed) or seed < 0:
        raise ValueError(f"a seed is a whole number from 0 up, got {seed!r}")
    return int(seed)


def streams_from_seeds(seeds) -> np.ndarray:
    """``(len(seeds), 6)`` uint64: row ``i`` is the stream of ``gymnasium.utils.seeding.np_random(seeds[i])``
    (``Generator(PCG64(SeedSequence(seed)))``, the generator ``reset(seed=...)`` makes)."""
    values = [_seed_value(s) for s in seeds]
    pcg = np.zeros((len(values), ROW), dtype=np.uint64)
    for g, s in enumerate(values):
        pcg[g] = _row_of(np.random.PCG64(np.random.SeedSequence(s)).state)
    return pcg


def _row_of(state: Mapping[str, Any]) -> list[int]:
    s, inc = int(state["state"]["state"]), int(state["state"]["inc"])
    return [s >> 64, s & _MASK64, inc >> 64, inc & _MASK64, int(state["has_uint32"]), int(state["uinteger"])]


def stream_from_generator(gen: np.random.Generator) -> np.ndarray:
    """The row (6 uint64) of ``gen``'s stream now: the same draws follow from either."""
    bits = getattr(gen, "bit_generator", None)
    if not isinstance(gen, np.random.Generator) or not isinstance(bits, np.random.PCG64):
        kind = type(bits).__name__ if bits is not None else type(gen).__name__
        raise ValueError(f"a dice stream is a numpy Generator on PCG64, got {kind}")
    return np.array(_row_of(bits.state), dtype=np.uint64)


def generator_from_stream(row) -> np.random.Generator:
    """A numpy ``Generator(PCG64)`` whose next draws are those of ``row`` (6 uint64); the row is
    not changed (:func:`stream_from_generator` takes the state back)."""
    r = np.asarray(row)
    if r.shape != (ROW,) or r.dtype != np.uint64:
        raise ValueError(f"a stream's row is {ROW} uint64 numbers, got shape {r.shape} of {r.dtype}")
    if int(r[HAS_UINT32]) not in (0, 1) or int(r[UINTEGER]) >> 32:
        raise ValueError(f"a stream's row holds has_uint32 0 or 1 and a 32-bit uinteger, got {int(r[HAS_UINT32])} and {int(r[UINTEGER])}")
    bits = np.random.PCG64(0)
    state = (int(r[STATE_HI]) << 64) | int(r[STATE_LO])
    inc = (int(r[INC_HI]) << 64) | int(r[INC_LO])
    bits.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc}, "has_uint32": int(r[HAS_UINT32]), "uinteger": int(r[UINTEGER])}
    return np.random.Generator(bits)


__all__ = [
    "BLOCK",
    "CUP_FACES",
    "HAS_UINT32",
    "INC_HI",
    "INC_LO",
    "NUMBA",
    "ROW",
    "STATE_HI",
    "STATE_LO",
    "UINTEGER",
    "below",
    "cup_face",
    "cup_fill",
    "empty_cups",
    "faces_into",
    "generator_from_stream",
    "next_uint32",
    "next_uint64",
    "permutation_into",
    "seed63",
    "seeded_row",
    "stream_from_generator",
    "streams_from_seeds",
    "uniform",
]
