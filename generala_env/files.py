"""Every file the project writes or reads back, through one set of rules.

- **Writes are atomic and never follow a link.** :func:`write_atomic` writes a temporary file
  made with ``O_EXCL`` in the target's folder and renames it over the target: a cut write leaves
  the old file whole, and a symbolic link at the target (or at the temporary name) is never
  written through.
- **Nothing a user owns is overwritten.** An :class:`OutputFolder` records in
  ``.generala-outputs.json`` the name and SHA-256 of every file it writes. A file already there
  is replaced only if the record says the project wrote it and its bytes are still those
  written; any other file (the user's own ``aggregates.png``, a link, a folder) is refused with
  one line naming it.
- **A file never replaced** (:func:`create_new`, a recorded video) is written under a fresh
  temporary name and linked to its name only if that name is free.
- **Appends are whole lines** (:func:`append_line`): one ``write`` of an ``O_APPEND`` file opened
  with ``O_NOFOLLOW``; :func:`read_json_lines` reads them back, skipping a torn last line with
  a warning that names the file and line, and refusing a bad line elsewhere with one line.
- **Reads of files a user names are bounded** (:func:`read_regular`): regular files only (a FIFO,
  a device or a link to one is refused without opening it for reading), at most ``limit`` bytes.
- **A folder two processes could share is locked** (:func:`lock_folder`): ``flock`` on a
  ``.lock`` file opened without following links and never truncated; a second process gets one
  line naming the folder.
- **A cache is trusted only when it is private** (:func:`private_folder`): owned by this user
  and not writable by group or others, as ssh and pip demand of their folders, since a cache
  of pickles or compiled code is code.

Every failure is a :class:`FileProblem` (a ``ValueError``) of one line that names the path; the
programs print it as their one error line. No framework imports.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import hashlib
import json
import os
import stat
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

MANIFEST = ".generala-outputs.json"
LOCK = ".lock"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class FileProblem(ValueError):
    """A file that cannot be read or written as asked: one line naming it."""


class NameTaken(FileProblem):
    """:func:`create_new`: something is already at the name of the new file."""


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _kind(st: os.stat_result) -> str:
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
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise FileProblem(f"{path}: cannot be examined: {_why(e)}") from None


def check_target(path: Path) -> None:
    """Refuse a target that is a link or anything but a regular file (an absent one is fine)."""
    st = lstat_or_none(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise FileProblem(f"{path} is {_kind(st)}: nothing is written through or over it; move it or choose another place")


def _open_regular(path: Path, flags: int, name: str, refused: str, failed: str) -> int:
    """A descriptor of ``path`` opened with ``flags`` and never through a link, checked to be a
    regular file; else a :class:`FileProblem`: ``{name} is a ...: {refused}``, or ``{failed}: why``."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644)
    except FileNotFoundError:
        raise FileProblem(f"{name} does not exist") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FileProblem(f"{name} is a symbolic link: {refused}") from None
        raise FileProblem(f"{failed}: {_why(e)}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileProblem(f"{name} is {_kind(st)}: {refused}")
    return fd


# -- writing -----------------------------------------------------------------------------------
def _temporary_beside(path: Path, suffix: str = ".tmp") -> tuple[int, str]:
    """A fresh empty file ``.NAME.XXXXXXXX`` + ``suffix`` in ``path``'s folder, made with
    ``O_EXCL`` (never a link someone left there): its open descriptor and its path."""
    try:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    except OSError as e:
        raise FileProblem(f"cannot write {path}: {_why(e)}") from None


@contextlib.contextmanager
def _removed_on_failure(tmp: str, path: Path) -> Iterator[None]:
    """Remove the temporary file ``tmp`` of ``path`` if the block fails; an ``OSError`` there
    (a full disk) becomes one :class:`FileProblem` line naming ``path``."""
    try:
        yield
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise FileProblem(f"cannot write {path}: {_why(e)}") from None
        raise


def _fill(fd: int, data: bytes | str | Callable[[IO[bytes]], None]) -> None:
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
    fd, tmp = _temporary_beside(path)
    with _removed_on_failure(tmp, path):
        _fill(fd, data)
        os.chmod(tmp, mode)
        check_target(path)  # checked again just before the rename: a link made meanwhile is not replaced
        os.replace(tmp, path)
    return path


def write_json(path: str | os.PathLike, value: Any, *, indent: int = 2) -> Path:
    """``value`` as JSON and a newline, through :func:`write_atomic`; numbers must be finite."""
    return write_atomic(path, json.dumps(value, indent=indent, allow_nan=False) + "\n")


def append_line(path: str | os.PathLike, line: str) -> None:
    """Append ``line`` and a newline to ``path`` in one write, never through a link."""
    path = Path(path)
    if "\n" in line:
        raise ValueError("append_line takes one line without a newline")
    check_target(path)  # first: opening a FIFO to write fails (ENXIO) before it could be named
    fd = _open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, str(path), "nothing is appended to it; move it", f"cannot append to {path}")
    try:
        data = (line + "\n").encode()
        written = os.write(fd, data)
        if written != len(data):
            raise FileProblem(f"cannot append to {path}: only {written} of {len(data)} bytes were written")
    except OSError as e:
        raise FileProblem(f"cannot append to {path}: {_why(e)}") from None
    finally:
        os.close(fd)


