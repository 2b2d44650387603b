"""generala_env.files, the one writer and reader: each rule attacked as a red-teamer would,
with a symbolic link, a FIFO, a device, a file of the user's, a torn record, a second process."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import warnings

import pytest

from generala_env import files
from generala_env.files import FileProblem, OutputFolder


@pytest.fixture
def victim(tmp_path):
    """A file outside the folder under attack, whose bytes must survive."""
    path = tmp_path / "victim.txt"
    path.write_text("the user's own data\n")
    return path


def test_write_atomic_replaces_a_regular_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    files.write_json(target, {"a": 1})
    files.write_json(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_write_atomic_never_writes_through_a_symbolic_link(tmp_path, victim):
    link = tmp_path / "out.json"
    link.symlink_to(victim)
    with pytest.raises(FileProblem, match="symbolic link"):
        files.write_atomic(link, "overwritten")
    assert victim.read_text() == "the user's own data\n"
    assert link.is_symlink()


def test_write_json_refuses_nan_and_infinity(tmp_path):
    with pytest.raises(ValueError):
        files.write_json(tmp_path / "x.json", {"score": float("nan")})
    assert not (tmp_path / "x.json").exists()


def test_a_full_disk_is_one_line_and_leaves_no_temporary(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(FileProblem) as e:
        files.write_atomic(tmp_path / "big.bin", b"x" * 100)
    assert str(e.value) == f"cannot write {tmp_path / 'big.bin'}: No space left on device"
    assert list(tmp_path.iterdir()) == []


def test_append_line_refuses_a_link_and_a_fifo(tmp_path, victim):
    (tmp_path / "calls.jsonl").symlink_to(victim)
    with pytest.raises(FileProblem, match="symbolic link"):
        files.append_line(tmp_path / "calls.jsonl", "{}")
    os.mkfifo(tmp_path / "fifo.jsonl")
    with pytest.raises(FileProblem, match="named pipe"):  # O_NONBLOCK: no reader, no hang
        files.append_line(tmp_path / "fifo.jsonl", "{}")
    assert victim.read_text() == "the user's own data\n"


def test_append_line_refuses_a_hard_link_and_leaves_both_names_untouched(tmp_path, victim):
    (tmp_path / "out").mkdir()
    os.link(victim, tmp_path / "out" / "command.txt")  # the run's log, a second name of the user's file
    for check in (files.append_line, lambda p, _: files.check_append_target(p)):
        with pytest.raises(FileProblem) as e:
            check(tmp_path / "out" / "command.txt", "generala train --resume out")
        assert str(e.value) == (
            f"{tmp_path / 'out' / 'command.txt'} has 2 names (a hard link): nothing is appended to it, as that would write into the other names too; move it"
        )
    assert victim.read_text() == "the user's own data\n" and os.stat(victim).st_nlink == 2
    files.append_line(tmp_path / "out" / "own.txt", "a")  # a file of one name, made or appended to
    files.append_line(tmp_path / "out" / "own.txt", "b")
    assert (tmp_path / "out" / "own.txt").read_text() == "a\nb\n"


def test_replace_folder_swaps_a_whole_folder_in_and_refuses_a_link(tmp_path, monkeypatch):
    from generala_env.files import file_io

    best = tmp_path / "best"
    for swap in (True, False):  # renameat2's exchange, and the two renames where it is missing
        if not swap:
            monkeypatch.setattr(file_io, "_renameat2", lambda src, dst, flag: None)
        new = tmp_path / f".best.new{swap}.tmp"
        new.mkdir()
        (new / "w").write_text(f"weights {swap}")
        (new / "m").write_text(f"metadata {swap}")
        files.replace_folder(new, best)
        assert {p.name: p.read_text() for p in best.iterdir()} == {"w": f"weights {swap}", "m": f"metadata {swap}"}
        assert sorted(p.name for p in tmp_path.iterdir()) == ["best"]  # the old folder removed, nothing left beside
    (tmp_path / "new").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "best")
    with pytest.raises(FileProblem, match="linked is a symbolic link: only a folder this program wrote is replaced"):
        files.replace_folder(tmp_path / "new", tmp_path / "linked")
    assert (tmp_path / "best" / "w").read_text() == "weights False"


def test_read_regular_refuses_fifo_device_link_and_size_at_once(tmp_path):
    os.mkfifo(tmp_path / "hang.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "big.json").write_bytes(b" " * 101)
    for name, why in (("hang.json", "named pipe"), ("zero.json", "symbolic link"), ("big.json", "more than the 100"), ("none.json", "does not exist")):
        with pytest.raises(FileProblem, match=why):
            files.read_regular(tmp_path / name, 100)
    with pytest.raises(FileProblem, match="device"):
        files.read_regular("/dev/zero", 100)


def test_read_json_names_a_nesting_too_deep_in_one_line(tmp_path):
    (tmp_path / "state.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(FileProblem, match="state.json") as e:
        files.read_json(tmp_path / "state.json")
    assert "\n" not in str(e.value)


def test_read_json_lines_skips_a_torn_last_record_and_names_a_bad_middle_one(tmp_path):
    log = tmp_path / "calls.jsonl"
    log.write_text('{"a": 1}\n{"b": 2}\n{"c": ')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert files.read_json_lines(log) == [{"a": 1}, {"b": 2}]
    assert [str(w.message) for w in caught] == [f"{log}, line 3: a torn last record (a write cut short) is skipped"]
    log.write_text('{"a": 1}\n{"b": \n{"c": 3}\n')
    with pytest.raises(FileProblem, match=r"calls.jsonl, line 2"):
        files.read_json_lines(log)


def test_output_folder_replaces_only_what_it_wrote(tmp_path, victim):
    out = OutputFolder(tmp_path / "out", "generala evaluate")
    out.write("results.md", "first")
    out.write("results.md", "second")  # ours, unchanged since: replaced
    assert (tmp_path / "out" / "results.md").read_text() == "second"
    (tmp_path / "out" / "aggregates.png").write_bytes(b"the user's plot")
    (tmp_path / "out" / "scores.png").symlink_to(victim)
    with pytest.raises(FileProblem, match="was not written by generala evaluate"):
        out.write("aggregates.png", b"ours")
    with pytest.raises(FileProblem, match="symbolic link"):
        out.claim(["results.md", "scores.png"])
    (tmp_path / "out" / "results.md").write_text("edited by the user")
    with pytest.raises(FileProblem, match="or was changed since"):
        out.write("results.md", "third")
    assert (tmp_path / "out" / "aggregates.png").read_bytes() == b"the user's plot"
    assert victim.read_text() == "the user's own data\n"
    assert (tmp_path / "out" / "results.md").read_text() == "edited by the user"


def test_output_folder_a_kill_between_rename_and_record_leaves_the_file_ours(tmp_path, monkeypatch):
    out = OutputFolder(tmp_path)
    out.write("results.md", "first")
    record = OutputFolder._record

    def killed_after_rename(self, name, digests):
        if len(digests) == 1 and (tmp_path / name).read_text() == "second":
            raise KeyboardInterrupt  # the process dies after the rename, before the final record
        record(self, name, digests)

    monkeypatch.setattr(OutputFolder, "_record", killed_after_rename)
    with pytest.raises(KeyboardInterrupt):
        out.write("results.md", "second")
    monkeypatch.undo()
    assert (tmp_path / "results.md").read_text() == "second"
    out.write("results.md", "third")  # the next run still knows the file as its own
    assert (tmp_path / "results.md").read_text() == "third"
    assert out.written()["results.md"] == [files.sha256_of(tmp_path / "results.md")]


def test_output_folder_refuses_a_linked_folder_and_names_outside_it(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    with pytest.raises(FileProblem, match="symbolic link"):
        OutputFolder(tmp_path / "linked")
    out = OutputFolder(tmp_path / "real")
    for name in ("../escape.txt", "", ".lock", files.MANIFEST):
        with pytest.raises(FileProblem):
            out.write(name, "x")
    assert not (tmp_path / "escape.txt").exists()


def test_output_folder_temporary_path_for_libraries_that_write_paths(tmp_path):
    out = OutputFolder(tmp_path)
    with out.temporary("plot.png") as tmp:
        tmp.write_bytes(b"png bytes")
    assert (tmp_path / "plot.png").read_bytes() == b"png bytes"
    assert out.ours("plot.png")
    with pytest.raises(RuntimeError), out.temporary("plot.png") as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("the library failed")
    assert (tmp_path / "plot.png").read_bytes() == b"png bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == [files.MANIFEST, "plot.png"]


def test_lock_folder_refuses_a_second_process_and_never_truncates_a_linked_lock(tmp_path, victim):
    code = f"from generala_env.files import lock_folder\nwith lock_folder({str(tmp_path)!r}, 'a run'):\n    pass"
    with files.lock_folder(tmp_path, "a run"):
        second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert second.returncode != 0 and f"{tmp_path} is in use by a run" in second.stderr
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60).returncode == 0  # free again
    other = tmp_path / "other"
    other.mkdir()
    (other / ".lock").symlink_to(victim)
    with pytest.raises(FileProblem, match="symbolic link"), files.lock_folder(other):
        pass
    assert victim.read_text() == "the user's own data\n"


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
def test_private_folder_refuses_shared_links_and_others_folders(tmp_path):
    mine = files.make_private_folder(tmp_path / "cache" / "generala")
    assert files.private_folder(mine) is None
    assert files.private_folder(tmp_path / "absent") is None
    os.chmod(mine, 0o777)
    assert "group or others can write" in files.private_folder(mine)
    os.chmod(mine, 0o700)
    (tmp_path / "link").symlink_to(mine)
    assert files.private_folder(tmp_path / "link") == "it is a symbolic link"
    if os.geteuid() == 0:  # only root can give a folder away
        os.chown(mine, 12345, 12345)
        assert "belongs to user id 12345" in files.private_folder(mine)
