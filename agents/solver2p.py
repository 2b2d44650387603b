"""Exact dynamic programming for two-player Generala: the chance to win.

Both players maximise P(win) + ½·P(draw), the expectation of the env's ``reward="win"``
mapped to [0, 1]. Seat 0 moves first in each round.

A state at a turn start is (mover's sheet, opponent's sheet, score difference ``d`` =
mover's total − opponent's total). A sheet is its set of filled lines plus, when the
rule set has a double_generala line, whether the generala line holds points (as in the
one-player solver). ``V(a, b, d)`` is the mover's value under optimal play by both.

The table holds ``V`` for the score differences that can still matter
(:mod:`generala_agents.solver2p_layout`); :class:`TwoPlayerSolver` solves it a layer of
turns at a time (:mod:`generala_agents.solver2p_solve`). Its values are float32, cached on
disk like the one-player table (rule-set fingerprint, solver version and a checksum) and
read back as a read-only memory map, one copy shared by the whole process
(:func:`load_or_solve_2p`, :func:`shared_table`: this module). Every name is importable from here.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from generala_env.core.rules import RuleSet, load_rules
from generala_env.files import FileProblem, lstat_or_none, read_json, write_atomic, write_json
from generala_env.files.cache import cache_file_problem, private_cache, warn_once

from . import shared
from .solver import cache_dir, cache_meta, meta_problem, replaceable
from .solver2p_layout import Layout
from .solver2p_solve import DEFAULT_MAX_MEMORY, TILE, Progress, SolveTooBigError, TwoPlayerSolver, turn_arrays

SOLVER2P_VERSION = 2


# -- disk cache ---------------------------------------------------------------------------------
def cache_path(rules: RuleSet) -> Path:
    return cache_dir() / f"solve2p-{rules.fingerprint()}-v{SOLVER2P_VERSION}.npy"


def _solve_to_cache(solver: TwoPlayerSolver, path: Path, progress: Progress | None) -> None:
    """Solve into ``path`` (``.npy``, a layer at a time), then write its record beside it
    (``.json``), each whole or not at all (:func:`generala_env.files.write_atomic`); the
    solver's values are then mapped from ``path``."""
    written: list[str] = []
    write_atomic(path, lambda f: written.append(solver.solve_into(f, progress)[0]))
    solver.V = _open_table(path, solver.sheet_layout().num_values)
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
    lay = solver.sheet_layout()
    rng = np.random.default_rng()
    states = [(0, 0, 0)]
    for p in rng.integers(0, lay.num_pairs, size=samples):
        states.append((int(lay.pair_a[p]), int(lay.pair_b[p]), int(lay.lo[p] + rng.integers(0, lay.size[p]))))
    for a, b, d in states:
        stored, again = solver.value(a, b, d), float(turn_arrays(solver.rules, solver.write_values(a, b, d))["value"])
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
        solver.V = _open_table(path, solver.sheet_layout().num_values)
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


def _shared(rules: RuleSet) -> tuple[TwoPlayerSolver | None, bool]:
    """The shared table of ``rules`` (loading it from the cache at the first call,
    :func:`generala_agents.shared.once`), or ``None``; and whether the files there may be
    replaced (not when a link, a FIFO, a folder or another user's file lies at the table's or
    its record's name)."""
    path = cache_path(rules)
    replace = True

    def read() -> TwoPlayerSolver | None:
        nonlocal replace
        if private_cache(make=False) is None:
            return None
        solver, why = _read_cache(path, rules)
        if solver is not None:
            return solver  # its values a read-only memory map
        replace = replaceable(path) and replaceable(path.with_suffix(".json"))
        if why is not None:
            left = "" if replace else "; it is neither read nor replaced: remove it to keep a table there"
            # once per process and reason: a hint asks again at every move, and reads the file again
            warn_once(f"{path}: {why}", f"the two-player solver cache {path} is not used: {why}{left}", stacklevel=6)
        return None

    return shared.once(str(path), read), replace


def forget_tables() -> None:
    """Drop the tables this process holds (:func:`shared_table`): the next call reads the cache
    again, as a new process would."""
    shared.forget(lambda key: Path(key).name.startswith("solve2p-"))


def shared_table(rules) -> TwoPlayerSolver | None:
    """The two-player table of ``rules`` shared by the whole process, or ``None`` when it is
    neither loaded nor in the cache. Never solves (a hint may call it). The first call reads
    it from the cache (a private folder only) as a read-only memory map, after checking it
    (:func:`values_problem_2p`; a table that fails is not used, with a
    :class:`~generala_env.files.cache.CacheWarning`); every later call, and :func:`load_or_solve_2p`,
    returns the same object."""
    return _shared(load_rules(rules))[0]


def is_cached(rules) -> bool:
    """Whether the two-player table of ``rules`` can be had without solving: loaded in this
    process, or in the cache (a private folder) with a record of these rules and this solver
    version. Never solves, and reads only the record (:func:`shared_table` checks the values)."""
    rules = load_rules(rules)
    if shared.held(str(cache_path(rules))):
        return True
    if private_cache(make=False) is None:
        return False
    path = cache_path(rules)
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
    path = cache_path(rules)
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
    return shared.keep(str(path), solver), "solved"


__all__ = [
    "DEFAULT_MAX_MEMORY",
    "SECONDS_PER_VALUE",
    "SOLVER2P_VERSION",
    "TILE",
    "Layout",
    "Progress",
    "SolveReport",
    "SolveTooBigError",
    "TwoPlayerSolver",
    "forget_tables",
    "is_cached",
    "load_or_solve_2p",
    "shared_table",
    "values_problem_2p",
]
