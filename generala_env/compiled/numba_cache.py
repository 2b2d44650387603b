"""Numba's on-disk cache of the project's loops: :func:`with_disk_cache`, and the classes it
builds it from (imported with numba, where a loop is compiled).

Numba finds a function's cache folder with a list of locators, tried in turn: the folder of
``NUMBA_CACHE_DIR``, ``__pycache__`` beside the source (in ``site-packages``, which pip never
cleans and others may write), a user-wide folder. :class:`ProjectCache` uses one locator,
:class:`ProjectLocator`, and no other: the project's cache folder while every folder from its
root down is private (:func:`generala_env.files.cache.private_cache`), else no cache at all. Its
index and data files are pickles: :class:`CheckedFile` checks each before numba unpickles it,
and reads a damaged one as absent. Numba raises on a damaged file and on one it cannot
write; :class:`ProjectCache` turns both into one warning and a compile.

Numba names a cache folder after the path of the source's folder, so the same code reached
through two paths (a clone's ``generala_env/`` and the installed ``site-packages/generala_env/``)
would be compiled twice. :class:`ProjectLocator` names it after the function's module and the
digest of what is compiled (:func:`source_digest`: the defining file's bytes and the files it
inlines), so the same code shares one folder wherever it lies, and different code (an edit,
another version) never shares a file with it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from numba.core import caching

from generala_env.files import check_target
from generala_env.files.cache import cache_file_problem, numba_cache_root, private_cache, warn_once


class Untrusted(OSError):
    """A cache folder that is not private (already reported by :func:`private_cache`)."""


class Refused(Exception):
    """A cache file that is not read."""


def report(what: str, e: BaseException) -> None:
    """One :class:`~generala_env.files.cache.CacheWarning` per process for a numba cache that cannot be
    read or written: ``what`` happened, because of ``e``."""
    detail = str(e).splitlines()[0] if str(e) else ""
    if not isinstance(e, Refused):
        detail = f"{type(e).__name__}: {detail}" if detail else type(e).__name__
    warn_once("numba", f"numba's cache {what} ({detail}): the loops are compiled without it", stacklevel=4)


@functools.lru_cache(maxsize=64)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """The SHA-256 of a file's bytes (memoised by its path, time and size: an edit is read again)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def source_digest(py_file: str, digest: str = "") -> str:
    """What a compiled function's cache is keyed on: the bytes of its source file, and
    ``digest``, the files it inlines from (:data:`generala_env.compiled.compiling.SOURCES_DIGEST`).
    Never its path or time: the same code in a clone and in its install is one entry."""
    st = os.stat(py_file)
    return hashlib.sha256(f"{_file_digest(py_file, st.st_mtime_ns, st.st_size)} {digest}".encode()).hexdigest()


def cache_folder_name(py_func, digest: str) -> str:
    """The folder of one module's loops: its name and the first 16 digits of its :func:`source_digest`."""
    module = str(getattr(py_func, "__module__", "") or Path(inspect.getfile(py_func)).stem)
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in module)
    return f"{safe}-{digest[:16]}"


class ProjectLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Numba's cache of a loop in the project's cache folder, one subfolder per module and
    content (:func:`cache_folder_name`), used only while every folder from the root down is
    private. Its stamp is :func:`source_digest`, not the file's time."""

    def __init__(self, py_func, py_file, digest: str = ""):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._stamp = source_digest(py_file, digest)
        self._root, parts = numba_cache_root()
        self._parts = (*parts, cache_folder_name(py_func, self._stamp))
        self._cache_path = str(self._root.joinpath(*self._parts))

    @classmethod
    def from_function(cls, py_func, py_file, digest: str = ""):
        if not os.path.exists(py_file):
            return None
        locator = cls(py_func, py_file, digest)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None
        return locator

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return self._stamp

    def ensure_cache_path(self):
        if private_cache(*self._parts, root=self._root) is None:
            raise Untrusted(f"{self._cache_path} is not a private folder")

    def trusted(self) -> bool:
        return private_cache(*self._parts, root=self._root, make=False) is not None


