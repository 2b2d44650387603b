"""A training run cut short goes on: during pretraining, and after a kill between its saves (issue 19, items 2 and 6)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")

from helpers import TINY_CONFIG

import generala_training.pretrain  # noqa: E402
from generala_training.train import main as train_main  # noqa: E402

TINY = ["--config", TINY_CONFIG, "pretrain.games=6", "pretrain.epochs=1", "eval.games=4"]


def _steps(path: Path) -> int:
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read("data"))["num_timesteps"]


def test_an_interrupt_during_pretraining_gives_one_line_and_the_run_starts_again(tmp_path, monkeypatch, capsys):
    real = generala_training.pretrain.behaviour_clone
    cut = {"left": 2}

    def clone(model, cfg, rules=None, log=print):
        if cut["left"]:
            cut["left"] -= 1
            raise KeyboardInterrupt  # what SIGINT (or SIGTERM, turned into it) raises mid-clone
        return real(model, cfg, rules, log)

    monkeypatch.setattr(generala_training.pretrain, "behaviour_clone", clone)
    args = [*TINY, f"run_dir={tmp_path}", "--run-name", "pt1"]
    run = tmp_path / "pt1"
    with pytest.raises(SystemExit) as e:
        train_main(args)
    assert e.value.code == 130
    out = capsys.readouterr().out
    assert "interrupted during behaviour cloning" in out and "Traceback" not in out
    assert not (run / "latest.zip").exists() and not (run / "state.json").exists()
    (run / "notes.txt").write_text("mine")  # a file no run writes: the folder is no longer restarted
    assert train_main(args) == 2 and "already exists" in capsys.readouterr().err
    assert (run / "notes.txt").read_text() == "mine"
    (run / "notes.txt").unlink()
    with pytest.raises(SystemExit):  # the same command, cut again
        train_main(args)
    assert "starting it again" in capsys.readouterr().out
    assert train_main(["--resume", str(run)]) == 0  # --resume starts it again from its config.yaml
    assert "starting it again" in capsys.readouterr().out
    state = json.loads((run / "state.json").read_text())
    assert state["pretrain"]["games"] == 6 and state["num_timesteps"] == _steps(run / "latest.zip") == 512


def test_resume_after_a_kill_between_saves_agrees_with_best_model_and_repeats_no_step(tmp_path, capsys):
    args = [
        "--config",
        TINY_CONFIG,
        f"run_dir={tmp_path}",
        "--run-name",
        "r",
        "total_timesteps=768",
        "eval.games=4",
        "eval.every=128",
        "checkpoint_every=384",
    ]
    assert train_main(args) == 0
    run = tmp_path / "r"
    state = json.loads((run / "state.json").read_text())
    best = state["best"]
    assert state["best_step"] == _steps(run / "best_model.zip")
    # a kill -9 after the step-768 evaluation and best_model.zip, before state.json and latest.zip caught up:
    # roll latest.zip and state.json back to step 384 (as the checkpoint there left them)
    shutil.copyfile(run / "checkpoints" / "step_384.zip", run / "latest.zip")
    old = dict(state, num_timesteps=384, evaluations=[e for e in state["evaluations"] if e["step"] <= 384])
    key = "mean_score"
    top = max(old["evaluations"], key=lambda e: e[key])
    old.update(best=top[key], best_step=top["step"])
    (run / "state.json").write_text(json.dumps(old))
    (run / "final_model.zip").unlink()
    assert train_main(["--resume", str(run), "total_timesteps=896"]) == 0
    state = json.loads((run / "state.json").read_text())
    steps = [int(float(line.split(",")[0])) for line in (run / "evaluations.csv").read_text().splitlines()[1:]]
    assert steps == sorted(set(steps)), steps  # the steps trained again after 384 are not listed twice
    assert state["best_step"] == _steps(run / "best_model.zip")
    assert state["best"] >= best  # best_model.zip's result, newer than the rolled-back state.json, is kept unless beaten


def test_a_torn_self_play_checkpoint_stops_resume_with_one_line(tmp_path, capsys):
    args = [
        "--config",
        TINY_CONFIG,
        f"run_dir={tmp_path}",
        "--run-name",
        "sp",
        "total_timesteps=256",
        "env.num_players=2",
        "env.opponents=self-play",
        "env.reward=win",
        "eval.games=2",
        "eval.opponent=random",
        "checkpoint_every=128",
    ]
    assert train_main(args) == 0
    run = tmp_path / "sp"
    for f in (run / "checkpoints").glob("step_*.safetensors"):  # what the pool plays
        f.write_bytes(f.read_bytes()[:300])  # what a kill -9 during a non-atomic save left
    capsys.readouterr()
    assert train_main(["--resume", str(run), "total_timesteps=512"]) == 2
    err = capsys.readouterr().err
    assert "cannot be loaded" in err and "delete it" in err and "Traceback" not in err
