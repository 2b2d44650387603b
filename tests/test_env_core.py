"""One env core (``generala_env.envs.env_core.EnvCore``) under every env: the single env is the core at
one game holding its ``Game``'s own arrays, the PettingZoo env drives it with every seat an
agent, and a state set by hand on a single env's game is what its next step plays and shows."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from helpers import faces, hold, write

import generala_env  # noqa: F401  (registers Generala-v0)
from generala_env.core.dice import roll_index
from generala_env.core.game import OPEN
from generala_env.envs.env import GeneralaEnv
from generala_env.envs.env_core import EnvCore
from generala_env.envs.vector import GeneralaVectorEnv


def test_every_env_is_the_core():
    single = GeneralaEnv(num_players=2, opponents="greedy")
    venv = GeneralaVectorEnv(3, num_players=2, opponents="greedy")
    assert isinstance(single.core, EnvCore) and single.core.num_envs == 1
    assert isinstance(venv.core, EnvCore) and venv.core.num_envs == 3
    # the single env's game is the core's one game: the same arrays, not copies
    game = single.game
    assert single.core.numbers is game._numbers and single.core.sheets is game._board and single.core.masks is game._mask
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import raw_env

    pz = raw_env(num_players=3)
    assert pz.core.game is pz.game and pz.core.numbers is pz.game._numbers


def test_a_sheet_set_by_hand_is_what_the_next_step_shows():
    """A sheet set by hand with as many lines written as before: the observation after the next
    step (a reroll, which writes nothing) shows that sheet (the core at one game reads the sheets
    at every step; a cache keyed on the lines written would show the old one)."""
    env = GeneralaEnv(rules="classic")
    env.reset(seed=0)
    rules = env.rules
    env.step(write(rules, "ones"))  # one line written
    sheet = np.full((1, rules.num_lines), OPEN)
    sheet[0, rules.lines.index("sixes")] = 24  # one line written, another one
    env.game.set_state(sheets=sheet, dice=faces("12366"), rolls_left=2)
    obs, reward, *_ = env.step(hold(env.game, [6, 6]))
    assert reward == 0.0
    expected = env.encoder.encode(env.game, 0)
    assert np.array_equal(obs, expected)
    own = env.layout["own_open"]
    assert obs[own][rules.lines.index("ones")] == 1.0 and obs[own][rules.lines.index("sixes")] == 0.0


def test_pettingzoo_draws_the_dice_a_single_env_seeded_alike_draws():
    pytest.importorskip("pettingzoo")
    from generala_env.envs.multiagent import raw_env

    pz = raw_env(rules="classic", num_players=2)
    pz.reset(seed=42)
    single = gym.make("Generala-v0", rules="classic", num_players=2, opponents="greedy", agent_seat=0)
    _, info = single.reset(seed=42)
    assert roll_index(pz.infos["player_0"]["dice"]) == roll_index(info["dice"])
    # the same writes on both: the next player's first roll is the same too
    pz.step(write(pz.rules, "sixes"))
    _, _, _, _, info = single.step(write(single.unwrapped.rules, "sixes"))
    first_of_seat_1 = info["opponent_moves"][0]
    assert first_of_seat_1[0] == 1  # the greedy opponent moved on the same first roll
    assert np.array_equal(pz.infos["player_1"]["sheets"][0], info["sheets"][0])


def test_the_vector_env_at_one_game_is_the_single_env():
    """The same core at N = 1: seeded alike, a vector env of one game and the single env give the
    same observations, rewards and ends, illegal actions included."""
    venv = GeneralaVectorEnv(1, rules="double", num_players=2, opponents="random", reward="win", agent_seat="random", autoreset_mode="SameStep")
    single = GeneralaEnv(rules="double", num_players=2, opponents="random", reward="win", agent_seat="random")
    obs_v, _ = venv.reset(seed=9)
    obs, _ = single.reset(seed=9)
    rng = np.random.default_rng(1)
    ends = 0
    for _ in range(300):
        assert np.array_equal(obs_v[0], obs)
        legal = np.flatnonzero(single.action_masks())
        a = int(rng.integers(single.action_space.n)) if rng.random() < 0.1 else int(rng.choice(legal))
        obs_v, rew_v, term_v, _, info_v = venv.step(np.array([a]))
        obs, rew, term, _, info = single.step(a)
        assert rew_v[0] == rew and term_v[0] == term and info_v["illegal_action"][0] == info["illegal_action"]
        if term:
            ends += 1
            assert np.array_equal(info_v["final_obs"][0], obs)
            obs, _ = single.reset()
    assert ends >= 3
