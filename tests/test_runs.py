"""What train and benchmark share (training.runs): the evaluation plays the harness's games, a
state.json that cannot be used is one line of the caller's error, and the model builder."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from generala_training import runs  # noqa: E402
from generala_training.config import ConfigError, load_config  # noqa: E402
from generala_training.envs import training_envs  # noqa: E402
from generala_training.harness import game_seed, play_game, play_lockstep, play_many  # noqa: E402

TINY = str(Path(__file__).resolve().parent.parent / "configs" / "ppo_tiny.yaml")


def _policy(cfg, tmp_path):
    import generala_training.train as tt

    venv = training_envs(cfg)
    try:
        return tt.model_from_config(cfg, venv, tmp_path / "tb").policy
    finally:
        venv.close()


def test_a_runs_evaluation_alone_is_the_harness_games_against_the_opponents_own(tmp_path):
    import generala_training.train as tt
    from generala_agents.policy_net import masked_argmax_actions
    from generala_agents.solver import load_or_solve
    from generala_env.core.rules import load_rules

    cfg = load_config(TINY, ["eval.games=12"])
    policy = _policy(cfg, tmp_path)
    res = tt.evaluate_policy(runs.make_evaluator(cfg), policy)
    seeds = [game_seed(runs.EVAL_SEED_BASE, i) for i in range(12)]
    mine = np.array([r.totals[0] for r in play_lockstep(lambda o, m: masked_argmax_actions(policy, o, m), "classic", seeds)], dtype=float)
    greedy = np.array([r.totals[0] for r in play_many([("greedy",)] * 12, seeds, "classic", workers=1, progress=False)], dtype=float)
    optimum = load_or_solve(load_rules("classic"))[0].expected_score
    assert res == {"mean_score": mine.mean(), "share_of_optimal": mine.mean() / optimum, "win_rate": np.mean((mine > greedy) + 0.5 * (mine == greedy))}


def test_a_runs_evaluation_with_opponents_is_the_harness_games_from_every_seat(tmp_path):
    import generala_agents as agents
    import generala_training.train as tt
    from generala_env.core.game import outcome_points

    cfg = load_config(TINY, ["env.num_players=2", "env.opponents=greedy", "eval.games=6"])
    policy = _policy(cfg, tmp_path)
    res = tt.evaluate_policy(runs.make_evaluator(cfg), policy)
    greedy, points, totals = agents.load("greedy", rules="classic"), [], []
    for i in range(3):  # half the games, each from both seats
        for seat in (0, 1):
            lineup = [greedy, greedy]
            lineup[seat] = tt._PolicyAgent(policy)
            rec = play_game(lineup, "classic", game_seed(runs.EVAL_SEED_BASE, i))
            points.append(outcome_points(rec.winners, seat))
            totals.append(rec.totals[seat])
    assert res["mean_score"] == np.mean(totals) and res["win_rate"] == np.mean(points)


def test_an_unknown_evaluation_opponent_is_a_config_error():

    with pytest.raises(ConfigError, match="config key 'eval.opponent'"):
        runs.make_evaluator(load_config(TINY, ["eval.opponent=nobody"]))


@pytest.mark.parametrize(
    "text, message",
    [
        ("null", "must hold a mapping .*got null"),
        ('{"steps": 2', "is not valid JSON .*remove the run folder"),
        ('{"steps": "two"}', "'steps' must be a whole number"),
        ('{"done": 1}', "'done' must be true or false"),
    ],
)
def test_a_benchmark_state_that_cannot_be_used_is_one_line(tmp_path, text, message):
    from generala_training.benchmark.run import run_state
    from generala_training.benchmark.suite import BenchmarkError

    assert run_state(tmp_path) is None  # no state yet: a new run
    (tmp_path / "state.json").write_text(text)
    with pytest.raises(BenchmarkError, match=message) as e:
        run_state(tmp_path)
    assert "\n" not in str(e.value)


def test_state_round_trip_and_the_activation_by_name(tmp_path):
    import torch
    from sb3_contrib import MaskablePPO

    from generala_env.files import write_json
    from generala_training.algos import build_model
    from generala_training.runs import read_state

    state = {"steps": 3, "checkpoint": None, "done": False, "evaluations": [{"step": 0}], "train_seconds": 1.5}
    write_json(tmp_path / "state.json", state)
    assert read_state(tmp_path / "state.json", ValueError, "") == state and not (tmp_path / "state.json.tmp").exists()
    venv = training_envs(load_config(TINY))
    try:
        model = build_model(MaskablePPO, venv, "MlpPolicy", {"net_arch": [8], "activation_fn": "tanh"}, seed=1, device="cpu", n_steps=16, batch_size=16)
    finally:
        venv.close()
    assert model.policy.activation_fn is torch.nn.Tanh and model.policy.net_arch == [8] and model.seed == 1 and model.verbose == 0