def create_new(path: str | os.PathLike, write_to: Callable[[Path], None], *, mode: int = 0o644) -> Path:
    """Make the new file ``path`` whole or not at all, never over anything: ``write_to(tmp)``
    fills a fresh temporary file beside it (made with ``O_EXCL``; named ``.NAME.XXXXXXXX.tmp``
    plus ``path``'s suffix, for a library or a program that tells the format by the name), which
    is then hard-linked to ``path`` only if that name is free (a file, a link or a folder there is
    one line) and removed in every case. For outputs never replaced, such as a recorded video."""
    path = Path(path)
    fd, tmp = _temporary_beside(path, ".tmp" + path.suffix)
    os.close(fd)
    try:
        write_to(Path(tmp))
        os.chmod(tmp, mode)
        os.link(tmp, path, follow_symlinks=False)  # fails if the name is taken: nothing is replaced
    except FileExistsError:
        raise NameTaken(f"{path} exists already: it is not replaced") from None
    except OSError as e:
        raise FileProblem(f"cannot write {path}: {_why(e)}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return path


_RENAME_NOREPLACE = 1


def rename_new(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Rename ``src`` (a file or a folder) to ``dst`` only if nothing is at ``dst``: on Linux one
    ``renameat2(RENAME_NOREPLACE)``, which no file, link or empty folder appearing at ``dst``
    can slip under; elsewhere (or where the file system lacks it) checked just before a plain
    rename. Something at ``dst`` is :class:`NameTaken`; another failure one line naming it."""
    src, dst = Path(src), Path(dst)
    done = _renameat2_noreplace(src, dst)
    if done is None:
        if lstat_or_none(dst) is not None:
            raise NameTaken(f"{dst} exists already: it is not replaced")
        try:
            os.rename(src, dst)
        except OSError as e:
            raise FileProblem(f"cannot move {src} to {dst}: {_why(e)}") from None


def _renameat2_noreplace(src: Path, dst: Path) -> bool | None:
    """``True`` once renamed; ``None`` where renameat2 is not there to ask (not Linux, an old
    C library, a file system without it)."""
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
    if renameat2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.EEXIST:
        raise NameTaken(f"{dst} exists already: it is not replaced")
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return None  # the file system does not do RENAME_NOREPLACE
    raise FileProblem(f"cannot move {src} to {dst}: {os.strerror(err)}")


# -- reading -----------------------------------------------------------------------------------
def read_regular(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path``, a regular file (no link, FIFO or device) of at most ``limit`` bytes."""
    path = Path(path)
    fd = _open_regular(path, os.O_RDONLY, f"{what} {path}", "only regular files are read", f"{what} {path} cannot be read")
    try:
        st = os.fstat(fd)
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
        raise FileProblem(f"{what} {path} cannot be read: {_why(e)}") from None
    finally:
        os.close(fd)


def read_json(path: str | os.PathLike, limit: int = 16 << 20, what: str = "file") -> Any:
    """JSON from a regular file of at most ``limit`` bytes; one line naming the file if it is not."""
    raw = read_regular(path, limit, what)
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


# -- folders -------------------------------------------------------------------------------------
@contextlib.contextmanager
def lock_folder(folder: str | os.PathLike, who: str = "another process") -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (``flock`` of its ``.lock``) while the block runs; a
    second process is refused at once with one line. The ``.lock`` is never a link and never truncated."""
    import fcntl

    folder = Path(folder)
    path = folder / LOCK
    fd = _open_regular(path, os.O_RDWR | os.O_CREAT, str(path), "the folder cannot be locked; remove it", f"cannot lock {folder}")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FileProblem(f"{folder} is in use by {who}: wait for it to finish, or use another folder") from None
        yield
    finally:
        os.close(fd)  # closing releases the lock


def private_folder(folder: str | os.PathLike) -> str | None:
    """``None`` if ``folder`` may hold code this process runs (a cache of pickles or compiled
    code): a real folder (not a link) owned by this user and not writable by group or others.
    Otherwise the reason, in a few words. An absent folder is fine (:func:`make_private_folder`
    makes it)."""
    folder = Path(folder)
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"it cannot be examined ({_why(e)})"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"it belongs to user id {st.st_uid}, not to you ({os.geteuid()})"
    if st.st_mode & 0o022:
        return f"group or others can write to it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def make_private_folder(folder: str | os.PathLike) -> Path:
    """Make ``folder`` (and the folders above it that are missing) readable by this user only."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def remove_temporaries(folder: str | os.PathLike, names) -> list[Path]:
    """Remove what a write of one of ``names`` into ``folder`` left when it was cut (a killed
    process): the temporary files :func:`write_atomic` and :meth:`OutputFolder.temporary` make,
    ``.NAME.*.tmp`` and ``.NAME.*.tmp.SUFFIX``, regular files only. Call it where no other process
    writes into the folder (under :func:`lock_folder`). The paths removed."""
    folder = Path(folder)
    removed = []
    for name in names:
        for path in folder.glob(f".{glob.escape(name)}.*.tmp*"):
            if not (path.name.endswith(".tmp") or path.name.endswith(".tmp" + Path(name).suffix)):
                continue
            st = lstat_or_none(path)
            if st is not None and stat.S_ISREG(st.st_mode):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                    removed.append(path)
    return removed


# -- output folders ------------------------------------------------------------------------------
def sha256_of(path: Path) -> str | None:
    """The SHA-256 of a regular file, or ``None`` for anything else (absent, a link, a FIFO)."""
    st = lstat_or_none(path)
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


class OutputFolder:
    """A folder a program writes its outputs into, never over what it did not write.

    ``.generala-outputs.json`` holds the name and SHA-256 of each file written here through
    :meth:`write`. A name already present is replaced only when that record says the project
    wrote it and the file still has those bytes; anything else is a :class:`FileProblem` naming
    it. :meth:`claim` checks a list of names before any work starts.
    """

    def __init__(self, folder: str | os.PathLike, program: str = "generala", *, create: bool = True):
        self.folder = Path(folder)
        self.program = program
        st = lstat_or_none(self.folder)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise FileProblem(f"{self.folder} is a symbolic link: {program} writes its outputs only into a real folder; choose another")
        if st is not None and not stat.S_ISDIR(st.st_mode):
            raise FileProblem(f"{self.folder} is {_kind(st)}, not a folder: choose another place for {program}'s outputs")
        if st is None and create:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise FileProblem(f"cannot make the folder {self.folder}: {_why(e)}") from None

    # the record of what was written
    def written(self) -> dict[str, list[str]]:
        """Each recorded name with the SHA-256 digests its file may have (two while a write is
        being renamed into place, so that a kill at that moment leaves either version ours)."""
        path = self.folder / MANIFEST
        if lstat_or_none(path) is None:
            return {}
        try:
            record = read_json(path, 1 << 20, "the record of outputs")
        except FileProblem:
            return {}  # an unreadable record claims nothing: every file there counts as the user's
        files = record.get("files") if isinstance(record, dict) else None
        if not isinstance(files, dict):
            return {}
        out = {}
        for k, v in files.items():
            digests = [v] if isinstance(v, str) else v
            if isinstance(k, str) and isinstance(digests, list) and all(isinstance(d, str) for d in digests):
                out[k] = digests
        return out

    def _record(self, name: str, digests: list[str]) -> None:
        files: dict[str, str | list[str]] = {k: v[0] if len(v) == 1 else v for k, v in self.written().items()}
        if digests:
            files[name] = digests[0] if len(digests) == 1 else digests
        else:
            files.pop(name, None)
        write_json(self.folder / MANIFEST, {"written_by": "generala-rl", "files": dict(sorted(files.items()))})

    def ours(self, name: str) -> bool:
        """Whether ``name`` is absent, or a regular file this project wrote here and nobody changed."""
        path = self.folder / name
        if lstat_or_none(path) is None:
            return True
        digest = sha256_of(path)
        return digest is not None and digest in self.written().get(name, [])

    def _checked(self, name: str) -> str | None:
        """The digest of the file ``name`` holds now (``None``: absent), refused if it is not ours."""
        if not name or "/" in name or name in (".", "..", MANIFEST, LOCK):
            raise FileProblem(f"{name!r} is not a file name an output can have")
        path = self.folder / name
        st = lstat_or_none(path)
        if st is None:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem(f"{path} is {_kind(st)}: {self.program} writes nothing through or over it; move it or choose another folder")
        digest = sha256_of(path)
        if digest is None or digest not in self.written().get(name, []):
            raise FileProblem(f"{path} was not written by {self.program} here (or was changed since): it is not replaced; move it or choose another folder")
        return digest

    def check(self, name: str) -> Path:
        """The path of ``name`` in the folder, refused if something not ours is there."""
        self._checked(name)
        return self.folder / name

    def claim(self, names) -> None:
        """Check, before any work, that every one of ``names`` may be written here."""
        for name in names:
            self.check(name)

    def write(self, name: str, data: bytes | str | Callable[[IO[bytes]], None]) -> Path:
        """Write the file ``name`` atomically and record it as ours."""
        with self.temporary(name) as tmp:
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | _NOFOLLOW | _CLOEXEC)
            except OSError as e:
                raise FileProblem(f"cannot write {self.folder / name}: {_why(e)}") from None
            _fill(fd, data)
        return self.folder / name

    def write_json(self, name: str, value: Any) -> Path:
        return self.write(name, json.dumps(value, indent=2, allow_nan=False) + "\n")

    def adopt(self, name: str) -> Path:
        """Record the regular file ``name`` as this program's, as it is now: for outputs written
        before the folder kept a record, once the caller has checked they are its own, and for
        a file the user hands over explicitly (a ``--force`` that names it)."""
        path = self.folder / name
        check_target(path)
        digest = sha256_of(path)
        if digest is not None:
            self._record(name, [digest])
        return path

    @contextlib.contextmanager
    def temporary(self, name: str) -> Iterator[Path]:
        """A fresh temporary path beside ``name`` for a library that writes only to a path
        (matplotlib, an encoder, SB3's ``save``); renamed over ``name`` and recorded when the
        block ends without an error, removed otherwise. The new file's digest is recorded
        beside the old one before the rename and alone after it."""
        final = self.check(name)
        fd, tmp = _temporary_beside(final, ".tmp" + final.suffix)
        os.close(fd)
        with _removed_on_failure(tmp, final):
            yield Path(tmp)
            os.chmod(tmp, 0o644)
            digest = sha256_of(Path(tmp))
            if digest is None:
                raise FileProblem(f"cannot write {final}: its temporary file {tmp} was replaced")
            current = self._checked(name)  # checked again just before the rename
            self._record(name, [current, digest] if current else [digest])
            os.replace(tmp, final)
        self._record(name, [digest])


__all__ = [
    "LOCK",
    "MANIFEST",
    "FileProblem",
    "NameTaken",
    "OutputFolder",
    "append_line",
    "check_target",
    "create_new",
    "lock_folder",
    "make_private_folder",
    "private_folder",
    "read_json",
    "read_json_lines",
    "read_regular",
    "remove_temporaries",
    "rename_new",
    "sha256_of",
    "write_atomic",
    "write_json",
]
