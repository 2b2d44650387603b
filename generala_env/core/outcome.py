"""What a move did (:class:`Outcome`), a move refused (:class:`IllegalActionError`) and a seat's
result of a finished game (:func:`outcome_points`): what :class:`~generala_env.core.game.Game` hands back."""

from __future__ import annotations

from typing import NamedTuple

from generala_env.core.dice import NUM_MASKS
from generala_env.core.engine import outcome_points as _outcome_points

MAX_PLAYERS = 6


def outcome_points(winners: tuple[int, ...], seat: int) -> float:
    """A seat's result of a finished game from its :meth:`Game.winners`: 1 for a sole win,
    ``1/k`` for a win shared by ``k`` players, 0 for a loss (:func:`~generala_env.core.engine.outcome_points`)."""
    return _outcome_points(seat in winners, len(winners))


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


__all__ = ["MAX_PLAYERS", "REROLLED", "IllegalActionError", "Outcome", "outcome_points"]
