"""Agents that play many games of :class:`generala_env.envs.vector.GeneralaVectorEnv` at once.

:class:`BatchedGreedy` plays :mod:`generala_agents.greedy`'s compiled rule for every game of a
vector env, as :class:`generala_agents.baselines.GreedyAgent` plays it for one game
(``tests/test_vector.py`` checks them game for game). ``agents`` registers it as the batched
version of ``"greedy"``; the vector env finds it through :mod:`generala_env.envs.opponents`.
"""

from __future__ import annotations

from generala_env.core.rules import RuleSet
from generala_env.envs.vector import BatchedOpponent

from .greedy import greedy_actions, greedy_tables


class BatchedGreedy(BatchedOpponent):
    """:class:`generala_agents.baselines.GreedyAgent`, for many games at once (the same choices)."""

    name = "greedy"

    def __init__(self, rules: RuleSet):
        self.rules = rules
        self.greedy = greedy_tables(rules)

    def act_batch(self, venv, games, masks):
        return greedy_actions(games, masks, tuple(venv.state), self.greedy)