class ProjectImpl(caching.CompileResultCacheImpl):
    """Numba's compiled-function cache with the project's locator only: no other place
    (beside the sources, the user-wide folder, one named by NUMBA_CACHE_LOCATOR_CLASSES)."""

    def __init__(self, py_func, digest: str = ""):
        self._lineno = py_func.__code__.co_firstlineno
        qualname = getattr(py_func, "__qualname__", py_func.__name__)
        source = inspect.getfile(py_func)
        locator = ProjectLocator.from_function(py_func, source, digest)
        if locator is None:
            raise Untrusted(f"no private cache folder for {source}")
        self._locator = locator
        modname = os.path.splitext(os.path.basename(source))[0]
        self._filename_base = self.get_filename_base(f"{modname}.{qualname}", getattr(sys, "abiflags", ""))


class CheckedFile(caching.IndexDataCacheFile):
    """Numba's index and data files, each checked before it is unpickled; a damaged index
    reads as empty (and is written again), a file that is not this user's regular file is
    neither read nor replaced, and writes go through a fresh temporary file."""

    def __init__(self, cache_path, filename_base, source_stamp, locator):
        super().__init__(cache_path, filename_base, source_stamp)
        self._locator = locator
        self._refused = False

    def _check(self, path: str) -> None:
        why = cache_file_problem(path)
        if why is not None:
            self._refused = True
            raise Refused(why)

    def _load_index(self):
        if not self._locator.trusted():
            return {}
        try:
            self._check(self._index_path)
            return super()._load_index()
        except FileNotFoundError:
            return {}
        except Exception as e:  # garbage, truncated, another pickle: compiled again, and the index rewritten
            report(f"index {self._index_path} cannot be read", e)
            return {}

    def _load_data(self, name):
        self._check(self._data_path(name))
        return super()._load_data(name)

    def save(self, key, data):
        if not self._refused:  # a file that is not ours stays as it is (reported when it was refused)
            with self._saving():
                super().save(key, data)

    @contextlib.contextmanager
    def _saving(self):
        """Numba's save reads the index, adds the entry, names a data file and writes both: two
        processes compiling two signatures of one loop at once would each write the index
        without the other's entry (compiled again by the next process) and could give both
        entries one data file. A lock on the index's folder (``flock`` of the folder itself,
        where there is one: no lock file is left in the cache, nor needed on a full disk) makes
        each save whole."""
        try:
            import fcntl
        except ImportError:  # no flock (Windows): numba's save as it is
            yield
            return
        fd = os.open(os.path.dirname(self._index_path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    @contextlib.contextmanager
    def _open_for_write(self, filepath):
        target = Path(filepath)
        check_target(target)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
            check_target(target)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


class ProjectCache(caching.FunctionCache):
    """Numba's cache of one function, in a private folder or not at all; a file that
    cannot be read, or a cache that cannot be written, costs one warning, never an error."""

    _impl_class: Any = ProjectImpl

    def __init__(self, py_func, digest: str = ""):
        self._impl_class = functools.partial(ProjectImpl, digest=digest)  # numba's __init__ makes it with py_func alone
        super().__init__(py_func)
        self._cache_file = CheckedFile(self._cache_path, self._impl.filename_base, self._impl.locator.get_source_stamp(), self._impl.locator)

    @property
    def on_disk(self) -> bool:
        """Whether what this process compiles is kept (False once a write failed)."""
        return bool(self._enabled)

    def load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        try:
            return super().load_overload(sig, target_context)
        except Exception as e:  # compiled again; the save that follows replaces the entry
            report(f"in {self._cache_path} cannot be read", e)
            return None

    def save_overload(self, sig, data):
        if not self._enabled:
            return
        try:
            super().save_overload(sig, data)
        except Untrusted:
            self.disable()  # reported once by private_cache
        except Exception as e:  # a read-only folder, a full disk: this process compiles in memory
            report(f"in {self._cache_path} cannot be written", e)
            self.disable()


def with_disk_cache(dispatcher: Any, digest: str = "") -> Any:
    """``dispatcher``, a numba function made without ``cache=True``, with the project's on-disk
    cache (see the module's doc). ``digest`` joins the source file's own in the cache's key
    (:func:`source_digest`), for code the function inlines from other files. Where the cache cannot be had (a folder that is not
    private, another numba) the function compiles in memory, as it was given."""
    if not hasattr(dispatcher, "_cache") or not hasattr(dispatcher, "py_func"):
        return dispatcher  # NUMBA_DISABLE_JIT: a plain Python function
    try:
        dispatcher._cache = ProjectCache(dispatcher.py_func, digest)
    except Untrusted:
        pass  # reported once by private_cache
    except Exception as e:  # another numba's internals, a source that cannot be read
        report("cannot be used", e)
    return dispatcher
