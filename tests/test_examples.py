"""Smoke tests of examples/: each script trains for a tiny budget and evaluates a few games.

Each example's ``main(argv)`` returns what it measured; the masked ones must play no
illegal action (an untrained policy without its masks would), every evaluation must finish
its games (an unmasked policy relies on the env's cap on illegal actions in a row), and the
rl-zoo3 run must train with configs/zoo/ppo.yml's hyperparameters.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")  # every example trains with torch (the train extra)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ZOO_CONFIG = ROOT / "configs" / "zoo" / "ppo.yml"

torch.set_num_threads(1)


def load(name: str):
    """examples/<name>.py as a module (examples/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def check_run(result: dict, steps: int, games: int) -> None:
    assert result["timesteps"] >= steps
    assert result["games"] == games
    assert math.isfinite(result["mean_score"])


def test_sb3_maskable_ppo():
    pytest.importorskip("sb3_contrib")
    result = load("sb3_maskable_ppo").main(["--timesteps", "64", "--n-envs", "4", "--n-steps", "16", "--eval-games", "3"])
    check_run(result, 64, 3)
    assert result["illegal_actions"] == 0
    assert result["mean_score"] >= 0  # no penalties: the return is the sheet's total


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_sb3_unmasked(algo):
    pytest.importorskip("stable_baselines3")
    result = load("sb3_dqn_ppo").main(["--algo", algo, "--timesteps", "64", "--n-envs", "2", "--n-steps", "32", "--eval-games", "2"])
    check_run(result, 64, 2)
    assert 0.0 <= result["illegal_share"] <= 1.0
    assert result["illegal_actions"] >= 0


@pytest.mark.parametrize("mode", ["vector_entry_point", "sync"])
def test_cleanrl_masked_ppo(mode):
    argv = ["--total-timesteps", "256", "--num-envs", "4", "--num-steps", "64", "--eval-games", "6", "--vectorization-mode", mode, "--score-points", "0"]
    result = load("cleanrl_masked_ppo").main(argv)
    check_run(result, 256, 6)
    assert result["illegal_actions"] == 0
    assert result["training_games"] >= 4 * 64 // 39  # a classic game lasts at most 39 steps
    assert result["mean_score"] >= 0


def test_cleanrl_scores_itself_and_joins_the_leaderboard(tmp_path):
    """Two seeds at a tiny budget, scored on the suite along the way, written as submissions and
    ranked with the shipped 1M-step classic leaderboard by ``generala benchmark report``."""
    pytest.importorskip("rliable")
    import json

    from generala_training.benchmark import score_policy
    from generala_training.benchmark.leaderboard import report_main

    subs = tmp_path / "subs"
    argv = ["--total-timesteps", "512", "--num-envs", "4", "--num-steps", "64", "--eval-games", "2", "--seeds", "2"]
    result = load("cleanrl_masked_ppo").main([*argv, "--score-points", "2", "--budget", "1000000", "--submissions", str(subs)])
    runs = result["runs"]
    assert [r["seed"] for r in runs] == [0, 1]
    for r in runs:
        assert [p[0] for p in r["curve"]] == [0, 256, 512]
        assert r["normalized_score"] == score_policy(r["act_batch"], task="classic")["normalized_score"]  # the returned agent is the scored one
        sub = json.loads(Path(r["submission"]).read_text())
        assert sub["final"]["normalized_score"] == r["normalized_score"] and sub["budget"] == 1_000_000
    out = tmp_path / "board"
    assert report_main(["--runs", str(ROOT / "docs" / "benchmarks" / "classic_1m"), str(subs), "--out", str(out), "--reps", "50"]) == 0
    merged = json.loads((out / "results.json").read_text())
    assert "cleanrl-masked-ppo" in merged["algos"] and "ppo_mask" in merged["algos"]
    assert len([r for r in merged["runs"] if r["algo"] == "cleanrl-masked-ppo"]) == 2


def test_cleanrl_rejects_a_bad_mode():
    with pytest.raises(SystemExit):
        load("cleanrl_masked_ppo").parse_args(["--vectorization-mode", "threads"])


def test_torchrl_masked_ppo():
    pytest.importorskip("torchrl")
    result = load("torchrl_masked_ppo").main(["--frames", "128", "--n-envs", "2", "--n-steps", "64", "--eval-games", "3"])
    check_run(result, 128, 3)
    assert result["illegal_actions"] == 0
    assert result["mean_score"] >= 0


def test_rllib_masked_ppo():
    # ray[rllib] 2.60.0 pins gymnasium 1.2.2, so the test extra leaves it out (examples/rllib_masked_ppo.py)
    pytest.importorskip("ray.rllib", reason="ray[rllib] is not installed (it pins gymnasium==1.2.2; see docs/examples.md)")
    result = load("rllib_masked_ppo").main(["--timesteps", "128", "--n-envs", "2", "--n-steps", "64", "--eval-games", "2"])
    check_run(result, 128, 2)
    assert result["illegal_actions"] == 0


def test_pettingzoo_selfplay():
    pytest.importorskip("pettingzoo")
    result = load("pettingzoo_selfplay").main(["--steps", "200", "--rollout", "200", "--eval-games", "4"])
    assert result["timesteps"] >= 200 and result["games"] >= 2
    assert result["eval_games"] == 4
    assert result["illegal_actions"] == 0
    assert 0.0 <= result["score_vs_greedy"] <= 1.0


def test_rl_zoo3_trains_with_our_hyperparameters(tmp_path):
    pytest.importorskip("rl_zoo3")
    cmd = [
        sys.executable,
        "-m",
        "rl_zoo3.train",
        "--algo",
        "ppo",
        "--env",
        "Generala-v0",
        "--gym-packages",
        "generala_env",
        "--conf-file",
        str(ZOO_CONFIG),
        "-n",
        "64",
        "-f",
        str(tmp_path),
        "--seed",
        "0",
        "--eval-freq",
        "-1",
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / "ppo" / "Generala-v0_1"
    assert (run / "Generala-v0.zip").is_file()
    assert (run / "Generala-v0" / "vecnormalize.pkl").is_file()
    # the run's saved hyperparameters are the config's (the zoo stores them as pairs)
    used = dict(yaml.load((run / "Generala-v0" / "config.yml").read_text(), Loader=yaml.UnsafeLoader))
    ours = yaml.safe_load(ZOO_CONFIG.read_text())["Generala-v0"]
    for key in ("gamma", "gae_lambda", "n_steps", "batch_size", "n_epochs", "learning_rate", "n_envs", "policy_kwargs"):
        assert used[key] == ours[key], key
