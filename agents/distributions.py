"""The distribution of the points still to come on a sheet under the one-player optimal policy.

:class:`generala_agents.solver.Solver` gives each turn-start sheet the *expected* points its
open lines will still bring when the rest of the game is played to maximise them. This module
gives the whole distribution of those points, as a probability vector per sheet: a dynamic
programme over the same turn-start sheets (all sheets with the same number of filled lines at
once, the last lines first). A sheet's turn follows the solver's own optimal choices (its
``Solver.turn`` values, ties to the lowest index) through the 252 rolls and 462 keeps, which
gives the probability of ending the turn by writing each line for each number of points; the
sheet's vector is the mixture of the vectors of the sheets those writes lead to, each shifted
by the points written. So the distributions' means are the solver's values (a test checks it).

With ``served_wins`` (a table of two or more players under ``served_generala: win``) five
alike on a turn's first roll with the generala line open ends the game on the spot: that
probability is kept apart (``served[s]``, the chance of winning that way in the rest of the
game) and the vector then holds the points of the games that do not end so; the vector's sum
and ``served[s]`` add up to 1.

Points are counted in bins of ``width`` points: 1 for every preset; a rule set whose totals
would make the table too large (values near :data:`generala_env.core.rules.MAX_VALUE`) takes wider
bins, each write's points split between the two nearest bins so that the means stay exact.
"""

from __future__ import annotations

import math

import numpy as np

from generala_env.core.dice import FIVE_ALIKE, FULL_ROLL_PROB, KEEP_ROLL_PROB, NUM_KEEPS, NUM_ROLLS, ROLL_PROPER_KEEPS

from .solver import Solver, locked_pairs

# the most float64 cells (sheets x bins) a table may hold: 128 MiB
MAX_CELLS = 1 << 24


