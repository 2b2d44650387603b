"""Nothing a user owns is deleted or overwritten, and no write leaves the folder it was given (issue 19, items 1, 8, 10)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")

from helpers import TINY_CONFIG

from generala_agents.policy_net import WEIGHTS_FILE
from generala_agents.ppo import METADATA_FILE
from generala_training.export import main as export_main  # noqa: E402


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


def test_export_never_replaces_a_folder_it_did_not_make(tiny_run, tmp_path, capsys):
    dest = tmp_path / "exd"
    mine = dest / "mydata"
    (mine / "deep").mkdir(parents=True)
    (mine / "thesis.txt").write_text("three years of work")
    (mine / "deep" / "notes.md").write_text("more")
    before = _tree(dest)
    for extra in ([], ["--force"]):
        assert export_main([str(tiny_run), "--name", "mydata", "--games", "2", "--dest", str(dest), *extra]) == 2
        err = capsys.readouterr().err
        assert str(mine) in err and "not a checkpoint made by generala export" in err and "another --name" in err
        assert _tree(dest) == before


def test_a_folder_that_only_looks_like_a_checkpoint_is_kept(tiny_run, tmp_path, capsys):
    dest = tmp_path / "exd"
    (dest / "x").mkdir(parents=True)
    (dest / "x" / METADATA_FILE).write_text(json.dumps({"name": "x"}))  # no export marks
    (dest / "x" / WEIGHTS_FILE).write_bytes(b"mine")
    before = _tree(dest)
    assert export_main([str(tiny_run), "--name", "x", "--games", "2", "--dest", str(dest), "--force"]) == 2
    assert _tree(dest) == before


@pytest.mark.parametrize("kind", ["file", "link"])
def test_export_over_a_file_or_a_link_refuses_and_leaves_nothing_behind(tiny_run, tmp_path, capsys, kind):
    dest = tmp_path / "exd"
    dest.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    if kind == "file":
        (dest / "ck").write_text("a file of mine")
    else:
        (dest / "ck").symlink_to(target)
    assert export_main([str(tiny_run), "--name", "ck", "--games", "2", "--dest", str(dest), "--force"]) == 2
    assert f"is a {kind}" in capsys.readouterr().err
    assert sorted(p.name for p in dest.iterdir()) == ["ck"]  # no .ck.old-PID, no .ck.new-*
    assert (target / "keep.txt").read_text() == "keep" and sorted(p.name for p in target.iterdir()) == ["keep.txt"]


def test_dest_dot_name_tests_does_not_wipe_the_tests(tiny_run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test(): pass\n")
    assert export_main([str(tiny_run), "--name", "tests", "--games", "2", "--dest", "."]) == 2
    assert (tmp_path / "tests" / "test_x.py").is_file()


def test_an_overlong_name_is_one_clear_line(tiny_run, tmp_path, capsys):
    assert export_main([str(tiny_run), "--name", "a" * 250, "--games", "2", "--dest", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "at most 100 characters" in err and "Errno" not in err and len(err) < 400


def test_leftovers_of_a_killed_export_are_cleaned_up_and_a_moved_checkpoint_restored(tiny_run, tmp_path):
    dest = tmp_path / "exd"
    assert export_main([str(tiny_run), "--name", "ck", "--games", "2", "--dest", str(dest)]) == 0
    dead = 2**22 + 12345  # above Linux's default pid_max: no such process
    os.rename(dest / "ck", dest / f".ck.old-{dead}-abcd")  # killed between its two renames
    (dest / f".ck.new-{dead}-efgh").mkdir()
    (dest / f".ck.new-{dead}-efgh" / METADATA_FILE).write_text("{}")
    (dest / f".ck.new-{dead}-zzzz").mkdir()
    (dest / f".ck.new-{dead}-zzzz" / "mine.txt").write_text("not ours: kept")
    assert export_main([str(tiny_run), "--name", "other", "--games", "2", "--dest", str(dest)]) == 0  # other name: untouched
    assert not (dest / "ck").exists()
    assert export_main([str(tiny_run), "--name", "ck", "--games", "2", "--dest", str(dest), "--force"]) == 0
    assert sorted(p.name for p in dest.iterdir()) == [f".ck.new-{dead}-zzzz", "ck", "other"]


def test_run_name_may_not_leave_run_dir(tmp_path, capsys):
    from generala_training.train import main as train_main

    runs = tmp_path / "runs"
    for bad in ("../x", "a/b", "..", "x" * 300):
        assert train_main(["--config", TINY_CONFIG, f"run_dir={runs}", "--run-name", bad, "total_timesteps=10"]) == 2
        assert "--run-name must be a folder name" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not runs.exists()


def test_evaluate_does_not_write_through_a_link_in_out(tmp_path, capsys):
    from generala_training.cli import main as cli_main

    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.md"
    victim.write_text("mine")
    (out / "results.md").symlink_to(victim)
    rc = cli_main(["evaluate", "--agents", "greedy", "--games", "2", "--out", str(out), "--no-progress", "--workers", "1"])
    assert rc == 2 and "results.md is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "mine" and sorted(p.name for p in out.iterdir()) == ["results.md"]
