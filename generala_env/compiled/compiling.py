"""numba for the project's compiled loops: the switch, the on-disk cache, the compile notices.

Why numba: a step as NumPy operations over all games is some 70 passes over memory with
fancy indexing; a compiled loop does each game's step in one pass (what that is worth is
in ``docs/performance.md``). Without numba (or with ``GENERALA_NUMBA=0``) the same
functions run as plain Python: correct, only slow.

The loops' on-disk cache is keyed by the content of the file that defines a loop (not its
path: a clone and its install share the compiled loops), and a loop also holds the rules,
the encoding, the dice streams and the per-game bodies inlined from other files:
:func:`cached_njit` keys it on those files too (:data:`SOURCES_DIGEST`), so an edit of
``engine.py``, ``observe.py``, ``dice.py``, ``dice_stream.py``, ``batched.py``, ``one_game.py`` or
``env_loops.py`` compiles the
loops anew instead of loading stale ones. Compiling them takes about :data:`COMPILE_SECONDS`:
a compile says so on stderr as it starts, one line for the compiles that follow one another
(:func:`announce_compile`); loops loaded from the cache say nothing.
"""

from __future__ import annotations

import hashlib
import os
import time
import types
import weakref
from pathlib import Path

import numpy as np

from generala_env.files.cache import how_long, notice, numba_cache_root, record_seconds, warn_once

try:
    if os.environ.get("GENERALA_NUMBA", "1") == "0":
        raise ImportError("disabled by GENERALA_NUMBA=0")
    from numba import njit

    NUMBA = True
except ImportError:  # plain Python: same results, much slower
    NUMBA = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]  # numba's njit, as a no-op
        return (lambda f: f) if not args or not callable(args[0]) else args[0]


# An index numba need not check for being negative: the loops index games (g) and rows (j) by
# it. Only those: the rules do arithmetic on their numbers, and signed and unsigned must not
# mix there (the result would be a float).
U = np.uint64


# the files whose code and constants the loops inline (the rules, the encoding, the dice tables and
# streams, the per-game bodies), in the order SOURCES_DIGEST reads them
INLINED_SOURCES = (
    "core/engine.py",
    "core/observe.py",
    "core/dice.py",
    "compiled/dice_stream.py",
    "compiled/batched.py",
    "compiled/one_game.py",
    "compiled/env_loops.py",
)


def _sources_digest() -> str:
    """A digest of :data:`INLINED_SOURCES` ("" if one cannot be read)."""
    h = hashlib.sha256()
    try:
        for name in INLINED_SOURCES:
            h.update((Path(__file__).parent.parent / name).read_bytes())  # paths from generala_env/
    except OSError:
        return ""
    return h.hexdigest()


SOURCES_DIGEST = _sources_digest() if NUMBA else ""


def cache_root() -> Path:
    """Where numba's on-disk cache of this project's loops goes: ``numba/`` in the project's
    cache folder (:func:`generala_env.files.cache.cache_dir`, where the solvers keep their tables),
    or ``NUMBA_CACHE_DIR`` if the user set it; used only while it is private
    (:func:`generala_env.compiled.numba_cache.with_disk_cache`)."""
    root, parts = numba_cache_root()
    return root.joinpath(*parts)


# About how long this process waits for numba to compile the loops a first game and the
# batched env use, the first time (about 30 s of one core; measured in docs/install.md).
COMPILE_SECONDS = 30
# What the notice says before this machine has measured it (cache.how_long): from a quiet
# fast core to a shared, busy one (measured 20-75 s on the project's 2-core machine).
COMPILE_RANGE = (20, 90)
MORE_RANGE = (5, 60)  # a later wait: the loops a program reaches later (the vector env, an agent's)
FIRST_COMPILE = "compiling the game engine"  # what cache.record_seconds keeps the first wait's length under
# A compile that starts this long (seconds) after the last one ended is a new wait, announced
# again: the loops compile as they are first called, and a program can do other work between.
COMPILE_GAP = 2.0

# the project's compiled loops: their compiles are announced
_LOOPS: weakref.WeakSet = weakref.WeakSet()


def announce_compile(dispatcher, waits: int = 0) -> None:
    """One line on stderr (:func:`generala_env.files.cache.notice`) as numba starts compiling one of
    the project's loops: what is happening, about how long it takes, and where the result is
    kept. ``waits``: how many compiles this process announced before (0: this is the first)."""
    if getattr(getattr(dispatcher, "_cache", None), "on_disk", False):
        where = f"cached in {cache_root()} afterwards"
        what = "compiling the game engine for first use" if not waits else "compiling more of the game engine for first use"
    else:
        where = "its cache is not used, so each process compiles it again"
        what = "compiling the game engine" if not waits else "compiling more of the game engine"
    took = how_long(FIRST_COMPILE, *COMPILE_RANGE) if not waits else f"{MORE_RANGE[0]}–{MORE_RANGE[1]} s"
    notice(f"compile {waits}", f"{what} ({took}; {where})")


