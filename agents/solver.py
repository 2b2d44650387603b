"""Exact dynamic programming for one-player Generala.

The state between turns is the set of filled lines plus, when the sheet has a
double_generala line, whether the generala line holds points. ``V[state]`` is the
expected points still to come under optimal play. Within a turn the solver works over
the 252 rolls and 462 keeps:

* ``E3(r)``: best write after the third roll;
* ``K2(k) = Σ P(r | k) E3(r)``; ``E2(r) = max(write now, best proper keep of r)``;
* ``K1(k) = Σ P(r | k) E2(r)``; ``E1(r) = max(served write, best proper keep of r)``;
* ``V = Σ P(r) E1(r)``.

Under ``locked_holds`` the second decision depends on the first keep too: ``E2`` is
computed for each (first keep, roll) pair, and only keeps that contain the first keep
are allowed.

States are solved a layer at a time (all sheets with the same number of filled lines
at once) with array operations. Solved values are cached on disk, keyed by the rule
set's fingerprint, with a checksum, in a private cache folder only; a stale, corrupt or
implausible cache is solved again, with a warning (:func:`load_or_solve`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import time
import warnings
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from generala_env.core.dice import (
    FULL_ROLL_PROB,
    KEEP_CONTAINS,
    KEEP_COUNTS,
    KEEP_ROLL_PROB,
    NUM_KEEPS,
    NUM_ROLLS,
    ROLL_CONTAINS_KEEP,
    ROLL_COUNTS,
    ROLL_PROPER_KEEPS,
)
from generala_env.core.rules import RuleSet, load_rules
from generala_env.core.scoring import generala_scored, points_table
from generala_env.files import FileProblem, lstat_or_none, read_regular, write_atomic
from generala_env.files.cache import (
    CacheWarning,
    Progress,
    cache_dir,
    cache_file_problem,
    how_long,
    notice,
    private_cache,
    record_seconds,
)  # cache_dir: also agents.solver.cache_dir
from generala_env.planning import planner
from generala_env.planning.planner import sheet_index

from . import shared

SOLVER_VERSION = 1
NEG = -np.inf
_KRP_T = np.ascontiguousarray(KEEP_ROLL_PROB.T)  # (252, 462)


def _gather_max(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``max(values[..., index[i, :]])`` per row of ``index`` (``-1`` = none)."""
    ext = np.concatenate([values, np.full(values.shape[:-1] + (1,), NEG)], axis=-1)
    return ext[..., index].max(axis=-1)


@lru_cache(maxsize=1)
def locked_pairs():
    """(first keep, roll) pairs with the roll containing the keep, for locked holds."""
    keep_of_pair, roll_of_pair = np.nonzero(ROLL_CONTAINS_KEEP.T)  # (k1, r)
    roll_as_keep = np.array([int(np.flatnonzero((ROLL_COUNTS[r] == KEEP_COUNTS).all(1))[0]) for r in range(NUM_ROLLS)])
    lists = []
    for k1, r in zip(keep_of_pair, roll_of_pair, strict=True):
        ks = np.flatnonzero(KEEP_CONTAINS[:, k1] & ROLL_CONTAINS_KEEP[r])
        lists.append(ks[ks != roll_as_keep[r]])
    idx = np.full((len(lists), max(map(len, lists))), -1, dtype=np.int32)
    for i, ks in enumerate(lists):
        idx[i, : len(ks)] = ks
    # matrix summing E2 over the rolls of each first keep, weighted by P(r | k1)
    weights = np.zeros((len(lists), NUM_KEEPS))
    weights[np.arange(len(lists)), keep_of_pair] = KEEP_ROLL_PROB[keep_of_pair, roll_of_pair]
    pair_of = np.full((NUM_KEEPS, NUM_ROLLS), -1, dtype=np.int32)
    pair_of[keep_of_pair, roll_of_pair] = np.arange(len(lists))
    return roll_of_pair, idx, weights, pair_of


