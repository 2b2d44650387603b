"""One writer for every output, run folders locked (issue 34): each test makes the red team's
attack (a link at an output's name, a user's own file, two processes on one run folder, a full
disk, a forged run file, a killed drawing process) and checks that it fails safe with one line,
and that the legitimate use still works."""

from __future__ import annotations

import errno
import json
import os
import shutil
import types
from pathlib import Path

import numpy as np
import pytest

from generala_training.cli import main as cli

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
    from generala_training.evaluate import replay_file

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


def test_results_from_before_the_record_of_outputs_are_still_replaced_by_the_same_command(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from generala_env.files import MANIFEST

    out = tmp_path / "out"
    assert cli(_evaluate(out)) == 0
    (out / MANIFEST).unlink()  # a folder an older version wrote
    assert cli(_evaluate(out)) == 0 and (out / MANIFEST).is_file()
    (out / MANIFEST).unlink()
    (out / "results.md").unlink()
    (out / "results.md").symlink_to(tmp_path / "victim.md")  # links are refused all the same
    assert cli(_evaluate(out)) == 2
    assert "results.md is a symbolic link" in _one_error_line(capsys.readouterr().err, "evaluate")
    assert not (tmp_path / "victim.md").exists()


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


# -- 2. a run folder is locked while a run uses it ------------------------------------------------
def _train(argv: list[str]) -> int:
    pytest.importorskip("sb3_contrib")
    from generala_training.train import main

    return main(argv)


@pytest.fixture
def run(tiny_run, tmp_path):
    """A copy of the module's tiny run that a test may resume, lock or damage."""
    return Path(shutil.copytree(tiny_run, tmp_path / "run"))


def test_a_second_resume_of_a_run_in_use_is_refused_and_touches_nothing(run, capsys):
    from generala_env.files import lock_folder

    before = _tree(run)
    with lock_folder(run, "the first generala train"):  # the first process, holding the folder
        assert _train(["--resume", str(run), "total_timesteps=1024"]) == 2
        line = _one_error_line(capsys.readouterr().err, "train")
        assert f"{run} is in use by another generala train" in line
        assert _tree(run) == before
    assert _train(["--resume", str(run), "total_timesteps=1024"]) == 0  # once the first is done, it resumes
    state = json.loads((run / "state.json").read_text())
    assert state["num_timesteps"] >= 1024 and len((run / "command.txt").read_text().splitlines()) == 2


def test_a_second_fresh_train_on_a_run_folder_in_use_is_refused(tmp_path, capsys):
    from generala_env.files import lock_folder

    folder = tmp_path / "runs" / "x"
    folder.mkdir(parents=True)
    with lock_folder(folder, "the first generala train"):  # a first run has made and locked it, not yet written to it
        assert _train(["--config", TINY, f"run_dir={tmp_path / 'runs'}", "--run-name", "x"]) == 2
        assert "is in use by another generala train" in _one_error_line(capsys.readouterr().err, "train")
        assert sorted(p.name for p in folder.iterdir()) == [".lock"]


def test_two_trains_in_two_processes_on_one_folder_one_is_refused(tmp_path):
    """The red team's reproduction: two ``generala train --resume`` of one folder at once (the
    first a subprocess this test started, held inside its run by a lock it waits on)."""
    pytest.importorskip("sb3_contrib")
    import subprocess
    import sys

    runs = tmp_path / "runs"
    assert _train(["--config", TINY, f"run_dir={runs}", "--run-name", "r", "total_timesteps=256"]) == 0
    run = runs / "r"
    # the first process trains while holding the run's lock; it stops at its first evaluation until this test lets it go
    first = f"""
import sys
import generala_training.train as tt
real = tt.TrainCallback.evaluate
def evaluate(self):
    print("in the run", flush=True)
    sys.stdin.readline()  # until the test lets it go
    real(self)
tt.TrainCallback.evaluate = evaluate
sys.exit(tt.main(["--resume", {str(run)!r}, "total_timesteps=512"]))
"""
    p = subprocess.Popen([sys.executable, "-c", first], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        for line in p.stdout:  # wait for the first process to be inside its run (no timing)
            if "in the run" in line:
                break
        second = subprocess.run(
            [sys.executable, "-m", "generala_training.cli", "train", "--resume", str(run), "total_timesteps=512"], cwd=ROOT, capture_output=True, text=True
        )
    finally:
        _, err = p.communicate("go\n", timeout=300)
    assert second.returncode == 2 and "Traceback" not in second.stderr, second.stderr
    errors = [line for line in second.stderr.strip().splitlines() if not line.startswith("generala: ")]  # notices say what it waits for
    assert f"{run} is in use by another generala train" in second.stderr and len(errors) == 1, second.stderr
    assert p.returncode == 0, err[-2000:]
    rows = (run / "evaluations.csv").read_text().splitlines()
    steps = [int(r.split(",")[0]) for r in rows[1:]]
    assert rows[0].startswith("step,") and steps == sorted(set(steps))  # one writer: no interleaved or repeated rows
    assert not [p.name for p in run.rglob("*.tmp")]


# -- 3. a full disk during a save -----------------------------------------------------------------
def _full_disk(monkeypatch, after: int = 100):
    """Every SB3 save writes ``after`` bytes, then the disk is full."""
    from sb3_contrib import MaskablePPO

    def save(self, path, *a, **k):
        path.write(b"PK" + b"\0" * after)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(MaskablePPO, "save", save)


def test_a_full_disk_during_a_save_is_one_line_and_leaves_no_temporary_file(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sb3_contrib")
    _full_disk(monkeypatch)
    runs = tmp_path / "runs"
    assert _train(["--config", TINY, f"run_dir={runs}", "--run-name", "full"]) == 2
    line = _one_error_line(capsys.readouterr().err, "train")
    assert "cannot write" in line and "No space left on device" in line and ".zip" in line
    run = runs / "full"
    assert not [p.name for p in run.rglob("*") if ".tmp" in p.name]
    assert not [p.name for p in run.rglob("*.zip")]  # no torn model took a model's name


def test_a_full_disk_during_a_resumes_save_keeps_the_last_model(run, monkeypatch, capsys):
    before = (run / "latest.zip").read_bytes()
    _full_disk(monkeypatch)
    assert _train(["--resume", str(run), "total_timesteps=1024"]) == 2
    assert "No space left on device" in _one_error_line(capsys.readouterr().err, "train")
    assert (run / "latest.zip").read_bytes() == before and not list(run.rglob("*.tmp"))


def test_save_model_refuses_a_link_and_writes_through_a_fresh_temporary(tmp_path):
    from generala_training.train import save_model

    class Model:  # what save_model reads of a model: its zip, and its policy's tensors for the twin
        num_timesteps = 0
        policy = types.SimpleNamespace(state_dict=dict)

        def save(self, f):
            f.write(b"a model")

    victim = tmp_path / "victim"
    victim.write_text("mine")
    (tmp_path / "latest.zip").symlink_to(victim)
    with pytest.raises(ValueError, match="latest.zip is a symbolic link"):
        save_model(Model(), tmp_path / "latest.zip")
    assert victim.read_text() == "mine"
    (tmp_path / ".best_model.zip.tmp").symlink_to(victim)  # an older version's fixed temporary name, planted
    save_model(Model(), tmp_path / "best_model.zip")
    assert (tmp_path / "best_model.zip").read_bytes() == b"a model" and victim.read_text() == "mine"
    (tmp_path / "final_model.safetensors").symlink_to(victim)  # the twin's name is a link: refused as well
    with pytest.raises(ValueError, match="final_model.safetensors is a symbolic link"):
        save_model(Model(), tmp_path / "final_model.zip")
    assert victim.read_text() == "mine" and (tmp_path / "best_model.safetensors").is_file()


# -- 5. forged run files: one line naming the file ------------------------------------------------
@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda r: (r / "state.json").write_text("[" * 100_000 + "]" * 100_000), "state.json is nested too deeply"),
        (lambda r: (r / "state.json").write_text('{"num_timesteps": "many"}'), "state.json: 'num_timesteps' must be a whole number"),
        (lambda r: (r / "state.json").write_text('{"evaluations": [{"step": "x"}]}'), "state.json: 'evaluations' must be a list of mappings"),
        (lambda r: (r / "state.json").write_text('{"best": [1]}'), "state.json: 'best' must be a number"),
        (lambda r: (r / "config.yaml").write_text("total_timesteps: many\n"), "config.yaml: config key 'total_timesteps' must be a whole number"),
        (lambda r: (r / "config.yaml").write_text("env: [1, 2]\n"), "config.yaml: config key 'env' must be a mapping"),
        (lambda r: _insert_row(r, "not,a,row,of,numbers"), r"evaluations.csv, line 2: not a row of numbers"),
        (lambda r: _insert_row(r, "1,2"), r"evaluations.csv, line 2: not a row of numbers \(2 fields for 5 columns\)"),
        (lambda r: (r / "evaluations.csv").write_bytes(b"\xff\xfe\n"), "evaluations.csv is not UTF-8"),
        (lambda r: _replace_with_fifo(r / "state.json"), "state.json is not a regular file"),
        (lambda r: _replace_with_link(r / "latest.zip"), "latest.zip is not a regular file"),
    ],
)
def test_a_forged_run_file_stops_resume_with_one_line_naming_it(run, capsys, damage, message):
    import re

    damage(run)
    before = _tree(run) if not (run / "state.json").is_fifo() else None
    assert _train(["--resume", str(run), "total_timesteps=1024"]) == 2
    line = _one_error_line(capsys.readouterr().err, "train")
    assert re.search(message, line), line
    if before is not None:
        assert _tree(run) == before


