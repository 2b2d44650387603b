"""Exact dynamic programming for two-player Generala: the chance to win.

Both players maximise P(win) + ½·P(draw), the expectation of the env's ``reward="win"``
mapped to [0, 1]. Seat 0 moves first in each round.

A state at a turn start is (mover's sheet, opponent's sheet, score difference ``d`` =
mover's total − opponent's total). A sheet is its set of filled lines plus, when the
rule set has a double_generala line, whether the generala line holds points (as in the
one-player solver). ``V(a, b, d)`` is the mover's value under optimal play by both. The
turn inside is solved exactly with the 252 rolls and 462 keeps, as in
:mod:`generala_agents.solver`, except that a write's value is ``1 − V(b, a + line, −(d + points))``
(the opponent moves next), a finished game is worth 1, ½ or 0, and a served generala
wins on the spot where the rule set says so.

Only score differences that can still matter are kept. With ``M(s)`` the most points a
sheet can still gain and ``F(s)`` the most its filled lines can hold:

* ``d > M(b)``: the opponent cannot catch up on points, and ``V`` no longer depends on
  ``d`` (only a served generala can change the result); likewise ``d < −M(a) − 1``.
* ``−F(b) ≤ d ≤ F(a)``: no other difference can be reached.

So each pair of sheets stores ``V`` for ``d`` from ``max(−M(a) − 1, −F(b))`` to
``min(M(b) + 1, F(a))``, and a look-up outside that range takes its nearest end. Pairs
are solved a layer at a time (by the number of filled lines), every turn vectorised
over the score differences in numba; each layer goes to the table's file when it is done,
so a solve holds two layers in memory. The values are float32, cached on disk like the
one-player table (rule-set fingerprint, solver version and a checksum) and read back as a
read-only memory map.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import IO

import numpy as np

from generala_env import planner
from generala_env.cache import cache_file_problem, private_cache, warn_once
from generala_env.dice import (
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
from generala_env.files import FileProblem, lstat_or_none, read_json, write_atomic, write_json
from generala_env.rules import RuleSet, load_rules
from generala_env.scoring import generala_scored, points_table

from .solver import (
    NEG,
    _locked_pairs,
    cache_dir,
    cache_meta,
    meta_problem,
    replaceable,
)

SOLVER2P_VERSION = 2
DEFAULT_MAX_MEMORY = 2 * 2**30  # bytes a solve may allocate unless told otherwise
Progress = Callable[[int, int], None]  # (values solved, values in all)
TILE = 512  # the most score differences a turn is solved for at once (lanes of the kernel's loops)


class SolveTooBigError(ValueError):
    """A rule set whose two-player table does not fit the memory allowed."""


# -- the dice tables the turn recursion needs ------------------------------------------------
def _keep_of(counts) -> int:
    return int(KEEP_OF_KEY[int(np.asarray(counts, dtype=np.int64) @ KEY_WEIGHTS)])


@lru_cache(maxsize=1)
def _dice_tables():
    """A keep plus one face; the distinct keeps of a keep less one die (a flat list and
    where each keep's part starts); each roll as a keep; the keeps of four dice or fewer,
    biggest first."""
    add = np.full((NUM_KEEPS, FACES), -1, dtype=np.int32)
    sub = np.full((NUM_KEEPS, FACES), -1, dtype=np.int32)
    for k in range(NUM_KEEPS):
        c = KEEP_COUNTS[k].astype(np.int64)
        for f in range(FACES):
            if KEEP_SIZE[k] < 5:
                c2 = c.copy()
                c2[f] += 1
                add[k, f] = _keep_of(c2)
            if c[f] > 0:
                c2 = c.copy()
                c2[f] -= 1
                sub[k, f] = _keep_of(c2)
    roll_keep = np.array([_keep_of(ROLL_COUNTS[r]) for r in range(NUM_ROLLS)], dtype=np.int32)
    by_size = np.argsort(-KEEP_SIZE, kind="stable").astype(np.int32)
    small = by_size[KEEP_SIZE[by_size] < 5]  # the keeps of four dice or fewer, biggest first
    # the distinct keeps of each keep less one die, as one flat list
    lists = [sorted({int(s) for s in row if s >= 0}) for row in sub]
    sub_start = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
    sub_list = np.array([s for x in lists for s in x], dtype=np.int32)
    return add, sub_start, sub_list, roll_keep, small


# -- layout of the table -----------------------------------------------------------------------
def _sheets(rules: RuleSet) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """The sheet ids by number of filled lines, and per sheet id the most points it can still
    gain (a blocked double generala gains nothing) and the most its filled lines can hold."""
    L = rules.num_lines
    gen, dbl = rules.generala_line, rules.double_generala_line
    line_max = points_table(rules).max(axis=(1, 2)).astype(np.int64)
    sheets: list[list[int]] = [[] for _ in range(L + 1)]
    gain = np.zeros(2 << L, dtype=np.int64)
    held = np.zeros(2 << L, dtype=np.int64)
    for m in range(1 << L):
        for flag in (0, 1) if dbl >= 0 and (m >> gen) & 1 else (0,):
            s = 2 * m + flag
            sheets[bin(m).count("1")].append(s)
            for l in range(L):
                if (m >> l) & 1:
                    held[s] += line_max[l]
                elif not (l == dbl and (m >> gen) & 1 and not flag):
                    gain[s] += line_max[l]
    return sheets, gain, held


class Layout:
    """Which (mover sheet, opponent sheet) pairs exist, and where each one's values lie.

    Pairs come a layer at a time, the last layer first (the order they are solved in), so
    a solve writes its table front to back and holds only two layers in memory."""

    def __init__(self, rules: RuleSet):
        L = rules.num_lines
        self.L = L
        self.full = (1 << L) - 1
        S = 2 << L  # sheet id = filled mask * 2 + flag (generala holds points, double_generala only)
        sheets, gain, held = _sheets(rules)
        self.gain, self.held, self.sheets = gain, held, sheets
        # pairs, a layer (filled lines of both) at a time; the mover is seat 0 when both
        # have filled as many lines, seat 1 when the opponent has filled one more
        layers: list[tuple[np.ndarray, np.ndarray]] = [None] * (2 * L)  # type: ignore[list-item]
        for nA in range(L):
            for nB in (nA, nA + 1):
                A = np.repeat(np.array(sheets[nA], dtype=np.int64), len(sheets[nB]))
                B = np.tile(np.array(sheets[nB], dtype=np.int64), len(sheets[nA]))
                layers[nA + nB] = (A, B)
        order = list(range(2 * L - 1, -1, -1))
        self.pair_a = np.concatenate([layers[n][0] for n in order]).astype(np.int32)
        self.pair_b = np.concatenate([layers[n][1] for n in order]).astype(np.int32)
        bounds = np.cumsum([0] + [len(layers[n][0]) for n in order])
        self.layers: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * (2 * L)
        for i, n in enumerate(order):
            self.layers[n] = np.arange(bounds[i], bounds[i + 1], dtype=np.int64)
        a, b = self.pair_a.astype(np.int64), self.pair_b.astype(np.int64)
        self.lo = np.maximum(-gain[a] - 1, -held[b])
        hi = np.minimum(gain[b] + 1, held[a])
        self.size = hi - self.lo + 1
        self.off = np.concatenate([[0], np.cumsum(self.size)[:-1]]).astype(np.int64)
        self.num_values = int(self.size.sum())
        self.num_pairs = len(self.pair_a)
        self.S = S
        # per layer, where its values start in the table and how many there are
        self.layer_start = np.array([int(self.off[p[0]]) for p in self.layers], dtype=np.int64)
        self.layer_values = np.array([int(self.size[p].sum()) for p in self.layers], dtype=np.int64)

    @staticmethod
    def counts(rules: RuleSet) -> tuple[list[int], int]:
        """The number of values of each layer and the number of pairs, counted from the rule
        set alone (no pair is listed)."""
        from collections import Counter

        L = rules.num_lines
        sheets, gain, held = _sheets(rules)
        # per filled count, the number of sheets of each (gain, held): enough to count pairs and values
        per_n = [Counter(zip(gain[ids].tolist(), held[ids].tolist(), strict=True)) for ids in map(np.array, sheets)]
        layer_values = [0] * (2 * L)
        pairs = 0
        for nA in range(L):
            for nB in (nA, nA + 1):
                ga, ha, ca = (np.array(x) for x in zip(*[(g, h, c) for (g, h), c in per_n[nA].items()], strict=True))
                gb, hb, cb = (np.array(x) for x in zip(*[(g, h, c) for (g, h), c in per_n[nB].items()], strict=True))
                lo = np.maximum(-ga[:, None] - 1, -hb[None, :])
                hi = np.minimum(gb[None, :] + 1, ha[:, None])
                w = ca[:, None] * cb[None, :]
                layer_values[nA + nB] = int(((hi - lo + 1) * w).sum())
                pairs += int(w.sum())
        return layer_values, pairs

    @staticmethod
    def bytes_needed(rules: RuleSet) -> int:
        """What a solve holds in memory (two layers of float32 values, the pair index and
        the per-pair arrays; the table itself goes to a file a layer at a time), counted
        from the rule set alone before anything big is allocated."""
        layer_values, pairs = Layout.counts(rules)
        two_layers = max(x + y for x, y in zip(layer_values, [*layer_values[1:], 0], strict=True))
        S = 2 << rules.num_lines
        return two_layers * 4 + pairs * (4 + 4 + 8 + 8 + 8) + S * S * 4

    def index_pairs(self) -> None:
        self.pair_of = np.full((self.S, self.S), -1, dtype=np.int32)
        self.pair_of[self.pair_a, self.pair_b] = np.arange(self.num_pairs, dtype=np.int32)


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
    roll, first keep, probability and the second keeps allowed (a slice of one flat list)."""
    from generala_env.dice import KEEP_ROLL_PROB, ROLL_CONTAINS_KEEP

    roll_of_pair, idx, _, _ = _locked_pairs()
    keep_of_pair, rolls = np.nonzero(ROLL_CONTAINS_KEEP.T)  # the order _locked_pairs uses
    assert (rolls == roll_of_pair).all()
    prob = KEEP_ROLL_PROB[keep_of_pair, roll_of_pair]
    lists = [row[row >= 0] for row in idx]
    start = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
    flat = np.concatenate(lists).astype(np.int32)
    return roll_of_pair.astype(np.int32), keep_of_pair.astype(np.int32), prob.astype(np.float64), start, flat


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
            n = self._index().num_values
            if values.shape != (n,):
                raise ValueError(f"a two-player table for {self.rules.name!r} holds {n} values, got {values.shape}")

    def _index(self) -> Layout:
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

    def solve(self, progress: Progress | None = None, max_memory: int | None = DEFAULT_MAX_MEMORY) -> TwoPlayerSolver:
        """Solve every pair; ``progress(values done, values in all)`` after each batch.
        Raises :class:`SolveTooBigError` before allocating when the solve needs more than
        ``max_memory`` bytes (``None``: no limit). The values go to a temporary file that
        is removed at once (it lives while this process maps it): memory holds two layers."""
        self.check_memory(max_memory)
        f = tempfile.TemporaryFile()  # noqa: SIM115  # mapped below: the map outlives the file object
        with f:
            offset = self.solve_into(f, progress)[1]
            f.flush()
            self.V = np.memmap(f, dtype=np.float32, mode="r", offset=offset, shape=(self._index().num_values,))
        return self

    # long: the tables the kernel reads, then the layers in order, each written as it is done
    def solve_into(self, f: IO[bytes], progress: Progress | None = None) -> tuple[str, int]:
        """Solve every pair, writing the table to ``f`` as a ``.npy`` file a layer at a time;
        the SHA-256 of the values and where they start in the file. Sets
        :attr:`solve_seconds`, not :attr:`V` (``f`` may be open for writing only)."""
        t0 = time.perf_counter()
        lay = self._index()
        code_pts, codes, zero_code = _line_codes(self.rules)
        add, sub_start, sub_list, roll_keep, small = _dice_tables()
        lp = (
            _locked_lists()
            if self.rules.locked_holds
            else (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0), np.zeros(1, np.int64), np.zeros(0, np.int32))
        )
        import numba

        from .solver2p_kernel import solve_layer

        nthreads = numba.get_num_threads()
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
            pairs = lay.layers[n]
            base = int(lay.layer_start[n])
            next_base = int(lay.layer_start[n + 1]) if n + 1 < 2 * self.L else 0
            for s in range(0, len(pairs), 8192):
                batch = pairs[s : s + 8192]
                solve_layer(
                    batch,
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
                    roll_keep,
                    small,
                    FULL_ROLL_PROB,
                    FIVE_ALIKE,
                    self.rules.locked_holds,
                    *lp,
                    TILE,
                    nthreads,
                )
                done += int(lay.size[batch].sum())
                if progress is not None:
                    progress(done, lay.num_values)
            layer = V_out[: int(lay.layer_values[n])].view(np.uint8)  # the values' bytes, not a copy
            f.write(layer.data)
            digest.update(layer.data)
            V_next, V_out = V_out, V_next
        self.solve_seconds = time.perf_counter() - t0
        return digest.hexdigest(), offset

    # -- reading the table ------------------------------------------------------------------------
    @staticmethod
    def sheet_id(rules: RuleSet, sheet) -> int:
        """A seat's sheet (line values, ``OPEN`` = -1 for open lines) as the solver's sheet id."""
        sheet = np.asarray(sheet)
        mask = int(sum(1 << i for i, v in enumerate(sheet.tolist()) if v >= 0))
        flag = int(rules.double_generala_line >= 0 and bool(generala_scored(rules, sheet)))
        return 2 * mask + flag

    def value(self, a: int, b: int, d: int) -> float:
        """``V(a, b, d)`` for sheet ids ``a`` (mover) and ``b``; a finished game's result when
        both sheets are full."""
        lay = self._index()
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
        lay = self._index()
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
            got = (W, _turn_arrays(self.rules, W))
            if len(cache) >= 64:
                with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                    cache.pop(next(iter(cache)))
            cache[key] = got
        return got