def _listen_for_compiles() -> None:
    """Have numba call :func:`announce_compile` when it starts compiling one of :data:`_LOOPS`
    and no compile of them ran in the last :data:`COMPILE_GAP` seconds (a loop read from the
    disk cache is not compiled: numba says nothing then)."""
    try:
        from numba.core import event
    except ImportError:  # a numba without events: it compiles in silence
        return

    class Compiles(event.Listener):
        def __init__(self) -> None:
            self.running = 0  # compiles of the loops under way (one can start another)
            self.ended = -float("inf")  # when the last one ended (time.monotonic)
            self.waits = 0
            self.wait_started = 0.0

        def on_start(self, ev):
            if not self._ours(ev):
                return
            if not self.running and time.monotonic() - self.ended > COMPILE_GAP:
                announce_compile(ev.data["dispatcher"], self.waits)
                self.waits += 1
                self.wait_started = time.monotonic()
            self.running += 1

        def on_end(self, ev):
            if self._ours(ev):
                self.running = max(self.running - 1, 0)
                self.ended = time.monotonic()
                took = self.ended - self.wait_started
                if not self.running and self.waits == 1 and took >= COMPILE_RANGE[0] / 2:  # the first wait, the whole engine: what the next first notice says
                    record_seconds(FIRST_COMPILE, took)

        @staticmethod
        def _ours(ev) -> bool:
            dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            return dispatcher is not None and dispatcher in _LOOPS

    event.register("numba:compile", Compiles())


if NUMBA:
    _listen_for_compiles()


def disk_cached(dispatcher, digest: str = ""):
    """``dispatcher`` (a numba function) with the project's on-disk cache
    (:func:`generala_env.compiled.numba_cache.with_disk_cache`); compiled in memory, with one warning,
    where this numba lacks the classes that cache builds on. Its first compile in a process
    is announced (:func:`announce_compile`)."""
    _LOOPS.add(dispatcher)
    try:
        from generala_env.compiled.numba_cache import with_disk_cache
    except (ImportError, AttributeError) as e:  # another numba, without the classes the project's cache builds on
        warn_once("numba", f"numba's cache cannot be used with this numba ({type(e).__name__}: {e}): the loops are compiled without it")
        return dispatcher
    return with_disk_cache(dispatcher, digest)


def cached_njit(**options):
    """``njit(**options)`` with the project's on-disk cache
    (:func:`generala_env.compiled.numba_cache.with_disk_cache`): in :func:`cache_root`, never beside the
    sources (in ``site-packages`` pip would never remove the files, and others may write
    there), each file checked before numba unpickles it, and keyed on
    :data:`SOURCES_DIGEST` too: numba keys it on the defining file alone, so after an edit of
    the rules it would load the loops compiled from the old ones. Where the sources cannot be
    read the loop is compiled without the on-disk cache: slower to start, never stale. Agents
    that inline the rules into loops of their own (:mod:`generala_agents.batched`) use it too."""
    if not NUMBA:
        return njit

    def decorate(f):
        dispatcher = njit(**options)(f)
        if SOURCES_DIGEST:
            return disk_cached(dispatcher, SOURCES_DIGEST)
        _LOOPS.add(dispatcher)  # compiled in memory, and announced all the same
        return dispatcher

    return decorate


# -- one compiled version of a loop, whatever copies an object --------------------------------
# numba compiles a loop once for each signature it is called with, and a read-only array is
# another type than a writable one. Pickling and copy.deepcopy make every array writable: a
# copied env handed its tables to the loops as a new signature, and each such process
# compiled them again (and saved a second entry beside the first). An object whose arrays go
# to the loops keeps their flags through a copy with these two.
READ_ONLY = "_read_only_arrays"


def _read_only_at(value) -> list[int]:
    """Where ``value`` is a read-only array (``[-1]``) or holds some (their places in a tuple or list)."""
    if isinstance(value, np.ndarray):
        return [] if value.flags.writeable else [-1]
    if isinstance(value, (tuple, list)):
        return [i for i, a in enumerate(value) if isinstance(a, np.ndarray) and not a.flags.writeable]
    return []


def mark_read_only(state: dict) -> dict:
    """``state`` (an object's attributes, for ``__getstate__``) with the places of its read-only
    arrays, alone or in a tuple or list (:func:`restore_read_only` sets them read-only again)."""
    marks = [(name, i) for name, value in state.items() for i in _read_only_at(value)]
    return {**state, READ_ONLY: marks}


def restore_read_only(state: dict) -> dict:
    """``state`` from :func:`mark_read_only` (in ``__setstate__``), its marked arrays read-only
    again; the marks removed."""
    for name, i in state.pop(READ_ONLY, ()):
        value = state.get(name)
        a = value if i < 0 else value[i] if isinstance(value, (tuple, list)) and i < len(value) else None
        if isinstance(a, np.ndarray):
            a.flags.writeable = False
    return state


# The loops over games allocate nothing (their outputs come in) and run without numba's
# reference counts: with them, each call of a rule inlined in a loop counts every array of
# the tables it is given, in and out, which costs more than the rest of the game's step.
loop = cached_njit(error_model="numpy", _nrt=False)  # _nrt: numba's own option


def _compiled(functions) -> dict:
    """The rule functions, each compiled to be inlined where it is called, and calling the
    compiled others (a copy of each function whose globals name them)."""
    if not NUMBA:
        return {f.__name__: f for f in functions}
    out: dict = {}
    scopes = []
    for f in functions:
        scope = dict(f.__globals__)
        copy = types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__, f.__closure__)
        copy.__qualname__ = f.__qualname__
        out[f.__name__] = njit(inline="always", error_model="numpy")(copy)
        scopes.append(scope)
    for scope in scopes:
        scope.update(out)
    return out
