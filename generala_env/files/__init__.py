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
- **A folder of files that belong together** (a checkpoint: weights and their metadata) is
  written whole beside its place and swapped in (:func:`replace_folder`): a reader finds the
  old folder or the new one, never the new weights under the old metadata.
- **Appends are whole lines** (:func:`append_line`): one ``write`` of an ``O_APPEND`` file opened
  with ``O_NOFOLLOW``, refused if the file has another name (a hard link: the append would write
  there too); a program that appends later asks :func:`check_append_target` before it writes
  anything. :func:`read_json_lines` reads them back, skipping a torn last line with a warning
  that names the file and line, and refusing a bad line elsewhere with one line.
- **Every file read is read by one reader** (:func:`read_regular`), the files a user names (a
  config, a rule file, an agent's source, td-search values, checkpoint weights) and those the
  project reads back alike: opened with ``O_NONBLOCK`` (a FIFO opens at once), checked with
  ``fstat`` on that descriptor, refused in one line unless it is a regular file off ``/proc``
  and ``/sys`` (a FIFO, a device, a folder), then read to at most ``limit`` + 1 bytes. A link
  is refused, or followed where the caller asks (a user's file named by a link).
- **A folder two processes could share is locked** (:func:`lock_folder`): ``flock`` on a
  ``.lock`` file opened without following links and never truncated; a second process gets one
  line naming the folder.
- **A cache is trusted only when it is private** (:func:`private_folder`): owned by this user
  and not writable by group or others, as ssh and pip demand of their folders, since a cache
  of pickles or compiled code is code.

Every failure is a :class:`FileProblem` (a ``ValueError``) of one line that names the path; the
programs print it as their one error line. No framework imports.

Import every name from here: one file's checks, writes and reads are written in
:mod:`generala_env.files.file_io`, the folders in :mod:`generala_env.files.folders`.
"""

from __future__ import annotations

from generala_env.files.file_io import (
    FileProblem,
    NameTaken,
    append_line,
    check_append_target,
    check_target,
    create_new,
    lstat_or_none,
    read_json,
    read_json_lines,
    read_regular,
    rename_new,
    replace_folder,
    sha256_of,
    write_atomic,
    write_json,
)
from generala_env.files.folders import LOCK, MANIFEST, OutputFolder, lock_folder, make_private_folder, private_folder, remove_temporaries

__all__ = [
    "LOCK",
    "MANIFEST",
    "FileProblem",
    "NameTaken",
    "OutputFolder",
    "append_line",
    "check_append_target",
    "check_target",
    "create_new",
    "lock_folder",
    "lstat_or_none",
    "make_private_folder",
    "private_folder",
    "read_json",
    "read_json_lines",
    "read_regular",
    "remove_temporaries",
    "rename_new",
    "replace_folder",
    "sha256_of",
    "write_atomic",
    "write_json",
]
