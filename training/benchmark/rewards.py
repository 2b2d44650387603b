"""Training rewards of the suite's tasks that the env does not give itself: the score margin.

A task with ``training_reward: margin`` trains on the margin over the best opponent: at
each of the agent's steps, the change of (the agent's total minus the highest opponent
total) since its previous step, which counts the points it wrote and those its opponents
wrote in between. Summed over a game, the rewards are the final margin: a shaping of the
win that says by how much, at every turn. ``win_bonus`` adds that many points at the end
of a finished game, times +1 / 0 / -1 for a win / shared win / loss. An illegal action
writes nothing and is rewarded the task's ``illegal_penalty``, as in the env. The rewards
are raw points; the SB3 adapter multiplies them by the task's ``reward_scale``.

The margin is read from the env's public information only (``full_info``'s ``totals`` at
each step, ``final_info``'s ``totals`` and ``winner`` of an ending game, ``seat``): no
solver, no value of a position, only the game's own points. Evaluation is unchanged: the
win rate against the task's opponents.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def margins(totals: np.ndarray, seat: np.ndarray) -> np.ndarray:
    """Each game's total of the agent's seat minus the highest of the others': ``totals`` is
    ``(N, players)``, ``seat`` ``(N,)``."""
    totals = np.asarray(totals, dtype=np.float64)
    rows = np.arange(len(totals))
    mine = totals[rows, seat]
    others = totals.copy()
    others[rows, seat] = -np.inf
    return mine - others.max(axis=1)


class MarginReward:
    """A :class:`generala_env.envs.vector.GeneralaVectorEnv` (made with ``full_info=True`` and
    ``autoreset_mode=AutoresetMode.SAME_STEP``, SB3's) whose
    rewards are the score margin over the best opponent (see the module docstring).

    It answers what :class:`generala_env.adapters.sb3.GeneralaSB3VecEnv` asks of a vector env
    (``reset``, ``step``, ``action_masks``, the spaces and every other attribute, passed on).
    """

    def __init__(self, venv, illegal_penalty: float, win_bonus: float = 0.0):
        if not venv.full_info:
            raise ValueError("MarginReward reads the totals of every step: make the vector env with full_info=True")
        if venv.autoreset_mode.name != "SAME_STEP":
            raise ValueError("MarginReward reads an ending game's final_info: make the vector env with autoreset_mode=AutoresetMode.SAME_STEP")
        self.venv = venv
        self.illegal_penalty = float(illegal_penalty)
        self.win_bonus = float(win_bonus)
        self._margin = np.zeros(venv.num_envs)  # each game's margin at the agent's last step (0 at its start)
        self._seat = np.zeros(venv.num_envs, dtype=np.int64)

    def __getattr__(self, name: str) -> Any:
        if name == "venv":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.venv, name)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.venv.reset(seed=seed, options=options)
        games = slice(None) if not options or options.get("reset_mask") is None else np.asarray(options["reset_mask"], dtype=bool)
        self._margin[games] = 0.0
        self._seat = np.asarray(info["seat"]).copy()
        return obs, info

    def step(self, actions):
        obs, _, terminated, truncated, info = self.venv.step(actions)
        now = margins(info["totals"], info["seat"])  # a game reset in this step: the new game's
        reward = now - self._margin
        done = np.flatnonzero(terminated | truncated)
        if done.size:
            final = info["final_info"]
            seat = self._seat[done]  # the ended games' seats: info["seat"] already holds the new games'
            reward[done] = margins(final["totals"][done], seat) - self._margin[done]
            if self.win_bonus:
                winner = final["winner"][done]
                outcome = np.where(winner == seat, 1.0, np.where(winner < 0, 0.0, -1.0))
                reward[done] += self.win_bonus * np.where(terminated[done], outcome, 0.0)
            now[done] = 0.0  # a new game's first reward counts the points its opponents wrote before the agent's move
        illegal = np.asarray(info["illegal_action"], dtype=bool)
        reward[illegal] += self.illegal_penalty
        self._margin = now
        self._seat = np.asarray(info["seat"]).copy()
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return self.venv.action_masks()

    def close(self) -> None:
        self.venv.close()


__all__ = ["MarginReward", "margins"]
