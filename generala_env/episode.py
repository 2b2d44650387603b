"""What an env does around the rules, once: the episode's own rules, for one game or many.

The single env (:class:`generala_env.env.GeneralaEnv`), the vector env
(:class:`generala_env.vector.GeneralaVectorEnv`) and the PettingZoo env
(:mod:`generala_env.multiagent`) all call these; each works on a number (one game) or on arrays
(many games) alike.

* An illegal action changes nothing and counts toward a streak; a legal one ends the streak;
  ``max_illegal_in_a_row`` illegal actions in a row truncate the episode (:func:`next_streak`,
  :func:`truncates`).
* Once a game is over every action is marked legal (:func:`final_mask`), so that a masked
  policy evaluated on the final observation never sees an all-zero mask.
* An exploring start fires for a share of new games, drawn as one ``random()`` of the game's
  generator, then the sheets of :func:`~generala_env.game_states.prefilled_sheets`
  (:func:`exploring_start`; the vector env's compiled loop draws the same ``random()``).
"""

from __future__ import annotations

import numpy as np

from .game_states import prefilled_sheets
from .rules import RuleSet


def next_streak(streak, illegal):
    """The streak of illegal actions in a row after an action (``illegal``: it was refused):
    one more after an illegal action, none after a legal one."""
    return (streak + 1) * illegal


def truncates(streak, cap: int | None):
    """Whether a streak truncates the episode: ``cap`` illegal actions in a row (``None``: never)."""
    if cap is None:
        return np.zeros(np.shape(streak), dtype=bool) if np.ndim(streak) else False
    return streak >= cap


def final_mask(shape, dtype=bool) -> np.ndarray:
    """The action mask of a game that is over: every action (a fresh array)."""
    return np.ones(shape, dtype=dtype)


def exploring_start(rules: RuleSet, num_players: int, share: float, rng) -> np.ndarray | None:
    """The sheets a new game starts from with ``exploring_starts=share``, or ``None`` for an
    empty start: one ``rng.random()`` below ``share`` fires it (drawn only when ``share`` is not 0)."""
    if share and rng.random() < share:
        return prefilled_sheets(rules, num_players, rng)
    return None


__all__ = ["exploring_start", "final_mask", "next_streak", "truncates"]