class Solver:
    """Optimal one-player values for a rule set: ``solver.expected_score`` and per-turn tables."""

    def __init__(self, rules, values: np.ndarray | None = None):
        self.rules: RuleSet = load_rules(rules)
        self.L = self.rules.num_lines
        self.points = points_table(self.rules).astype(np.float64)  # (L, 252, 2)
        self.gen, self.dbl = self.rules.generala_line, self.rules.double_generala_line  # -1: not on the sheet
        self.locked = self.rules.locked_holds
        # (roll, served) pairs whose write on the generala line makes it scored
        # (252, 2); all False without a generala line
        self.gen_scores = generala_scored(self.rules, self.points.transpose(1, 2, 0)) if self.gen >= 0 else np.zeros((NUM_ROLLS, 2), dtype=bool)
        self.V: np.ndarray = np.zeros(0) if values is None else values  # empty until solve()
        self.solve_seconds = 0.0

    # -- state indexing ---------------------------------------------------------
    def state(self, filled_mask: int, generala_scored: bool) -> int:
        """The index of a sheet in :attr:`V` (:func:`generala_env.planning.planner.sheet_index`)."""
        return sheet_index(self.rules, filled_mask, generala_scored)

    # -- one turn, for a batch of states ------------------------------------------
    def write_values(self, masks: np.ndarray, flags: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``W[s, l, r, served]``: points written plus the value of the state that follows."""
        S, L = len(masks), self.L
        W = np.empty((S, L, NUM_ROLLS, 2))
        points = planner.write_points(self.rules, flags.astype(bool))  # a state's flag: its generala line holds points
        for l in range(L):
            bit = 1 << l
            nxt = masks | bit
            pts = points[:, l]
            if l == self.gen and self.dbl >= 0:
                v_next = np.where(self.gen_scores[None], V[nxt * 2 + 1][:, None, None], V[nxt * 2][:, None, None])
                W[:, l] = pts + v_next
            else:
                W[:, l] = pts + V[nxt * 2 + flags][:, None, None]
            W[(masks & bit) != 0, l] = NEG
        return W

    def turn(self, W: np.ndarray) -> dict[str, np.ndarray]:
        """Values within a turn given write values ``W[s, l, r, served]``."""
        E3 = W[..., 0].max(axis=1)  # (S, 252)
        K2 = E3 @ _KRP_T  # (S, 462)
        out = {"E3": E3, "K2": K2}
        if self.locked:
            pair_roll, pair_keeps, pair_weights, _ = locked_pairs()
            E2p = np.maximum(E3[:, pair_roll], _gather_max(K2, pair_keeps))
            K1 = E2p @ pair_weights
        else:
            E2 = np.maximum(E3, _gather_max(K2, ROLL_PROPER_KEEPS))
            K1 = E2 @ _KRP_T
        E1 = np.maximum(W[..., 1].max(axis=1), _gather_max(K1, ROLL_PROPER_KEEPS))
        out.update(K1=K1, E1=E1, value=E1 @ FULL_ROLL_PROB)
        return out

    # -- the whole game -----------------------------------------------------------
    @property
    def sheets(self) -> int:
        """How many sheets :meth:`solve` works through: every sheet but the full one, and those
        with the generala line filled once more (scored or not) when there is a double generala."""
        return (1 << self.L) - 1 + ((1 << (self.L - 1)) - 1 if self.dbl >= 0 else 0)

    def solve(self, progress: Callable[[int], None] | None = None) -> Solver:
        """Solve every sheet; ``progress(n)`` is told of each ``n`` sheets more that are solved."""
        t0 = time.perf_counter()
        L = self.L
        full = (1 << L) - 1
        V = np.zeros(2 * (1 << L))
        by_filled: list[list[int]] = [[] for _ in range(L + 1)]
        for mask in range(1 << L):
            by_filled[bin(mask).count("1")].append(mask)
        for n in range(L - 1, -1, -1):
            ms = np.array(by_filled[n], dtype=np.int64)
            flags = np.zeros(len(ms), dtype=np.int64)
            if self.dbl >= 0:  # the flag matters only once generala is filled
                has_gen = (ms >> self.gen) & 1 == 1
                ms = np.concatenate([ms, ms[has_gen]])
                flags = np.concatenate([flags, np.ones(int(has_gen.sum()), dtype=np.int64)])
            for lo in range(0, len(ms), 256):  # bounded memory per batch
                m, f = ms[lo : lo + 256], flags[lo : lo + 256]
                V[m * 2 + f] = self.turn(self.write_values(m, f, V))["value"]
                if progress is not None:
                    progress(len(m))
        V[full * 2 :] = 0.0
        self.V = V
        self.solve_seconds = time.perf_counter() - t0
        return self

    @property
    def expected_score(self) -> float:
        """Optimal expected final total of a one-player game."""
        return float(self.V[0])

    # -- decisions ----------------------------------------------------------------
    def _turn_of_state(self, filled_mask: int, flag: int):
        """The write values and within-turn arrays of one sheet, kept per solver (at most 512 sheets)."""
        cache = self.__dict__.setdefault("_turns", {})
        key = (filled_mask, flag)
        if key not in cache:
            if len(cache) >= 512:
                cache.pop(next(iter(cache)))
            W = self.write_values(np.array([filled_mask]), np.array([flag]), self.V)
            cache[key] = (W[0], self.turn(W))
        return cache[key]

    def action_values(self, filled_mask: int, generala_scored: bool, roll: int, rolls_left: int, locked_keep: int) -> np.ndarray:
        """Expected final points still to come after each action (``-inf`` where not allowed).

        Actions are the environment's: hold masks 0..31, then writes ``32 + l``.
        """
        flag = int(bool(generala_scored) and self.dbl >= 0)
        W, t = self._turn_of_state(filled_mask, flag)
        return planner.turn_action_values(W, t["K1"][0], t["K2"][0], roll, rolls_left, NEG)


# -- disk cache ---------------------------------------------------------------------
def cache_path(rules: RuleSet) -> Path:
    return cache_dir() / f"solve-{rules.fingerprint()}-v{SOLVER_VERSION}.npz"


def checksum(a: np.ndarray) -> str:
    """The SHA-256 of the array's bytes, read a slice at a time (a memory-mapped table is
    never copied whole)."""
    flat = np.ascontiguousarray(a).reshape(-1)
    h = hashlib.sha256()
    step = max(1, (1 << 24) // max(flat.itemsize, 1))
    for lo in range(0, len(flat), step):
        h.update(flat[lo : lo + step].data)
    return h.hexdigest()


def cache_meta(rules: RuleSet, version: int, V: np.ndarray, solve_seconds: float, **extra) -> dict:
    """What a cache file of solved values records: the rule set, the solver version and a checksum."""
    return {
        "fingerprint": rules.fingerprint(),
        "solver_version": version,
        "checksum": checksum(V),
        "rules": rules.settings(),
        "solve_seconds": solve_seconds,
        **extra,
    }


def meta_problem(meta, rules: RuleSet, version: int, V: np.ndarray) -> str | None:
    """Why cached values do not belong to this rule set and solver version, or were altered
    since they were written (their checksum); ``None`` if they do."""
    if not isinstance(meta, dict):
        return "its record is not a JSON object"
    if meta.get("fingerprint") != rules.fingerprint():
        return f"it holds the values of other rules (fingerprint {str(meta.get('fingerprint'))[:32]!r})"
    if meta.get("solver_version") != version:
        return f"it was written by solver version {str(meta.get('solver_version'))[:16]!r}, not {version}"
    if meta.get("checksum") != checksum(V):
        return "its values do not match their checksum (damaged)"
    return None


def open_points(rules: RuleSet) -> tuple[np.ndarray, np.ndarray]:
    """Per filled-lines mask, the fewest and the most points its open lines can still give."""
    P = points_table(rules)
    most = P.max(axis=(1, 2)).astype(np.float64)
    least = np.minimum(P.min(axis=(1, 2)), 0).astype(np.float64)
    masks = np.arange(1 << rules.num_lines)
    open_ = ((masks[:, None] >> np.arange(rules.num_lines)) & 1) == 0
    return open_ @ least, open_ @ most


def values_problem(solver: Solver, samples: int = 64) -> str | None:
    """Why ``solver.V`` cannot be the solution of its rules, or ``None``: a checksum in a file
    is no defence (whoever changes the values can recompute it), so the values themselves are
    checked. Each must be finite and lie between the fewest and the most points the sheet's
    open lines can still give, a full sheet's must be 0, and the start and ``samples`` other
    sheets must hold what one turn computed from the values after them gives."""
    values, L = solver.V, solver.L
    if values.dtype != np.float64 or values.shape != (2 * (1 << L),):
        return f"it holds {values.dtype} values of shape {values.shape}, not {2 * (1 << L)} float64 values"
    if not np.isfinite(values).all():
        return "it holds values that are not finite numbers"
    least, most = open_points(solver.rules)
    lo, hi = np.repeat(least, 2), np.repeat(most, 2)
    bad = np.flatnonzero((values < lo - 1e-9) | (values > hi + 1e-9))
    if len(bad):
        s = int(bad[0])
        return f"the value of sheet {s // 2:#x} ({values[s]:.4f}) lies outside the {lo[s]:g} to {hi[s]:g} points its open lines can still give"
    full = (1 << L) - 1
    rng = np.random.default_rng()
    masks = np.concatenate([[0], rng.integers(0, full, size=samples)]) if full > 0 else np.zeros(0, dtype=np.int64)
    masks = masks.astype(np.int64)
    flags = np.zeros(len(masks), dtype=np.int64)
    if solver.dbl >= 0:  # half the samples with the generala line scored, where it is filled
        flags[1::2] = (masks[1::2] >> solver.gen) & 1
    if len(masks):
        again = solver.turn(solver.write_values(masks, flags, values))["value"]
        stored = values[masks * 2 + flags]
        off = np.abs(again - stored) > 1e-7 * (1 + np.abs(again))
        if off.any():
            i = int(np.argmax(off))
            return f"its values do not follow from one another (sheet {int(masks[i]):#x}: {stored[i]:.4f} stored, {again[i]:.4f} computed from the sheets after it)"
    return None


def _write_cache(path: Path, V: np.ndarray, meta: dict) -> None:
    write_atomic(path, lambda f: np.savez(f, V=V, meta=np.array(json.dumps(meta))))


def read_cached_arrays(path: Path, limit: int, what: str) -> tuple[dict | None, str | None]:
    """The arrays of a cache file written by ``np.savez`` (with its JSON record as ``meta``,
    parsed), or ``None`` and why not (``None``, ``None``: there is no file). The file must be a
    regular file of a private cache (:func:`~generala_env.files.cache.cache_file_problem`), read
    bounded by ``limit`` bytes, no pickle; anything else is a reason, never an error."""
    try:
        why = cache_file_problem(path)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"it cannot be examined ({e.strerror or e})"
    if why is not None:
        return None, why
    try:
        raw = read_regular(path, limit, what)
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["meta"] = json.loads(str(arrays["meta"]))
    except FileProblem as e:
        return None, str(e).replace(f"{what} {path} ", "it ", 1)
    except Exception as e:  # truncated, not a zip, a pickled array, not JSON, no record: made again
        return None, f"it cannot be read ({type(e).__name__}: {str(e)[:200]})"
    return arrays, None


def _read_cache(path: Path, rules: RuleSet) -> tuple[Solver | None, str | None]:
    """The solver whose values lie in ``path``, or ``None`` and why not (``None``, ``None``:
    there is no file)."""
    L = rules.num_lines
    limit = 16 * (1 << L) + (1 << 20)  # the float64 values, and room for the zip and the record
    arrays, why = read_cached_arrays(path, limit, "the solver cache")
    if arrays is None:
        return None, why
    if "V" not in arrays:
        return None, "it holds no values"
    meta, V = arrays["meta"], arrays["V"]
    if V.dtype != np.float64 or V.shape != (2 * (1 << L),):
        return None, f"it holds {V.dtype} values of shape {V.shape}, not {2 * (1 << L)} float64 values"
    why = meta_problem(meta, rules, SOLVER_VERSION, V)
    s = Solver(rules, V)
    why = why or values_problem(s)
    if why is not None:
        return None, why
    s.solve_seconds = float(meta.get("solve_seconds", 0.0)) if isinstance(meta.get("solve_seconds"), (int, float)) else 0.0
    return s, None


# a solve expected to take this long (seconds) is announced, with a progress bar
NOTICE_SECONDS = 3.0


def solve_seconds_estimate(rules: RuleSet) -> float:
    """About how many seconds :meth:`Solver.solve` takes for ``rules`` on one core: 0.5 s for
    the classic sheet's ten lines, twice that for each line more, nine times that under
    locked holds (measured: docs/install.md)."""
    return 0.5 * 2.0 ** (rules.num_lines - 10) * (9.0 if rules.locked_holds else 1.0)


def _solve_announced(rules: RuleSet, kept: Path | None) -> Solver:
    """``Solver(rules).solve()``; when it takes more than a few seconds, a line on stderr first
    (what, about how long, where it is kept) and a progress bar over the sheets."""
    solver = Solver(rules)
    seconds = solve_seconds_estimate(rules)
    if seconds < NOTICE_SECONDS:
        return solver.solve()
    where = f"cached in {kept} afterwards" if kept is not None else "not cached"
    what = f"solving the one-player game of rules {rules.fingerprint()}"
    # never solved here: the estimate of one quiet core to three times it (a busy machine)
    notice(f"solve {rules.fingerprint()}", f"solving the one-player game of rules {rules.name} ({how_long(what, seconds, 3 * seconds)}; {where})")
    bar = Progress("solving", solver.sheets, "sheet")
    t0 = time.monotonic()
    try:
        solved = solver.solve(bar.update)
    finally:
        bar.close()
    record_seconds(what, time.monotonic() - t0)
    return solved


def load_or_solve(rules, use_cache: bool = True) -> tuple[Solver, str]:
    """A solved :class:`Solver` and where its values came from (``"cache"`` or ``"solved"``).

    The cache is a file per rule set in :func:`cache_dir` (``$GENERALA_CACHE``; unset or
    empty: ``~/.cache/generala``), used only when that folder is private
    (:func:`generala_env.files.cache.private_cache`). A cache file is read only when it is a regular
    file of this user, and its values are used only when they match the rule set, the solver
    version and their checksum and pass :func:`values_problem`; otherwise a
    :class:`~generala_env.files.cache.CacheWarning` says why, the values are solved again and the
    file is replaced (a link, a FIFO, a folder or another user's file in its place is left alone). A cache that
    cannot be written costs only a ``RuntimeWarning``: the values are returned all the same,
    and no temp file is left.
    """
    rules = load_rules(rules)
    path = cache_path(rules)
    folder = private_cache() if use_cache else None
    replace = True
    if folder is not None:
        s, replace = read_or_replace(path, lambda: _read_cache(path, rules), "the solver cache", "solved again", "the values")
        if s is not None:
            return s, "cache"
    s = _solve_announced(rules, path if folder is not None and replace else None)
    if folder is not None and replace:
        try:
            _write_cache(path, s.V, cache_meta(rules, SOLVER_VERSION, s.V, s.solve_seconds))
        except (OSError, FileProblem) as err:  # no reason to fail: the values are in memory
            warnings.warn(f"cannot write the solver cache {path}: {err}; the values are kept in memory only", RuntimeWarning, stacklevel=2)
    return s, "solved"


def shared_solver(rules) -> tuple[Solver, str]:
    """The solved :class:`Solver` of ``rules`` that the whole process shares and where its
    values came from: :func:`load_or_solve`'s, read or solved once per rule set
    (:func:`generala_agents.shared.once`), its arrays read-only."""
    rules = load_rules(rules)

    def build() -> tuple[Solver, str]:
        s, source = load_or_solve(rules)
        shared.read_only(s.V, s.points, s.gen_scores)
        return s, source

    got = shared.once(str(cache_path(rules)), build)
    assert got is not None  # build never gives None
    return got


def read_or_replace(path: Path, read, what: str, again: str, keep: str):
    """``(value, False)`` where ``read()`` finds the cached value at ``path``; else ``(None,
    replace)``: whether what is made anew may be written there. A file that is there and not
    used is one :class:`~generala_env.files.cache.CacheWarning` naming why, and what happens
    (``again``: "solved again"; ``keep``: what removing it would keep)."""
    value, why = read()
    if value is not None:
        return value, False
    if why is None:  # no file
        return None, True
    replace = replaceable(path)
    then = f"{again} and rewritten" if replace else f"{again}; it is neither read nor replaced: remove it to keep {keep}"
    warnings.warn(f"{what} {path} is not used: {why}; {then}", CacheWarning, stacklevel=3)
    return None, replace


def replaceable(path: Path) -> bool:
    """Whether the cache may write ``path``: absent, or a regular file of this user (not a
    link, a FIFO, a folder or another user's file, which stay as they are)."""
    st = lstat_or_none(path)
    return st is None or (stat.S_ISREG(st.st_mode) and (not hasattr(os, "geteuid") or st.st_uid == os.geteuid()))