def _turn_arrays(rules: RuleSet, W: np.ndarray) -> dict[str, np.ndarray]:
    """:meth:`generala_agents.solver.Solver.turn` for one state: it needs only the locked-holds setting."""
    from .solver import Solver

    s = Solver.__new__(Solver)
    s.locked = rules.locked_holds
    t = s.turn(W[None])
    return {k: v[0] for k, v in t.items()}


# -- disk cache ---------------------------------------------------------------------------------
def _cache_path(rules: RuleSet) -> Path:
    return cache_dir() / f"solve2p-{rules.fingerprint()}-v{SOLVER2P_VERSION}.npy"


def _solve_to_cache(solver: TwoPlayerSolver, path: Path, progress: Progress | None) -> None:
    """Solve into ``path`` (``.npy``, a layer at a time), then write its record beside it
    (``.json``), each whole or not at all (:func:`generala_env.files.write_atomic`); the
    solver's values are then mapped from ``path``."""
    written: list[str] = []
    write_atomic(path, lambda f: written.append(solver.solve_into(f, progress)[0]))
    solver.V = _open_table(path, solver._index().num_values)
    # the checksum of the values as they were written: reading them back would bring the whole table into memory
    meta = cache_meta(solver.rules, SOLVER2P_VERSION, np.zeros(0, np.float32), solver.solve_seconds, first_player_value=solver.first_player_value)
    meta["checksum"] = written[0]
    side = path.with_suffix(".json")
    try:
        write_json(side, meta, indent=1)
    except (OSError, FileProblem) as e:  # values without their metadata are never read: do not keep gigabytes for nothing
        path.unlink(missing_ok=True)  # the values stay mapped in this process
        raise FileProblem(f"{e} (writing {side}; {path.name} removed again)") from None


