"""The numba loop of :mod:`generala_agents.solver2p`: the turn of every pair of sheets of a
layer, in float32, for up to ``width`` score differences at once (the lanes of a tile).
Imported when a two-player table is solved (numba compiles it once and caches it on disk,
in a private cache folder only).

A tile's lanes are consecutive values of the table that share the mover's sheet: the end of
one pair's differences and the start of the next pair's (same mover, the next opponent
sheet) sit side by side, so every loop over a tile's rows runs as long as it can whatever
the pairs' ranges. Only the rows of the writes depend on the opponent's sheet and the
difference: each lane's turn is its own, whichever tile it falls in and whichever thread
solves it.

Within a turn every array is indexed by keep in the kernel's numbering (keeps ``0 .. NS - 1``
hold four dice or fewer, biggest first; keep ``NS + r`` is roll ``r``):

* ``X[k]`` for a keep of four dice or fewer = the mean over the next die's face of
  ``X[k + face]``, down from the rolls: rerolling the dice not in ``k``, one die at a time;
* ``H[k]`` = the best ``X`` of the keeps inside ``k``; a roll's best reroll is the best
  ``H`` of the roll less one die (every proper keep of a roll lies inside one of those).

``X2`` holds the third roll's best write (rolls) and the keeps' values before it, ``X1``
the second roll's best move and the keeps' values before that; the first roll's best move
is summed over the rolls into the turn's value at once. Where a roll's points are the same
served or not on every open line, its best write on the first roll is its ``X2``.
"""

from __future__ import annotations

import os

import numba
import numpy as np
from numba import njit, prange

from generala_env.compiled.batched import disk_cached
from generala_env.core.dice import NUM_KEEPS, NUM_ROLLS
from generala_env.files.cache import warn_once

# Numba's GNU OpenMP layer kills a process that forks after a parallel loop, and the
# evaluation and tournament programs fork their workers: take the fork-safe workqueue
# layer unless the user chose one (NUMBA_THREADING_LAYER; see start_threads).
if not os.environ.get("NUMBA_THREADING_LAYER"):
    numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]  # numba.config's names are set at import


def start_threads() -> str:
    """Start numba's threads for :func:`solve_layer`, with the threading layer chosen
    (NUMBA_THREADING_LAYER), or numba's own workqueue layer, with one warning, where that one
    cannot be loaded (``tbb`` not installed, a name numba does not know); the layer's name."""
    try:
        from numba.np.ufunc import parallel
    except ImportError:  # another numba: its first parallel call starts them
        return str(numba.config.THREADING_LAYER)  # type: ignore[attr-defined]
    try:
        parallel._launch_threads()
    except ValueError as e:  # numba's words for a layer it cannot load
        chosen = numba.config.THREADING_LAYER  # type: ignore[attr-defined]
        warn_once(
            "threading layer",
            f"numba's threading layer {chosen!r} cannot be loaded ({str(e).splitlines()[0]}): the two-player solve uses numba's workqueue layer",
        )
        numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]
        parallel._launch_threads()
    return str(numba.threading_layer())


def cached(**options):
    """``njit(**options)`` with the project's on-disk cache, in a private cache folder only,
    never beside this file (:func:`generala_env.compiled.compiling.disk_cached`)."""
    return lambda f: disk_cached(njit(**options)(f))


_R = NUM_ROLLS
_K = NUM_KEEPS
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)
_SIXTH = np.float32(1.0 / 6.0)


# The helpers index rows of 2-d arrays instead of taking a row's view: a view costs a
# reference count, an atomic operation in a parallel loop, as much as the row's arithmetic.
# Each reads all its rows in one pass over the lanes where it can: a second pass over the
# output row costs about as much as the first.


@cached()
def _keep_values(X, NS, add, T):
    """``X[k]`` for every keep of four dice or fewer (``k < NS``, biggest first)."""
    for k in range(NS):
        a0, a1, a2, a3, a4, a5 = add[k, 0], add[k, 1], add[k, 2], add[k, 3], add[k, 4], add[k, 5]
        for j in range(T):
            X[k, j] = ((X[a0, j] + X[a1, j]) + (X[a2, j] + X[a3, j]) + (X[a4, j] + X[a5, j])) * _SIXTH


