"""The Optuna study: trials train through generala train's loop, report, prune, and resume from SQLite."""

from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")

from generala_training.tune import SPACE, main  # noqa: E402

TINY = str(Path(__file__).resolve().parent.parent / "configs" / "ppo_tiny.yaml")


def test_a_study_runs_trials_and_resumes_from_its_sqlite_file(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    args = ["--config", TINY, "--steps", "512", "--eval-games", "4", "--storage", storage, "--run-dir", str(tmp_path / "runs"), "--study", "s"]
    assert main(args + ["--trials", "2"]) == 0
    assert main(args + ["--trials", "1"]) == 0  # the same study, from the file
    study = optuna.load_study(study_name="s", storage=storage)
    assert len(study.trials) == 3
    finished = [t for t in study.trials if t.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)]
    assert finished and all(set(t.params) == set(SPACE) for t in finished)
    for t in finished:  # four evaluations a trial, each a share of the optimal score
        assert t.intermediate_values and all(0 <= v < 1.2 for v in t.intermediate_values.values())
        assert (tmp_path / "runs" / "s" / f"trial_{t.number:04d}" / "evaluations.csv").is_file()
    assert "| trial | state |" in capsys.readouterr().out