def values_problem_2p(solver: TwoPlayerSolver, samples: int = 8) -> str | None:
    """Why ``solver.V`` cannot be the two-player solution of its rules, or ``None``: a checksum
    in a file is no defence (whoever changes the values can recompute it), so the values
    themselves are checked. Each is a chance, finite and between 0 and 1; the start and
    ``samples`` other states must hold what one turn computed from the values after them gives."""
    V = solver.V
    step = 1 << 22
    for lo in range(0, len(V), step):  # a slice at a time: a memory-mapped table is never copied whole
        part = V[lo : lo + step]
        if not np.isfinite(part).all():
            return "it holds values that are not finite numbers"
        if part.min() < -1e-6 or part.max() > 1 + 1e-6:
            return f"it holds values outside 0 to 1 (from {part.min():.4f} to {part.max():.4f}), and a chance to win is neither"
    lay = solver._index()
    rng = np.random.default_rng()
    states = [(0, 0, 0)]
    for p in rng.integers(0, lay.num_pairs, size=samples):
        states.append((int(lay.pair_a[p]), int(lay.pair_b[p]), int(lay.lo[p] + rng.integers(0, lay.size[p]))))
    for a, b, d in states:
        stored, again = solver.value(a, b, d), float(_turn_arrays(solver.rules, solver.write_values(a, b, d))["value"])
        if abs(stored - again) > 1e-5:
            return f"its values do not follow from one another (sheets {a}, {b}, difference {d}: {stored:.6f} stored, {again:.6f} computed from the states after it)"
    return None


