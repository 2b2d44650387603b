"""Agents that play Generala: baselines, the exact optimal player, and trained PPO policies.

Every agent has ``act(observation, info) -> action`` and plays legal actions only::

    import agents
    greedy = agents.load("greedy", rules="classic")

Importing this package registers its agents by name in :mod:`generala_env.opponents`, where
the env finds its opponents (``gym.make("Generala-v0", num_players=2, opponents="greedy")``);
the installed project declares this package under the entry-point group ``generala.agents``,
so the env finds them without anyone importing it first.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from generala_env import __version__, opponents

from . import specs
from .base import Agent, AgentError, SeatView
from .baselines import GreedyAgent, RandomAgent, RulesOfThumbAgent, TurnOptimalAgent
from .loader import describe, load, names
from .optimal import OptimalAgent, OptimalTwoPlayerAgent

BUILTIN = {cls.name: cls for cls in (RandomAgent, GreedyAgent, TurnOptimalAgent, RulesOfThumbAgent, OptimalAgent, OptimalTwoPlayerAgent)}


# -- registration in generala_env.opponents -----------------------------------------------------
def _batched_greedy(rules):
    from .batched import BatchedGreedy  # numba loops, loaded when a vector env plays greedy

    return BatchedGreedy(rules)


def _batched_random(rules):
    from generala_env.vector import BatchedRandom  # the vector env's own uniform draw

    return BatchedRandom()


def _checkpoint(path, rules="classic", seed: int | None = None, **kwargs):
    from .ppo import PPOAgent

    return PPOAgent(path, rules=rules, seed=seed, **kwargs)


def _pool(pool_dir: str, rules="classic", seed: int | None = None, **kwargs):
    from .ppo import PoolAgent

    return PoolAgent(pool_dir, rules=rules, seed=seed, **kwargs)


def _checkpoint_folder(name: str):
    """A factory for a checkpoint folder given by its path, or ``None``."""
    from .ppo import find_checkpoint

    path = find_checkpoint(name)
    return None if path is None else partial(_checkpoint, path)


def _td_search_folder(name: str):
    """A factory for a folder of td-search values (``python -m training.td_search --out``), or ``None``."""
    from .td_search import folder_agent

    cls = folder_agent(name)
    return None if cls is None else partial(cls, folder=Path(name))


def _register() -> None:
    from .ppo import SHIPPED, checkpoint_line, checkpoint_names

    batched = {"random": _batched_random, "greedy": _batched_greedy}
    for name, cls in BUILTIN.items():
        opponents.register(name, cls, batched=batched.get(name), summary=(cls.__doc__ or "").strip().splitlines()[0])
    for name in checkpoint_names():
        opponents.register(name, partial(_checkpoint, SHIPPED / name), summary=partial(checkpoint_line, name))
    from .td_search import TDSearchAgent, TDSearchTwoPlayerAgent  # values learned from their own games (checkpoints/td-search*)

    for search in (TDSearchAgent, TDSearchTwoPlayerAgent):
        opponents.register(search.name, search, summary=(search.__doc__ or "").strip().splitlines()[0])
    opponents.register_prefix("pool:", _pool, summary="self-play: each game one of the newest step_N.zip of a training run's folder")
    opponents.register_resolver(_checkpoint_folder)
    opponents.register_resolver(_td_search_folder)
    opponents.register_resolver(specs.resolver)  # module:attr, file.py:attr; refuses a .zip


_register()

__all__ = ["__version__", "Agent", "AgentError", "SeatView", "load", "names", "describe", "specs", "BUILTIN"]
