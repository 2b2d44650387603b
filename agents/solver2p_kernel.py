"""The numba loops of :mod:`generala_agents.solver2p`: one turn of many sheet pairs, vectorised
over the score difference. Imported when a two-player table is solved (numba compiles
it once and caches it on disk, in a private cache folder only).

Within a turn, with ``E`` a value per roll and ``K`` a value per keep:

* ``K(k)`` = the mean over the next die's face of ``K(k + face)``, down from the
  five-dice keeps (rolls): rerolling the dice not in ``k``, one die at a time;
* ``H(k)`` = the best ``K`` of the keeps inside ``k``; a roll's best reroll is the best
  ``H`` of the roll less one die (every proper keep of a roll lies inside one of those).
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
    never beside this file (:func:`generala_env.batched.disk_cached`)."""
    return lambda f: disk_cached(njit(**options)(f))


_R = NUM_ROLLS
_K = NUM_KEEPS


@cached()
def _keep_values(E, K, D, add, keep_roll, by_size, keep_size):
    """``K(k)``: the expected ``E`` after rerolling the dice not in keep ``k``."""
    for i in range(_K - 1, -1, -1):
        k = by_size[i]
        if keep_size[k] == 5:
            r = keep_roll[k]
            for j in range(D):
                K[k, j] = E[r, j]
        else:
            a0, a1, a2, a3, a4, a5 = add[k, 0], add[k, 1], add[k, 2], add[k, 3], add[k, 4], add[k, 5]
            for j in range(D):
                K[k, j] = (K[a0, j] + K[a1, j] + K[a2, j] + K[a3, j] + K[a4, j] + K[a5, j]) / 6.0


@cached()
def _submultiset_max(K, H, D, sub, by_size, keep_size):
    """``H(k)``: the best ``K`` over the keeps inside ``k`` (``k`` included), up to four dice."""
    for i in range(_K):
        k = by_size[i]
        if keep_size[k] == 5:
            break
        for j in range(D):
            H[k, j] = K[k, j]
        for f in range(6):
            s = sub[k, f]
            if s >= 0:
                for j in range(D):
                    if H[s, j] > H[k, j]:
                        H[k, j] = H[s, j]


@cached()
def _best_reroll(H, E, r, rk, D, sub):
    """``E[r] = max(E[r], best proper keep of roll r)``."""
    for f in range(6):
        s = sub[rk, f]
        if s >= 0:
            for j in range(D):
                if H[s, j] > E[r, j]:
                    E[r, j] = H[s, j]


@cached()
def _best_write(Wc, E, r, served, amask, blocked, codes, zero_code, D):
    """``E[r]``: the best write of roll ``r`` on an open line (``served``: after the first roll)."""
    for j in range(D):
        E[r, j] = -1.0
    for l in range(codes.shape[0]):
        if (amask >> l) & 1:
            continue
        c = zero_code[l] if l == blocked else codes[l, r, served]
        for j in range(D):
            if Wc[l, c, j] > E[r, j]:
                E[r, j] = Wc[l, c, j]


# long, and many arguments: one numba kernel (njit takes arrays, not the layout object) whose prange loop is the whole solve
@cached(parallel=True)
def solve_pairs(
    pairs,
    pair_a,
    pair_b,
    lo,
    size,
    off,
    pair_of,
    V,
    codes,
    code_pts,
    zero_code,
    gen,
    dbl,
    served_win,
    full,
    add,
    sub,
    roll_keep,
    keep_roll,
    by_size,
    keep_size,
    first_prob,
    five_alike,
    locked,
    lp_roll,
    lp_keep,
    lp_prob,
    lp_start,
    lp_list,
    dmax,
    nthreads,
):
    """Solve the turn of every pair in ``pairs`` (their successors solved already), writing
    ``V[off[p] : off[p] + size[p]]``: the mover's value for ``d = lo[p] + j``."""
    L = codes.shape[0]
    C = code_pts.shape[1]
    n = len(pairs)
    for t in prange(nthreads):
        Wc = np.empty((L, C, dmax))
        E3 = np.empty((_R, dmax))
        E = np.empty((_R, dmax))
        K = np.empty((_K, dmax))
        H = np.empty((_K, dmax))
        row = np.empty(dmax)
        for i in range(t, n, nthreads):
            p = pairs[i]
            a = pair_a[p]
            b = pair_b[p]
            D = size[p]
            d0 = lo[p]
            amask = a >> 1
            aflag = a & 1
            bmask = b >> 1
            # the value of writing each (line, points) for every d: the opponent moves next
            for l in range(L):
                if (amask >> l) & 1:
                    continue
                for c in range(C):
                    pt = code_pts[l, c]
                    if pt < 0:
                        break
                    nflag = aflag
                    if l == gen and dbl >= 0:
                        nflag = 1 if pt > 0 else 0
                    na = ((amask | (1 << l)) << 1) | nflag
                    if (na >> 1) == full and bmask == full:  # the game's last write
                        for j in range(D):
                            s = d0 + j + pt
                            Wc[l, c, j] = 1.0 if s > 0 else (0.5 if s == 0 else 0.0)
                    else:
                        q = pair_of[b, na]
                        ql = lo[q]
                        qn = size[q]
                        qo = off[q]
                        for j in range(D):
                            x = -(d0 + j + pt) - ql
                            if x < 0:
                                x = 0
                            elif x >= qn:
                                x = qn - 1
                            Wc[l, c, j] = 1.0 - V[qo + x]
            blocked = dbl if (dbl >= 0 and aflag == 0) else -1
            for r in range(_R):  # E3: the best write after the third roll
                _best_write(Wc, E3, r, 0, amask, blocked, codes, zero_code, D)
            _keep_values(E3, K, D, add, keep_roll, by_size, keep_size)  # K2
            if locked:
                # K1 from the (first keep, roll) pairs: the second keep must hold the first
                for k in range(_K):
                    for j in range(D):
                        H[k, j] = 0.0
                for u in range(len(lp_roll)):
                    r = lp_roll[u]
                    k1 = lp_keep[u]
                    pr = lp_prob[u]
                    for j in range(D):
                        row[j] = E3[r, j]
                    for v in range(lp_start[u], lp_start[u + 1]):
                        kv = lp_list[v]
                        for j in range(D):
                            if K[kv, j] > row[j]:
                                row[j] = K[kv, j]
                    for j in range(D):
                        H[k1, j] += pr * row[j]
                for k in range(_K):
                    for j in range(D):
                        K[k, j] = H[k, j]
            else:
                _submultiset_max(K, H, D, sub, by_size, keep_size)
                for r in range(_R):  # E2: write now or the best reroll
                    for j in range(D):
                        E[r, j] = E3[r, j]
                    _best_reroll(H, E, r, roll_keep[r], D, sub)
                _keep_values(E, K, D, add, keep_roll, by_size, keep_size)  # K1
            # E1: the first roll, where writes are served and a served generala may win
            _submultiset_max(K, H, D, sub, by_size, keep_size)
            gen_open = gen >= 0 and ((amask >> gen) & 1) == 0
            for r in range(_R):
                if served_win and gen_open and five_alike[r]:
                    for j in range(D):
                        E[r, j] = 1.0
                    continue
                _best_write(Wc, E, r, 1, amask, blocked, codes, zero_code, D)
                _best_reroll(H, E, r, roll_keep[r], D, sub)
            for j in range(D):
                row[j] = 0.0
            for r in range(_R):
                pr = first_prob[r]
                for j in range(D):
                    row[j] += pr * E[r, j]
            o = off[p]
            for j in range(D):
                V[o + j] = row[j]
