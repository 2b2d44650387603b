"""One file written or read, never through a link: the checks, the writes and the reads of
:mod:`generala_env.files` (whose doc states the rules; import from there).

A write is atomic (:func:`write_atomic`), or makes a new file never put over another
(:func:`create_new`, :func:`rename_new`), or appends one whole line (:func:`append_line`). A read
is of a regular file only, and bounded (:func:`read_regular`). Every failure is a
:class:`FileProblem` of one line naming the path. No framework imports.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import stat
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class FileProblem(ValueError):
    """A file that cannot be read or written as asked: one line naming it."""


class NameTaken(FileProblem):
    """:func:`create_new`: something is already at the name of the new file."""


def reason(e: OSError) -> str:
    """Why an operating-system call failed, in its own words ("No space left on device")."""
    return e.strerror or type(e).__name__


def kind_of(st: os.stat_result) -> str:
    """What a path that is not a regular file is, for a message: "a symbolic link", "a folder"..."""
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if stat.S_ISDIR(st.st_mode):
        return "a folder"
    if stat.S_ISFIFO(st.st_mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(st.st_mode):
        return "a socket"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return "a device"
    return "not a regular file"


def lstat_or_none(path: Path) -> os.stat_result | None:
    """``os.lstat(path)`` (a link is not followed), ``None`` when nothing is there."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise FileProblem(f"{path}: cannot be examined: {reason(e)}") from None


