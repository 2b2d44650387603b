"""The suite's score-margin training reward (classic_vs_greedy_margin, suite version 2): a game's
training rewards sum to its final margin times reward_scale, the same seed gives the same
rewards, the task's checks, and which results of another suite version stay comparable."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from generala_training.algos import AlgoConfig  # noqa: E402
from generala_training.benchmark import BenchmarkError  # noqa: E402
from generala_training.benchmark.run import make_venv  # noqa: E402
from generala_training.benchmark.suite import Task, load_suite  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CFG = AlgoConfig("ppo_mask", 8, {}, {})


def margin_task(**change) -> Task:
    task = load_suite().tasks["classic_vs_greedy_margin"]
    return Task(**{**task.__dict__, **change})


def play(task: Task, seed: int, games: int, illegal_every: int = 0):
    """Play ``games`` finished games of ``task``'s training env with random legal actions (and an
    illegal one every ``illegal_every`` steps); every reward, and each ended game's summed reward,
    final totals, seat and winner."""
    venv = make_venv(task, CFG, seed=seed)
    venv.reset()
    rng = np.random.default_rng(seed)
    summed = np.zeros(venv.num_envs)
    rewards, ended, step = [], [], 0
    while len(ended) < games:
        masks = np.stack(venv.env_method("action_masks"))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        step += 1
        if illegal_every and step % illegal_every == 0:  # in every game that has an illegal action now
            for i in np.flatnonzero((~masks).any(axis=1)):
                actions[i] = int(np.flatnonzero(~masks[i])[0])
        _, reward, done, infos = venv.step(actions)
        rewards.append(reward.copy())
        summed += reward
        for i in np.flatnonzero(done):
            ended.append((float(summed[i]), np.asarray(infos[i]["totals"]), infos[i]["seat"], infos[i]["winner"], infos[i]["TimeLimit.truncated"]))
            summed[i] = 0.0
    venv.close()
    return np.array(rewards), ended


def final_margin(totals, seat) -> float:
    return float(totals[seat] - max(t for k, t in enumerate(totals) if k != seat))


def test_a_games_training_rewards_sum_to_its_final_margin_times_the_scale():
    task = margin_task()
    assert task.training_reward == "margin" and task.env["reward"] == "score" and task.reward_scale == 0.02
    _, ended = play(task, seed=5, games=40)
    assert {seat for _, _, seat, _, _ in ended} == {0, 1}  # both seats are played
    margins = [final_margin(totals, seat) for _, totals, seat, _, _ in ended]
    assert len(set(margins)) > 10  # random play against greedy: lost, by many different margins
    for (summed, _, _, _, _), m in zip(ended, margins, strict=True):
        assert summed == pytest.approx(m * task.reward_scale, abs=1e-4)


def test_an_illegal_action_costs_the_penalty_and_writes_nothing():
    task = margin_task()
    _, ended = play(task, seed=6, games=12, illegal_every=3)
    for summed, totals, seat, _, truncated in ended:
        assert not truncated
        residue = summed / task.reward_scale - final_margin(totals, seat)  # the penalties of the game's illegal actions
        assert residue == pytest.approx(round(residue / task.illegal_penalty) * task.illegal_penalty, abs=1e-2)
    assert all(summed / task.reward_scale - final_margin(totals, seat) < -1 for summed, totals, seat, _, _ in ended)


def test_the_win_bonus_is_added_at_the_end_of_a_finished_game():
    task = margin_task(win_bonus=25.0)
    _, ended = play(task, seed=7, games=30)
    for summed, totals, seat, winner, _ in ended:
        outcome = 1.0 if winner == seat else (0.0 if winner < 0 else -1.0)
        assert summed == pytest.approx((final_margin(totals, seat) + 25.0 * outcome) * task.reward_scale, abs=1e-4)


def test_the_same_seed_gives_the_same_rewards_and_another_seed_others():
    task = margin_task()
    a, _ = play(task, seed=11, games=10)
    b, _ = play(task, seed=11, games=10)
    c, _ = play(task, seed=12, games=10)
    assert a.shape == b.shape and np.array_equal(a, b)
    assert a.shape != c.shape or not np.array_equal(a, c)


def test_the_margin_task_is_the_win_task_scored_the_same_way():
    suite = load_suite()
    assert suite.version >= 2
    margin, win = suite.tasks["classic_vs_greedy_margin"], suite.tasks["classic_vs_greedy"]
    assert margin.since == 2 and all(suite.tasks[name].since == 1 for name in ("classic", "double", "sixty", "classic_locked_holds", "classic_vs_greedy"))
    assert {k: v for k, v in margin.env.items() if k != "reward"} == {k: v for k, v in win.env.items() if k != "reward"}
    assert win.training_reward == "env" and "training_reward" not in win.to_dict()  # version 1's definition, unchanged


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"env": {"rules": "classic"}}, "needs opponents"),
        ({"env": {"rules": "classic", "num_players": 2, "opponents": "greedy", "reward": "win"}}, "reward must be score"),
        ({"training_reward": "points"}, "training_reward must be one of env, margin"),
        ({"training_reward": "env", "win_bonus": 5}, "win_bonus"),
        ({"win_bonus": "big"}, "win_bonus"),
        ({"since": 99}, "since 99 is past the suite's version"),
    ],
)
def test_a_bad_training_reward_is_refused(tmp_path, change, words):
    import yaml

    data = yaml.safe_load((ROOT / "configs" / "benchmark" / "tasks.yaml").read_text())
    data["tasks"]["classic_vs_greedy_margin"].update(change)
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(BenchmarkError, match=words):
        load_suite(tmp_path)


def test_results_of_an_unchanged_task_stay_comparable_and_others_are_refused():
    from generala_training.benchmark import submission

    suite = load_suite()
    assert suite.incomparable(suite.name, 1, "classic") is None  # classic is as written since version 1
    assert suite.incomparable(suite.name, 2, "classic_vs_greedy_margin") is None
    assert "not comparable" in suite.incomparable(suite.name, 1, "classic_vs_greedy_margin")
    assert "not comparable" in suite.incomparable(suite.name, suite.version + 1, "classic")
    assert "not comparable" in suite.incomparable("other-suite", 2, "classic")
    results = json.loads((ROOT / "docs" / "benchmarks" / "classic_1m" / "results.json").read_text())
    assert results["suite"]["version"] == 1
    assert len(submission.from_results(results, "classic_1m", suite)) == len(results["runs"])
    results["runs"][0]["task"] = "classic_vs_greedy_margin"
    with pytest.raises(BenchmarkError, match="as written since version 2"):
        submission.from_results(results, "classic_1m", suite)


def test_a_run_folder_of_suite_version_1_is_refused(tmp_path):
    import yaml

    from generala_env.files import write_json
    from generala_training.benchmark import plan

    configs = tmp_path / "configs"
    configs.mkdir()
    data = yaml.safe_load((ROOT / "configs" / "benchmark" / "tasks.yaml").read_text())
    (configs / "ppo_mask.yaml").write_text((ROOT / "configs" / "benchmark" / "ppo_mask.yaml").read_text())
    (configs / "tasks.yaml").write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    (spec,) = plan(["ppo_mask"], ["classic"], 1, 1000, out, configs)
    old = {**spec.identity(), "suite_version": 1}
    Path(spec.folder).mkdir(parents=True)
    write_json(Path(spec.folder) / "spec.json", old)
    with pytest.raises(BenchmarkError, match=f"made under suite version 1; this is version {load_suite().version}"):
        plan(["ppo_mask"], ["classic"], 1, 1000, out, configs)