@cached()
def _max_rows(O, o, F, f, M, rows, u, n, T):
    """``O[o] = max(F[f], M[rows[u]], ..., M[rows[u + n - 1]])``, lane by lane, four rows a pass."""
    if n == 0:
        for j in range(T):
            O[o, j] = F[f, j]
        return
    first = True
    while n > 0:
        if n >= 4:
            m0, m1, m2, m3 = rows[u], rows[u + 1], rows[u + 2], rows[u + 3]
            if first:
                for j in range(T):
                    O[o, j] = max(max(F[f, j], M[m0, j]), max(max(M[m1, j], M[m2, j]), M[m3, j]))
            else:
                for j in range(T):
                    O[o, j] = max(max(O[o, j], M[m0, j]), max(max(M[m1, j], M[m2, j]), M[m3, j]))
            u += 4
            n -= 4
        elif n == 3:
            m0, m1, m2 = rows[u], rows[u + 1], rows[u + 2]
            if first:
                for j in range(T):
                    O[o, j] = max(max(F[f, j], M[m0, j]), max(M[m1, j], M[m2, j]))
            else:
                for j in range(T):
                    O[o, j] = max(max(O[o, j], M[m0, j]), max(M[m1, j], M[m2, j]))
            n = 0
        elif n == 2:
            m0, m1 = rows[u], rows[u + 1]
            if first:
                for j in range(T):
                    O[o, j] = max(max(F[f, j], M[m0, j]), M[m1, j])
            else:
                for j in range(T):
                    O[o, j] = max(max(O[o, j], M[m0, j]), M[m1, j])
            n = 0
        else:
            m0 = rows[u]
            if first:
                for j in range(T):
                    O[o, j] = max(F[f, j], M[m0, j])
            else:
                for j in range(T):
                    O[o, j] = max(O[o, j], M[m0, j])
            n = 0
        first = False


@cached()
def _max_writes(O, o, W, rows, u, n, T):
    """``O[o] = max(W[rows[u]], ..., W[rows[u + n - 1]])`` for ``n >= 1`` (a roll's best write
    over the open lines): up to eight rows in one pass."""
    m0 = rows[u]
    if n == 1:
        for j in range(T):
            O[o, j] = W[m0, j]
    elif n == 2:
        m1 = rows[u + 1]
        for j in range(T):
            O[o, j] = max(W[m0, j], W[m1, j])
    elif n == 3:
        m1, m2 = rows[u + 1], rows[u + 2]
        for j in range(T):
            O[o, j] = max(max(W[m0, j], W[m1, j]), W[m2, j])
    elif n == 4:
        m1, m2, m3 = rows[u + 1], rows[u + 2], rows[u + 3]
        for j in range(T):
            O[o, j] = max(max(W[m0, j], W[m1, j]), max(W[m2, j], W[m3, j]))
    elif n == 5:
        m1, m2, m3, m4 = rows[u + 1], rows[u + 2], rows[u + 3], rows[u + 4]
        for j in range(T):
            O[o, j] = max(max(max(W[m0, j], W[m1, j]), max(W[m2, j], W[m3, j])), W[m4, j])
    elif n == 6:
        m1, m2, m3, m4, m5 = rows[u + 1], rows[u + 2], rows[u + 3], rows[u + 4], rows[u + 5]
        for j in range(T):
            O[o, j] = max(max(max(W[m0, j], W[m1, j]), max(W[m2, j], W[m3, j])), max(W[m4, j], W[m5, j]))
    elif n == 7:
        m1, m2, m3, m4, m5, m6 = rows[u + 1], rows[u + 2], rows[u + 3], rows[u + 4], rows[u + 5], rows[u + 6]
        for j in range(T):
            O[o, j] = max(max(max(W[m0, j], W[m1, j]), max(W[m2, j], W[m3, j])), max(max(W[m4, j], W[m5, j]), W[m6, j]))
    else:
        m1, m2, m3, m4, m5, m6, m7 = rows[u + 1], rows[u + 2], rows[u + 3], rows[u + 4], rows[u + 5], rows[u + 6], rows[u + 7]
        for j in range(T):
            O[o, j] = max(max(max(W[m0, j], W[m1, j]), max(W[m2, j], W[m3, j])), max(max(W[m4, j], W[m5, j]), max(W[m6, j], W[m7, j])))
        if n > 8:
            _max_rows(O, o, O, o, W, rows, u + 8, n - 8, T)


