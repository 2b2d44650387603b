"""Where the project keeps what it computes once and reads again: the solvers' tables and
numba's compiled loops, and the rule that guards them.

A cache is code: numba's index files are pickles and its data files compiled functions, and
a solver's table decides every move of the optimal players. So a cache folder is used only
when it is private (:func:`generala_env.files.private_folder`: a real folder owned by this
user that group and others cannot write), checked from the cache root down to the folder
read, as ssh and pip check theirs. A folder that is not private is neither read nor written:
one :class:`CacheWarning` per folder and process says so, and the work goes on without it
(numba compiles in memory, the solvers solve again). Folders the project makes here are
made readable by this user only.

:func:`generala_env.compiled.numba_cache.with_disk_cache` gives a numba function this on-disk cache: in the project's folder
(``$GENERALA_CACHE/numba``, or ``NUMBA_CACHE_DIR`` if set), never beside the sources, each
file checked before it is unpickled; a damaged cache file costs one warning and a compile,
and a cache that cannot be written (a read-only folder, a full disk) one warning and a
compile in memory, never an error.

No framework imports (:func:`generala_env.compiled.numba_cache.with_disk_cache` imports numba, and
:mod:`generala_env.compiled.numba_cache`, the classes it builds numba's cache from).
"""

from __future__ import annotations

import os
import stat
import sys
import warnings
from pathlib import Path

from generala_env.files import make_private_folder, private_folder


class CacheWarning(RuntimeWarning):
    """A cache folder or file that is not used, or cannot be written: the work goes on without it."""


def cache_dir() -> Path:
    """``$GENERALA_CACHE``, or ``~/.cache/generala`` when that variable is unset or empty (an
    empty path would otherwise mean the current folder)."""
    value = os.environ.get("GENERALA_CACHE", "").strip()
    return Path(value) if value else Path.home() / ".cache" / "generala"


# the folders and the kinds of problem already reported in this process: one warning each
_reported: set[str] = set()


def warn_once(key: str, message: str, stacklevel: int = 3) -> None:
    """A :class:`CacheWarning` with ``message``, the first time ``key`` comes up in this process."""
    if key in _reported:
        return
    _reported.add(key)
    warnings.warn(message, CacheWarning, stacklevel=stacklevel)


def quiet() -> bool:
    """Whether the notices of long waits are off: ``GENERALA_QUIET`` set to anything but ``0``
    (forked and spawned workers inherit it)."""
    return os.environ.get("GENERALA_QUIET", "").strip() not in ("", "0")


# the waits already announced in this process: one line each
_noticed: set[str] = set()


def notice(key: str, message: str) -> None:
    """``generala: MESSAGE`` on stderr, before a wait of more than a few seconds that would
    otherwise pass in silence (compiling the loops, solving a table), the first time ``key``
    comes up in this process; nothing while :func:`quiet`."""
    if key in _noticed:
        return
    _noticed.add(key)
    if quiet():
        return
    tqdm = getattr(sys.modules.get("tqdm"), "tqdm", None)
    if tqdm is not None:  # a bar may be on screen: tqdm prints the line above it
        tqdm.write(f"generala: {message}", file=sys.stderr)
    else:
        print(f"generala: {message}", file=sys.stderr, flush=True)


