"""stable-baselines3 / sb3-contrib on :class:`GeneralaVectorEnv`: the ``VecEnv`` adapter.

::

    from sb3_contrib import MaskablePPO
    from generala_env.adapters.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env(256, seed=0, rules="classic")   # VecMonitor(GeneralaSB3VecEnv)
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=2048).learn(1_000_000)

MaskablePPO reads the masks with ``env_method("action_masks")``; the adapter answers it
for all games from one call to :meth:`GeneralaVectorEnv.action_masks`. An ending game's
last observation is in ``infos[i]["terminal_observation"]`` (with ``winner``, ``totals``
and the agent's ``seat`` in that game), as SB3 expects; the next observation already
belongs to the new game. With ``obs_type="dict"`` the observations are dicts (SB3's
``MultiInputPolicy``), as :class:`GeneralaVectorEnv` gives them; a game truncated by the
cap on illegal actions in a row is done with ``TimeLimit.truncated`` set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv, VecMonitor

from generala_env.envs.vector import GeneralaVectorEnv


class GeneralaSB3VecEnv(VecEnv):
    """An SB3 ``VecEnv`` over one :class:`GeneralaVectorEnv` of ``num_envs`` games.

    Pass either ``num_envs`` and the :class:`GeneralaVectorEnv` keyword arguments, or a
    built ``venv`` made with ``autoreset_mode=AutoresetMode.SAME_STEP``: SB3's ``VecEnv``
    resets an ending game inside the step that ends it, and so does the vector env in that
    mode (the adapter asks for it). ``reward_scale`` multiplies rewards (SB3 learns better from
    small ones).
    ``seed(s)`` takes effect at the next ``reset()``, as for any SB3 ``VecEnv``.
    """

    def __init__(self, num_envs: int | None = None, *, venv: GeneralaVectorEnv | None = None, reward_scale: float = 1.0, **env_kwargs):
        if venv is None:
            env_kwargs.setdefault("autoreset_mode", AutoresetMode.SAME_STEP)
            venv = GeneralaVectorEnv(num_envs if num_envs is not None else 1, **env_kwargs)
        elif env_kwargs or (num_envs is not None and num_envs != venv.num_envs):
            raise ValueError("give a venv or num_envs with env arguments, not both")
        if venv.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"SB3's VecEnv resets a game in the step that ends it: make the vector env with autoreset_mode=AutoresetMode.SAME_STEP, not {venv.autoreset_mode.name}"
            )
        self.venv = venv
        self.reward_scale = float(reward_scale)
        self._actions: np.ndarray | None = None
        self._seat = np.zeros(venv.num_envs, dtype=np.int64)  # the agent's seat in each game now played
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)

    def _indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, (int, np.integer)):
            return [int(indices)]
        return [int(i) for i in indices]

    # -- VecEnv API ----------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        seed = self._seeds[0]
        obs, info = self.venv.reset(seed=seed)
        self._seat = np.asarray(info["seat"])
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return obs

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """One seed for the whole batch (the games draw from one generator), used at the next reset."""
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))
        self._seeds = [int(seed)] + [None] * (self.num_envs - 1)
        return self._seeds

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self):
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            final_obs, final_info = info["final_obs"], info["final_info"]
            for i in np.flatnonzero(dones):
                infos[i] = {
                    "terminal_observation": final_obs[i],
                    "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                    "winner": int(final_info["winner"][i]),
                    "totals": final_info["totals"][i],
                    "seat": int(self._seat[i]),  # info["seat"] already holds the seat of the next game
                }
        self._seat = np.asarray(info["seat"])
        if self.reward_scale != 1.0:
            reward = reward * self.reward_scale
        return obs, reward.astype(np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        value = getattr(self.venv, attr_name)
        return [value] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        if indices is not None and len(self._indices(indices)) != self.num_envs:
            raise ValueError("attributes are shared by all games; set them for every index")
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        """``action_masks`` gives one row per game (from one batched call); other methods run once on
        the vector env and their result is repeated for each index."""
        idx = self._indices(indices)
        if method_name == "action_masks":
            masks = self.venv.action_masks()
            return list(masks if indices is None else masks[idx])
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result] * len(idx)

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def get_images(self) -> list:
        """Each game's picture (``render_mode="rgb_array"``), what SB3's ``render()`` and
        ``VecVideoRecorder`` tile; with another render mode, what ``venv.render()`` gives."""
        return list(self.venv.render() or [None] * self.num_envs)


def make_sb3_vec_env(
    n_envs: int,
    seed: int | None = None,
    *,
    opponents: Any = None,
    num_players: int = 1,
    reward_scale: float = 1.0,
    monitor: bool = True,
    **env_kwargs,
) -> VecEnv:
    """``VecMonitor(GeneralaSB3VecEnv(...))`` seeded with ``seed``, taking the training config's env keys.

    ``opponents`` as in the training config: one agent name (or a list, one per seat) for
    every game, or, given a list of entries, a mix: game ``i`` plays entry ``i % len``
    (what ``DummyVecEnv`` env ``i`` would play). Ignored with one player.
    """
    kwargs = dict(env_kwargs, num_players=num_players)
    if num_players > 1 and opponents is not None:
        if isinstance(opponents, (list, tuple)):
            kwargs["opponent_mix"] = list(opponents)
        else:
            kwargs["opponents"] = opponents
    env: VecEnv = GeneralaSB3VecEnv(n_envs, reward_scale=reward_scale, **kwargs)
    env.seed(seed)
    if monitor:
        env = VecMonitor(env)
    return env


__all__ = ["GeneralaSB3VecEnv", "make_sb3_vec_env"]
