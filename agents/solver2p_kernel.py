"""The numba loop of :mod:`generala_agents.solver2p`: one turn of every sheet pair of a layer,
in float32, ``T`` score differences at a time (a tile's arrays stay in the core's cache).
Imported when a two-player table is solved (numba compiles it once and caches it on disk,
in a private cache folder only).

Within a turn every array is indexed by keep, a roll being the keep of all five dice:

* ``X[k]`` for a keep of four dice or fewer = the mean over the next die's face of
  ``X[k + face]``, down from the rolls: rerolling the dice not in ``k``, one die at a time;
* ``H[k]`` = the best ``X`` of the keeps inside ``k``; a roll's best reroll is the best
  ``H`` of the roll less one die (every proper keep of a roll lies inside one of those).

``X2`` holds the third roll's best write (rolls) and the keeps' values before it, ``X1``
the second roll's best move and the keeps' values before that; the first roll's best move
is summed over the rolls into the turn's value at once.
"""

from __future__ import annotations

import os

import numba
import numpy as np
from numba import njit, prange

# Numba's GNU OpenMP layer kills a process that forks after a parallel loop, and the
# evaluation and tournament programs fork their workers: take the fork-safe workqueue
# layer unless the user chose one (NUMBA_THREADING_LAYER).
if not os.environ.get("NUMBA_THREADING_LAYER"):
    numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]  # numba.config's names are set at import

from generala_env.batched import disk_cached
from generala_env.dice import NUM_KEEPS, NUM_ROLLS


def cached(**options):
    """``njit(**options)`` with the project's on-disk cache, in a private cache folder only,
    never beside this file (:func:`generala_env.compiling.disk_cached`)."""
    return lambda f: disk_cached(njit(**options)(f))


_R = NUM_ROLLS
_K = NUM_KEEPS
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)
_SIXTH = np.float32(1.0 / 6.0)


# the helpers index rows of 2-d arrays instead of taking a row's view: a view costs a
# reference count, an atomic operation in a parallel loop, as much as the row's arithmetic


@cached()
def _keep_values(X, small, add, T):
    """``X[k]`` for every keep of four dice or fewer (``small``, biggest first)."""
    for i in range(len(small)):
        k = small[i]
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
def _submultiset_max(X, H, small, sub_start, sub_list, T):
    """``H[k]``: the best ``X`` over the keeps inside ``k`` (``k`` included), for every keep
    of four dice or fewer (``small`` read backwards: smallest first);
    ``sub_list[sub_start[k] : sub_start[k + 1]]`` are the distinct keeps of ``k`` less one die."""
    for i in range(len(small) - 1, -1, -1):
        k = small[i]
        _max_rows(H, k, X, k, H, sub_list, sub_start[k], sub_start[k + 1] - sub_start[k], T)