def _open_table(path: Path, n: int) -> np.ndarray:
    """The ``n`` float32 values of the ``.npy`` file ``path`` as a read-only memory map, read
    from the file opened once (a regular file of this user, never a link or a FIFO)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem(f"{path} is not a regular file: only regular files are read")
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise FileProblem(f"{path} belongs to user id {st.st_uid}, not to you ({os.geteuid()})")
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise FileProblem(f"{path} is a .npy file of version {version}, which the cache never writes")
        if dtype != np.dtype(np.float32) or fortran or shape != (n,):
            raise FileProblem(f"{path} holds {dtype} values of shape {shape}, not the {n} float32 values of these rules")
        offset = f.tell()
        if st.st_size != offset + 4 * n:
            raise FileProblem(f"{path} has {st.st_size:,} bytes, not the {offset + 4 * n:,} of its header and values (cut short?)")
        return np.memmap(f, dtype=np.float32, mode="r", offset=offset, shape=(n,))


def _read_cache(path: Path, rules: RuleSet) -> tuple[TwoPlayerSolver | None, str | None]:
    """The solver whose values lie in ``path`` and its record beside it, or ``None`` and why
    not (``None``, ``None``: there is no table)."""
    side = path.with_suffix(".json")
    if lstat_or_none(path) is None and lstat_or_none(side) is None:
        return None, None
    try:
        for file in (path, side):
            if lstat_or_none(file) is None:
                return None, f"{file.name} is missing"
            why = cache_file_problem(file)
            if why is not None:
                return None, f"{file.name}: {why}"
        meta = read_json(side, 1 << 20, "the record")
        solver = TwoPlayerSolver(rules)
        solver.V = _open_table(path, solver._index().num_values)
    except FileProblem as e:
        return None, str(e)
    except (OSError, ValueError) as e:  # a header that is not one
        return None, f"it cannot be read ({type(e).__name__}: {str(e)[:200]})"
    size = solver.V.nbytes
    if size > 512 << 20:  # the checks read the whole table: seconds for the bigger sheets
        with contextlib.suppress(OSError, ValueError):
            print(f"generala: checking the two-player table {path} ({size / 2**30:.1f} GiB) before it is used", file=sys.stderr, flush=True)
    why = meta_problem(meta, rules, SOLVER2P_VERSION, solver.V) or values_problem_2p(solver)
    if why is not None:
        return None, why
    seconds = meta.get("solve_seconds")
    solver.solve_seconds = float(seconds) if isinstance(seconds, (int, float)) else 0.0
    return solver, None


# the tables loaded or solved in this process, by their place in the cache (which names the
# rule set's fingerprint): every agent of the same rules plays from one read-only copy
_tables: dict[str, TwoPlayerSolver] = {}
_tables_lock = threading.Lock()


def _shared(rules: RuleSet) -> tuple[TwoPlayerSolver | None, bool]:
    """The shared table of ``rules`` (loading it from the cache at the first call), or
    ``None``; and whether the files there may be replaced (not when a link, a FIFO, a folder
    or another user's file lies at the table's or its record's name)."""
    key = str(_cache_path(rules))
    with _tables_lock:
        if key in _tables:
            return _tables[key], True
        if private_cache(make=False) is None:
            return None, True
        path = _cache_path(rules)
        solver, why = _read_cache(path, rules)
        if solver is not None:
            _tables[key] = solver
            return solver, True
        replace = replaceable(path) and replaceable(path.with_suffix(".json"))
        if why is not None:
            left = "" if replace else "; it is neither read nor replaced: remove it to keep a table there"
            # once per process and reason: a hint asks again at every move, and reads the file again
            warn_once(f"{path}: {why}", f"the two-player solver cache {path} is not used: {why}{left}", stacklevel=4)
        return None, replace


def forget_tables() -> None:
    """Drop the tables this process holds (:func:`shared_table`): the next call reads the cache
    again, as a new process would."""
    with _tables_lock:
        _tables.clear()


def shared_table(rules) -> TwoPlayerSolver | None:
    """The two-player table of ``rules`` shared by the whole process, or ``None`` when it is
    neither loaded nor in the cache. Never solves (a hint may call it). The first call reads
    it from the cache (a private folder only) as a read-only memory map, after checking it
    (:func:`values_problem_2p`; a table that fails is not used, with a
    :class:`~generala_env.cache.CacheWarning`); every later call, and :func:`load_or_solve_2p`,
    returns the same object."""
    return _shared(load_rules(rules))[0]


def is_cached(rules) -> bool:
    """Whether the two-player table of ``rules`` can be had without solving: loaded in this
    process, or in the cache (a private folder) with a record of these rules and this solver
    version. Never solves, and reads only the record (:func:`shared_table` checks the values)."""
    rules = load_rules(rules)
    if str(_cache_path(rules)) in _tables:
        return True
    if private_cache(make=False) is None:
        return False
    path = _cache_path(rules)
    side = path.with_suffix(".json")
    try:
        if cache_file_problem(path) is not None or cache_file_problem(side) is not None:
            return False
        meta = read_json(side, 1 << 20, "the record")
    except (OSError, FileProblem):
        return False
    return isinstance(meta, dict) and meta.get("fingerprint") == rules.fingerprint() and meta.get("solver_version") == SOLVER2P_VERSION


# wall-clock seconds a value takes to solve with two cores (a rough figure, measured on the
# presets): what the announcement of a solve estimates from
SECONDS_PER_VALUE = 1.0e-6


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} minutes"


