"""A Pgx state of :mod:`generala_env.jax.env` as the game's one picture: each game of the state
set into a :class:`~generala_env.core.game.Game` (:meth:`~generala_env.core.game.Game.set_state`) and
drawn by :mod:`generala_env.rendering.picture`, the frame ``render_mode="rgb_array"`` gives; a batch as its
games side by side. What ``State.to_svg``, ``State.save_svg`` and a notebook show.

No JAX import: the state's arrays are read with NumPy.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from generala_env.core.checks import check_finite
from generala_env.core.dice import KEEPS_LIST, ROLLS
from generala_env.core.game import Game
from generala_env.files.file_io import write_atomic
from generala_env.rendering.picture import draw, picture_of, side_by_side, svg_of


def games_of(state: Any) -> list[Game]:
    """Each game of ``state`` (one, or a batch with any leading axes) as a numba ``Game``."""
    rules = state.rules
    sheets = np.asarray(state.sheets)
    players, lines = sheets.shape[-2:]
    fields = [np.asarray(a).reshape(-1) for a in (state.roll, state.rolls_left, state.player, state.locked, state.winner)]
    games = []
    for i, (roll, rolls_left, player, locked, winner) in enumerate(zip(*fields, strict=True)):
        g = Game(rules, int(players))
        g.set_state(
            sheets=sheets.reshape(-1, players, lines)[i],
            dice=ROLLS[int(roll)].tolist(),
            rolls_left=int(rolls_left),
            player=int(player),
            locked=list(KEEPS_LIST[int(locked)]),
            served_generala_winner=None if winner < 0 else int(winner),
        )
        games.append(g)
    return games


def state_frame(state: Any) -> np.ndarray:
    """The picture of ``state``: its game's frame, or its games' frames side by side."""
    return side_by_side([draw(picture_of(g)) for g in games_of(state)])


def state_svg(state: Any, scale: float | None = None) -> str:
    """:func:`state_frame` as an SVG document, ``scale`` (default 1) times the frame's size."""
    s = 1.0 if scale is None else check_finite("scale", scale)
    if s <= 0:
        raise ValueError(f"scale must be above 0, got {scale!r}")
    return svg_of(state_frame(state), s)


def save_state_svg(state: Any, filename: str | os.PathLike, scale: float | None = None) -> None:
    """:func:`state_svg` written to ``filename`` (a name ending ``.svg``), atomically."""
    if not os.fspath(filename).endswith(".svg"):
        raise ValueError(f"save_svg writes an .svg file; got the name {os.fspath(filename)!r}")
    write_atomic(filename, state_svg(state, scale))


__all__ = ["games_of", "save_state_svg", "state_frame", "state_svg"]
