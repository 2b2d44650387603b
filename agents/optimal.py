"""The exact optimal player: maximises the expected final total of a one-player game."""

from __future__ import annotations

from generala_env.scoring import generala_scored

from .base import Agent, best_legal
from .solver import load_or_solve


class OptimalAgent(Agent):
    """Plays the action with the highest expected final total, from the solved values.

    Exact for one player under every rule setting; in a game with opponents it plays
    the same solitaire strategy (the score-maximiser, not the win-maximiser).
    """

    name = "optimal"

    def __init__(self, rules="classic", seed: int | None = None, use_cache: bool = True):
        super().__init__(rules, seed)
        self.solver, self.source = load_or_solve(self.rules, use_cache=use_cache)

    @property
    def expected_score(self) -> float:
        return self.solver.expected_score

    def act(self, observation, info) -> int:
        v = self.view(info)
        values = self.solver.action_values(v.filled_mask, generala_scored(self.rules, v.sheet), v.roll, v.rolls_left, v.locked)
        return best_legal(values, v.mask)
