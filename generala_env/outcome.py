"""What a move did (:class:`Outcome`), a move refused (:class:`IllegalActionError`) and a seat's
result of a finished game (:func:`outcome_points`, :func:`win_share`): what :class:`~generala_env.game.Game` hands back."""

from __future__ import annotations

from typing import NamedTuple

from .dice import NUM_MASKS
from .engine import outcome_points as _outcome_points

MAX_PLAYERS = 6


def outcome_points(winners: tuple[int, ...], seat: int) -> float:
    """A seat's result of a finished game from its :meth:`Game.winners`: 1 for a sole win,
    0.5 for a shared win, 0 for a loss (the points of a win rate; :func:`~generala_env.engine.outcome_points`)."""
    return _outcome_points(seat in winners, len(winners))


def win_share(winners: tuple[int, ...], seat: int) -> float:
    """``seat``'s share of a finished game's one point, from its :meth:`Game.winners`: 1 for a
    sole win, ``1/k`` for a win shared by ``k`` players, 0 for a loss. Every game hands out
    exactly one point, so the fair share at a table of N is ``1/N``; at two players this is
    :func:`outcome_points`, a shared win counting half."""
    return 1.0 / len(winners) if seat in winners else 0.0


class IllegalActionError(ValueError):
    """An action the game does not accept in the current state."""


class Outcome(NamedTuple):
    """What one action did (a tuple: immutable, so a reroll's outcome is shared)."""

    player: int
    action: int
    points: int = 0  # points written (0 for a reroll or a crossed-out line)
    wrote: bool = False
    served: bool = False  # written right after the turn's first roll
    bonus: int = 0  # served bonus included in points
    served_generala_win: bool = False


REROLLED = [[Outcome(player=p, action=a) for a in range(NUM_MASKS)] for p in range(MAX_PLAYERS)]  # shared: immutable


__all__ = ["MAX_PLAYERS", "REROLLED", "IllegalActionError", "Outcome", "outcome_points", "win_share"]
