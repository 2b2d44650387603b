"""Evaluation and tournament programs: shared dice, determinism across workers, outputs, errors."""

import json

import numpy as np
import pytest

from generala_training.cli import main as cli
from generala_training.harness import SharedDice, game_seed, play_many
from generala_training.stats import wilson


class Recorder:
    """Plays like another agent and notes the dice at each turn's first roll."""

    def __init__(self, inner):
        self.inner, self.first_rolls, self.name = inner, [], "recorder"

    def reset(self, seed=None):
        self.inner.reset(seed)

    def act(self, obs, info):
        if info["rolls_left"] == 2:
            self.first_rolls.append([int(d) for d in info["dice"]])
        return self.inner.act(obs, info)


def test_shared_dice_give_every_agent_the_same_first_rolls():
    import generala_agents as agents
    from generala_training.harness import play_game

    for seed in (1, 2, 3):
        a, b = Recorder(agents.load("greedy")), Recorder(agents.load("random", seed=0))
        play_game([a], "classic", seed)
        play_game([b], "classic", seed)
        table = SharedDice(seed, 1, 10).table
        expected = [sorted(int(x) for x in table[0, t, 0]) for t in range(10)]
        assert a.first_rolls == b.first_rolls == expected


def test_same_seed_same_results_on_one_or_several_workers():
    lineups = [("optimal", "random"), ("random", "optimal")] * 15
    seeds = [game_seed(3, i // 2) for i in range(30)]
    one = play_many(lineups, seeds, "classic", workers=1, progress=False)
    two = play_many(lineups, seeds, "classic", workers=2, progress=False)
    for x, y in zip(one, two, strict=True):
        assert np.array_equal(x.sheets, y.sheets) and x.winners == y.winners


def test_wilson_interval_known_values():
    p, lo, hi = wilson(50, 100)
    assert p == 0.5 and lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    p, lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)


def test_evaluate_writes_tables_json_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")  # the plot (the eval extra)
    out = tmp_path / "ev"
    assert cli(["evaluate", "--agents", "greedy,random", "--games", "40", "--seed", "1", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "greedy" in text and "random" in text and "95% CI" in text
    res = json.loads((out / "results.json").read_text())
    assert [r["agent"] for r in res["agents"]] == ["greedy", "random"]
    assert res["agents"][0]["mean"] > res["agents"][1]["mean"]
    assert set(res["agents"][0]["crossed_out"]) == set(res["rules_settings"]["lines"])
    assert (out / "results.md").read_text().startswith("# Evaluation")
    assert (out / "scores.png").read_bytes()[:4] == b"\x89PNG"
    # same seed, same numbers
    assert (
        cli(["evaluate", "--agents", "greedy,random", "--games", "40", "--seed", "1", "--out", str(tmp_path / "ev2"), "--no-progress", "--workers", "1"]) == 0
    )
    again = json.loads((tmp_path / "ev2" / "results.json").read_text())
    assert [r["mean"] for r in again["agents"]] == [r["mean"] for r in res["agents"]]


def test_tournament_swaps_seats_on_the_same_dice(tmp_path, capsys):
    pytest.importorskip("matplotlib")  # the plot (the eval extra)
    out = tmp_path / "t"
    assert cli(["tournament", "--agents", "optimal,random", "--games", "15", "--out", str(out), "--no-progress"]) == 0
    res = json.loads((out / "results.json").read_text())
    m = res["matchups"][0]
    assert m["games"] == 30 and m["wins"] + m["draws"] + m["losses"] == 30
    assert m["win_rate"][0] > 0.8 and m["win_rate"][1] <= m["win_rate"][0] <= m["win_rate"][2]
    assert (out / "winrates.png").read_bytes()[:4] == b"\x89PNG"


def test_a_tournament_table_keeps_a_long_spec_in_its_own_column(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    spec = tmp_path / "a_rather_long_agent_file_name.py"
    spec.write_text("from generala_agents.baselines import GreedyAgent as make\n")
    assert cli(["tournament", "--agents", f"{spec}:make,random", "--games", "3", "--out", str(tmp_path / "t"), "--no-progress", "--workers", "1"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(str(spec)))
    assert row.split()[:2] == [f"{spec}:make", "random"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["evaluate", "--agents", "greedy,nobody", "--games", "5"], "unknown agent 'nobody'"),
        (["evaluate", "--games", "0"], "argument --games: must be at least 1"),
        (["evaluate", "--rules", "nope", "--games", "5"], "unknown rule set 'nope'"),
        (["tournament", "--agents", "greedy", "--games", "5"], "at least two agents"),
        (["tournament", "--agents", "greedy,random", "--players", "3", "--games", "5"], "list exactly 3 agents"),
        (["tournament", "--agents", "greedy,random", "--games", "0"], "argument --games: must be at least 1"),
    ],
)
def test_bad_input_is_a_clear_error_before_any_game(argv, message, capsys):
    if not message.startswith("argument "):  # past argparse, evaluate and tournament check the eval extra first
        pytest.importorskip("matplotlib")  # the plot
        pytest.importorskip("tqdm")  # the progress bar (no --no-progress here)
    try:
        status = cli(argv)
    except SystemExit as e:  # argparse's own checks exit with 2
        status = e.code
    assert status == 2
    assert message in capsys.readouterr().err
