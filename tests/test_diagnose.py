"""The solver-judged diagnosis: perfect play has no regret; other play's regrets add up to its gap."""

import math

import pytest

from generala_agents.base import AgentError
from generala_training.diagnose import diagnose, main


def test_the_optimal_player_has_no_regret_and_always_the_best_action():
    d = diagnose("optimal", "classic", games=20, seed=3)
    assert d["regret_per_game"] == 0.0
    assert d["hold"]["optimal_share"] == 1.0 and d["write"]["optimal_share"] == 1.0
    assert d["mean_score"] == d["optimal_mean_same_dice"]


def test_regrets_add_up_to_the_gap_to_the_optimal_expected_score():
    games = 300
    d = diagnose("greedy", "classic", games=games, seed=0)
    gap = d["optimal_expected"] - d["mean_score"]
    assert d["regret_per_game"] > 10  # greedy is far from perfect
    assert math.isclose(d["regret_per_game"], d["hold"]["regret_per_game"] + d["write"]["regret_per_game"])
    assert math.isclose(sum(d["regret_by_turn"]["hold"]) + sum(d["regret_by_turn"]["write"]), d["regret_per_game"])
    # performance-difference lemma: E[sum of regrets] = V*(start) - E[score]; scores vary by about 30 points
    assert abs(d["regret_per_game"] - gap) < 4 * 32 / games**0.5


def test_a_policy_checkpoint_reports_its_entropy(capsys):
    assert main(["ppo-classic", "--games", "5"]) == 0
    out = capsys.readouterr().out
    assert "| holds |" in out and "| writes |" in out and "–" not in out.split("| holds |")[1].split("\n")[0]


def test_a_run_is_diagnosed_checkpoint_by_checkpoint_with_its_training_scalars(tmp_path):
    pytest.importorskip("sb3_contrib")  # it trains (the train extra)
    pytest.importorskip("tensorboard")  # the training scalars are read from its event files
    from pathlib import Path

    from generala_training.diagnose import curve_markdown, over_training
    from generala_training.train import main as train_main

    tiny = str(Path(__file__).resolve().parent.parent / "configs" / "ppo_tiny.yaml")
    assert train_main(["--config", tiny, f"run_dir={tmp_path}", "--run-name", "r"]) == 0
    with pytest.raises(AgentError, match="--trust-zip"):  # a run's step_N.zip files are pickles: asked for at each use
        over_training(tmp_path / "r", games=3)
    rows = over_training(tmp_path / "r", games=3, trust_zip=True)
    assert [r["step"] for r in rows] == sorted(r["step"] for r in rows) and len(rows) >= 2
    assert all(0 <= r["hold_optimal"] <= 1 and r["hold_entropy"] > 0 for r in rows)
    assert rows[-1]["explained_variance"] is not None and rows[-1]["value_loss"] >= 0
    assert curve_markdown(rows).count("\n") == len(rows) + 2


def test_learning_curves_are_drawn_against_steps_and_wall_clock(tmp_path):
    pytest.importorskip("matplotlib")
    from generala_training.plot_curve import main as plot_main
    from generala_training.plot_curve import read

    for name, share in (("a", [0.5, 0.7]), ("b", [0.6, 0.9])):
        run = tmp_path / name
        run.mkdir()
        rows = "\n".join(f"{s},{t},{100 * x},{x},0.5" for s, t, x in zip((500, 1000), (60.0, 120.0), share, strict=True))
        (run / "evaluations.csv").write_text("step,wall_seconds,mean_score,share_of_optimal,win_rate\n" + rows + "\n")
    assert read(tmp_path / "b")["share_of_optimal"] == [0.6, 0.9]
    out = tmp_path / "curve.png"
    assert plot_main([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out), "--reference", "94.7:turn-optimal"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
