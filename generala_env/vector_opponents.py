"""How opponents play in the vector env: the protocol (:class:`BatchedOpponent`) and its
two general players, uniform random (:class:`BatchedRandom`) and any single-env agent
called game by game (:class:`PerGameOpponent`). Agents that play many games at once, such
as :class:`generala_agents.batched.BatchedGreedy`, subclass :class:`BatchedOpponent`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import batched as K
from .info import make_info

if TYPE_CHECKING:
    from .vector import GeneralaVectorEnv


class BatchedOpponent:
    """An opponent that picks actions for many games at once.

    ``act_batch(venv, games, masks)`` returns one action per game in ``games`` (index
    array), each game with the move; ``masks`` are their legal actions ``(n, A)``.
    """

    name = "batched"

    def reset(self, seed: int | None = None) -> None:
        """Called on ``reset(seed=...)`` of the vector env."""

    def games_started(self, venv: GeneralaVectorEnv, games: np.ndarray) -> None:
        """Called whenever ``games`` (index array) start, by ``reset()`` or by autoreset."""

    def act_batch(self, venv: GeneralaVectorEnv, games: np.ndarray, masks: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


def uniform_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """One uniformly drawn legal action per row of ``masks`` (every row must have one)."""
    return K.uniform_legal(masks, rng.random(len(masks)))


class BatchedRandom(BatchedOpponent):
    """Uniform over legal actions, drawn from the vector env's generator."""

    name = "random"

    def act_batch(self, venv, games, masks):
        return uniform_legal(venv.np_random, masks)


class PerGameOpponent(BatchedOpponent):
    """Any ``(observation, info) -> action`` agent, called once per game with the single env's inputs.

    One agent object serves every game. The single env calls its ``reset()`` before each
    game; here it is called (without a seed: its own generator goes on) each time as many
    games have started as the vector env holds, so an agent that changes between games, such
    as a self-play pool picking up new checkpoints, changes here too.
    """

    def __init__(self, act: Callable, owner: Any = None):
        self.act = act
        self.owner = owner
        self.name = getattr(owner, "name", getattr(act, "__name__", type(act).__name__))
        self.started = 0  # games started since the owner's last reset

    def reset(self, seed=None):
        self.started = 0
        if self.owner is not None and hasattr(self.owner, "reset"):
            self.owner.reset(seed=seed)

    def games_started(self, venv, games):
        if self.started >= venv.num_envs:
            self.reset()
        self.started += len(games)

    def act_batch(self, venv, games, masks):
        out = np.empty(len(games), dtype=np.int64)
        for j, i in enumerate(games):
            game = venv.game_view(int(i))
            out[j] = int(self.act(venv.encoder.encode(game, game.player), make_info(game, game.player)))
        return out


__all__ = ["BatchedOpponent", "BatchedRandom", "PerGameOpponent", "uniform_legal"]
