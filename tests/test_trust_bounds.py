"""Every size a config may ask to allocate has a bound (generala_training.algos' ``MAX_...``),
checked when the config is read, before anything is built: a huge value is one line naming the
key, its value and the bound, and the bound itself is accepted. Parse only: nothing trains.

``policy.net_arch=[100000000]`` was once accepted, and the kernel's OOM killer stopped the
process at 20 GB."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from generala_training.algos import (
    MAX_ACTIVATIONS,
    MAX_BUFFER,
    MAX_EPOCHS,
    MAX_EVAL_GAMES,
    MAX_LAYER_WIDTH,
    MAX_LAYERS,
    MAX_N_ENVS,
    MAX_ROLLOUT,
    MAX_SUBPROC_ENVS,
    MAX_TEACHER_GAMES,
    MAX_THREADS,
    AlgoConfig,
)
from generala_training.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "ppo_tiny.yaml")
JAX = str(ROOT / "configs" / "jax_ppo_classic.yaml")


def test_the_bounds_are_the_documented_ones():
    """The figures docs/training.md states (and the comments in generala_training.algos justify)."""
    assert (MAX_LAYER_WIDTH, MAX_LAYERS, MAX_N_ENVS, MAX_SUBPROC_ENVS) == (4096, 8, 65_536, 128)
    assert (MAX_ROLLOUT, MAX_BUFFER, MAX_ACTIVATIONS) == (4_194_304, 4_194_304, 2**30)
    assert (MAX_EPOCHS, MAX_EVAL_GAMES, MAX_TEACHER_GAMES, MAX_THREADS) == (1000, 50_000, 100_000, 1024)
    doc = (ROOT / "docs" / "training.md").read_text()
    for figure in ("4,096", "65,536", "4,194,304", "1,000", "50,000", "100,000", "1,024", "128"):
        assert figure in doc


def refused(overrides: list[str], message: str, config: str = TINY) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(config, overrides)
    text = str(e.value)
    assert "\n" not in text and len(text) < 400, text
    assert re.search(message, text), text


# (overrides too large, the line that refuses them, overrides at the bound)
TRAIN_BOUNDS = {
    "net_arch width": (
        ["policy.net_arch=[100000000]"],
        r"config key 'policy.net_arch' must be .*each a whole number from 1 to 4,096 \(the bound of a layer's width\), got \[100000000\]",
        ["policy.net_arch=[4096, 4096]", "algo.batch_size=1024"],
    ),
    "net_arch depth": (
        ["policy.net_arch=[8, 8, 8, 8, 8, 8, 8, 8, 8]"],
        r"'policy.net_arch' must be a non-empty list of at most 8 layer sizes \(the bound of a net's depth\).*got 9 layers",
        ["policy.net_arch=[8, 8, 8, 8, 8, 8, 8, 8]"],
    ),
    "vf_arch width": (["policy.vf_arch=[4097]"], r"'policy.vf_arch' must be .*from 1 to 4,096 .*got \[4097\]", ["policy.vf_arch=[4096]"]),
    "keep_width": (
        ["policy.keep_width=100000000"],
        r"'policy.keep_width' must be from 1 to 4,096 \(the bound of a layer's width\), got 100000000",
        ["policy.keep_width=4096"],
    ),
    "n_envs": (
        ["vec_env.n_envs=100000000"],
        r"'vec_env.n_envs' must be from 1 to 65,536 \(the bound of games stepped together\), got 100000000",
        ["vec_env.n_envs=65536", "algo.n_steps=64"],
    ),
    "subproc n_envs": (
        ["vec_env.kind=subproc", "vec_env.n_envs=129"],
        r"'vec_env.n_envs' must be from 1 to 128 with vec_env.kind: subproc \(the bound of its processes, one a game\), got 129",
        ["vec_env.kind=subproc", "vec_env.n_envs=128"],
    ),
    "n_steps": (
        ["algo.n_steps=100000000"],
        r"'algo.n_steps' must be from 1 to 4,194,304 \(the bound of a rollout's samples\), got 100000000",
        ["algo.n_steps=4194304", "vec_env.n_envs=1"],
    ),
    "rollout": (
        ["algo.n_steps=4096", "vec_env.n_envs=4096"],
        r"config keys 'algo.n_steps' x 'vec_env.n_envs' = 16,777,216 samples per rollout, more than the bound of 4,194,304",
        ["algo.n_steps=1024", "vec_env.n_envs=4096"],
    ),
    "batch_size": (
        ["algo.batch_size=100000000"],
        r"'algo.batch_size' must be from 2 .* to 4,194,304 \(the bound of a minibatch's samples\), got 100000000",
        ["algo.batch_size=4194304", "policy.net_arch=[64, 64]"],
    ),
    "activations": (
        ["algo.batch_size=65536", "policy.net_arch=[4096, 4096, 4096]"],
        r"config keys 'algo.batch_size' x the units of 'policy.net_arch' and 'policy.vf_arch' = 1,610,612,736 values .* more than the bound of 1,073,741,824",
        ["algo.batch_size=65536", "policy.net_arch=[4096, 4096]"],  # 65,536 x 16,384 units = 2**30 exactly
    ),
    "n_epochs": (["algo.n_epochs=100000000"], r"'algo.n_epochs' must be from 1 to 1,000 .*got 100000000", ["algo.n_epochs=1000"]),
    "eval games": (
        ["eval.games=100000000"],
        r"'eval.games' must be from 1 to 50,000 \(the bound of an evaluation's games\), got 100000000",
        ["eval.games=50000"],
    ),
    "teacher games": (
        ["pretrain.games=100000000"],
        r"'pretrain.games' must be from 0 to 100,000 \(the bound of the teacher's games\), got 100000000",
        ["pretrain.games=100000"],
    ),
    "teacher epochs": (["pretrain.epochs=100000000"], r"'pretrain.epochs' must be from 1 to 1,000", ["pretrain.epochs=1000"]),
    "threads": (["threads=100000000"], r"'threads' must be from 1 to 1,024 \(the bound of torch's threads\), got 100000000", ["threads=1024"]),
}


@pytest.mark.parametrize("group", TRAIN_BOUNDS)
def test_a_train_config_past_a_bound_is_one_line_and_the_bound_is_accepted(group):
    huge, message, edge = TRAIN_BOUNDS[group]
    refused(huge, message)
    load_config(TINY, edge)


def test_the_jax_trainer_takes_65536_games_and_refuses_more():
    """A JAX config is a training config (backend: jax): the same bounds, read by the same reader."""
    cfg = load_config(JAX, ["vec_env.n_envs=65536", "algo.n_steps=64"])  # 2**22 samples: the rollout bound itself
    assert cfg.backend == "jax" and cfg.vec_env.n_envs * cfg.algo.n_steps == MAX_ROLLOUT
    refused(["vec_env.n_envs=65537"], r"'vec_env.n_envs' must be from 1 to 65,536", JAX)
    refused(["policy.net_arch=[100000000]"], r"'policy.net_arch' must be .*from 1 to 4,096", JAX)
    refused(["vec_env.n_envs=65536", "algo.n_steps=65"], r"= 4,259,840 samples per rollout, more than the bound of 4,194,304", JAX)


def test_a_jax_hyper_made_in_python_is_held_to_the_same_bounds():
    if importlib.util.find_spec("jax") is None or importlib.util.find_spec("pgx") is None:
        pytest.skip("needs the jax extra")
    from generala_training.jax_ppo import Hyper

    Hyper(num_envs=65536, num_steps=64, minibatch_size=16384, epochs=1000, net_arch=(4096,) * 2, vf_arch=(4096,) * 2)  # every bound at once
    for kwargs, message in (
        ({"num_envs": 100_000_000}, r"Hyper.num_envs must be a whole number from 1 to 65,536 .*got 100000000"),
        ({"net_arch": (100_000_000,)}, r"Hyper.net_arch must be .*from 1 to 4,096"),
        ({"vf_arch": (64,) * 9}, r"Hyper.vf_arch must be a non-empty list of at most 8 layer sizes"),
        ({"num_steps": 100_000_000}, r"Hyper.num_steps must be a whole number from 1 to 4,194,304"),
        ({"num_envs": 65536, "num_steps": 128}, r"Hyper.num_steps x Hyper.num_envs = 8,388,608 samples per rollout, more than the bound of 4,194,304"),
        ({"minibatch_size": 4_194_304}, r"Hyper.minibatch_size x the units of net_arch and vf_arch = 4,294,967,296 values"),
        ({"epochs": 1001}, r"Hyper.epochs must be a whole number from 1 to 1,000"),
    ):
        with pytest.raises(ValueError, match=message):
            Hyper(**kwargs)


# -- the benchmark's algorithm files and task suite -----------------------------------------------
def algo(data: dict, name: str = "ppo_mask") -> AlgoConfig:
    pytest.importorskip("sb3_contrib")  # an algorithm file's hyperparameters are checked against its constructor
    return AlgoConfig.from_mapping(name, data, f"{name}.yaml", ValueError)


BENCHMARK_BOUNDS = {
    "n_envs": (
        "ppo_mask",
        {"n_envs": 100_000_000},
        r"ppo_mask.yaml: n_envs must be a whole number from 1 to 65,536 .*got 100000000",
        {"n_envs": 65536, "hyperparams": {"n_steps": 64}},
    ),
    "net_arch": (
        "ppo_mask",
        {"n_envs": 4, "policy_kwargs": {"net_arch": [100_000_000]}},
        r"policy_kwargs.net_arch must be .*from 1 to 4,096 .*got \[100000000\]",
        {"n_envs": 4, "policy_kwargs": {"net_arch": [4096] * 8}, "hyperparams": {"batch_size": 8192}},
    ),
    "n_steps": (
        "ppo_mask",
        {"n_envs": 4, "hyperparams": {"n_steps": 100_000_000}},
        r"hyperparams.n_steps must be from 1 to 4,194,304",
        {"n_envs": 1, "hyperparams": {"n_steps": 4_194_304}},
    ),
    "rollout": (
        "ppo_mask",
        {"n_envs": 65536, "hyperparams": {"n_steps": 128}},
        r"hyperparams.n_steps x n_envs = 8,388,608 samples per rollout, more than the bound of 4,194,304",
        {"n_envs": 65536, "hyperparams": {"n_steps": 64}},
    ),
    "batch_size": (
        "ppo",
        {"n_envs": 4, "hyperparams": {"batch_size": 100_000_000}},
        r"hyperparams.batch_size must be from 2 .* to 4,194,304",
        {"n_envs": 4, "hyperparams": {"batch_size": 4_194_304}, "policy_kwargs": {"net_arch": [64, 64]}},
    ),
    "activations": (
        "a2c",
        {"n_envs": 65536, "hyperparams": {"n_steps": 64}, "policy_kwargs": {"net_arch": [4096]}},
        r"hyperparams.n_steps x n_envs x the units of policy_kwargs.net_arch \(twice: two nets\) = 34,359,738,368 values",
        {"n_envs": 65536, "hyperparams": {"n_steps": 64}, "policy_kwargs": {"net_arch": [64, 64]}},
    ),
    "buffer_size": (
        "dqn",
        {"n_envs": 4, "hyperparams": {"buffer_size": 100_000_000}},
        r"hyperparams.buffer_size must be from 1 to 4,194,304 \(the bound of a replay buffer's transitions\), got 100000000",
        {"n_envs": 4, "hyperparams": {"buffer_size": 4_194_304}},
    ),
    "n_epochs": (
        "ppo",
        {"n_envs": 4, "hyperparams": {"n_epochs": 100_000_000}},
        r"hyperparams.n_epochs must be from 1 to 1,000",
        {"n_envs": 4, "hyperparams": {"n_epochs": 1000}},
    ),
    "n_quantiles": (
        "qrdqn",
        {"n_envs": 4, "policy_kwargs": {"n_quantiles": 100_000_000}},
        r"policy_kwargs.n_quantiles must be a whole number from 1 to 4,096 \(the bound of a layer's width\), got 100000000",
        {"n_envs": 4, "policy_kwargs": {"n_quantiles": 4096}},
    ),
}


@pytest.mark.parametrize("group", BENCHMARK_BOUNDS)
def test_a_benchmark_algorithm_file_past_a_bound_is_one_line_and_the_bound_is_accepted(group):
    name, huge, message, edge = BENCHMARK_BOUNDS[group]
    with pytest.raises(ValueError, match=message) as e:
        algo(huge, name)
    assert "\n" not in str(e.value)
    algo(edge, name)


@pytest.mark.parametrize(
    "key, huge, bound, message",
    [
        ("games", 100_000_000, 50_000, r"evaluation.games must be a whole number from 1 to 50,000 \(the bound of an evaluation's games\), got 100000000"),
        ("final_games", 100_000_000, 50_000, r"evaluation.final_games must be a whole number from 1 to 50,000"),
        ("points", 100_000_000, 1000, r"evaluation.points must be a whole number from 1 to 1,000 \(the bound of a run's evaluations\)"),
    ],
)
def test_a_task_suite_past_a_bound_is_one_line_and_the_bound_is_accepted(tmp_path, key, huge, bound, message):
    from generala_training.benchmark.suite import BenchmarkError, load_suite

    text = (ROOT / "configs" / "benchmark" / "tasks.yaml").read_text()
    old = re.search(rf"^  {key}: \d+", text, re.M)
    assert old is not None
    (tmp_path / "tasks.yaml").write_text(text.replace(old.group(0), f"  {key}: {huge}"))
    with pytest.raises(BenchmarkError, match=message):
        load_suite(tmp_path)
    (tmp_path / "tasks.yaml").write_text(text.replace(old.group(0), f"  {key}: {bound}"))
    assert getattr(load_suite(tmp_path).evaluation, key) == bound


# -- through the CLI: the reported case --------------------------------------------------------------
@pytest.mark.parametrize("program, config, extra", [("train", TINY, ("torch", "sb3_contrib")), ("jax-train", JAX, ("jax", "pgx", "flax", "optax"))])
def test_a_network_of_a_hundred_million_units_is_refused_in_one_line(tmp_path, program, config, extra):
    if any(importlib.util.find_spec(m) is None for m in extra):
        pytest.skip("needs its extra")
    done = subprocess.run(
        [sys.executable, "-m", "generala_training.cli", program, "--config", config, "policy.net_arch=[100000000]", f"run_dir={tmp_path / 'runs'}"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"generala {program}: error: config key 'policy.net_arch' must be" in errors[0] and "4,096" in errors[0] and "[100000000]" in errors[0]
    assert not (tmp_path / "runs").exists()