def check_target(path: Path) -> None:
    """Refuse a target that is a link or anything but a regular file (an absent one is fine)."""
    st = lstat_or_none(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise FileProblem(f"{path} is {kind_of(st)}: nothing is written through or over it; move it or choose another place")


def hard_linked(path: Path, st: os.stat_result) -> FileProblem | None:
    """The refusal of a file an append would write into, if it has other names (``st_nlink > 1``):
    appending to it writes into every one of them, wherever they are."""
    if st.st_nlink > 1:
        return FileProblem(f"{path} has {st.st_nlink} names (a hard link): nothing is appended to it, as that would write into the other names too; move it")
    return None


def check_append_target(path: str | os.PathLike) -> None:
    """Refuse a file :func:`append_line` would not append to: a link, anything but a regular file,
    or a regular file with more than one name (a hard link). An absent one is fine. A program that
    appends later (a run's next evaluation) asks this first, before it writes anything."""
    path = Path(path)
    check_target(path)
    st = lstat_or_none(path)
    problem = hard_linked(path, st) if st is not None else None
    if problem is not None:
        raise problem


def open_regular(path: Path, flags: int, name: str, refused: str, failed: str, *, links: bool = False) -> int:
    """A descriptor of ``path`` opened with ``flags`` and never through a link (``links``: a
    link is followed to what it names), checked to be a regular file; else a
    :class:`FileProblem`: ``{name} is a ...: {refused}``, or ``{failed}: why``. ``O_NONBLOCK``:
    opening a FIFO returns at once, and the check then refuses it."""
    try:
        fd = os.open(path, flags | (0 if links else NOFOLLOW) | NONBLOCK | CLOEXEC, 0o644)
    except FileNotFoundError:
        raise FileProblem(f"{name} does not exist") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FileProblem(f"{name} is a symbolic link: {refused}") from None
        raise FileProblem(f"{failed}: {reason(e)}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileProblem(f"{name} is {kind_of(st)}: {refused}")
    return fd


# -- writing -----------------------------------------------------------------------------------
def temporary_beside(path: Path, suffix: str = ".tmp") -> tuple[int, str]:
    """A fresh empty file ``.NAME.XXXXXXXX`` + ``suffix`` in ``path``'s folder, made with
    ``O_EXCL`` (never a link someone left there): its open descriptor and its path."""
    try:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    except OSError as e:
        raise FileProblem(f"cannot write {path}: {reason(e)}") from None


@contextlib.contextmanager
def removed_on_failure(tmp: str, path: Path) -> Iterator[None]:
    """Remove the temporary file ``tmp`` of ``path`` if the block fails; an ``OSError`` there
    (a full disk) becomes one :class:`FileProblem` line naming ``path``."""
    try:
        yield
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise FileProblem(f"cannot write {path}: {reason(e)}") from None
        raise


def fill(fd: int, data: bytes | str | Callable[[IO[bytes]], None]) -> None:
    """Write ``data`` (bytes, text, or a function that writes to a binary file) into the open
    file ``fd``, sync it to disk and close it."""
    with os.fdopen(fd, "wb") as f:
        if callable(data):
            data(f)
        else:
            f.write(data.encode() if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())


def write_atomic(path: str | os.PathLike, data: bytes | str | Callable[[IO[bytes]], None], *, mode: int = 0o644) -> Path:
    """Write ``data`` (bytes, text, or a function that writes to a binary file) to ``path``
    atomically: a temporary file beside it, made with ``O_EXCL``, renamed over it. ``path``
    must not be a link or other non-regular file; its folder must exist. Returns ``path``."""
    path = Path(path)
    check_target(path)
    fd, tmp = temporary_beside(path)
    with removed_on_failure(tmp, path):
        fill(fd, data)
        os.chmod(tmp, mode)
        check_target(path)  # checked again just before the rename: a link made meanwhile is not replaced
        os.replace(tmp, path)
    return path


def write_json(path: str | os.PathLike, value: Any, *, indent: int = 2) -> Path:
    """``value`` as JSON and a newline, through :func:`write_atomic`; numbers must be finite."""
    return write_atomic(path, json.dumps(value, indent=indent, allow_nan=False) + "\n")


def append_line(path: str | os.PathLike, line: str) -> None:
    """Append ``line`` and a newline to ``path`` in one write, never through a link: a symbolic
    link, anything but a regular file, or a file with another name (a hard link, which an append
    would write into as well) is refused with one line, the file untouched."""
    path = Path(path)
    if "\n" in line:
        raise ValueError("append_line takes one line without a newline")
    check_append_target(path)  # first: opening a FIFO to write fails (ENXIO) before it could be named
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, str(path), "nothing is appended to it; move it", f"cannot append to {path}")
    try:
        problem = hard_linked(path, os.fstat(fd))  # checked again on the file opened: a link made meanwhile
        if problem is not None:
            raise problem
        data = (line + "\n").encode()
        written = os.write(fd, data)
        if written != len(data):
            raise FileProblem(f"cannot append to {path}: only {written} of {len(data)} bytes were written")
    except OSError as e:
        raise FileProblem(f"cannot append to {path}: {reason(e)}") from None
    finally:
        os.close(fd)


def create_new(path: str | os.PathLike, write_to: Callable[[Path], None], *, mode: int = 0o644) -> Path:
    """Make the new file ``path`` whole or not at all, never over anything: ``write_to(tmp)``
    fills a fresh temporary file beside it (made with ``O_EXCL``; named ``.NAME.XXXXXXXX.tmp``
    plus ``path``'s suffix, for a library or a program that tells the format by the name), which
    is then hard-linked to ``path`` only if that name is free (a file, a link or a folder there is
    one line) and removed in every case. For outputs never replaced, such as a recorded video."""
    path = Path(path)
    fd, tmp = temporary_beside(path, ".tmp" + path.suffix)
    os.close(fd)
    try:
        write_to(Path(tmp))
        os.chmod(tmp, mode)
        os.link(tmp, path, follow_symlinks=False)  # fails if the name is taken: nothing is replaced
    except FileExistsError:
        raise NameTaken(f"{path} exists already: it is not replaced") from None
    except OSError as e:
        raise FileProblem(f"cannot write {path}: {reason(e)}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return path


_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2


def rename_new(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Rename ``src`` (a file or a folder) to ``dst`` only if nothing is at ``dst``: on Linux one
    ``renameat2(RENAME_NOREPLACE)``, which no file, link or empty folder appearing at ``dst``
    can slip under; elsewhere (or where the file system lacks it) checked just before a plain
    rename. Something at ``dst`` is :class:`NameTaken`; another failure one line naming it."""
    src, dst = Path(src), Path(dst)
    done = _renameat2(src, dst, _RENAME_NOREPLACE)
    if done is None:
        if lstat_or_none(dst) is not None:
            raise NameTaken(f"{dst} exists already: it is not replaced")
        try:
            os.rename(src, dst)
        except OSError as e:
            raise FileProblem(f"cannot move {src} to {dst}: {reason(e)}") from None


def replace_folder(new: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Put the folder ``new``, made whole beside ``dst``, at ``dst`` in place of the folder there,
    in one step: whoever reads ``dst`` finds the old folder whole or the new one whole, never
    files of both. On Linux one ``renameat2(RENAME_EXCHANGE)`` swaps the two names, and the old
    folder, now at ``new``, is removed; with nothing at ``dst``, :func:`rename_new`. Elsewhere (or
    where the file system cannot swap) the old folder is first renamed aside to ``new`` +
    ``.old``: a kill between the two renames leaves no ``dst`` and both folders whole. A link or
    anything but a folder at ``dst`` is refused with one line."""
    import shutil

    new, dst = Path(new), Path(dst)
    st = lstat_or_none(dst)
    if st is None:
        rename_new(new, dst)
        return
    if not stat.S_ISDIR(st.st_mode):
        raise FileProblem(f"{dst} is {kind_of(st)}: only a folder this program wrote is replaced; move it or choose another place")
    old = new
    if _renameat2(new, dst, _RENAME_EXCHANGE) is None:
        old = new.with_name(new.name + ".old")
        try:
            os.rename(dst, old)
            os.rename(new, dst)
        except OSError as e:
            raise FileProblem(f"cannot move {new} to {dst}: {reason(e)}") from None
    shutil.rmtree(old, ignore_errors=True)


def _renameat2(src: Path, dst: Path, flag: int) -> bool | None:
    """``True`` once renamed with ``renameat2(flag)``; ``None`` where renameat2 is not there to
    ask (not Linux, an old C library, a file system without the flag)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return None
    at_fdcwd = -100
    if renameat2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), flag) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.EEXIST:
        raise NameTaken(f"{dst} exists already: it is not replaced")
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return None  # the file system does not do this flag
    raise FileProblem(f"cannot move {src} to {dst}: {os.strerror(err)}")


# -- reading -----------------------------------------------------------------------------------
@functools.cache
def kernel_devices() -> frozenset[int]:
    """The devices of the kernel's own file trees, ``/proc`` and ``/sys``: their files call
    themselves regular, yet are made as they are read (``/proc/self/pagemap`` stands for
    terabytes, ``/proc/kmsg`` waits for the kernel's next message)."""
    devices = set()
    for tree in ("/proc", "/sys"):
        with contextlib.suppress(OSError):
            devices.add(os.stat(tree).st_dev)
    return frozenset(devices)


def read_regular(path: str | os.PathLike, limit: int, what: str = "file", *, links: bool = False) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes: the one reader of every
    file the project reads back or a user names (a config, a rule set, an agent's file).

    The file is opened with ``O_NONBLOCK`` (a FIFO opens at once, with no writer), checked with
    ``fstat`` on that descriptor, and refused unless it is a regular file on a real file system:
    a FIFO, a socket, a device, a folder or a file of ``/proc`` or ``/sys`` is one
    :class:`FileProblem` line before a byte is read. At most ``limit`` + 1 bytes are then read,
    so a file that grows meanwhile is refused too. ``links``: a symbolic link is followed to the
    file it names (a file a user names by a link); else it is refused (a file the project wrote
    itself, where a link is someone else's doing)."""
    path = Path(path)
    fd = open_regular(path, os.O_RDONLY, f"{what} {path}", "only regular files are read", f"{what} {path} cannot be read", links=links)
    try:
        st = os.fstat(fd)
        if st.st_dev in kernel_devices():
            raise FileProblem(f"{what} {path} is a file of the kernel's /proc or /sys: only regular files are read")
        if st.st_size > limit:
            raise FileProblem(f"{what} {path} has {st.st_size:,} bytes, more than the {limit:,} read")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileProblem(f"{what} {path} grew past the {limit:,} bytes read")
        return b"".join(chunks)
    except OSError as e:
        raise FileProblem(f"{what} {path} cannot be read: {reason(e)}") from None
    finally:
        os.close(fd)


def read_json(path: str | os.PathLike, limit: int = 16 << 20, what: str = "file", *, links: bool = False) -> Any:
    """JSON from a regular file of at most ``limit`` bytes (:func:`read_regular`); one line
    naming the file if it is not."""
    raw = read_regular(path, limit, what, links=links)
    try:
        return json.loads(raw)
    except RecursionError:
        raise FileProblem(f"{what} {path} is nested too deeply to be read") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise FileProblem(f"{what} {path} is not JSON: {e}") from None


def read_json_lines(path: str | os.PathLike, limit: int = 64 << 20, what: str = "file") -> list[Any]:
    """The records of a file of JSON lines. A torn last line (a write cut short) is skipped with a
    warning naming the file and line; a bad line before the last is a :class:`FileProblem`."""
    raw = read_regular(path, limit, what)
    lines = raw.split(b"\n")
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            last = all(not rest.strip() for rest in lines[number:])
            if last and not raw.endswith(b"\n"):
                warnings.warn(f"{path}, line {number}: a torn last record (a write cut short) is skipped", stacklevel=2)
                continue
            raise FileProblem(f"{what} {path}, line {number}: not a JSON record ({e}); fix or remove that line") from None
    return records


def sha256_of(path: Path) -> str | None:
    """The SHA-256 of a regular file, or ``None`` for anything else (absent, a link, a FIFO)."""
    st = lstat_or_none(path)
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()
