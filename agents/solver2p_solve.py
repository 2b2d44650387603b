"""Solving the two-player table, and reading values from it: :class:`TwoPlayerSolver` (see
:mod:`generala_agents.solver2p` for ``V(a, b, d)``, and for the table cached and shared).

The turn inside is solved exactly with the 252 rolls and 462 keeps, as in
:mod:`generala_agents.solver`, except that a write's value is ``1 − V(b, a + line, −(d + points))``
(the opponent moves next), a finished game is worth 1, ½ or 0, and a served generala
wins on the spot where the rule set says so. Pairs (:class:`~generala_agents.solver2p_layout.Layout`)
are solved a layer at a time (by the number of filled lines), every turn vectorised over
the score differences in numba (:mod:`generala_agents.solver2p_kernel`); each layer goes to
the table's file when it is done, so a solve holds two layers in memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from typing import IO

import numpy as np

from generala_env.core.dice import (
    FACES,
    FIVE_ALIKE,
    FULL_ROLL_PROB,
    KEEP_COUNTS,
    KEEP_OF_KEY,
    KEEP_SIZE,
    KEY_WEIGHTS,
    NUM_KEEPS,
    NUM_ROLLS,
    ROLL_COUNTS,
)
from generala_env.core.rules import RuleSet, load_rules
from generala_env.core.scoring import points_table
from generala_env.planning import planner
from generala_env.planning.planner import sheet_id

from .solver import NEG, locked_pairs
from .solver2p_layout import Layout

DEFAULT_MAX_MEMORY = 2 * 2**30  # bytes a solve may allocate unless told otherwise
Progress = Callable[[int, int], None]  # (values solved, values in all)
TILE = 512  # the most values a turn is solved for at once (lanes of the kernel's loops)
BATCH_VALUES = 1 << 21  # values a call of the kernel solves: a second or so, then the progress is told
# numba's workqueue threading layer ends the process when two threads run a parallel loop at
# once: the solves of a process take turns, a batch at a time
_KERNEL_LOCK = threading.Lock()


class SolveTooBigError(ValueError):
    """A rule set whose two-player table does not fit the memory allowed."""


# -- the dice tables the turn recursion needs ------------------------------------------------
def _keep_of(counts) -> int:
    return int(KEEP_OF_KEY[int(np.asarray(counts, dtype=np.int64) @ KEY_WEIGHTS)])


@lru_cache(maxsize=1)
def _kernel_keeps() -> tuple[np.ndarray, int]:
    """The kernel's number of each keep (:mod:`generala_agents.solver2p_kernel`): the keeps of
    four dice or fewer first, biggest first, then roll ``r``'s keep as number ``NS + r``; and
    ``NS``, how many keeps hold four dice or fewer."""
    roll_keep = np.array([_keep_of(ROLL_COUNTS[r]) for r in range(NUM_ROLLS)], dtype=np.int64)
    by_size = np.argsort(-KEEP_SIZE, kind="stable")
    small = by_size[KEEP_SIZE[by_size] < 5]
    order = np.concatenate([small, roll_keep])  # the kernel's keeps, as keep ids
    number = np.empty(NUM_KEEPS, dtype=np.int64)
    number[order] = np.arange(NUM_KEEPS)
    return number, len(small)


@lru_cache(maxsize=1)
def _dice_tables():
    """In the kernel's numbering of keeps: a keep plus one face; the distinct keeps of a keep
    less one die (a flat list and where each keep's part starts); how many keeps hold four
    dice or fewer."""
    number, NS = _kernel_keeps()
    add = np.full((NUM_KEEPS, FACES), -1, dtype=np.int32)
    lists: list[list[int]] = [[] for _ in range(NUM_KEEPS)]
    for k in range(NUM_KEEPS):
        c = KEEP_COUNTS[k].astype(np.int64)
        subs = set()
        for f in range(FACES):
            if KEEP_SIZE[k] < 5:
                c2 = c.copy()
                c2[f] += 1
                add[number[k], f] = number[_keep_of(c2)]
            if c[f] > 0:
                c2 = c.copy()
                c2[f] -= 1
                subs.add(int(number[_keep_of(c2)]))
        lists[number[k]] = sorted(subs)
    sub_start = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
    sub_list = np.array([s for x in lists for s in x], dtype=np.int32)
    return add, sub_start, sub_list, NS


def _line_codes(rules: RuleSet):
    """Each line's distinct points (0 always among them) and each (line, roll, served)'s code."""
    P = points_table(rules)
    L = rules.num_lines
    distinct = [sorted(set(P[l].ravel().tolist()) | {0}) for l in range(L)]
    C = max(map(len, distinct))
    code_pts = np.full((L, C), -1, dtype=np.int64)
    codes = np.zeros((L, NUM_ROLLS, 2), dtype=np.int32)
    zero_code = np.zeros(L, dtype=np.int32)
    for l in range(L):
        code_pts[l, : len(distinct[l])] = distinct[l]
        lookup = {v: i for i, v in enumerate(distinct[l])}
        codes[l] = np.vectorize(lookup.__getitem__)(P[l])
        zero_code[l] = lookup[0]
    return code_pts, codes, zero_code


@lru_cache(maxsize=1)
def _locked_lists():
    """The (first keep, roll) pairs of locked holds as flat arrays for the kernel: each pair's
    roll, first keep, probability and the second keeps allowed (a slice of one flat list),
    keeps in the kernel's numbering."""
    from generala_env.core.dice import KEEP_ROLL_PROB, ROLL_CONTAINS_KEEP

    roll_of_pair, idx, _, _ = locked_pairs()
    keep_of_pair, rolls = np.nonzero(ROLL_CONTAINS_KEEP.T)  # the order locked_pairs uses
    assert (rolls == roll_of_pair).all()
    prob = KEEP_ROLL_PROB[keep_of_pair, roll_of_pair]
    number, _ = _kernel_keeps()
    lists = [number[row[row >= 0]] for row in idx]
    start = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
    flat = np.concatenate(lists).astype(np.int32)
    return roll_of_pair.astype(np.int32), number[keep_of_pair].astype(np.int32), prob.astype(np.float64), start, flat


def _tiles(lay: Layout, n: int, lanes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layer ``n``'s values as the kernel's tiles: each tile's first pair, first value and
    number of values; a tile's values are consecutive and share the mover's sheet, and the
    values of one mover's sheet are cut into tiles of nearly equal size, at most ``lanes``
    each (a multiple of 8 but the last)."""
    pairs = lay.layers[n]
    a = lay.pair_a[pairs]
    first = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])  # where each run of one mover's sheet starts
    last = np.r_[first[1:], len(pairs)] - 1
    v0 = lay.off[pairs[first]]
    v1 = lay.off[pairs[last]] + lay.size[pairs[last]]
    count = (v1 - v0 + lanes - 1) // lanes
    step = ((v1 - v0 + count - 1) // count + 7) // 8 * 8
    run = np.repeat(np.arange(len(first)), count)
    k = np.arange(len(run)) - np.repeat(np.cumsum(count) - count, count)
    start = v0[run] + k * step[run]
    size = np.minimum(step[run], v1[run] - start)
    pair = pairs[0] + np.searchsorted(lay.off[pairs], start, side="right") - 1
    return pair.astype(np.int64), start.astype(np.int64), size.astype(np.int64)


class TwoPlayerSolver:
    """P(win) + ½·P(draw) under optimal play by both players of a two-player game."""

    def __init__(self, rules, values: np.ndarray | None = None):
        self.rules: RuleSet = load_rules(rules)
        if self.rules.num_lines < 1:
            raise ValueError("a rule set with no lines has no game to solve")
        self.L = self.rules.num_lines
        self.gen, self.dbl = self.rules.generala_line, self.rules.double_generala_line
        self.served_win = self.rules.served_generala_wins(2)
        self.layout: Layout | None = None
        self.V: np.ndarray = np.zeros(0, dtype=np.float32) if values is None else values  # empty until solve()
        self.solve_seconds = 0.0
        if values is not None:
            n = self.sheet_layout().num_values
            if values.shape != (n,):
                raise ValueError(f"a two-player table for {self.rules.name!r} holds {n} values, got {values.shape}")

    def sheet_layout(self) -> Layout:
        if self.layout is None:
            self.layout = Layout(self.rules)
            self.layout.index_pairs()
        return self.layout

    # -- solving -----------------------------------------------------------------------------
    def check_memory(self, max_memory: int | None) -> None:
        """Raise :class:`SolveTooBigError` when a solve needs more than ``max_memory`` bytes
        (``None``: no limit)."""
        need = Layout.bytes_needed(self.rules)
        if max_memory is not None and need > max_memory:
            raise SolveTooBigError(
                f"the two-player solve of rules {self.rules.name!r} needs about {need / 2**30:.2f} GiB, "
                f"more than the {max_memory / 2**30:.2f} GiB allowed; allow more memory (generala solve --max-memory GIB) "
                "or solve a smaller sheet"
            )

    def solve(
        self, progress: Progress | None = None, max_memory: int | None = DEFAULT_MAX_MEMORY, *, threads: int | None = None, lanes: int = TILE
    ) -> TwoPlayerSolver:
        """Solve every pair; ``progress(values done, values in all)`` after each batch.
        Raises :class:`SolveTooBigError` before allocating when the solve needs more than
        ``max_memory`` bytes (``None``: no limit). The values go to a temporary file that
        is removed at once (it lives while this process maps it): memory holds two layers.
        ``threads`` and ``lanes``: see :meth:`solve_into`."""
        self.check_memory(max_memory)
        f = tempfile.TemporaryFile()  # noqa: SIM115  # mapped below: the map outlives the file object
        with f:
            offset = self.solve_into(f, progress, threads=threads, lanes=lanes)[1]
            f.flush()
            self.V = np.memmap(f, dtype=np.float32, mode="r", offset=offset, shape=(self.sheet_layout().num_values,))
        return self

    # long: the tables the kernel reads, then the layers in order, each written as it is done
    def solve_into(self, f: IO[bytes], progress: Progress | None = None, *, threads: int | None = None, lanes: int = TILE) -> tuple[str, int]:
        """Solve every pair, writing the table to ``f`` as a ``.npy`` file a layer at a time;
        the SHA-256 of the values and where they start in the file. Sets
        :attr:`solve_seconds`, not :attr:`V` (``f`` may be open for writing only). The kernel
        runs in ``threads`` shares (``None``: one for each of numba's threads, by default one
        a CPU; ``NUMBA_NUM_THREADS``), on at most ``lanes`` values at once (a multiple of 8);
        the values are the same, bit for bit, for every choice of either."""
        t0 = time.perf_counter()
        if lanes < 8 or lanes % 8:
            raise ValueError(f"lanes must be a positive multiple of 8, not {lanes}")
        lay = self.sheet_layout()
        code_pts, codes, zero_code = _line_codes(self.rules)
        add, sub_start, sub_list, NS = _dice_tables()
        lp = (
            _locked_lists()
            if self.rules.locked_holds
            else (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0), np.zeros(1, np.int64), np.zeros(0, np.int32))
        )
        import numba

        from .solver2p_kernel import solve_layer, start_threads

        start_threads()
        nthreads = numba.get_num_threads() if threads is None else max(int(threads), 1)  # more than numba has: some take two shares
        np.lib.format.write_array_header_1_0(
            f, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False, "shape": (lay.num_values,)}
        )
        offset = f.tell()
        digest = hashlib.sha256()
        widest = max(int(x) for x in lay.layer_values)
        V_next = np.zeros(widest, dtype=np.float32)  # the layer after the one being solved
        V_out = np.zeros(widest, dtype=np.float32)
        done = 0
        for n in range(2 * self.L - 1, -1, -1):  # a layer's successors lie in the layer after it
            base = int(lay.layer_start[n])
            next_base = int(lay.layer_start[n + 1]) if n + 1 < 2 * self.L else 0
            tile_pair, tile_start, tile_size = _tiles(lay, n, lanes)
            ends = np.cumsum(tile_size)
            cuts = np.searchsorted(ends, np.arange(BATCH_VALUES, int(ends[-1]), BATCH_VALUES), side="right")
            for s, e in zip([0, *cuts.tolist()], [*cuts.tolist(), len(ends)], strict=True):
                if s == e:
                    continue
                with _KERNEL_LOCK:
                    solve_layer(
                        tile_pair[s:e],
                        tile_start[s:e],
                        tile_size[s:e],
                        lay.pair_a,
                        lay.pair_b,
                        lay.lo,
                        lay.size,
                        lay.off,
                        lay.pair_of,
                        V_next,
                        next_base,
                        V_out,
                        base,
                        codes,
                        code_pts,
                        zero_code,
                        self.gen,
                        self.dbl,
                        self.served_win,
                        lay.full,
                        add,
                        sub_start,
                        sub_list,
                        NS,
                        FULL_ROLL_PROB,
                        FIVE_ALIKE,
                        self.rules.locked_holds,
                        *lp,
                        lanes,
                        nthreads,
                    )
                done += int(tile_size[s:e].sum())
                if progress is not None:
                    progress(done, lay.num_values)
            layer = V_out[: int(lay.layer_values[n])].view(np.uint8)  # the values' bytes, not a copy
            f.write(layer.data)
            digest.update(layer.data)
            V_next, V_out = V_out, V_next
        self.solve_seconds = time.perf_counter() - t0
        return digest.hexdigest(), offset

    # -- reading the table ------------------------------------------------------------------------
    sheet_id = staticmethod(sheet_id)  # a seat's sheet as the solvers index it (generala_env.planning.planner)

    def value(self, a: int, b: int, d: int) -> float:
        """``V(a, b, d)`` for sheet ids ``a`` (mover) and ``b``; a finished game's result when
        both sheets are full."""
        lay = self.sheet_layout()
        if (a >> 1) == lay.full and (b >> 1) == lay.full:
            return 1.0 if d > 0 else (0.5 if d == 0 else 0.0)
        p = lay.pair_of[a, b]
        if p < 0:
            raise ValueError(f"no turn starts with sheets {a} (mover) and {b}: seat 0 moves first, so the opponent has filled as many lines or one more")
        x = min(max(int(d) - int(lay.lo[p]), 0), int(lay.size[p]) - 1)
        return float(self.V[lay.off[p] + x])

    @property
    def first_player_value(self) -> float:
        """Seat 0's P(win) + ½·P(draw) at the start of the game, both playing optimally."""
        return self.value(0, 0, 0)

    def write_values(self, a: int, b: int, d: int) -> np.ndarray:
        """``W[l, r, served]``: the mover's value after writing roll ``r`` on line ``l`` (``-inf``
        for a filled line); a served generala that wins is worth 1, and is the only write."""
        lay = self.sheet_layout()
        L = self.L
        P = points_table(self.rules).astype(np.int64)
        mask, flag = a >> 1, a & 1
        V = np.asarray(self.V)  # a memory map read as a plain array: indexing it costs no subclass hooks
        W = np.full((L, NUM_ROLLS, 2), NEG)
        blocked = self.dbl if (self.dbl >= 0 and not flag) else -1
        for l in range(L):
            if (mask >> l) & 1:
                continue
            pts = np.zeros((NUM_ROLLS, 2), dtype=np.int64) if l == blocked else P[l]
            total = d + pts
            nflags = (pts > 0).astype(np.int64) if l == self.gen and self.dbl >= 0 else np.full(pts.shape, flag, dtype=np.int64)
            na = ((mask | (1 << l)) << 1) | nflags
            if (mask | (1 << l)) == lay.full and (b >> 1) == lay.full:  # the game's last write
                W[l] = np.where(total > 0, 1.0, np.where(total == 0, 0.5, 0.0))
                continue
            q = lay.pair_of[b, na]
            x = np.clip(-total - lay.lo[q], 0, lay.size[q] - 1)
            W[l] = 1.0 - V[lay.off[q] + x].astype(np.float64)
        if self.served_win and self.gen >= 0 and not (mask >> self.gen) & 1:
            five = FIVE_ALIKE
            W[:, five, 1] = NEG
            W[self.gen, five, 1] = 1.0
        return W

    def turn(self, a: int, b: int, d: int) -> dict[str, np.ndarray]:
        """The values within the mover's turn (``E3``, ``K2``, ``K1``, ``E1``, ``value``),
        computed by the one-player solver's array code from :meth:`write_values`."""
        return self._turn_cached(a, b, d)[1]

    def action_values(self, a: int, b: int, d: int, roll: int, rolls_left: int, locked_keep: int) -> np.ndarray:
        """The mover's P(win) + ½·P(draw) after each action (``-inf`` where not allowed):
        hold masks 0..31, then writes ``32 + l``."""
        W, t = self._turn_cached(a, b, d)
        return planner.turn_action_values(W, t["K1"], t["K2"], roll, rolls_left, NEG)

    def _turn_cached(self, a: int, b: int, d: int):
        """The write values and within-turn arrays of one state, kept per solver (at most 64 states)."""
        cache = self.__dict__.setdefault("_turns", {})
        key = (a, b, d)
        got = cache.get(key)
        if got is None:  # a shared table's agents may ask from several threads: no step here may fail on another's
            W = self.write_values(a, b, d)
            got = (W, turn_arrays(self.rules, W))
            if len(cache) >= 64:
                with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                    cache.pop(next(iter(cache)))
            cache[key] = got
        return got


def turn_arrays(rules: RuleSet, W: np.ndarray) -> dict[str, np.ndarray]:
    """:meth:`generala_agents.solver.Solver.turn` for one state: it needs only the locked-holds setting."""
    from .solver import Solver

    s = Solver.__new__(Solver)
    s.locked = rules.locked_holds
    t = s.turn(W[None])
    return {k: v[0] for k, v in t.items()}
