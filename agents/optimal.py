"""The exact optimal players: the score-maximiser of one-player games (``optimal``) and the
win-maximiser of two-player games (``optimal-2p``)."""

from __future__ import annotations

import numpy as np

from generala_env.core.scoring import generala_scored

from .base import Agent, AgentError, SeatView, best_legal
from .solver import load_or_solve, shared_solver


class OptimalAgent(Agent):
    """Plays the action with the highest expected final total, from the solved values.

    Exact for one player under every rule setting; in a game with opponents it plays
    the same solitaire strategy (the score-maximiser, not the win-maximiser).
    """

    name = "optimal"

    def __init__(self, rules="classic", seed: int | None = None, use_cache: bool = True):
        super().__init__(rules, seed)
        # the process's values, shared by every optimal of these rules; without the cache, its own
        self.solver, self.source = shared_solver(self.rules) if use_cache else load_or_solve(self.rules, use_cache=False)

    @property
    def expected_score(self) -> float:
        return self.solver.expected_score

    def act(self, observation, info) -> int:
        v = self.view(info)
        values = self.solver.action_values(v.filled_mask, generala_scored(self.rules, v.sheet), v.roll, v.rolls_left, v.locked)
        return best_legal(values, v.mask)


class OptimalTwoPlayerAgent(Agent):
    """Maximises its chance to win a two-player game, from the exact two-player solution.

    It plays either seat: P(win) + ½·P(draw) of every action comes from
    :class:`generala_agents.solver2p.TwoPlayerSolver` (solved once per rule set, then read from the
    disk cache; one table per process for all agents of the same rules), given both sheets
    and the score difference read from ``info``. ``table``: a solved table to play from
    instead (:func:`generala_agents.solver2p.shared_table`'s, for a caller that must never solve).
    """

    name = "optimal-2p"

    def __init__(self, rules="classic", seed: int | None = None, use_cache: bool = True, table=None):
        super().__init__(rules, seed)
        from .solver2p import TwoPlayerSolver, load_or_solve_2p

        if table is None:
            self.solver, self.source = load_or_solve_2p(self.rules, use_cache=use_cache)
            return
        if not isinstance(table, TwoPlayerSolver) or table.rules.fingerprint() != self.rules.fingerprint():
            raise AgentError(f"{self.name}: the table given is not a two-player table of the rules {self.rules.name!r}")
        self.solver, self.source = table, "cache"

    @property
    def first_player_value(self) -> float:
        return self.solver.first_player_value

    def state(self, info) -> tuple[SeatView, int, int, int]:
        """The seat's view, and the solver's state: the mover's sheet id, the opponent's, and
        the score difference (mover's total minus the opponent's)."""
        v = self.view(info)
        if v.sheets.shape[0] != 2:
            raise AgentError(f"{self.name} plays two-player games only; this game has {v.sheets.shape[0]} seat(s)")
        opp = 1 - v.seat
        totals = v.totals
        a = self.solver.sheet_id(self.rules, v.sheets[v.seat])
        b = self.solver.sheet_id(self.rules, v.sheets[opp])
        return v, a, b, int(totals[v.seat] - totals[opp])

    def action_values(self, info) -> np.ndarray:
        """P(win) + ½·P(draw) after each action (``-inf`` where not allowed)."""
        v, a, b, d = self.state(info)
        return self.solver.action_values(a, b, d, v.roll, v.rolls_left, v.locked)

    def act(self, observation, info) -> int:
        return best_legal(self.action_values(info), np.asarray(info["action_mask"]).astype(bool))
