"""One dice stream per game: game ``i`` of a vector env reset with ``seed=s`` plays what
``gym.make("Generala-v0")`` reset with ``seed=s + i`` plays, episode after episode, with
opponents, random seats and exploring starts (Gymnasium's ``SyncVectorEnv`` convention)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import generala_env  # noqa: F401  (registers Generala-v0)

CASES = [
    pytest.param({"rules": "classic", "num_players": 1}, id="classic-1p"),
    pytest.param({"rules": "double", "num_players": 2, "opponents": "greedy", "reward": "win"}, id="double-2p-greedy"),
    pytest.param({"rules": "sixty", "num_players": 3, "opponents": ["random", "greedy"], "agent_seat": "random"}, id="sixty-3p-random-seat"),
    pytest.param({"rules": "classic", "num_players": 2, "opponents": "random", "exploring_starts": 0.5}, id="classic-2p-exploring"),
]


def _pick(rng: np.random.Generator, mask) -> int:
    legal = np.flatnonzero(mask)
    return int(legal[rng.integers(len(legal))])


@pytest.mark.parametrize("kwargs", CASES)
def test_vector_game_i_is_the_single_env_seeded_s_plus_i(kwargs):
    n, seed, steps = 3, 1234, 150  # 150 steps: several episodes of each game
    venv = gym.make_vec("Generala-v0", num_envs=n, vectorization_mode="vector_entry_point", autoreset_mode="SameStep", **kwargs)
    singles = [gym.make("Generala-v0", **kwargs) for _ in range(n)]
    obs, info = venv.reset(seed=seed)
    rows = [env.reset(seed=seed + i) for i, env in enumerate(singles)]
    for i, (o, inf) in enumerate(rows):
        np.testing.assert_array_equal(obs[i], o, err_msg=f"game {i}: first observation")
        assert info["seat"][i] == inf["seat"]
    pickers = [np.random.default_rng(99 + i) for i in range(n)]  # the same choices on both sides
    episodes = np.zeros(n, dtype=int)
    for t in range(steps):
        masks = venv.unwrapped.action_masks()
        actions = np.array([_pick(pickers[i], masks[i]) for i in range(n)])
        obs, reward, term, trunc, info = venv.step(actions)
        for i, env in enumerate(singles):
            o, r, te, tr, inf = env.step(int(actions[i]))
            assert (r, te, tr) == (reward[i], term[i], trunc[i]), f"game {i}, step {t}"
            if te or tr:
                np.testing.assert_array_equal(info["final_obs"][i], o, err_msg=f"game {i}, step {t}: final observation")
                o, inf = env.reset()
                episodes[i] += 1
            np.testing.assert_array_equal(obs[i], o, err_msg=f"game {i}, step {t}")
            assert info["seat"][i] == inf["seat"]
    assert (episodes >= 2).all(), episodes  # the streams went on across new games


def test_a_list_of_seeds_seeds_game_by_game():
    venv = gym.make_vec("Generala-v0", num_envs=2, vectorization_mode="vector_entry_point")
    obs, _ = venv.reset(seed=[7, 3])
    for i, s in enumerate((7, 3)):
        o, _ = gym.make("Generala-v0").reset(seed=s)
        np.testing.assert_array_equal(obs[i], o)


def test_a_bad_seed_list_is_one_clear_error():
    venv = gym.make_vec("Generala-v0", num_envs=2, vectorization_mode="vector_entry_point")
    with pytest.raises(ValueError, match="one per game"):
        venv.reset(seed=[1, 2, 3])
