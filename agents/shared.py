"""What the agents of one process build once and share: a rule set's tables (the one-player
solver's values, win-max's distributions, optimal-2p's table), each read or built once per key
and then handed to every agent that asks, its arrays read-only.

A key is the table's place in the cache (which names the rule set's fingerprint and the
table's version), so a process that points ``GENERALA_CACHE`` elsewhere gets tables of its own.
Each key has a lock of its own: callers of the same key wait for one build and get its table;
a caller of another key, or of a table already built, never waits for it. A build that fails
(raises, or finds nothing: ``None``) leaves nothing behind, and the next call tries again.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

_lock = threading.Lock()  # guards the three below for an instant; never held during a build
_tables: dict[str, Any] = {}
_gates: dict[str, threading.Lock] = {}  # one per key: held while that key is built
builds: Counter[str] = Counter()  # the tables built (or read) in this process, by key: a second build of a key is a fault


def once(key: str, build: Callable[[], T | None]) -> T | None:
    """The table of ``key``: ``build()``'s, called at most once at a time per key and kept
    unless it is ``None``; every later call returns the same object."""
    with _lock:
        if key in _tables:
            return _tables[key]
        gate = _gates.setdefault(key, threading.Lock())
    with gate:
        with _lock:
            if key in _tables:  # built while this caller waited
                return _tables[key]
        table = build()
        if table is None:
            return None
        with _lock:
            builds[key] += 1
            return _tables.setdefault(key, table)


def keep(key: str, table: T) -> T:
    """``table`` kept under ``key`` (built by a caller of its own), or the one kept there already."""
    with _lock:
        if key not in _tables:
            builds[key] += 1
        return _tables.setdefault(key, table)


def held(key: str) -> bool:
    """Whether the table of ``key`` is held in this process."""
    with _lock:
        return key in _tables


def forget(which: Callable[[str], bool] = lambda key: True) -> None:
    """Drop the tables whose key ``which`` takes (all of them by default): the next call reads
    or builds them again, as a new process would."""
    with _lock:
        for key in [k for k in _tables if which(k)]:
            del _tables[key]


def read_only(*arrays: np.ndarray) -> None:
    """Make ``arrays`` read-only: a table shared by every game is never written by one."""
    for a in arrays:
        a.flags.writeable = False


__all__ = ["builds", "forget", "held", "keep", "once", "read_only"]
