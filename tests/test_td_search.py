"""td-search: expectimax over the turn with values learned by TD from its own games."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from helpers import TINY_CONFIG

import generala_agents as agents
from generala_agents.base import AgentError
from generala_agents.solver import Solver
from generala_agents.td_search import OnePlayerLearner, TwoPlayerLearner, TwoPlayerValue, optimistic_values, read_checkpoint
from generala_env.core.dice import ROLL_COUNTS
from generala_env.core.game import OPEN
from generala_env.core.rules import load_rules
from generala_training.td_search import main as train_main


def test_td_learning_from_its_own_games_finds_the_optimum_of_a_small_sheet(tmp_path):
    path = tmp_path / "three.yaml"
    path.write_text("lines: [fives, sixes, full_house]\n")
    learner = OnePlayerLearner(str(path))
    assert learner.V[0] > Solver(str(path)).solve().expected_score + 10  # it starts optimistic, from the rules alone
    rng = np.random.default_rng(0)
    for _ in range(300):
        learner.play_game(rng)
    exact = Solver(str(path)).solve()
    assert abs(learner.V[0] - exact.expected_score) < 1e-9  # what its own games taught it is the optimum


def test_the_shipped_agents_load_play_and_say_how_they_learned():
    for name, players in (("td-search", 1), ("td-search-2p", 2)):
        meta = read_checkpoint(name)
        assert meta["solver_in_training"] == [] and meta["players"] == players and meta["games"] > 0
        agent = agents.load(name, rules="classic")
        env = gym.make("Generala-v0", num_players=players, **({"opponents": "greedy"} if players == 2 else {}))
        obs, info = env.reset(seed=1)
        done = False
        while not done:
            a = agent.act(obs, info)
            assert info["action_mask"][a]
            obs, _, term, trunc, info = env.step(a)
            done = term or trunc
    with pytest.raises(AgentError, match="learned its values under rules 'classic'"):
        agents.load("td-search", rules="double")


def test_the_shipped_one_player_table_is_the_optimum_where_its_games_went():
    V = np.array(read_checkpoint("td-search")["values"])
    exact = Solver("classic").solve()
    assert abs(V[0] - exact.expected_score) < 1e-6
    assert (V >= exact.V - 1e-9).all()  # never below the truth: unvisited sheets keep their optimistic start
    assert not np.array_equal(V, optimistic_values(exact.rules))


def test_two_player_self_play_moves_the_win_model():
    V1 = read_checkpoint("td-search")["values"]
    learner = TwoPlayerLearner("classic", V1, lr=0.05)
    a0, b0 = learner.value.a.copy(), learner.value.b.copy()
    rng = np.random.default_rng(0)
    winners = [learner.play_game(rng) for _ in range(5)]
    assert set(winners) <= {-1, 0, 1}
    assert not np.array_equal(learner.value.a, a0) and not np.array_equal(learner.value.b, b0)
    assert learner.value.c.any()  # the spread of open lines is learned too


def test_the_last_write_of_the_game_is_valued_by_its_result():
    V1 = read_checkpoint("td-search")["values"]
    value = TwoPlayerValue(load_rules("classic"), V1)
    me = np.array([3, 6, 9, 12, 15, 18, 20, 30, 0, OPEN])  # seat 1's last line: generala; 113 points so far
    opp = np.array([3, 6, 9, 12, 15, 18, 20, 30, 40, 0])  # seat 0 has finished: 153
    W, k = value.write_values(me, opp, 113 - 153, last_seat=True)
    assert k == 0
    generala = W[9][:, 0]
    five = ROLL_COUNTS.max(axis=1) == 5
    assert (generala[five] == 1.0).all() and (generala[~five] == 0.0).all()  # 50 wins (163 > 153), nothing else does
    assert np.isneginf(W[:9]).all()  # filled lines cannot be written


def test_training_saves_as_it_goes_and_resumes(tmp_path, capsys):
    rules = tmp_path / "two.yaml"
    rules.write_text("lines: [sixes, generala]\n")
    out = tmp_path / "run"
    args = ["--rules", str(rules), "--out", str(out), "--save-every", "10", "--eval-games", "5"]
    assert train_main([*args, "--games", "20"]) == 0
    first = json.loads((out / "td_search.json").read_text())
    assert first["games"] == 20 and [r["games"] for r in first["curve"]] == [10, 20] and first["solver_in_training"] == []
    assert train_main([*args, "--games", "30"]) == 0
    again = json.loads((out / "td_search.json").read_text())
    assert again["games"] == 30 and [r["games"] for r in again["curve"]] == [10, 20, 30]
    assert len(again["recipes"]) == 2 and again["recipes"][1].endswith("--games 30")
    assert "resuming" in capsys.readouterr().out
    assert train_main(["--rules", "classic", "--out", str(out), "--games", "1"]) == 2  # another rule set's folder: refused
    assert "was trained for other rules or players" in capsys.readouterr().err


def test_cloning_a_learned_teacher_brings_in_no_solver():
    from generala_training.config import LEARNED_TEACHERS, EnvConfig
    from generala_training.export_metadata import solver_ingredients
    from generala_training.pretrain import _generate

    for teacher in LEARNED_TEACHERS:  # each says it learned from its own games
        assert read_checkpoint(teacher)["solver_in_training"] == []
        assert solver_ingredients({"pretrain": {"games": 10, "teacher": teacher}}) == []
    assert solver_ingredients({"pretrain": {"games": 10, "teacher": "optimal"}}) != []
    # a teacher's own record decides; one that cannot be read counts against the run
    assert solver_ingredients({"pretrain": {"games": 10, "teacher": "/no/such/folder"}})[0].endswith("a teacher whose training cannot be read)")
    record = {"teacher_solver_in_training": ["opponent 'optimal'"]}
    assert solver_ingredients({"pretrain": {"games": 10, "teacher": "td-search"}}, record) == [
        "pretrain.games = 10 (behaviour cloning from 'td-search', which learned from: opponent 'optimal')"
    ]
    env_cfg = EnvConfig(rules="classic", num_players=2, reward="win", reward_scale=0.5, agent_seat="random", opponents=["self-play", "greedy"])
    obs, masks, acts, vals = _generate((env_cfg, load_rules("classic"), 3, [0, 1, 2], 0.0, "td-search-2p"))
    assert len(acts) == len(vals) >= 3 * 10 and obs.shape == (len(acts), 76)
    assert masks[np.arange(len(acts)), acts].all()
    # the value targets are the games' results (win 1, draw 0, loss -1, times the scale), one per game
    assert set(np.round(vals, 6)) <= {-0.5, 0.0, 0.5}


def test_a_folder_of_td_search_values_is_an_agent_and_a_teacher(tmp_path):
    from generala_training.config import ConfigError, load_config
    from generala_training.export_metadata import solver_ingredients
    from generala_training.pretrain import teacher_record

    assert train_main(["--players", "1", "--rules", "classic", "--out", str(tmp_path / "td"), "--games", "20", "--eval-games", "5", "--save-every", "10"]) == 0
    agent = agents.load(str(tmp_path / "td"), rules="classic")
    assert type(agent).__name__ == "TDSearchAgent" and agent.metadata["games"] == 20
    cfg = load_config(TINY_CONFIG, [f"pretrain.teacher={tmp_path / 'td'}", "pretrain.games=2"])
    assert cfg.pretrain.teacher == str(tmp_path / "td")
    record = teacher_record(str(tmp_path / "td"))
    assert record["teacher_solver_in_training"] == [] and record["teacher_games"] == 20
    assert solver_ingredients({"pretrain": {"games": 2, "teacher": str(tmp_path / "td")}}, record) == []
    with pytest.raises(ConfigError, match="or a folder of td-search values"):
        load_config(TINY_CONFIG, [f"pretrain.teacher={tmp_path}"])
    with pytest.raises(ConfigError, match="td-search teaches one-player games"):
        load_config(TINY_CONFIG, [f"pretrain.teacher={tmp_path / 'td'}", "env.num_players=2", "env.reward=win"])


def test_a_two_player_run_carries_what_its_one_player_table_learned_from(tmp_path):
    from generala_training.export_metadata import budget_seconds
    from generala_training.pretrain import teacher_record

    rules = tmp_path / "two.yaml"
    rules.write_text("lines: [sixes, generala]\n")
    one, two = tmp_path / "one", tmp_path / "two"
    common = ["--rules", str(rules), "--save-every", "10", "--eval-games", "5", "--games", "10"]
    assert train_main(["--players", "1", "--out", str(one), *common]) == 0
    assert train_main(["--players", "2", "--values", str(one / "td_search.json"), "--out", str(two), *common]) == 0
    data = json.loads((two / "td_search.json").read_text())
    assert data["built_on"]["games"] == 10 and data["built_on"]["solver_in_training"] == [] and data["solver_in_training"] == []
    record = teacher_record(str(two))
    assert record["teacher_built_on"]["train_seconds"] == data["built_on"]["train_seconds"]
    budget = budget_seconds({"train_seconds": 100.0}, {"seconds": 20.0, **record})
    assert budget["total"] == round(100.0 + 20.0 + record["teacher_train_seconds"] + data["built_on"]["train_seconds"], 1)
    # a table that says a solver went into it passes that on
    tainted = json.loads((one / "td_search.json").read_text())
    tainted["solver_in_training"] = ["values of the exact solver"]
    (tmp_path / "tainted.json").write_text(json.dumps(tainted))
    assert train_main(["--players", "2", "--values", str(tmp_path / "tainted.json"), "--out", str(tmp_path / "three"), *common]) == 0
    assert json.loads((tmp_path / "three" / "td_search.json").read_text())["solver_in_training"] == ["values of the exact solver"]


def test_values_are_checked_by_the_rules_they_recorded_as_this_code_reads_them(tmp_path):
    """A rule setting added to the code changes every rule set's fingerprint: values whose
    recorded settings are still the rules asked for play on (as a PPO checkpoint does), and
    values of other rules are refused."""
    import shutil

    from generala_agents.ppo import SHIPPED

    folder = tmp_path / "td"
    shutil.copytree(SHIPPED / "td-search", folder)
    data = json.loads((folder / "td_search.json").read_text())
    data["rules_fingerprint"] = "0000000000000000"  # as a file written before a new setting reads
    (folder / "td_search.json").write_text(json.dumps(data))
    agent = agents.load(str(folder), rules="classic")
    env = gym.make("Generala-v0", rules="classic")
    obs, info = env.reset(seed=0)
    assert info["action_mask"][agent.act(obs, info)]
    data["rules"] = load_rules("double").settings()
    (folder / "td_search.json").write_text(json.dumps(data))
    with pytest.raises(AgentError, match="cannot play 'classic'"):
        agents.load(str(folder), rules="classic")