def _gather_argmax(values: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``max`` and the argmax (an entry of ``index``'s row) of ``values[..., index[i, :]]`` per row."""
    ext = np.concatenate([values, np.full(values.shape[:-1] + (1,), -np.inf)], axis=-1)
    picked = ext[..., index]  # (..., rows, width)
    j = picked.argmax(axis=-1)
    best = np.take_along_axis(picked, j[..., None], axis=-1)[..., 0]
    return best, np.asarray(index)[np.arange(index.shape[0]), j]


def _mass_by_keep(mass: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``out[s, k] = Σ_r mass[s, r]`` over the rolls ``r`` whose chosen keep ``keep[s, r]`` is ``k``."""
    S = mass.shape[0]
    at = (np.arange(S)[:, None] * NUM_KEEPS + np.maximum(keep, 0)).ravel()
    return np.bincount(at, weights=mass.ravel(), minlength=S * NUM_KEEPS).reshape(S, NUM_KEEPS)


def turn_writes(solver: Solver, W: np.ndarray, served_win: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The probability that a turn played by the solver's choices ends by writing each line.

    ``W[s, l, r, served]``: the write values of ``Solver.write_values``. ``served_win[s]``
    (optional): five alike on the first roll ends sheet ``s``'s game at once. Returns
    ``P[s, l, r, served]`` (the chance of writing line ``l`` with roll ``r``, ``served`` right
    after the first roll) and ``P_served_win[s]``, which together sum to 1 per sheet, and the
    turn's value (``Solver.turn``'s ``value``).
    """
    t = solver.turn(W)
    S = W.shape[0]
    P = np.zeros(W.shape)
    idx = np.arange(S)[:, None]
    rolls = np.arange(NUM_ROLLS)[None, :]
    first = np.broadcast_to(FULL_ROLL_PROB, (S, NUM_ROLLS)).copy()
    win_now = np.zeros(S)
    if served_win is not None:
        ends = served_win[:, None] & FIVE_ALIKE[None, :]
        win_now = (first * ends).sum(axis=1)
        first[ends] = 0.0
    # first roll: the best served write, or the best proper keep
    served_line = W[..., 1].argmax(axis=1)  # (S, 252)
    served_value = np.take_along_axis(W[..., 1], served_line[:, None], axis=1)[:, 0]
    keep_value, keep1 = _gather_argmax(t["K1"], ROLL_PROPER_KEEPS)
    write1 = served_value >= keep_value
    P[idx, served_line, rolls, 1] += np.where(write1, first, 0.0)
    kept1 = _mass_by_keep(np.where(write1, 0.0, first), keep1)
    line3 = W[..., 0].argmax(axis=1)  # the write after any later roll
    if solver.locked:
        pair_roll, pair_keeps, pair_weights, _ = locked_pairs()
        second = kept1 @ pair_weights.T  # (S, pairs): mass of each (first keep, roll)
        keep_value, keep2 = _gather_argmax(t["K2"], pair_keeps)
        write2 = t["E3"][:, pair_roll] >= keep_value
        written = np.where(write2, second, 0.0)
        at = (np.arange(S)[:, None] * NUM_ROLLS + pair_roll[None, :]).ravel()
        P[idx, line3, rolls, 0] += np.bincount(at, weights=written.ravel(), minlength=S * NUM_ROLLS).reshape(S, NUM_ROLLS)
        kept2 = _mass_by_keep(np.where(write2, 0.0, second), keep2)
    else:
        second = kept1 @ KEEP_ROLL_PROB
        keep_value, keep2 = _gather_argmax(t["K2"], ROLL_PROPER_KEEPS)
        write2 = t["E3"] >= keep_value
        P[idx, line3, rolls, 0] += np.where(write2, second, 0.0)
        kept2 = _mass_by_keep(np.where(write2, 0.0, second), keep2)
    P[idx, line3, rolls, 0] += kept2 @ KEEP_ROLL_PROB
    return P, win_now, t["value"]


def successors(solver: Solver, masks: np.ndarray, flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``points[s, l, r, served]`` written and the index (``mask * 2 + flag``, as ``Solver.V``)
    of the sheet each write leads to, read from ``Solver.write_values`` itself (with values 0,
    then each sheet's own index as its value), so that the rules of blocked lines and of the
    generala flag live in one place. Filled lines: ``-1`` for both."""
    zero = solver.write_values(masks, flags, np.zeros(2 << solver.L))
    own = solver.write_values(masks, flags, np.arange(2 << solver.L, dtype=np.float64))
    filled = ~np.isfinite(zero)
    zero[filled] = own[filled] = -1.0
    return zero.astype(np.int64), np.where(filled, -1, (own - zero).round()).astype(np.int64)


def bin_width(solver: Solver) -> tuple[int, int]:
    """Points per bin and the number of bins, so that a table holds at most :data:`MAX_CELLS` cells."""
    most = int(solver.points.max(axis=(1, 2)).sum())
    states = 2 << solver.L
    width = max(1, math.ceil((most + 1) / max(1, MAX_CELLS // states - solver.L - 2)))
    return width, most // width + solver.L + 2  # room for the rounding up of each write


class RemainingPoints:
    """Per turn-start sheet (``mask * 2 + flag``, as ``Solver.V``): ``dist[s, b]``, the chance
    that the rest of the game brings ``b * width`` points, and ``served[s]``, the chance that
    it ends on a served generala (0 unless ``served_wins``).

    ``risk`` 0: the rest is played by the one-player optimal policy (the solver's values).
    Otherwise by the policy that maximises the expected ``exp(risk * points) / risk`` (a
    gambler's for ``risk > 0``, a cautious player's for ``risk < 0``): as that utility of a sum
    is the product of its parts', the same turn expectimax gives it, with ``utility[s]``, the
    expected ``exp(risk * points still to come)``, in place of the solver's values.
    """

    def __init__(
        self,
        solver: Solver,
        served_wins: bool,
        dist: np.ndarray | None = None,
        served: np.ndarray | None = None,
        width: int | None = None,
        risk: float = 0.0,
        utility: np.ndarray | None = None,
    ):
        self.solver = solver
        self.served_wins = bool(served_wins)
        self.risk = float(risk)
        w, bins = bin_width(solver)
        self.width = w if width is None else width
        self.dist = np.zeros((2 << solver.L, bins)) if dist is None else dist
        self.served = np.zeros(2 << solver.L) if served is None else served
        self.utility = np.ones(2 << solver.L) if utility is None else utility
        self.build_seconds = 0.0

    def write_values(self, masks: np.ndarray, flags: np.ndarray, points: np.ndarray, nxt: np.ndarray) -> np.ndarray:
        """``W[s, l, r, served]`` of the policy the table follows (see the class)."""
        if self.risk == 0.0:
            return self.solver.write_values(masks, flags, self.solver.V)
        live = nxt >= 0
        W = np.full(points.shape, -np.inf)
        W[live] = np.sign(self.risk) * np.exp(self.risk * points[live]) * self.utility[nxt[live]]
        return W

    @property
    def bins(self) -> int:
        return self.dist.shape[1]

    def means(self) -> np.ndarray:
        """Expected points still to come per sheet (the games ended by a served generala left out)."""
        return self.dist @ (np.arange(self.bins) * float(self.width))

    def layer(self, masks: np.ndarray, flags: np.ndarray, after: tuple | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distributions, served-generala chances and utilities of the given sheets, from
        the stored ones of the sheets after them (``after``: their :func:`successors`)."""
        s = self.solver
        points, nxt = successors(s, masks, flags) if after is None else after
        W = self.write_values(masks, flags, points, nxt)
        open_generala = ((masks >> s.gen) & 1) == 0 if (self.served_wins and s.gen >= 0) else None
        P, win_now, value = turn_writes(s, W, open_generala)
        utility = np.sign(self.risk) * value if self.risk else np.ones(len(masks))
        dist = np.zeros((len(masks), self.bins))
        served = win_now.copy()
        rows = np.arange(len(masks))
        for l in range(s.L):
            for v in np.unique(points[:, l]):
                if v < 0:
                    continue
                here = points[:, l] == v
                weight = (P[:, l] * here).sum(axis=(1, 2))
                to = np.where(here, nxt[:, l], -1).max(axis=(1, 2))
                live = (weight > 0) & (to >= 0)
                if not live.any():
                    continue
                w, a = weight[live], to[live]
                served[live] += w * self.served[a]
                shift, frac = divmod(int(v), self.width)
                parts = ((shift, 1.0 - frac / self.width), (shift + 1, frac / self.width)) if frac else ((shift, 1.0),)
                for at, share in parts:
                    dist[rows[live], at:] += (w * share)[:, None] * self.dist[a, : self.bins - at]
        return dist, served, utility

    def build(self) -> RemainingPoints:
        return build_all([self])[0]


def build_all(tables: list[RemainingPoints]) -> list[RemainingPoints]:
    """Build tables of one solver together, a layer of sheets at a time (their successors
    read once for all)."""
    import time

    t0 = time.perf_counter()
    s = tables[0].solver
    L = s.L
    full = (1 << L) - 1
    for t in tables:
        t.dist[:] = 0.0
        t.served[:] = 0.0
        t.utility[:] = 1.0
        t.dist[full * 2 :, 0] = 1.0
    by_filled: list[list[int]] = [[] for _ in range(L + 1)]
    for mask in range(1 << L):
        by_filled[bin(mask).count("1")].append(mask)
    for n in range(L - 1, -1, -1):
        ms, fs = layer_sheets(s, np.array(by_filled[n], dtype=np.int64))
        for lo in range(0, len(ms), 128):
            m, f = ms[lo : lo + 128], fs[lo : lo + 128]
            after = successors(s, m, f)
            for t in tables:
                t.dist[m * 2 + f], t.served[m * 2 + f], t.utility[m * 2 + f] = t.layer(m, f, after)
    for t in tables:
        t.build_seconds = time.perf_counter() - t0
    return tables


def layer_sheets(solver: Solver, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The turn-start sheets of the given filled-line masks: each with flag 0, and those with
    the generala line filled once more with flag 1 where a double generala line makes it matter."""
    flags = np.zeros(len(masks), dtype=np.int64)
    if solver.dbl >= 0:
        has_gen = (masks >> solver.gen) & 1 == 1
        masks = np.concatenate([masks, masks[has_gen]])
        flags = np.concatenate([flags, np.ones(int(has_gen.sum()), dtype=np.int64)])
    return masks, flags


def remaining_points(solver: Solver, served_wins: bool, risk: float = 0.0) -> RemainingPoints:
    """The distributions of ``solver``'s rules, built (see :mod:`generala_agents.distributions`)."""
    return RemainingPoints(solver, served_wins, risk=risk).build()


__all__ = ["RemainingPoints", "bin_width", "build_all", "layer_sheets", "remaining_points", "successors", "turn_writes"]
