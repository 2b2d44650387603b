"""Agents that play Generala: baselines, the exact optimal player, and trained PPO policies.

Every agent has ``act(observation, info) -> action`` and plays legal actions only::

    import generala_agents as agents
    greedy = agents.load("greedy", rules="classic")

Importing this package registers its agents by name in :mod:`generala_env.envs.opponents`, where
the env finds its opponents (``gym.make("Generala-v0", num_players=2, opponents="greedy")``);
the installed project declares this package under the entry-point group ``generala.agents``,
so the env finds them without anyone importing it first.

Who asks decides what a spec may do (:class:`Trust`): ``agents.load`` gives a command line
or a Python caller code and folders (an SB3 zip only with ``trust_zip=True``); the browser
game asks with ``Trust.WEB``, registered names only.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from generala_env import __version__
from generala_env.envs import opponents
from generala_env.envs.opponents import Trust

from . import run_folder, specs
from .base import Agent, AgentError, SeatView
from .baselines import GreedyAgent, RandomAgent, RulesOfThumbAgent, TurnOptimalAgent
from .loader import describe, load, names
from .optimal import OptimalAgent, OptimalTwoPlayerAgent

BUILTIN = {cls.name: cls for cls in (RandomAgent, GreedyAgent, TurnOptimalAgent, RulesOfThumbAgent, OptimalAgent, OptimalTwoPlayerAgent)}


# -- registration in generala_env.envs.opponents -----------------------------------------------------
def _batched_greedy(rules):
    from .batched import BatchedGreedy  # numba loops, loaded when a vector env plays greedy

    return BatchedGreedy(rules)


def _batched_random(rules):
    from generala_env.envs.vector import BatchedRandom  # the vector env's own uniform draw

    return BatchedRandom()


def _checkpoint(path, rules="classic", seed: int | None = None, **kwargs):
    from .ppo import PPOAgent

    return PPOAgent(path, rules=rules, seed=seed, **kwargs)


def _pool(pool_dir: str, trust: Trust, rules="classic", seed: int | None = None, **kwargs):
    from .ppo import PoolAgent

    if not trust.paths:
        raise AgentError(f"agent 'pool:{pool_dir}' names a folder, which is not taken here: name a listed agent")
    return PoolAgent(pool_dir, rules=rules, seed=seed, trust_zip=trust.trusts_zips_in(pool_dir), **kwargs)


def _checkpoint_folder(name: str, trust: Trust):
    """A factory for a checkpoint folder given by its path (where ``trust`` allows paths), or ``None``."""
    from .ppo import find_checkpoint

    path = find_checkpoint(name) if trust.paths else None
    return None if path is None else partial(_checkpoint, path)


def _td_search_folder(name: str, trust: Trust):
    """A factory for a folder of td-search values (``python -m generala_training.td_search --out``), or ``None``."""
    from .td_search import folder_agent

    cls = folder_agent(name) if trust.paths else None
    return None if cls is None else partial(cls, folder=Path(name))


def _any_game(rules, num_players: int) -> str | None:
    return None


def _two_players_only(name: str):
    def fits(rules, num_players: int) -> str | None:
        return None if num_players == 2 else f"{name} plays two-player games only, not {num_players}-player ones"

    return fits


def _table_of_two_to_six(name: str):
    def fits(rules, num_players: int) -> str | None:
        return None if 2 <= num_players <= 6 else f"{name} plays tables of 2 to 6 players, not {num_players}"

    return fits


def _td_search_fits(name: str, players: int | None):
    """Whether the shipped td-search values fit: their rules, and ``players`` where they need it."""

    def fits(rules, num_players: int) -> str | None:
        from .td_search import read_values, trained_fingerprint

        if players is not None and num_players != players:
            return f"{name} plays {players}-player games, not {num_players}-player ones"
        try:
            data = read_values(name)
            same = trained_fingerprint(data) == rules.fingerprint()
        except (AgentError, KeyError, TypeError) as e:
            return str(e)
        return None if same else f"{name} learned its values under rules {data.get('rules_name')!r}, not {rules.name!r}"

    return fits


def _register() -> None:
    from .ppo import SHIPPED, checkpoint_fits, checkpoint_line, checkpoint_names

    batched = {"random": _batched_random, "greedy": _batched_greedy}
    for name, cls in BUILTIN.items():
        fits = _two_players_only(name) if cls is OptimalTwoPlayerAgent else _any_game  # the others play any rules, at any table
        opponents.register(name, cls, batched=batched.get(name), summary=(cls.__doc__ or "").strip().splitlines()[0], fits=fits)
    for name in checkpoint_names():
        opponents.register(name, partial(_checkpoint, SHIPPED / name), summary=partial(checkpoint_line, name), fits=partial(checkpoint_fits, SHIPPED / name))
    from .win_max import WinMaxAgent  # the one-player solver's tables, and distributions built from them

    opponents.register(WinMaxAgent.name, WinMaxAgent, summary=(WinMaxAgent.__doc__ or "").strip().splitlines()[0], fits=_table_of_two_to_six(WinMaxAgent.name))
    from .td_search import TDSearchAgent, TDSearchTwoPlayerAgent  # values learned from their own games (checkpoints/td-search*)

    for search, players in ((TDSearchAgent, None), (TDSearchTwoPlayerAgent, 2)):  # one-player values play any table, as optimal does
        summary = (search.__doc__ or "").strip().splitlines()[0]
        opponents.register(search.name, search, summary=summary, fits=_td_search_fits(search.name, players))
    opponents.register_prefix("pool:", _pool, summary="self-play: each game one of the newest step_N.zip of a training run's folder", takes_trust=True)
    opponents.register_resolver(_checkpoint_folder, takes_trust=True)
    opponents.register_resolver(_td_search_folder, takes_trust=True)
    opponents.register_resolver(run_folder.resolver, takes_trust=True)  # a training run's folder
    opponents.register_resolver(specs.resolver, takes_trust=True)  # module:attr, file.py:attr, an SB3 .zip where trusted


_register()

__all__ = ["__version__", "Agent", "AgentError", "SeatView", "Trust", "load", "names", "describe", "specs", "BUILTIN"]
