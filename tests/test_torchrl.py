"""TorchRL's wrappers take the envs as they are: ``check_env_specs`` passes and a rollout goes on past
the end of a game. TorchRL makes a tensor of every info value (so the info holds numbers and arrays,
never text), reads the same keys at reset and step, finds an action mask in one place, and wraps a
Gymnasium vector env only in SAME_STEP or DISABLED autoreset (DISABLED, which it prefers, resets
ended games through ``reset_mask``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import generala_env  # noqa: F401  (registers Generala-v0)

pytest.importorskip("torchrl")
from gymnasium.vector import AutoresetMode  # noqa: E402
from torchrl.envs.libs.gym import GymEnv, GymWrapper  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

ONE_LINE = {"lines": ["ones"]}  # a game is one turn: TorchRL's random actions end it within a few steps


def ended_and_went_on(rollout, done_key=("next", "done")) -> bool:
    """Some game ended before the rollout's last step (the rollout went on past an end)."""
    done = rollout.get(done_key).reshape(rollout.batch_size + (-1,)).any(-1)
    return bool(done[..., :-1].any())


@pytest.mark.parametrize("mode", [AutoresetMode.DISABLED, AutoresetMode.SAME_STEP], ids=["Disabled", "SameStep"])
def test_gym_wrapper_on_the_vector_env(mode):
    env = GymWrapper(gym.make_vec("Generala-v0", num_envs=4, rules=ONE_LINE, autoreset_mode=mode, max_illegal_in_a_row=3))
    check_env_specs(env)
    rollout = env.rollout(60, break_when_any_done=False)
    assert rollout.batch_size == (4, 60) and ended_and_went_on(rollout)
    assert np.isfinite(rollout.get(("next", "observation")).numpy()).all()


def test_gym_wrapper_refuses_next_step_naming_the_modes_it_takes():
    with pytest.raises(RuntimeError, match="SAME_STEP or DISABLED"):
        GymWrapper(gym.make_vec("Generala-v0", num_envs=2))


def test_gym_env_of_single_envs():
    # TorchRL runs them in spawned processes (AsyncVectorEnv): "module:id" has each import the package that registers the id
    env = GymEnv("generala_env:Generala-v0", num_envs=2, rules=ONE_LINE, max_illegal_in_a_row=3)
    try:
        check_env_specs(env)
        rollout = env.rollout(40, break_when_any_done=False)
        assert rollout.batch_size == (2, 40) and ended_and_went_on(rollout)
        assert "illegal_reason" not in rollout.keys(include_nested=True)  # no text in the info
    finally:
        env.close()


def test_pettingzoo_wrapper_with_masks():
    pytest.importorskip("pettingzoo")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    from generala_env.envs.multiagent import env as generala_aec

    env = PettingZooWrapper(generala_aec(num_players=2, rules=ONE_LINE), use_mask=True)
    check_env_specs(env)
    rollout = env.rollout(12, break_when_any_done=False)  # a game is two actions
    assert rollout.batch_size == (12,) and ended_and_went_on(rollout)
    acting = rollout.get(("player_0", "mask"))[:, 0]  # the steps where player_0 had the move
    masks = rollout.get(("player_0", "action_mask"))[:, 0][acting]
    actions = rollout.get(("player_0", "action"))[:, 0][acting]
    assert len(actions) and masks[np.arange(len(actions)), actions.numpy()].all()  # the mask read from the observation: legal actions only