def _insert_row(run: Path, row: str) -> None:
    lines = (run / "evaluations.csv").read_text().splitlines()
    (run / "evaluations.csv").write_text("\n".join([lines[0], row, *lines[1:]]) + "\n")


def _replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _replace_with_link(path: Path) -> None:
    hostile = path.with_name("elsewhere.zip")
    path.rename(hostile)
    path.symlink_to(hostile.name)


@pytest.mark.parametrize("name", ["command.txt", "evaluations.csv"])
def test_a_hard_linked_log_stops_resume_with_one_line_and_the_linked_file_untouched(run, tmp_path, capsys, name):
    """The red team's attack: a run's log made a second name of a file elsewhere (``ln``); an
    append would write into it. Refused before anything is written, the first row included."""
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own data\n")
    (run / name).unlink()
    os.link(victim, run / name)
    before = _tree(run)
    assert _train(["--resume", str(run), "total_timesteps=1024"]) == 2
    line = _one_error_line(capsys.readouterr().err, "train")
    assert (
        line
        == f"generala train: error: {run / name} has 2 names (a hard link): nothing is appended to it, as that would write into the other names too; move it"
    )
    assert victim.read_text() == "the user's own data\n" and _tree(run) == before


def test_a_torn_last_evaluation_row_is_skipped_with_a_warning_and_the_run_resumes(run):
    with open(run / "evaluations.csv", "a") as f:
        f.write("768,12.5,10")  # an append cut short: no newline, too few fields
    with pytest.warns(UserWarning, match=r"evaluations.csv, line \d+: a torn last line"):
        assert _train(["--resume", str(run), "total_timesteps=1024"]) == 0
    rows = (run / "evaluations.csv").read_text().splitlines()
    assert all(len(r.split(",")) == len(rows[0].split(",")) for r in rows) and not any(r.startswith("768,12.5,10,") for r in rows)