# long, and many arguments: one numba kernel (njit takes arrays, not the layout object) whose prange loop is a whole layer
@cached(parallel=True)
def solve_layer(
    pairs,
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
    roll_keep,
    small,
    first_prob,
    five_alike,
    locked,
    lp_roll,
    lp_keep,
    lp_prob,
    lp_start,
    lp_list,
    tile,
    nthreads,
):
    """Solve the turn of every pair in ``pairs`` (one layer), at most ``tile`` score
    differences at a time (a multiple of 8), writing its values ``V_out[off[p] - out_base + j]`` for ``d = lo[p] + j``; the
    values after each write lie in ``V_next`` (the layer after), from ``next_base`` on."""
    L = codes.shape[0]
    C = code_pts.shape[1]
    n = len(pairs)
    for t in prange(nthreads):
        Wc = np.empty((L * C, tile), dtype=np.float32)  # row l * C + c: writing line l for its c-th points
        X2 = np.empty((_K, tile), dtype=np.float32)
        X1 = np.empty((_K, tile), dtype=np.float32)
        H = np.empty((_K, tile), dtype=np.float32)
        row = np.empty((1, tile), dtype=np.float32)
        acc = np.empty(tile)  # float64: a sum of 252 terms
        sums = np.empty((_K if locked else 0, tile))  # float64: each keep's sum over its rolls
        open_lines = np.empty(L, dtype=np.int64)
        writes = np.empty(2 * _R * L, dtype=np.int64)  # per (served, roll), the Wc row of each open line: L apart
        for i in range(t, n, nthreads):
            p = pairs[i]
            a = pair_a[p]
            b = pair_b[p]
            amask = a >> 1
            aflag = a & 1
            bmask = b >> 1
            n_open = 0
            for l in range(L):
                if ((amask >> l) & 1) == 0:
                    open_lines[n_open] = l
                    n_open += 1
            blocked = dbl if (dbl >= 0 and aflag == 0) else -1
            gen_open = gen >= 0 and ((amask >> gen) & 1) == 0
            for served in range(2):
                for r in range(_R):
                    for i_l in range(n_open):
                        l = open_lines[i_l]
                        writes[(served * _R + r) * L + i_l] = l * C + (zero_code[l] if l == blocked else codes[l, r, served])
            D = size[p]
            tiles = (D + tile - 1) // tile
            T = ((D + tiles - 1) // tiles + 7) // 8 * 8  # as few lanes as cover D in equal tiles
            for t0 in range(0, D, T):
                d0 = lo[p] + t0  # lanes past the pair's range compute values that are not kept
                # the value of writing each (line, points) for every d: the opponent moves next
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
                        if (na >> 1) == full and bmask == full:  # the game's last write
                            for j in range(T):
                                s = d0 + j + pt
                                Wc[l * C + c, j] = _ONE if s > 0 else (_HALF if s == 0 else np.float32(0.0))
                        else:
                            q = pair_of[b, na]
                            ql = lo[q]
                            qn = size[q]
                            qo = off[q] - next_base
                            for j in range(T):
                                x = -(d0 + j + pt) - ql
                                if x < 0:
                                    x = 0
                                elif x >= qn:
                                    x = qn - 1
                                Wc[l * C + c, j] = _ONE - V_next[qo + x]
                for r in range(_R):  # the third roll: the best write
                    u = r * L
                    _max_rows(X2, roll_keep[r], Wc, writes[u], Wc, writes, u + 1, n_open - 1, T)
                _keep_values(X2, small, add, T)
                if locked:
                    # the second roll's keeps from the (first keep, roll) pairs: the second keep must hold the first
                    sums[:] = 0.0
                    for u in range(len(lp_roll)):
                        _max_rows(row, 0, X2, roll_keep[lp_roll[u]], X2, lp_list, lp_start[u], lp_start[u + 1] - lp_start[u], T)
                        k1 = lp_keep[u]
                        pr = lp_prob[u]
                        for j in range(T):
                            sums[k1, j] += pr * row[0, j]
                    for k in range(_K):
                        for j in range(T):
                            X1[k, j] = sums[k, j]
                else:
                    _submultiset_max(X2, H, small, sub_start, sub_list, T)
                    for r in range(_R):  # the second roll: write now or the best reroll
                        rk = roll_keep[r]
                        _max_rows(X1, rk, X2, rk, H, sub_list, sub_start[rk], sub_start[rk + 1] - sub_start[rk], T)
                    _keep_values(X1, small, add, T)
                # the first roll, where writes are served and a served generala may win
                _submultiset_max(X1, H, small, sub_start, sub_list, T)
                for j in range(T):
                    acc[j] = 0.0
                for r in range(_R):
                    pr = first_prob[r]
                    if served_win and gen_open and five_alike[r]:
                        for j in range(T):
                            acc[j] += pr
                        continue
                    u = (_R + r) * L
                    _max_rows(row, 0, Wc, writes[u], Wc, writes, u + 1, n_open - 1, T)
                    rk = roll_keep[r]
                    _max_rows(row, 0, row, 0, H, sub_list, sub_start[rk], sub_start[rk + 1] - sub_start[rk], T)
                    for j in range(T):
                        acc[j] += pr * row[0, j]
                o = off[p] - out_base + t0
                for j in range(min(T, D - t0)):
                    V_out[o + j] = acc[j]