class SolveReport:
    """The progress of a solve on stderr: a line at once saying what is solved, roughly how
    long it takes and where the table goes (and how to build it ahead of time); then every
    ``every`` seconds, from a thread of its own (the first batch waits for numba to compile
    the loops, the first time), the layer, the share of the values done, the time so far
    and roughly what is left; a last line when the solve is done. ``every=0``: a line at
    each call instead, and no thread."""

    def __init__(self, rules: RuleSet, where: Path | None, every: float = 5.0, stream=None):
        self.rules, self.every = rules, every
        self.stream = stream if stream is not None else sys.stderr
        layer_values, _ = Layout.counts(rules)
        self.ends = np.cumsum(layer_values[::-1])  # the layers in the order they are solved
        self.done, self.total = 0, int(self.ends[-1])
        threads = min(os.cpu_count() or 1, 2) / 2
        kept = (
            f"kept in {where.parent} for later games; 'generala solve --players 2 --rules {rules.name}' builds it ahead of time"
            if where is not None
            else "not kept (no cache)"
        )
        self._say(
            f"generala: solving the two-player table of the {rules.name!r} rules for optimal-2p: {self.total:,} values, "
            f"about {_duration(self.total * SECONDS_PER_VALUE / threads)} here, {kept}"
        )
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if every > 0:
            self._thread = threading.Thread(target=self._tick, name="solve2p-progress", daemon=True)
            self._thread.start()

    def _say(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stderr never stops a solve
            print(line, file=self.stream, flush=True)

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._line()

    def _line(self) -> None:
        done, total = self.done, self.total
        spent = time.monotonic() - self.t0
        name = self.rules.name
        if done == 0:
            self._say(f"generala: solving {name!r}: getting ready, {spent:.0f} s so far (the first solve here compiles its loops: a minute or two)")
            return
        layer = min(int(np.searchsorted(self.ends, done, side="left")) + 1, len(self.ends))
        # the first layers are small and cost more a value: no estimate from them
        left = f", about {_duration(spent * (total - done) / done)} left" if 0.02 * total <= done < total else ""
        self._say(f"generala: solving {name!r}: layer {layer} of {len(self.ends)}, {done / total:.0%} of the values, {spent:.0f} s so far{left}")

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if done >= total:
            self.close()
        if self._thread is None or done >= total:
            self._line()

    def close(self) -> None:
        """Stop the lines (the solve ended, or failed)."""
        self._stop.set()


def load_or_solve_2p(
    rules, use_cache: bool = True, progress: Callable[[int, int], None] | None = None, max_memory: int | None = DEFAULT_MAX_MEMORY
) -> tuple[TwoPlayerSolver, str]:
    """A solved :class:`TwoPlayerSolver` and where its values came from (``"cache"`` or
    ``"solved"``). With ``use_cache``, the table shared in this process (:func:`shared_table`):
    every caller on the same rules gets the same object; a table not in the cache is solved,
    written there (``solve2p-*.npy`` in :func:`generala_agents.solver.cache_dir`, with a ``.json``
    record of the fingerprint, solver version and checksum beside it) and shared. A cache that
    cannot be written costs a warning only. Without ``use_cache``, a table of its own is solved
    and nothing is read or written (its values lie in a temporary file removed at once).
    Without ``progress``, a solve says so at once on stderr and shows its progress there
    (:class:`SolveReport`): a program that loads ``optimal-2p`` never stalls in silence."""
    rules = load_rules(rules)
    solver = TwoPlayerSolver(rules)
    if not use_cache:
        solver.check_memory(max_memory)
        report = SolveReport(rules, None) if progress is None else None
        try:
            return solver.solve(progress=progress or report, max_memory=max_memory), "solved"
        finally:
            if report is not None:
                report.close()
    s, replace = _shared(rules)
    if s is not None:
        return s, "cache"
    solver.check_memory(max_memory)
    path = _cache_path(rules)
    writable = replace and private_cache() is not None
    report = SolveReport(rules, path if writable else None) if progress is None else None
    try:
        solved = False
        if writable:
            try:
                _solve_to_cache(solver, path, progress or report)
                solved = True
            except (OSError, FileProblem) as err:
                solved = solver.V.size > 0  # the record failed, not the values
                warnings.warn(
                    f"cannot write the two-player solver cache {path}: {err}; the values are kept for this process only", RuntimeWarning, stacklevel=2
                )
        if not solved:
            solver.solve(progress=progress or report, max_memory=None)
    finally:
        if report is not None:
            report.close()
    with _tables_lock:
        return _tables.setdefault(str(path), solver), "solved"
