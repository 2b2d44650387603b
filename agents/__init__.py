"""Agents that play Generala: baselines, the exact optimal player, and trained PPO policies.

Every agent has ``act(observation, info) -> action`` and plays legal actions only::

    import agents
    greedy = agents.load("greedy", rules="classic")
"""

from __future__ import annotations

import os

from generala_env import __version__

from .base import Agent, AgentError, SeatView
from .baselines import GreedyAgent, RandomAgent, RulesOfThumbAgent, TurnOptimalAgent
from .optimal import OptimalAgent

BUILTIN = {
    cls.name: cls for cls in (RandomAgent, GreedyAgent, TurnOptimalAgent, RulesOfThumbAgent, OptimalAgent)
}


def names() -> list[str]:
    """Every agent name ``load`` accepts: the built-in agents, then shipped checkpoints."""
    from .ppo import checkpoint_names

    return list(BUILTIN) + checkpoint_names()


def describe() -> dict[str, str]:
    from .ppo import checkpoint_summary

    out = {n: (c.__doc__ or "").strip().splitlines()[0] for n, c in BUILTIN.items()}
    out.update(checkpoint_summary())
    return out


def load(name: str, rules="classic", seed: int | None = None, **kwargs) -> Agent:
    """An agent by name (see :func:`names`), or a PPO checkpoint by folder path."""
    if isinstance(name, Agent):
        return name
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str) or not name:
        raise AgentError(f"an agent is given by a non-empty name or a checkpoint folder path, got {name!r}; known agents: {', '.join(names())}")
    if name in BUILTIN:
        return BUILTIN[name](rules=rules, seed=seed, **kwargs)
    from .ppo import PoolAgent, PPOAgent, find_checkpoint

    if isinstance(name, str) and name.startswith("pool:"):
        return PoolAgent(name[len("pool:") :], rules=rules, seed=seed, **kwargs)

    path = find_checkpoint(name)
    if path is None:
        raise AgentError(f"unknown agent {name!r}; known agents: {', '.join(names())}")
    return PPOAgent(path, rules=rules, seed=seed, **kwargs)


__all__ = ["__version__", "Agent", "AgentError", "SeatView", "load", "names", "describe", "BUILTIN"]
