"""Generala as the OpenSpiel game python_generala: OpenSpiel's own checks, its MCTS, and
an exact value over OpenSpiel's game tree against the one-player solver."""

from __future__ import annotations

import math

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

import generala_env.adapters.openspiel  # noqa: E402,F401  (registers python_generala)
from generala_agents.solver import Solver  # noqa: E402
from generala_env.core.dice import ROLLS  # noqa: E402
from generala_env.core.encoding import observation_size  # noqa: E402
from generala_env.core.rules import load_rules  # noqa: E402
from generala_env.planning.model import Model  # noqa: E402


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"players": 2, "reward": "win"},
        {"players": 3, "rules": "double"},
        {"players": 2, "rules": "sixty", "reward": "total"},
        {"players": 6, "reward": "win"},
    ],
)
def test_openspiels_random_simulation_test_with_serialisation(params):
    game = pyspiel.load_game("python_generala", params)
    pyspiel.random_sim_test(game, num_sims=1, serialize=True, verbose=False)


def test_a_serialised_state_comes_back_the_same():
    game = pyspiel.load_game("python_generala", {"players": 2, "rules": "double"})
    state, rng = game.new_initial_state(), np.random.default_rng(0)
    for _ in range(25):
        if state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(actions, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    text = pyspiel.serialize_game_and_state(game, state)
    game2, state2 = pyspiel.deserialize_game_and_state(text)
    assert str(state2) == str(state) and state2.history() == state.history()
    assert state2.observation_tensor(1) == state.observation_tensor(1)


def test_chance_nodes_give_the_distinct_rolls_with_exact_probabilities():
    game = pyspiel.load_game("python_generala")
    state = game.new_initial_state()
    outcomes = state.chance_outcomes()
    assert len(outcomes) == 252 and math.isclose(math.fsum(p for _, p in outcomes), 1.0, abs_tol=1e-12)
    five_sixes = [p for a, p in outcomes if ROLLS[a].tolist() == [6] * 5]
    assert five_sixes == [1 / 7776]
    state.apply_action([a for a, _ in outcomes if ROLLS[a].tolist() == [1, 2, 6, 6, 6]][0])
    state.apply_action(0b11100)  # keep the three sixes
    two = state.chance_outcomes()
    assert len(two) == 21 and {round(p * 36) for _, p in two} == {1, 2}
    model = Model("classic")
    assert two == model.chance_indices(model.state_of(model.load(model.game, state.model_state)))


def test_rewards_observations_and_bad_parameters():
    game = pyspiel.load_game("python_generala", {"players": 2})
    assert game.num_distinct_actions() == 32 + 10 and game.max_chance_outcomes() == 252 and game.num_players() == 2
    state = game.new_initial_state()
    assert len(state.observation_tensor(0)) == observation_size(load_rules("classic"), 2)
    state.apply_action([a for a, _ in state.chance_outcomes() if ROLLS[a].tolist() == [2, 3, 4, 5, 6]][0])
    state.apply_action(32 + 6)  # a served straight: 20 + 5
    assert state.rewards() == [25.0, 0.0] and state.returns() == [25.0, 0.0] and state.is_chance_node()
    with pytest.raises(Exception, match="unknown rule set 'nope'"):
        pyspiel.load_game("python_generala", {"rules": "nope"})
    with pytest.raises(Exception, match="players must be 1 to 6"):
        pyspiel.load_game("python_generala", {"players": 7})


def test_openspiels_mcts_bot_plays_whole_games_legally(tmp_path):
    from open_spiel.python.algorithms import mcts

    path = tmp_path / "three.yaml"
    path.write_text("lines: [sixes, full_house, generala]\n")
    for players in (1, 2):
        game = pyspiel.load_game("python_generala", {"players": players, "rules": str(path), "reward": "win" if players == 2 else "total"})
        rng = np.random.RandomState(0)
        bot = mcts.MCTSBot(game, uct_c=2.0, max_simulations=8, evaluator=mcts.RandomRolloutEvaluator(1, rng), random_state=rng)
        state, decisions = game.new_initial_state(), 0
        while not state.is_terminal():
            if state.is_chance_node():
                actions, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(actions, p=probs)))
            else:
                action = bot.step(state)
                assert action in state.legal_actions()
                state.apply_action(action)
                decisions += 1
        assert decisions >= 3 * players and sum(1 for v in state.model_state.sheets[0] if v >= 0) == 3


def tree_value(state, memo: dict) -> float:
    """The exact value over OpenSpiel's game tree: max at decisions, expectation at chance nodes."""
    key = str(state)
    if key not in memo:
        if state.is_terminal():
            memo[key] = state.returns()[0]
        elif state.is_chance_node():
            memo[key] = math.fsum(p * tree_value(state.child(a), memo) for a, p in state.chance_outcomes())
        else:
            memo[key] = max(tree_value(state.child(a), memo) for a in state.legal_actions())
    return memo[key]


@pytest.mark.parametrize("sheet", ["lines: [full_house]\n", "lines: [fours]\nlocked_holds: true\n"])
def test_the_value_of_openspiels_game_tree_is_the_solvers(sheet, tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(sheet)
    game = pyspiel.load_game("python_generala", {"rules": str(path)})
    value = tree_value(game.new_initial_state(), {})
    assert abs(value - Solver(str(path)).solve().expected_score) < 1e-9
