"""Fixtures shared by test modules (helpers to import live in tests/helpers.py)."""

from pathlib import Path

import pytest

TINY = str(Path(__file__).resolve().parent.parent / "configs" / "ppo_tiny.yaml")


@pytest.fixture(scope="session", autouse=True)
def sb3_logs_in_the_session_folder(tmp_path_factory):
    """The loggers SB3 makes for the tests' own ``learn()`` calls (an empty ``SB3-<date>``
    folder each, by default in the system's temporary folder) go to one folder of the session."""
    import os

    os.environ.setdefault("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))


@pytest.fixture(scope="session", autouse=True)
def engine_compiled_first():
    """The game engine's compiled calls, compiled (or read from the cache) once, before the first
    test: a cold compile is paid here, said once, not by whichever test happens to come first,
    and every test process started later finds the cache full."""
    import time

    import numpy as np

    from generala_env.envs.env import GeneralaEnv
    from generala_env.envs.vector import GeneralaVectorEnv

    t0 = time.perf_counter()
    for env in (GeneralaEnv(num_players=2, opponents="greedy"), GeneralaVectorEnv(2, num_players=2, opponents="greedy")):
        env.reset(seed=0)
        env.step(np.zeros(env.num_envs, dtype=np.int64) if hasattr(env, "num_envs") else 0)
    seconds = time.perf_counter() - t0
    if seconds > 5:
        print(f"\n(the game engine compiled in {seconds:.0f} s before the first test)")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A run of the tiny training config (seconds), made once per test module that asks for it."""
    pytest.importorskip("sb3_contrib")  # training needs the train extra (MaskablePPO on SB3 and torch)
    from generala_training.train import main as train_main

    runs = tmp_path_factory.mktemp("runs")
    assert train_main(["--config", TINY, f"run_dir={runs}", "--run-name", "tiny"]) == 0
    return runs / "tiny"
