"""Agents by name or spec: :func:`load`, and the names it knows (the registry in
:mod:`generala_env.opponents`, which this package fills when it is imported).

Its own module so that agents which load others (the self-play pool's fallback) need not
import the package that registers them.
"""

from __future__ import annotations

import os

from generala_env import opponents

from . import specs
from .base import Agent, AgentError


def names() -> list[str]:
    """Every agent name ``load`` accepts: the built-in agents, the shipped checkpoints, then
    the agents other installed packages register."""
    return opponents.names()


def describe() -> dict[str, str]:
    """Each agent name with one line about it."""
    return opponents.describe()


def load(name, rules="classic", seed: int | None = None, *, trust_zip: bool = False, **kwargs) -> Agent:
    """An agent from a spec (see :mod:`agents.specs`): a registered name (:func:`names`), a
    checkpoint folder, ``pool:DIR``, ``module:attr``, ``path/to/file.py:attr``, or an SB3
    ``.zip`` with ``trust_zip=True`` (loading a zip runs the code inside it). An object
    with ``act(observation, info)``, or a factory, is taken as it is.

    Every wrong spec is an :class:`AgentError` of one line."""
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str):
        if name is None or isinstance(name, (bytes, int, float)):
            raise AgentError(f"an agent is given by a non-empty name or spec, got {name!r}; known agents: {', '.join(names())}")
        return specs.as_agent(name, rules=rules, seed=seed, **kwargs)
    if not name:
        raise AgentError(f"an agent is given by a non-empty name or spec; known agents: {', '.join(names())}")
    if specs.is_zip(name):
        if not os.path.isfile(name):
            raise AgentError(f"agent {name!r}: there is no file {name}")
        if not trust_zip:
            raise specs.zip_refused(name)
        from .sb3_zip import SB3ZipAgent

        return SB3ZipAgent(name, rules=rules, seed=seed, **kwargs)
    try:
        return opponents.make(name, rules=rules, seed=seed, **kwargs)
    except opponents.UnknownAgentError as e:
        raise AgentError(f"{e}; or a spec: {specs.HELP}") from None