@cached()
def _add_max(acc, pr, F, f, M, rows, u, n, T, spare):
    """``acc += pr * max(F[f], M[rows[u]], ..., M[rows[u + n - 1]])``, lane by lane: one pass
    for ``n <= 4``; past four rows (a roll of five distinct faces) the rest go to ``spare[0]``
    first."""
    if n > 4:
        _max_rows(spare, 0, F, f, M, rows, u + 4, n - 4, T)
        F, f, n = spare, 0, 4
    if n == 4:
        m0, m1, m2, m3 = rows[u], rows[u + 1], rows[u + 2], rows[u + 3]
        for j in range(T):
            acc[j] += pr * max(max(F[f, j], M[m0, j]), max(max(M[m1, j], M[m2, j]), M[m3, j]))
    elif n == 3:
        m0, m1, m2 = rows[u], rows[u + 1], rows[u + 2]
        for j in range(T):
            acc[j] += pr * max(max(F[f, j], M[m0, j]), max(M[m1, j], M[m2, j]))
    elif n == 2:
        m0, m1 = rows[u], rows[u + 1]
        for j in range(T):
            acc[j] += pr * max(max(F[f, j], M[m0, j]), M[m1, j])
    elif n == 1:
        m0 = rows[u]
        for j in range(T):
            acc[j] += pr * max(F[f, j], M[m0, j])
    else:
        for j in range(T):
            acc[j] += pr * F[f, j]


@cached()
def _submultiset_max(X, H, NS, sub_start, sub_list, T):
    """``H[k]``: the best ``X`` over the keeps inside ``k`` (``k`` included), for every keep
    of four dice or fewer (smallest first); ``sub_list[sub_start[k] : sub_start[k + 1]]`` are
    the distinct keeps of ``k`` less one die."""
    for k in range(NS - 1, -1, -1):
        _max_rows(H, k, X, k, H, sub_list, sub_start[k], sub_start[k + 1] - sub_start[k], T)


# many parameters: the arrays of the layout and of the rules, which njit takes one by one
@cached()
def _fill_writes(Wc, j0, n, d0, b, a, open_lines, n_open, V_next, next_base, pair_of, lo, size, off, code_pts, gen, dbl, full):
    """Lanes ``j0 .. j0 + n - 1`` of each open line's write rows (row ``l * C + c``: writing line
    ``l`` for its ``c``-th points), for the differences ``d0, d0 + 1, ...`` between the mover's
    sheet ``a`` and the opponent's ``b``: the opponent moves next, so a write is worth 1 − the
    opponent's value at the sheets and difference after it."""
    C = code_pts.shape[1]
    amask, aflag = a >> 1, a & 1
    last = (b >> 1) == full
    for i_l in range(n_open):
        l = open_lines[i_l]
        for c in range(C):
            pt = code_pts[l, c]
            if pt < 0:
                break
            nflag = aflag
            if l == gen and dbl >= 0:
                nflag = 1 if pt > 0 else 0
            na = ((amask | (1 << l)) << 1) | nflag
            w = l * C + c
            if last and (na >> 1) == full:  # the game's last write
                for j in range(n):
                    s = d0 + j + pt
                    Wc[w, j0 + j] = _ONE if s > 0 else (_HALF if s == 0 else np.float32(0.0))
                continue
            q = pair_of[b, na]
            ql, qn, qo = lo[q], size[q], off[q] - next_base
            # the opponent's difference -(d0 + j + pt) lies at x = -(d0 + j + pt) - ql of its
            # values, falling with j: past its last value, then read backwards, then before its first
            top = -(d0 + pt) - ql
            j1 = min(max(top - qn + 1, 0), n)
            j2 = min(max(top + 1, j1), n)
            above = _ONE - V_next[qo + qn - 1]
            for j in range(j1):
                Wc[w, j0 + j] = above
            for j in range(j1, j2):
                Wc[w, j0 + j] = _ONE - V_next[qo + top - j]
            below = _ONE - V_next[qo]
            for j in range(j2, n):
                Wc[w, j0 + j] = below


