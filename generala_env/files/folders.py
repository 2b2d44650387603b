"""The folders the project writes into, as :mod:`generala_env.files` states (import from there):
a folder two processes could share is locked (:func:`lock_folder`), a cache is trusted only when
it is private (:func:`private_folder`), a cut write's temporary files are removed
(:func:`remove_temporaries`), and an :class:`OutputFolder` writes its outputs never over what it
did not write. No framework imports.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from generala_env.files.file_io import (
    CLOEXEC,
    NOFOLLOW,
    FileProblem,
    check_target,
    fill,
    kind_of,
    lstat_or_none,
    open_regular,
    read_json,
    reason,
    removed_on_failure,
    sha256_of,
    temporary_beside,
    write_json,
)

MANIFEST = ".generala-outputs.json"
LOCK = ".lock"


# -- locks, private folders, what a cut write left ----------------------------------------------
@contextlib.contextmanager
def lock_folder(folder: str | os.PathLike, who: str = "another process") -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (``flock`` of its ``.lock``) while the block runs; a
    second process is refused at once with one line. The ``.lock`` is never a link and never truncated."""
    import fcntl

    folder = Path(folder)
    path = folder / LOCK
    fd = open_regular(path, os.O_RDWR | os.O_CREAT, str(path), "the folder cannot be locked; remove it", f"cannot lock {folder}")
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
        return f"it cannot be examined ({reason(e)})"
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
            raise FileProblem(f"{self.folder} is {kind_of(st)}, not a folder: choose another place for {program}'s outputs")
        if st is None and create:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise FileProblem(f"cannot make the folder {self.folder}: {reason(e)}") from None

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
            raise FileProblem(f"{path} is {kind_of(st)}: {self.program} writes nothing through or over it; move it or choose another folder")
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
                fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | NOFOLLOW | CLOEXEC)
            except OSError as e:
                raise FileProblem(f"cannot write {self.folder / name}: {reason(e)}") from None
            fill(fd, data)
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
        fd, tmp = temporary_beside(final, ".tmp" + final.suffix)
        os.close(fd)
        with removed_on_failure(tmp, final):
            yield Path(tmp)
            os.chmod(tmp, 0o644)
            digest = sha256_of(Path(tmp))
            if digest is None:
                raise FileProblem(f"cannot write {final}: its temporary file {tmp} was replaced")
            current = self._checked(name)  # checked again just before the rename
            self._record(name, [current, digest] if current else [digest])
            os.replace(tmp, final)
        self._record(name, [digest])
