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


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A run of the tiny training config (seconds), made once per test module that asks for it."""
    pytest.importorskip("sb3_contrib")  # training needs the train extra (MaskablePPO on SB3 and torch)
    from generala_training.train import main as train_main

    runs = tmp_path_factory.mktemp("runs")
    assert train_main(["--config", TINY, f"run_dir={runs}", "--run-name", "tiny"]) == 0
    return runs / "tiny"
