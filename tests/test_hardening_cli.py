"""The evaluate and tournament programs under misuse: signals, a bad --out, bad numbers."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import generala_training.evaluate
import generala_training.tournament
from generala_training.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``, read from /proc."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid:
            out.add(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _reset_signals():  # in the child: Ctrl-C handled even if this test run ignores SIGINT
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
@pytest.mark.parametrize(
    "program, agents, sig",
    [
        ("evaluate", "random", signal.SIGTERM),
        ("evaluate", "random", signal.SIGINT),
        ("tournament", "random,greedy", signal.SIGTERM),
        ("tournament", "random,greedy", signal.SIGINT),
    ],
)
def test_a_signal_stops_the_workers_and_exits_with_one_line(program, agents, sig, tmp_path):
    pytest.importorskip("matplotlib")  # evaluate and tournament check for the plot (the eval extra) first
    out = tmp_path / "new" / "out"
    cmd = [
        sys.executable,
        "-m",
        "generala_training.cli",
        program,
        "--agents",
        agents,
        "--games",
        "100000",
        "--workers",
        "2",
        "--no-progress",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_reset_signals)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 30
        while len(workers) < 2:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.1)
            workers = _children(proc.pid)
        time.sleep(0.5)  # games under way
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # Ctrl-C reaches the whole foreground process group
        else:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=15)
        assert proc.returncode == 128 + sig
        assert "Traceback" not in err and "KeyboardInterrupt" not in err
        assert err.strip().splitlines()[-1].startswith(f"generala {program}: interrupted, ")
        assert err.strip().endswith("games played; nothing written")
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers), "a worker outlived its parent"
        assert not (tmp_path / "new").exists()  # the folders made for --out are gone again
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the session's group holds the parent and its workers
        proc.wait(timeout=10)


@pytest.fixture
def no_games(monkeypatch):
    """Records every call that would play games, and plays none."""
    calls = []

    def play_many(*a, **k):
        calls.append(a)
        raise AssertionError("a game was played")

    monkeypatch.setattr(generala_training.evaluate, "play_many", play_many)
    monkeypatch.setattr(generala_training.tournament, "play_many", play_many)
    return calls


def _program(name: str) -> list[str]:
    return ["evaluate", "--agents", "random"] if name == "evaluate" else ["tournament", "--agents", "random,greedy"]


@pytest.mark.parametrize("program", ["evaluate", "tournament"])
@pytest.mark.parametrize("where", ["is a file", "under a file"])
def test_an_out_that_is_no_folder_fails_before_any_game(program, where, tmp_path, no_games, capsys):
    pytest.importorskip("matplotlib")  # evaluate and tournament check for the plot (the eval extra) first
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    out = f if where == "is a file" else f / "sub" / "dir"
    assert cli(_program(program) + ["--games", "3", "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"generala {program}: error: --out {out}: {f} is not a folder" in err
    assert no_games == [] and f.read_text() == "mine"


@pytest.mark.parametrize("program", ["evaluate", "tournament"])
def test_an_unwritable_out_fails_before_any_game(program, tmp_path, no_games, monkeypatch, capsys):
    pytest.importorskip("matplotlib")  # evaluate and tournament check for the plot (the eval extra) first
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **k: Path(p) != locked and real_access(p, mode, **k))
    assert cli(_program(program) + ["--games", "3", "--no-progress", "--out", str(locked / "a" / "b")]) == 2
    assert f"--out {locked / 'a' / 'b'}: {locked} is not writable" in capsys.readouterr().err
    assert no_games == [] and list(locked.iterdir()) == []


def test_a_folder_that_takes_no_file_fails_and_is_removed_again(tmp_path, no_games, monkeypatch, capsys):
    """As root, os.access says yes to everything; writing a file is the real test."""
    pytest.importorskip("matplotlib")  # evaluate and tournament check for the plot (the eval extra) first

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(generala_training.evaluate.tempfile, "TemporaryFile", refuse)
    out = tmp_path / "a" / "b"
    assert cli(_program("evaluate") + ["--games", "3", "--no-progress", "--out", str(out)]) == 2
    assert f"--out {out}: cannot write there (Permission denied)" in capsys.readouterr().err
    assert no_games == [] and list(tmp_path.iterdir()) == []


def test_a_failed_run_keeps_what_was_in_out(tmp_path, capsys):
    pytest.importorskip("matplotlib")  # evaluate and tournament check for the plot (the eval extra) first
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    for out in (mine, mine / "new"):
        assert cli(["evaluate", "--agents", "random,nobody", "--games", "3", "--no-progress", "--out", str(out)]) == 2
        assert "unknown agent 'nobody'" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["keep.txt"] and (mine / "keep.txt").read_text() == "mine"
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers


@pytest.mark.parametrize(
    "argv, option, message",
    [
        (["evaluate", "--workers", "0"], "--workers", "must be at least 1, got 0"),
        (["evaluate", "--workers", "-2"], "--workers", "must be at least 1, got -2"),
        (["evaluate", "--seed", "-1"], "--seed", "must be 0 or more, got -1"),
        (["evaluate", "--games", "0"], "--games", "must be at least 1, got 0"),
        (["evaluate", "--games", "-5"], "--games", "must be at least 1, got -5"),
        (["evaluate", "--games", "many"], "--games", "not a whole number: 'many'"),
        (["tournament", "--agents", "random,greedy", "--workers", "0"], "--workers", "must be at least 1, got 0"),
        (["tournament", "--agents", "random,greedy", "--seed", "-1"], "--seed", "must be 0 or more, got -1"),
        (["tournament", "--agents", "random,greedy", "--games", "0"], "--games", "must be at least 1, got 0"),
        (["play-random", "--seed", "-1"], "--seed", "must be 0 or more, got -1"),
    ],
)
def test_bad_numbers_name_their_option(argv, option, message, tmp_path, capsys):
    if argv[0] != "play-random":
        argv = argv + ["--no-progress", "--out", str(tmp_path / "out")] + ([] if "--games" in argv else ["--games", "2"])
        if argv[0] == "evaluate":
            argv += ["--agents", "random"]
    with pytest.raises(SystemExit) as e:
        cli(argv)
    assert e.value.code == 2
    assert f"generala {argv[0]}: error: argument {option}: {message}" in capsys.readouterr().err


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_output_read_by_a_reader_that_stops_early_ends_quietly(unbuffered):
    """``generala rules classic | head -1``: the reader closes the pipe, and the program stops
    without a traceback, whether standard output is buffered or not."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONUNBUFFERED=unbuffered)
    proc = subprocess.Popen([sys.executable, "-m", "generala_training.cli", "rules", "classic"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the program writes a line
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err
