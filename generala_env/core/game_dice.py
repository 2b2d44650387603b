"""Each game's own random draws in the vector env, in the single env's order.

Game ``i`` of a vector env reset with ``seed=s`` owns a stream seeded as
``gym.make("Generala-v0").reset(seed=s + i)`` seeds its generator (Gymnasium's
``seeding.np_random``: a row of :mod:`generala_env.compiled.dice_stream`, numpy's PCG64 bit for bit),
and draws from it what that single env draws, in the same order:

* at a new game (:func:`draw_new_games`): the agent's seat (``agent_seat="random"``), the
  first roll's dice, the exploring start (``exploring_starts``: one ``random()``, then
  :func:`~generala_env.core.game.prefilled_sheets` when it fires), then one seed per opponent that
  the single env reseeds (an agent with ``act`` and ``reset``);
* the dice: a cup per game, as :class:`~generala_env.core.dice.DiceCup` holds them: when a throw
  needs more faces than are left, the faces left stay first and a block of
  :data:`~generala_env.compiled.dice_stream.BLOCK` new ones follows (:func:`~generala_env.compiled.dice_stream.cup_fill`).
  The compiled steps refill a cup where they find it short (:func:`generala_env.compiled.env_loops.env_step`,
  :func:`generala_env.compiled.batched.apply_actions`).

So the same seed plays the same game in both envs, episode after episode
(``tests/test_same_games.py``). An exploring start that fires is drawn in Python, through a
numpy generator handed the game's stream and back (:func:`~generala_env.compiled.dice_stream.generator_from_stream`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from generala_env.compiled.batched import U, cached_njit
from generala_env.compiled.dice_stream import BLOCK as BLOCK
from generala_env.compiled.dice_stream import (
    ROW,
    below,
    cup_fill,
    empty_cups,
    generator_from_stream,
    seed63,
    seeded_row,
    stream_from_generator,
    streams_from_seeds,
    uniform,
)
from generala_env.core.checks import is_whole
from generala_env.core.dice import DICE, FACES


@cached_njit(error_model="numpy", _nrt=False)
def _seed_rows(pcg, seeds):
    """Row ``g`` := the stream of ``default_rng(seeds[g])`` (seeds below 2**63)."""
    for g in range(len(seeds)):
        seeded_row(pcg, g, seeds[g])


@cached_njit(error_model="numpy", _nrt=False)
def draw_new_games(games, pcg, faces, at, seat, random_seat, num_players, explore, reseeded, fired, seeds):
    """A single env's ``reset()`` draws for each of ``games``, in its order: the seat (with
    ``random_seat``), the first roll's faces (a refill of a short cup), the exploring start (a
    ``random()`` below ``explore`` fires it: ``fired[j]``, and the game's draws stop there, the
    rest being drawn in Python), then ``seeds[j, k]`` for each opponent seat ``k`` with
    ``reseeded[g, k]`` (-1 for the others)."""
    for j in range(U(len(games))):
        g = U(games[j])
        if random_seat:
            seat[g] = below(pcg, g, num_players)
        cup_fill(pcg, faces, at, g, DICE)  # the first roll's faces (DiceCup.throw's refill)
        fired[j] = False
        for k in range(seeds.shape[1]):
            seeds[j, k] = -1
        if explore > 0.0 and uniform(pcg, g) < explore:
            fired[j] = True
            continue
        for k in range(seeds.shape[1]):
            if reseeded[g, k]:
                seeds[j, k] = seed63(pcg, g)


class GameDice:
    """The streams and cups of ``num_games`` games (see the module docstring): ``pcg`` ``(N, 6)``
    uint64, and the cups' ``faces`` ``(N, CUP_FACES)`` int8 and ``at`` ``(N, 2)`` int64
    (:mod:`generala_env.compiled.dice_stream`)."""

    def __init__(self, num_games: int):
        self.num_games = num_games
        self.pcg = np.zeros((num_games, ROW), dtype=np.uint64)
        self.faces, self.at = empty_cups(num_games)
        self.seeded = False

    def seed(self, seed: int | Sequence[int] | None) -> None:
        """Every game's stream anew, with empty cups: game ``i`` seeded with ``seed + i`` (or
        ``seed[i]`` for a list of seeds; fresh entropy for ``None``)."""
        n = self.num_games
        if is_whole(seed):
            seeds = [int(seed) + i for i in range(n)]
        elif seed is None:
            seeds = [int(np.random.SeedSequence().entropy) for _ in range(n)]  # type: ignore[arg-type]  # an int when drawn
        else:
            seeds = list(seed) if isinstance(seed, (Sequence, np.ndarray)) else []
            if len(seeds) != n or any(not is_whole(s) for s in seeds):
                raise ValueError(f"seed must be a whole number or a list of {n} whole numbers (one per game), got {seed!r}")
            seeds = [int(s) for s in seeds]
        if any(s < 0 for s in seeds):
            raise ValueError(f"seeds are whole numbers from 0 up, got {min(seeds)}")
        if max(seeds) < 2**63:  # hashed in a compiled loop
            _seed_rows(self.pcg, np.array(seeds, dtype=np.int64))
        else:
            self.pcg[:] = streams_from_seeds(seeds)
        self.at[:] = 0
        self.seeded = True

    def draw_new_games(self, games, seat, random_seat: bool, rules, num_players: int, explore: float, reseeded) -> tuple[np.ndarray, list]:
        """What a single env's ``reset()`` draws for each of ``games``, in its order
        (:func:`draw_new_games`; an exploring start that fires is drawn here through numpy):
        the seats into ``seat``, the first roll into the cups, then ``(seeds, prefilled)``: the
        opponents' seeds ``[j, k]`` (-1: none) and ``(game, sheets)`` of each exploring start."""
        from generala_env.core.game import prefilled_sheets

        if not self.seeded:
            self.seed(None)
        n = len(games)
        fired, seeds = np.zeros(n, dtype=bool), np.full((n, num_players - 1), -1, dtype=np.int64)
        draw_new_games(games, self.pcg, self.faces, self.at, seat, random_seat, num_players, float(explore), reseeded, fired, seeds)
        prefilled = []
        for j in np.flatnonzero(fired).tolist():
            g = int(games[j])
            gen = generator_from_stream(self.pcg[g])
            prefilled.append((g, prefilled_sheets(rules, num_players, gen)))
            for k in np.flatnonzero(reseeded[g]).tolist():
                seeds[j, k] = int(gen.integers(2**63))
            self.pcg[g] = stream_from_generator(gen)
        return seeds, prefilled

    def generator(self, g: int) -> np.random.Generator:
        """Game ``g``'s stream as a numpy generator; :meth:`take_back` returns it to the game."""
        return generator_from_stream(self.pcg[g])

    def take_back(self, g: int, generator: np.random.Generator) -> None:
        self.pcg[g] = stream_from_generator(generator)


def given_cups(given: np.ndarray, games: np.ndarray, need: np.ndarray, num_games: int) -> tuple[np.ndarray, np.ndarray]:
    """Cups ``(faces, at)`` of ``num_games`` rows holding, for each of ``games``, the first
    ``need[j]`` faces of ``given[j]`` (a ``dice_source``'s answer, checked here: ``(len(games), 5)``
    faces from 1 to 6 where used)."""
    used = np.arange(DICE) < need[:, None]
    if given.shape != (len(games), DICE) or ((given < 1) | (given > FACES))[used].any():
        raise ValueError(f"dice_source must return ({len(games)}, {DICE}) faces from 1 to {FACES}")
    faces = np.ones((num_games, DICE), dtype=np.int8)
    at = np.zeros((num_games, 2), dtype=np.int64)
    faces[games] = np.where(used, given, 1)
    at[games, 1] = need
    return faces, at


__all__ = ["BLOCK", "GameDice", "draw_new_games", "given_cups"]