# long, and many arguments: one numba kernel (njit takes arrays, not the layout object) whose prange loop is a whole layer
@cached(parallel=True, nogil=True)
def solve_layer(
    tile_pair,
    tile_start,
    tile_lanes,
    pair_a,
    pair_b,
    lo,
    size,
    off,
    pair_of,
    V_next,
    next_base,
    V_out,
    out_base,
    codes,
    code_pts,
    zero_code,
    gen,
    dbl,
    served_win,
    full,
    add,
    sub_start,
    sub_list,
    NS,
    first_prob,
    five_alike,
    locked,
    lp_roll,
    lp_keep,
    lp_prob,
    lp_start,
    lp_list,
    width,
    nthreads,
):
    """Solve the values of tiles ``i`` (part of one layer): ``tile_lanes[i]`` values from
    ``tile_start[i]`` on, the first of them pair ``tile_pair[i]``'s, all with its mover's
    sheet, at most ``width`` of them; the values go to ``V_out[v - out_base]``, and the values
    after each write lie in ``V_next`` (the layer after), from ``next_base`` on."""
    L = codes.shape[0]
    C = code_pts.shape[1]
    n = len(tile_pair)
    for t in prange(nthreads):
        # each thread's arrays; a tile of T lanes uses their first T * rows values as (rows, T) arrays
        Wcb = np.empty(L * C * width, dtype=np.float32)
        X2b = np.empty(_K * width, dtype=np.float32)
        X1b = np.empty(_K * width, dtype=np.float32)
        Hb = np.empty(NS * width, dtype=np.float32)
        rowb = np.empty(width, dtype=np.float32)
        acc = np.empty(width)  # float64: a sum of 252 terms
        sumsb = np.empty((_K if locked else 0) * width)  # float64: each keep's sum over its rolls
        open_lines = np.empty(L, dtype=np.int64)
        writes = np.empty(2 * _R * L, dtype=np.int64)  # per (served, roll), the Wc row of each open line: L apart
        plain = np.empty(_R, dtype=np.bool_)  # the roll's points are the same served or not on every open line
        for i in range(t, n, nthreads):
            p = tile_pair[i]
            v0 = tile_start[i]
            lanes = tile_lanes[i]
            T = (lanes + 7) // 8 * 8
            a = pair_a[p]
            amask = a >> 1
            aflag = a & 1
            n_open = 0
            for l in range(L):
                if ((amask >> l) & 1) == 0:
                    open_lines[n_open] = l
                    n_open += 1
            blocked = dbl if (dbl >= 0 and aflag == 0) else -1
            gen_open = gen >= 0 and ((amask >> gen) & 1) == 0
            for r in range(_R):
                plain[r] = True
                for i_l in range(n_open):
                    l = open_lines[i_l]
                    for served in range(2):
                        writes[(served * _R + r) * L + i_l] = l * C + (zero_code[l] if l == blocked else codes[l, r, served])
                    if writes[(_R + r) * L + i_l] != writes[r * L + i_l]:
                        plain[r] = False
            Wc = Wcb[: L * C * T].reshape((L * C, T))
            X2 = X2b[: _K * T].reshape((_K, T))
            X1 = X1b[: _K * T].reshape((_K, T))
            H = Hb[: NS * T].reshape((NS, T))
            row = rowb[:T].reshape((1, T))
            # the write rows, a pair's lanes at a time; the lanes past the tile's values (up to a
            # multiple of 8) continue the last pair's differences, and are not kept
            j0 = 0
            x0 = v0 - off[p]
            while j0 < T:
                m = min(size[p] - x0, lanes - j0)
                if j0 + m >= lanes:
                    m = T - j0
                _fill_writes(Wc, j0, m, lo[p] + x0, pair_b[p], a, open_lines, n_open, V_next, next_base, pair_of, lo, size, off, code_pts, gen, dbl, full)
                j0 += m
                p += 1
                x0 = 0
            for r in range(_R):  # the third roll: the best write
                _max_writes(X2, NS + r, Wc, writes, r * L, n_open, T)
            _keep_values(X2, NS, add, T)
            if locked:
                # the second roll's keeps from the (first keep, roll) pairs: the second keep must hold the first
                sums = sumsb[: _K * T].reshape((_K, T))
                for k in range(_K):
                    for j in range(T):
                        sums[k, j] = 0.0
                for u in range(len(lp_roll)):
                    _max_rows(row, 0, X2, NS + lp_roll[u], X2, lp_list, lp_start[u], lp_start[u + 1] - lp_start[u], T)
                    k1 = lp_keep[u]
                    pr = lp_prob[u]
                    for j in range(T):
                        sums[k1, j] += pr * row[0, j]
                for k in range(_K):
                    for j in range(T):
                        X1[k, j] = sums[k, j]
            else:
                _submultiset_max(X2, H, NS, sub_start, sub_list, T)
                for r in range(_R):  # the second roll: write now or the best reroll
                    rk = NS + r
                    _max_rows(X1, rk, X2, rk, H, sub_list, sub_start[rk], sub_start[rk + 1] - sub_start[rk], T)
                _keep_values(X1, NS, add, T)
            # the first roll, where writes are served and a served generala may win
            _submultiset_max(X1, H, NS, sub_start, sub_list, T)
            for j in range(T):
                acc[j] = 0.0
            for r in range(_R):
                pr = first_prob[r]
                if served_win and gen_open and five_alike[r]:
                    for j in range(T):
                        acc[j] += pr
                    continue
                rk = NS + r
                u0, u1 = sub_start[rk], sub_start[rk + 1]
                if plain[r]:
                    _add_max(acc, pr, X2, rk, H, sub_list, u0, u1 - u0, T, row)
                else:
                    _max_writes(row, 0, Wc, writes, (_R + r) * L, n_open, T)
                    _add_max(acc, pr, row, 0, H, sub_list, u0, u1 - u0, T, row)
            o = v0 - out_base
            for j in range(lanes):
                V_out[o + j] = acc[j]