def test_the_curve_plot_reads_a_torn_row_and_refuses_a_bad_one(run, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from generala_training.plot_curve import main as plot_main

    out = tmp_path / "curve.png"
    with open(run / "evaluations.csv", "a") as f:
        f.write("768,12")
    with pytest.warns(UserWarning, match="a torn last line"):
        assert plot_main([str(run), "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    _insert_row(run, "x,y")
    assert plot_main([str(run), "--out", str(tmp_path / "other.png")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "evaluations.csv, line 2: not a row of numbers" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "other.png").exists()


# -- 6. init_from: an SB3 zip is loaded only with --trust-zip ------------------------------------
def _hostile_zip(path: Path, marker: Path) -> Path:
    """An SB3-shaped zip whose ``data`` unpickles to ``open(marker, "w")``: code that runs on load."""
    import base64
    import pickle
    import zipfile

    class Touch:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    data = {"policy_class": {":type:": "<class 'x'>", ":serialized:": base64.b64encode(pickle.dumps(Touch())).decode()}}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data", json.dumps(data))
    return path


def test_init_from_an_sb3_zip_needs_trust_zip_at_that_call(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    marker = tmp_path / "code-ran"
    hostile = _hostile_zip(tmp_path / "model.zip", marker)
    runs = tmp_path / "runs"
    assert _train(["--config", TINY, f"run_dir={runs}", "--run-name", "x", f"init_from={hostile}"]) == 2
    line = _one_error_line(capsys.readouterr().err, "train")
    assert "config key 'init_from'" in line and "--trust-zip" in line and "checkpoint folder" in line
    assert not marker.exists() and not runs.exists()  # nothing unpickled, nothing written
    # with the flag the user asked for it: the zip is loaded (its code runs: what the flag is for); it is no model, one line
    assert _train(["--config", TINY, f"run_dir={runs}", "--run-name", "x", f"init_from={hostile}", "--trust-zip"]) == 2
    assert marker.exists() and "cannot be loaded" in _one_error_line(capsys.readouterr().err, "train")
    assert not runs.exists()


def test_init_from_a_trusted_zip_or_a_checkpoint_folder_trains(tiny_run, tmp_path, capsys):
    from generala_training.export import main as export_main

    runs = tmp_path / "runs"
    short = ["total_timesteps=256"]
    assert _train(["--config", TINY, f"run_dir={runs}", "--run-name", "z", f"init_from={tiny_run / 'best_model.zip'}", "--trust-zip", *short]) == 0
    # the safe route: a checkpoint folder (weights only) needs no flag
    assert export_main([str(tiny_run), "--name", "ck", "--games", "2", "--dest", str(tmp_path / "cks")]) == 0
    ck = tmp_path / "cks" / "ck"
    assert _train(["--config", TINY, f"run_dir={runs}", "--run-name", "c", f"init_from={ck}", "pretrain.games=0", *short]) == 0
    capsys.readouterr()
    # a checkpoint of another network than the config's policy: one line
    assert _train(["--config", TINY, f"run_dir={runs}", "--run-name", "d", f"init_from={ck}", "policy.net_arch=[16]", *short]) == 2
    assert "holds another network than config key 'policy' makes" in _one_error_line(capsys.readouterr().err, "train")
    assert not (runs / "d").exists()


def test_init_from_a_checkpoint_folder_starts_from_its_weights(tiny_run, tmp_path):
    pytest.importorskip("sb3_contrib")
    import torch
    from safetensors.torch import load_file

    from generala_training.config import load_config
    from generala_training.envs import training_envs
    from generala_training.export import main as export_main
    from generala_training.models import model_from_config

    assert export_main([str(tiny_run), "--name", "ck", "--games", "2", "--dest", str(tmp_path)]) == 0
    cfg = load_config(TINY, [f"init_from={tmp_path / 'ck'}"])
    venv = training_envs(cfg)
    try:
        model = model_from_config(cfg, venv, tmp_path / "tb")
    finally:
        venv.close()
    saved = load_file(str(tmp_path / "ck" / "policy.safetensors"))
    assert all(torch.equal(v, saved[k]) for k, v in model.policy.state_dict().items()) and model.num_timesteps == 0


# -- 5. td-search values: one line naming the file; its folder written like every output ---------
def _td_args(tmp_path: Path, out: Path, games: int) -> list[str]:
    rules = tmp_path / "two.yaml"  # two lines: a few games take no time
    rules.write_text("lines: [sixes, generala]\n")
    return ["--rules", str(rules), "--out", str(out), "--save-every", "10", "--eval-games", "5", "--games", str(games)]


@pytest.mark.parametrize(
    "text, message",
    [
        ("[]", "must hold a mapping .*got a list"),
        ("[" * 100_000 + "]" * 100_000, "is nested too deeply"),
        ('{"format": "td-search-v1", "players": 1, "values": "many"}', "'values' must be a non-empty list of finite numbers"),
        ('{"format": "td-search-v1", "players": "one", "values": [1]}', "'players' must be 1 or 2"),
    ],
)
def test_a_forged_td_search_file_is_one_line_naming_it(tmp_path, capsys, text, message):
    import re

    from generala_training.td_search import main as td_main

    folder = tmp_path / "td"
    folder.mkdir()
    (folder / "td_search.json").write_text(text)
    assert td_main(_td_args(tmp_path, folder, 10)) == 2  # resuming from it
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and re.search(message, err) and "td_search.json" in err, err
    # the same file as an agent: one line from generala evaluate too
    assert cli(_evaluate(tmp_path / "out", agents=str(folder))) == 2
    line = _one_error_line(capsys.readouterr().err, "evaluate")
    assert re.search(message, line) and "td_search.json" in line
    assert (folder / "td_search.json").read_text() == text


def test_a_td_search_file_that_is_a_fifo_is_refused_without_blocking(tmp_path, capsys):
    from generala_training.td_search import main as td_main

    folder = tmp_path / "td"
    folder.mkdir()
    os.mkfifo(folder / "td_search.json")
    assert td_main(_td_args(tmp_path, folder, 10)) == 2
    assert "td_search.json is a named pipe (FIFO)" in capsys.readouterr().err


def test_a_td_search_folder_refuses_a_users_file_and_a_second_run_and_resumes_its_own(tmp_path, capsys):
    from generala_env.files import MANIFEST, lock_folder
    from generala_training.td_search import main as td_main

    out = tmp_path / "td"
    assert td_main(_td_args(tmp_path, out, 10)) == 0
    assert td_main(_td_args(tmp_path, out, 20)) == 0  # its own files: resumed and replaced
    assert json.loads((out / "td_search.json").read_text())["games"] == 20
    capsys.readouterr()
    with lock_folder(out, "the first run"):  # a second run on a folder in use
        before = _tree(out)
        assert td_main(_td_args(tmp_path, out, 30)) == 2
        assert "is in use by another python -m generala_training.td_search" in capsys.readouterr().err and _tree(out) == before
    (out / "curve.csv").write_text("my own curve\n")  # the user's file at an output's name
    assert td_main(_td_args(tmp_path, out, 30)) == 2
    assert "curve.csv was not written by python -m generala_training.td_search here" in capsys.readouterr().err
    assert (out / "curve.csv").read_text() == "my own curve\n" and json.loads((out / "td_search.json").read_text())["games"] == 20
    # a folder written before the record existed: its td_search.json and matching curve.csv are taken over and resumed
    (out / "curve.csv").unlink()
    (out / MANIFEST).unlink()
    assert td_main(_td_args(tmp_path, out, 30)) == 0
    assert json.loads((out / "td_search.json").read_text())["games"] == 30
    victim = tmp_path / "victim.csv"
    victim.write_text("mine")
    (out / "curve.csv").unlink()
    (out / "curve.csv").symlink_to(victim)
    assert td_main(_td_args(tmp_path, out, 40)) == 2
    assert "curve.csv is a symbolic link" in capsys.readouterr().err and victim.read_text() == "mine"


def test_a_teacher_folder_with_a_forged_td_search_file_is_a_config_error(tmp_path, capsys):
    folder = tmp_path / "teacher"
    folder.mkdir()
    (folder / "td_search.json").write_text("[]")
    assert _train(["--config", TINY, f"run_dir={tmp_path / 'runs'}", "--run-name", "x", f"pretrain.teacher={folder}", "pretrain.games=2"]) == 2
    line = _one_error_line(capsys.readouterr().err, "train")
    assert "config key 'pretrain.teacher'" in line and "td_search.json must hold a mapping" in line and "checkpoint" not in line
    assert not (tmp_path / "runs").exists()


# -- 4. the video drawing process killed with videos queued ----------------------------------------
# a drawing process that says it began its first BEGIN jobs and never finishes them (a long video,
# a stuck encoder) until the test kills it; the fresh process started after it is the real one
FAKE_DRAWER = """
import json, os, sys
marker, begin = sys.argv[1], int(sys.argv[2])
if os.path.exists(marker):
    import runpy
    runpy.run_module("generala_env.rendering.video", run_name="__main__")
    raise SystemExit
open(marker, "w").close()
for k, raw in enumerate(sys.stdin):
    if k < begin:
        job = json.loads(raw)
        sys.stdout.buffer.write(b"generala-video-start " + json.dumps({"id": job["id"]}).encode() + b"\\n")
        sys.stdout.flush()
"""


def _drawer(tmp_path: Path, begin: int):
    import sys

    from generala_env.rendering.video import DrawingProcess

    return DrawingProcess(command=[sys.executable, "-c", FAKE_DRAWER, str(tmp_path / "started-once"), str(begin)])


def _kill_drawing_process(drawer, jobs) -> None:
    import signal

    for job in jobs:
        assert job._began.wait(120), "the drawing process never began its job"
    os.kill(drawer._proc.pid, signal.SIGKILL)  # the process this test's drawer started


def test_a_killed_drawing_process_names_the_video_it_was_drawing_and_still_writes_the_rest(tmp_path):
    pytest.importorskip("moviepy")
    from generala_env.envs.env import GeneralaEnv
    from generala_env.rendering.video import VideoError

    env = GeneralaEnv(render_mode="rgb_array")
    env.reset(seed=0)
    drawer = _drawer(tmp_path, begin=1)
    try:
        jobs = [drawer.submit([env.picture(), env.picture()], str(tmp_path / f"v{k}.mp4"), 4, "ultrafast") for k in range(3)]
        _kill_drawing_process(drawer, jobs[:1])
        with pytest.raises(VideoError) as e:
            jobs[0].finish()
        assert "\n" not in str(e.value) and "killed by signal 9" in str(e.value) and str(tmp_path / "v0.mp4") in str(e.value)
        for job in jobs[1:]:  # never begun: a fresh drawing process wrote them
            job.finish()
    finally:
        drawer.close()
    assert sorted(p.name for p in tmp_path.glob("*.mp4")) == ["v1.mp4", "v2.mp4"]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_recorder_reports_each_video_a_killed_drawing_process_lost(tmp_path, monkeypatch):
    pytest.importorskip("moviepy")
    import gymnasium as gym

    import generala_env  # noqa: F401  (registers Generala-v0)
    from generala_env.rendering.video import DrawingProcess, RecordVideo, VideoError

    drawer = _drawer(tmp_path, begin=3)
    monkeypatch.setattr(DrawingProcess, "shared", classmethod(lambda cls: drawer))
    env = gym.make("Generala-v0", rules={"lines": ["ones", "twos", "generala"]}, render_mode="rgb_array")
    folder = tmp_path / "videos"
    rec = RecordVideo(env, str(folder), episode_trigger=lambda e: e <= 3, max_pending=3)
    try:
        rng = np.random.default_rng(0)
        for seed in range(3):
            _play_episode(rec, seed, rng)
        if rec.recording:
            rec.stop_recording()
        jobs = list(rec._pending)
        assert len(jobs) == 3
        _kill_drawing_process(drawer, jobs)
        for job in jobs:
            job._done.wait()
        with pytest.raises(VideoError) as e:
            rec.reset(seed=3)
        message = str(e.value)
        assert "\n" not in message and message.startswith("3 videos were not written")
        for k in range(3):
            assert str(folder / f"rl-video-episode-{k}.mp4") in message
        _play_episode(rec, 3, rng)  # the next video goes to a fresh drawing process, and is written
        rec.close()
    finally:
        drawer.close()
    assert sorted(p.name for p in folder.iterdir()) == ["rl-video-episode-3.mp4"]


def _play_episode(env, seed: int, rng) -> None:
    obs, info = env.reset(seed=seed)
    while True:
        obs, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if term or trunc:
            return


# -- export: never through a link, never over a folder it did not make ------------------------------
def _export(argv: list[str]) -> int:
    pytest.importorskip("sb3_contrib")
    from generala_training.export import main

    return main(argv)


def test_export_refuses_a_dest_that_is_a_link_and_keeps_its_target(tiny_run, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cks").symlink_to(elsewhere)
    assert _export([str(tiny_run), "--name", "ck", "--games", "2", "--dest", str(tmp_path / "cks")]) == 2
    assert "is a symbolic link" in _one_error_line(capsys.readouterr().err, "export")
    assert list(elsewhere.iterdir()) == []
    assert _export([str(tiny_run), "--name", "ck", "--games", "2", "--dest", str(elsewhere)]) == 0  # the real folder: written
    assert sorted(p.name for p in (elsewhere / "ck").iterdir()) == ["metadata.json", "policy.safetensors"]


def test_export_never_moves_its_checkpoint_over_a_folder_that_appeared_meanwhile(tiny_run, tmp_path, monkeypatch, capsys):
    import generala_training.export as ex

    dest = tmp_path / "cks"
    real = ex.check_dest
    calls = []

    def check_then_race(path, force):
        real(path, force)
        calls.append(path)
        if len(calls) == 2:  # the check just before the move: the user makes a folder there right after it
            path.mkdir()
            (path.parent / "marker").write_text("made by the user")

    monkeypatch.setattr(ex, "check_dest", check_then_race)
    assert _export([str(tiny_run), "--name", "ck", "--games", "2", "--dest", str(dest)]) == 2
    assert "exists already: it is not replaced" in _one_error_line(capsys.readouterr().err, "export")
    assert (dest / "ck").is_dir() and list((dest / "ck").iterdir()) == []  # the user's empty folder, kept
    assert sorted(p.name for p in dest.iterdir()) == ["ck", "marker"]  # and no temporary folder left


def test_rename_new_never_replaces_anything(tmp_path):
    from generala_env.files import NameTaken, rename_new

    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_text("new")
    for kind in ("empty folder", "link", "file"):
        dst = tmp_path / kind.replace(" ", "-")
        if kind == "empty folder":
            dst.mkdir()
        elif kind == "link":
            dst.symlink_to(tmp_path / "nowhere")
        else:
            dst.write_text("mine")
        with pytest.raises(NameTaken):
            rename_new(src, dst)
    assert (tmp_path / "file").read_text() == "mine" and (tmp_path / "link").is_symlink() and list((tmp_path / "empty-folder").iterdir()) == []
    rename_new(src, tmp_path / "free")
    assert (tmp_path / "free" / "f").read_text() == "new" and not src.exists()


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda r: (r / "state.json").write_text("[" * 100_000 + "]" * 100_000), "state.json is nested too deeply"),
        (lambda r: (r / "state.json").write_text('{"pretrain": {"seconds": "long"}}'), "state.json: 'pretrain.seconds' must be a number"),
        (lambda r: (r / "state.json").write_text("[]"), "state.json must hold a mapping"),
        (lambda r: _edit_yaml(r, lambda c: c["env"].update(num_players=[1])), "config.yaml: config key 'env.num_players' must be a whole number"),
        (lambda r: _edit_yaml(r, lambda c: c.update(pretrain=[1, 2])), "config.yaml: config key 'pretrain' must be a mapping"),
    ],
)
def test_export_of_a_run_with_a_forged_file_is_one_line_naming_it(run, tmp_path, capsys, damage, message):
    import re

    damage(run)
    assert _export([str(run), "--name", "ck", "--games", "2", "--dest", str(tmp_path / "cks")]) == 2
    assert re.search(message, _one_error_line(capsys.readouterr().err, "export"))
    assert not (tmp_path / "cks" / "ck").exists()


def test_export_unpickles_only_the_runs_own_model_file_never_a_link(run, tmp_path, capsys):
    marker = tmp_path / "ran"
    outside = _hostile_zip(tmp_path / "elsewhere.zip", marker)
    (run / "best_model.zip").unlink()
    (run / "best_model.zip").symlink_to(outside)
    assert _export([str(run), "--name", "ck", "--games", "2", "--dest", str(tmp_path / "cks")]) == 2
    assert "best_model.zip is a symbolic link" in _one_error_line(capsys.readouterr().err, "export")
    assert not marker.exists() and not (tmp_path / "cks" / "ck").exists()


def _edit_yaml(run: Path, change) -> None:
    import yaml

    cfg = yaml.safe_load((run / "config.yaml").read_text())
    change(cfg)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))


def test_export_force_replaces_only_the_checkpoint_it_checked(tiny_run, tmp_path, monkeypatch, capsys):
    import generala_training.export as ex

    dest = tmp_path / "cks"
    argv = [str(tiny_run), "--name", "ck", "--games", "2", "--dest", str(dest), "--force"]
    assert _export(argv) == 0
    assert _export(argv) == 0  # --force replaces a checkpoint export made
    real, calls = ex.check_dest, []

    def check_then_swap(path, force):
        real(path, force)
        calls.append(path)
        if len(calls) == 2:  # right after the last check, the user's folder takes the checkpoint's place
            shutil.rmtree(path)
            path.mkdir()
            (path / "thesis.txt").write_text("mine")

    monkeypatch.setattr(ex, "check_dest", check_then_swap)
    assert _export(argv) == 2
    assert "is not a checkpoint made by export: nothing was replaced" in _one_error_line(capsys.readouterr().err, "export")
    assert (dest / "ck" / "thesis.txt").read_text() == "mine" and sorted(p.name for p in dest.iterdir()) == ["ck"]


def test_a_resume_removes_the_temporary_files_of_saves_a_kill_cut_short_and_nothing_else(run, capsys):
    cut = [run / ".latest.zip.k2j4h6g8.tmp", run / "checkpoints" / ".step_768.zip.a1b2c3d4.tmp", run / "state.json.tmp"]
    for p in cut:
        p.write_bytes(b"PK torn")
    mine = [run / ".latest.zip.notes.tmp", run / "checkpoints" / "my-notes.tmp"]  # not a save's temporary name: kept
    for p in mine:
        p.write_text("mine")
    assert _train(["--resume", str(run), "total_timesteps=1024"]) == 0
    assert "removed the temporary files of saves cut short" in capsys.readouterr().out
    assert not any(p.exists() for p in cut) and all(p.read_text() == "mine" for p in mine)
