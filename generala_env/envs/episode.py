"""Two rules of an episode kept in Python, for the env core (:mod:`generala_env.envs.env_core`) and
its drivers (an illegal action, its streak and the truncation live in the core's compiled step,
:mod:`generala_env.compiled.env_loops`):

* Once a game is over every action is marked legal (:func:`final_mask`), so that a masked
  policy evaluated on the final observation never sees an all-zero mask.
* An exploring start fires for a share of new games, drawn as one ``random()`` of the game's
  generator, then the sheets of :func:`~generala_env.core.game_states.prefilled_sheets`
  (:func:`exploring_start`; the vector env's compiled loop draws the same ``random()``).
"""

from __future__ import annotations

import numpy as np

from generala_env.core.game_states import prefilled_sheets
from generala_env.core.rules import RuleSet


def final_mask(shape, dtype=bool) -> np.ndarray:
    """The action mask of a game that is over: every action (a fresh array)."""
    return np.ones(shape, dtype=dtype)


def exploring_start(rules: RuleSet, num_players: int, share: float, rng) -> np.ndarray | None:
    """The sheets a new game starts from with ``exploring_starts=share``, or ``None`` for an
    empty start: one ``rng.random()`` below ``share`` fires it (drawn only when ``share`` is not 0)."""
    if share and rng.random() < share:
        return prefilled_sheets(rules, num_players, rng)
    return None


__all__ = ["exploring_start", "final_mask"]
