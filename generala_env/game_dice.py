"""Each game's own random draws in the vector env, in the single env's order.

Game ``i`` of a vector env reset with ``seed=s`` owns a numpy generator seeded as
``gym.make("Generala-v0").reset(seed=s + i)`` seeds its own (Gymnasium's
``seeding.np_random``), and draws from it what that single env draws, in the same order:

* at a new game: the agent's seat (``agent_seat="random"``), the first roll's dice, the
  exploring start (``exploring_starts``: one ``random()``, then
  :func:`~generala_env.game.prefilled_sheets` when it fires), then one seed per opponent
  that the single env would reseed (an agent with ``act`` and ``reset``);
* the dice: a cup per game, as :class:`~generala_env.dice.DiceCup` holds them: when a throw
  needs more faces than are left, the faces left stay first and a block of
  :data:`BLOCK` new ones follows, ``integers(1, 7, size=BLOCK, dtype=int8)``.

So the same seed plays the same game in both envs, episode after episode
(``tests/test_same_games.py``). The cups live in two arrays, ``faces`` ``(N, BLOCK + 5)``
int8 and ``at`` ``(N, 2)`` (next face, end), that the compiled steps read and advance
(:func:`generala_env.batched.apply_actions`); a step that finds a game's cup short leaves
that game as it was and says so, and :meth:`GameDice.refill` tops the cup up before the step
is made again for it, as a single env's step does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from gymnasium.utils import seeding

from .dice import DICE, FACES

BLOCK = 1024  # faces a cup draws at once (DiceCup's block)


class GameDice:
    """The generators and cups of ``num_games`` games (see the module docstring)."""

    def __init__(self, num_games: int):
        self.num_games = num_games
        self.generators: list[np.random.Generator] = []
        self.faces = np.zeros((num_games, BLOCK + DICE), dtype=np.int8)
        self.at = np.zeros((num_games, 2), dtype=np.int64)  # [next face, end] of each game's cup

    def seed(self, seed: int | Sequence[int] | None) -> None:
        """Every game's generator anew, with empty cups: game ``i`` seeded with ``seed + i``
        (or ``seed[i]`` for a list of seeds; fresh entropy for ``None``)."""
        n = self.num_games
        seeds: list = [None] * n
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
            seeds = [int(seed) + i for i in range(n)]
        elif seed is not None:
            seeds = list(seed) if isinstance(seed, (Sequence, np.ndarray)) else []
            if len(seeds) != n or any(isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) for s in seeds):
                raise ValueError(f"seed must be a whole number or a list of {n} whole numbers (one per game), got {seed!r}")
        self.generators = [seeding.np_random(None if s is None else int(s))[0] for s in seeds]
        self.at[:] = 0

    @property
    def seeded(self) -> bool:
        return bool(self.generators)

    def short(self, games: np.ndarray, need: int) -> np.ndarray:
        """Those of ``games`` whose cup holds fewer than ``need`` faces."""
        return games[self.at[games, 1] - self.at[games, 0] < need]

    def refill(self, games) -> None:
        """Each game's cup: the faces left, then a new block from its generator (DiceCup.refill)."""
        faces, at = self.faces, self.at
        for g in np.asarray(games).tolist():
            start, end = at[g]
            left = end - start
            if left:
                faces[g, :left] = faces[g, start:end]
            faces[g, left : left + BLOCK] = self.generators[g].integers(1, FACES + 1, size=BLOCK, dtype=np.int8)
            at[g] = 0, left + BLOCK

    def ensure(self, games: np.ndarray, need: int) -> None:
        """Refill the cups of ``games`` that hold fewer than ``need`` faces."""
        short = self.short(games, need)
        if short.size:
            self.refill(short)


__all__ = ["BLOCK", "GameDice"]
