"""The suite's table of three (classic_3p_vs_greedy_margin, suite version 3): the task as written,
its score (the share of the points: a win shared by k players counts 1/k, every seat played on
the same dice), its training reward at three players, and which results of version 2 still rank."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("stable_baselines3")

import generala_agents as agents  # noqa: E402
from generala_env.core.game import outcome_points  # noqa: E402
from generala_env.core.info import win_reward  # noqa: E402
from generala_training.algos import AlgoConfig  # noqa: E402
from generala_training.benchmark import BenchmarkError  # noqa: E402
from generala_training.benchmark.report import task_measure  # noqa: E402
from generala_training.benchmark.run import make_venv, task_evaluator  # noqa: E402
from generala_training.benchmark.suite import Task, load_suite  # noqa: E402
from generala_training.harness import game_seed, play_game  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TASK = "classic_3p_vs_greedy_margin"
# three `random` players on the dice of game_seed(717, 1) all end on 12 points: a three-way tie
TIE_SEED = 717


def trio(opponents: str = "random") -> Task:
    return Task("trio", {"rules": "classic", "num_players": 3, "opponents": opponents, "reward": "score"}, 0.02, -10, 100)


def test_the_task_is_three_players_against_two_greedy_since_version_3():
    suite = load_suite()
    assert suite.version == 3
    task = suite.tasks[TASK]
    assert task.since == 3 and task.num_players == 3 and task.fair_share == pytest.approx(1 / 3)
    assert task.env == {"rules": "classic", "num_players": 3, "opponents": "greedy", "reward": "score", "agent_seat": "random"}
    assert task.training_reward == "margin" and task.reward_scale == 0.02 and task.illegal_penalty == -10
    assert "fair share 1/3" in task.summary
    assert suite.tasks["classic_vs_greedy_margin"].fair_share == 0.5 and suite.tasks["classic"].fair_share is None


def test_the_tasks_of_versions_1_and_2_are_as_their_results_recorded_them():
    suite = load_suite()
    for folder, version in (("classic_1m", 1), ("more_tasks", 1), ("vs_greedy_margin_1m", 2)):
        results = json.loads((ROOT / "docs" / "benchmarks" / folder / "results.json").read_text())
        assert results["suite"]["version"] == version
        for name, definition in results["task_definitions"].items():
            assert suite.tasks[name].to_dict() == definition, name
            assert suite.tasks[name].since <= version
    assert {name for name, t in suite.tasks.items() if t.since == 3} == {TASK}


def test_a_win_shared_by_k_players_counts_1_over_k():
    assert outcome_points((1,), 1) == 1.0 and outcome_points((1,), 0) == 0.0
    assert outcome_points((0, 2), 2) == 0.5 and outcome_points((0, 2), 1) == 0.0
    assert outcome_points((0, 1, 2), 1) == pytest.approx(1 / 3)
    assert outcome_points((0, 1, 2, 3), 3) == 0.25
    assert win_reward((0, 1, 2), 0) == pytest.approx(-1 / 3) and win_reward((0, 2), 2) == 0.0 and win_reward((1,), 0) == -1.0


def test_an_agent_against_copies_of_itself_takes_exactly_the_fair_share_through_a_three_way_tie():
    rec = play_game([agents.load("random", rules="classic") for _ in range(3)], "classic", game_seed(TIE_SEED, 1))
    assert rec.winners == (0, 1, 2) and len(set(rec.totals)) == 1, "the seed no longer deals a three-way tie: pick another"
    seen = []

    def figures(evaluator, played):
        seen.append(played.points)
        return {"share": float(np.mean(played.points))}

    # each seat of game 1 plays the same game (each seat reseeded as its opponent would be): 1/3 each, not 1/2
    result = task_evaluator(trio(), seed=TIE_SEED, games=2, figures=figures).play_agent(agents.load("random", rules="classic"))
    assert list(seen[0][3:]) == pytest.approx([1 / 3] * 3)
    assert result["share"] == pytest.approx(1 / 3)  # the three seats of a game share its one point


def test_every_seat_is_played_on_the_same_dice_as_the_harness_plays_it():
    def first_legal(obs, masks):
        return masks.argmax(axis=1)

    class FirstLegal:
        name = "first-legal"

        def act(self, obs, info):
            return int(np.argmax(info["action_mask"]))

    played = task_evaluator(trio("greedy"), seed=3, games=4)(first_legal)
    greedy, points, totals = agents.load("greedy", rules="classic"), [], []
    for i in range(4):
        for seat in range(3):
            lineup = [greedy, greedy, greedy]
            lineup[seat] = FirstLegal()
            rec = play_game(lineup, "classic", game_seed(3, i))
            points.append(outcome_points(rec.winners, seat))
            totals.append(rec.totals[seat])
    assert played["normalized_score"] == pytest.approx(np.mean(points)) and played["mean_total"] == pytest.approx(np.mean(totals))
    assert len(set(totals)) > 3  # the seats' games differ: each seat its own dice


def test_greedy_takes_the_fair_share_against_two_greedy_and_the_optimum_more():
    from generala_training.benchmark import score_policy

    greedy = score_policy("greedy", task=TASK, games=12)
    assert greedy["normalized_score"] == pytest.approx(1 / 3) and greedy["fair_share"] == pytest.approx(1 / 3)
    assert score_policy("optimal", task=TASK, games=60)["normalized_score"] > 0.4
    assert "fair_share" not in score_policy("greedy", task="classic", games=2)


def test_a_games_margin_rewards_sum_to_the_margin_over_the_better_opponent():
    task = load_suite().tasks[TASK]
    venv = make_venv(task, AlgoConfig("ppo_mask", 4, {}, {}), seed=5)
    venv.reset()
    rng = np.random.default_rng(5)
    summed, ended = np.zeros(venv.num_envs), []
    while len(ended) < 12:
        masks = np.stack(venv.env_method("action_masks"))
        _, reward, done, infos = venv.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
        summed += reward
        for i in np.flatnonzero(done):
            totals, seat = np.asarray(infos[i]["totals"]), infos[i]["seat"]
            ended.append((float(summed[i]), float(totals[seat] - np.delete(totals, seat).max()), seat))
            summed[i] = 0.0
    venv.close()
    assert {seat for _, _, seat in ended} == {0, 1, 2}
    for got, margin, _ in ended:
        assert got == pytest.approx(margin * task.reward_scale, abs=1e-4)


def test_version_2_results_of_an_unchanged_task_still_rank_and_none_of_the_new_task_do():
    from generala_training.benchmark import submission

    suite = load_suite()
    assert suite.incomparable(suite.name, 2, "classic_vs_greedy_margin") is None
    assert suite.incomparable(suite.name, 1, "classic") is None
    assert "as written since version 3" in suite.incomparable(suite.name, 2, TASK)
    assert "not comparable" in suite.incomparable(suite.name, 4, TASK)
    results = json.loads((ROOT / "docs" / "benchmarks" / "vs_greedy_margin_1m" / "results.json").read_text())
    assert results["suite"]["version"] == 2
    assert len(submission.from_results(results, "vs_greedy_margin_1m", suite)) == len(results["runs"])
    results["runs"][0]["task"] = TASK
    with pytest.raises(BenchmarkError, match="as written since version 3"):
        submission.from_results(results, "vs_greedy_margin_1m", suite)


def test_a_run_folder_of_suite_version_2_is_refused(tmp_path):
    from generala_env.files import write_json
    from generala_training.benchmark import plan

    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "ppo_mask.yaml").write_text((ROOT / "configs" / "benchmark" / "ppo_mask.yaml").read_text())
    (configs / "tasks.yaml").write_text((ROOT / "configs" / "benchmark" / "tasks.yaml").read_text())
    out = tmp_path / "out"
    (spec,) = plan(["ppo_mask"], ["classic_vs_greedy_margin"], 1, 1000, out, configs)
    Path(spec.folder).mkdir(parents=True)
    write_json(Path(spec.folder) / "spec.json", {**spec.identity(), "suite_version": 2})
    with pytest.raises(BenchmarkError, match="made under suite version 2; this is version 3"):
        plan(["ppo_mask"], ["classic_vs_greedy_margin"], 1, 1000, out, configs)


def test_opponents_are_one_agent_name(tmp_path):
    data = yaml.safe_load((ROOT / "configs" / "benchmark" / "tasks.yaml").read_text())
    data["tasks"][TASK]["env"]["opponents"] = ["greedy", "rules-of-thumb"]
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(BenchmarkError, match="env.opponents must be one agent name"):
        load_suite(tmp_path)


def test_a_tables_heading_says_what_its_score_measures():
    assert task_measure(1, 149.1117) == "optimum 149.11"
    assert task_measure(2, None) == "win rate"
    assert task_measure(3, None) == "share of the points; fair share 1/3 = 33.3%"


def test_a_tiny_grid_on_a_table_of_three_trains_scores_and_states_the_fair_share(tmp_path):
    pytest.importorskip("sb3_contrib")
    pytest.importorskip("rliable")
    from generala_training.benchmark import main, score_policy

    configs = tmp_path / "configs"
    configs.mkdir()
    task = {"env": {**load_suite().tasks[TASK].env}, "training_reward": "margin", "reward_scale": 0.02, "illegal_penalty": -10, "max_illegal_in_a_row": 100}
    suite = {"name": "tiny-suite", "version": 1, "evaluation": {"seed": 7, "games": 3, "final_games": 4, "points": 1}, "tasks": {"trio": task}}
    (configs / "tasks.yaml").write_text(yaml.safe_dump(suite))
    (configs / "ppo_mask.yaml").write_text(
        yaml.safe_dump({"n_envs": 4, "policy_kwargs": {"net_arch": [16]}, "hyperparams": {"n_steps": 32, "batch_size": 64, "n_epochs": 1}})
    )
    out = tmp_path / "grid"
    args = ["--algos", "ppo_mask", "--tasks", "trio", "--seeds", "1", "--steps", "128", "--workers", "1", "--reps", "20", "--out", str(out), "--configs", str(configs)]  # fmt: skip
    assert main(args) == 0
    res = json.loads((out / "results.json").read_text())
    (run,) = res["runs"]
    assert res["num_players"] == {"trio": 3} and 0.0 <= run["normalized_score"] <= 1.0
    assert "## trio (share of the points; fair share 1/3 = 33.3%)" in (out / "results.md").read_text()
    again = score_policy(str(out / run["folder"] / "final_model.zip"), task="trio", config_dir=configs, trust_zip=True)
    assert again["normalized_score"] == run["normalized_score"] and again["fair_share"] == pytest.approx(1 / 3)
