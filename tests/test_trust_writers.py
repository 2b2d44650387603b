"""One writer for every output, run folders locked (issue 34): each test makes the red team's
attack (a link at an output's name, a user's own file, two processes on one run folder, a full
disk, a forged run file, a killed drawing process) and checks that it fails safe with one line,
and that the legitimate use still works."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from training.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
TINY = str(ROOT / "configs" / "ppo_tiny.yaml")
SHIPPED = ROOT / "checkpoints"


def _tree(folder: Path) -> dict:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink() else os.readlink(p) if p.is_symlink() else None)
        for p in sorted(folder.rglob("*"))
    }


def _one_error_line(err: str, program: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err
    errors = [line for line in lines if line.startswith(f"generala {program}: error: ")]
    assert len(errors) == 1, err
    return errors[0]


def _evaluate(out: Path, *extra: str, agents: str = "greedy") -> list[str]:
    return ["evaluate", "--agents", agents, "--games", "2", "--workers", "1", "--no-progress", "--out", str(out), *extra]


# -- 1. evaluate --replays: never through a link, one page per spec ------------------------------
def test_a_link_at_a_replay_page_is_refused_and_its_target_kept(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.html"
    victim.write_text("the user's page")
    (out / "replays-greedy.html").symlink_to(victim)
    before = _tree(out)
    assert cli(_evaluate(out, "--replays", "1")) == 2
    line = _one_error_line(capsys.readouterr().err, "evaluate")
    assert "replays-greedy.html is a symbolic link" in line
    assert victim.read_text() == "the user's page" and _tree(out) == before  # refused before any game: nothing written
    # the legitimate use: the same command into a folder of its own writes the page
    assert cli(_evaluate(tmp_path / "fresh", "--replays", "1")) == 0
    assert "Game 1" in (tmp_path / "fresh" / "replays-greedy.html").read_text()


def test_two_specs_with_one_file_name_get_two_pages(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from training.evaluate import replay_file

    a, b = tmp_path / "a" / "ck", tmp_path / "b" / "ck"  # two checkpoint folders, one last name
    for folder in (a, b):
        shutil.copytree(SHIPPED / "ppo-classic", folder)
    out = tmp_path / "out"
    assert cli(_evaluate(out, "--replays", "1", agents=f"{a},{b}")) == 0
    assert "wrote 2 replay page(s)" in capsys.readouterr().out
    pages = sorted(p.name for p in out.glob("replays-*.html"))
    assert pages == sorted([replay_file(str(a)), replay_file(str(b))]) and len(set(pages)) == 2
    for spec in (a, b):
        assert f"Generala replay: {spec}" in (out / replay_file(str(spec))).read_text()
    # a plain name keeps its plain page name; anything else gets the spec's hash
    assert replay_file("greedy") == "replays-greedy.html"
    assert replay_file("x/greedy") != replay_file("y/greedy") and replay_file("x/greedy").startswith("replays-greedy-")


def test_the_users_own_plot_in_out_is_refused_and_kept(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    assert cli(_evaluate(out)) == 0
    assert cli(_evaluate(out)) == 0  # the same command replaces its own files
    capsys.readouterr()
    (out / "scores.png").write_bytes(b"the user's own plot")
    assert cli(_evaluate(out)) == 2
    line = _one_error_line(capsys.readouterr().err, "evaluate")
    assert "scores.png was not written by generala evaluate here (or was changed since)" in line
    assert (out / "scores.png").read_bytes() == b"the user's own plot"
    assert cli(_evaluate(out, "--force")) == 2  # --force replaces another command's results, never the user's file
    assert (out / "scores.png").read_bytes() == b"the user's own plot"


def test_a_tournament_refuses_a_users_file_and_replaces_its_own(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    argv = ["tournament", "--agents", "greedy,random", "--games", "2", "--workers", "1", "--no-progress", "--out", str(out)]
    assert cli(argv) == 0 and cli(argv) == 0
    capsys.readouterr()
    (out / "results.md").write_text("my notes")
    assert cli(argv) == 2
    assert "results.md was not written by generala tournament here" in _one_error_line(capsys.readouterr().err, "tournament")
    assert (out / "results.md").read_text() == "my notes"