class Progress:
    """A progress bar on stderr over ``total`` units of work that takes long, to follow a
    :func:`notice`: tqdm's when it is installed, else a plain line at each quarter; nothing
    while :func:`quiet`. ``update(n)`` counts ``n`` more done; ``close()`` ends it."""

    def __init__(self, desc: str, total: int, unit: str):
        self.desc, self.total, self.unit = desc, max(int(total), 1), unit
        self.done, self._shown = 0, 0
        self._bar = None
        if quiet():
            self.total = 0
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self._bar = tqdm(total=self.total, desc=desc, unit=unit, file=sys.stderr, leave=False)

    def update(self, n: int = 1) -> None:
        if not self.total:
            return
        self.done = min(self.done + n, self.total)
        if self._bar is not None:
            self._bar.update(self.done - self._bar.n)
            return
        quarter = 4 * self.done // self.total
        if quarter > self._shown:
            self._shown = quarter
            print(f"{self.desc}: {self.done:,} of {self.total:,} {self.unit}s", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# -- how long waits took on this machine ------------------------------------------------------
# A wait's notice says how long it takes as this machine last measured it (a busy machine and
# a quiet one differ by more than any fixed figure), or, never measured here, as a range.
TIMINGS = "timings.json"


def _timings_key(what: str) -> str:
    import platform

    return f"{platform.node()}: {what}"


def _timings() -> dict:
    folder = private_cache(make=False)
    if folder is None:
        return {}
    try:
        from generala_env.files.file_io import read_json

        data = read_json(folder / TIMINGS, limit=1 << 20, what="timings file")
    except (OSError, ValueError):  # none yet, or not readable: nothing measured
        return {}
    return data if isinstance(data, dict) else {}


def measured_seconds(what: str) -> float | None:
    """How long ``what`` took the last time this machine recorded it (:func:`record_seconds`), or ``None``."""
    v = _timings().get(_timings_key(what))
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e7 else None


def record_seconds(what: str, seconds: float) -> None:
    """Keep how long ``what`` took on this machine (``timings.json`` in the cache folder,
    written atomically; a folder that is not private keeps nothing)."""
    folder = private_cache()
    if folder is None:
        return
    data = _timings()
    data[_timings_key(what)] = round(float(seconds), 1)
    try:
        from generala_env.files.file_io import write_json

        write_json(folder / TIMINGS, data)
    except (OSError, ValueError):  # a full disk, a link in its place: the estimate stays a range
        pass


def how_long(what: str, low: float, high: float) -> str:
    """How long ``what`` takes, for a notice: ``about 23 s, as it took here last time`` when this
    machine recorded it, else ``from LOW to HIGH s`` (what it took on the machines measured)."""
    seconds = measured_seconds(what)
    if seconds is not None:
        return f"about {_seconds(seconds)} s, as it took here last time"
    return f"{_seconds(low)}–{_seconds(high)} s"


def _seconds(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def private_cache(*parts: str, root: str | os.PathLike | None = None, make: bool = True) -> Path | None:
    """The folder ``root/parts...`` (``root``: :func:`cache_dir`) if it and every folder from
    ``root`` down to it are private; missing ones are made (mode 0700) when ``make``. ``None``
    when one is not private or cannot be made, with one :class:`CacheWarning` per folder and
    process naming it and why; also ``None``, quietly, when one is missing and not ``make``."""
    folder = cache_dir() if root is None else Path(root)
    levels = [folder]
    for part in parts:
        levels.append(levels[-1] / part)
    for level in levels:
        why = private_folder(level)
        if why is None and not os.path.lexists(level):
            if not make:
                return None
            try:
                make_private_folder(level)
            except OSError as e:
                why = f"it cannot be made ({e.strerror or e})"
            else:
                why = private_folder(level)
        if why is not None:
            warn_once(
                f"folder {level}",
                f"the cache folder {level} is not used: {why}. Nothing is read from it or written to it: "
                "numba's loops are compiled in memory (slower to start) and the solvers' tables are solved again. "
                "Make it yours and private (chown; chmod 700) or set GENERALA_CACHE to a folder that is",
            )
            return None
    return levels[-1]


def cache_file_problem(path: str | os.PathLike) -> str | None:
    """``None`` if ``path`` (in a private cache folder) may be read: a regular file (not a link)
    owned by this user that group and others cannot write. Otherwise the reason. Raises
    ``FileNotFoundError`` when it is absent."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"))
        kind = next((name for test, name in kinds if test(st.st_mode)), "a device")
        return f"it is {kind}, not a regular file"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"it belongs to user id {st.st_uid}, not to you ({os.geteuid()})"
    if st.st_mode & 0o022:
        return f"group or others can write to it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


# -- numba's on-disk cache ------------------------------------------------------------------------
def numba_cache_root() -> tuple[Path, tuple[str, ...]]:
    """Where numba's cache of the project's loops lies, as a root checked from and the parts
    below it: ``NUMBA_CACHE_DIR`` if the user set it, else :func:`cache_dir` / ``numba``."""
    try:
        from numba.core import config

        chosen = getattr(config, "CACHE_DIR", "")
    except (ImportError, AttributeError):
        chosen = os.environ.get("NUMBA_CACHE_DIR", "")
    if chosen:
        return Path(chosen), ()
    return cache_dir(), ("numba",)


__all__ = [
    "CacheWarning",
    "Progress",
    "cache_dir",
    "cache_file_problem",
    "how_long",
    "measured_seconds",
    "notice",
    "numba_cache_root",
    "private_cache",
    "quiet",
    "record_seconds",
    "warn_once",
]
