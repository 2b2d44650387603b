"""Agents by name or spec: :func:`load`, and the names it knows (the registry in
:mod:`generala_env.envs.opponents`, which this package fills when it is imported).

:func:`load` is the one door from a string to an agent: every program, the env's
``opponents=``, the self-play pool and the browser game come through it or through the
registry it fills, each with the :class:`Trust` of who asked.

Its own module so that agents which load others (the self-play pool's fallback) need not
import the package that registers them.
"""

from __future__ import annotations

import os

from generala_env.envs import opponents
from generala_env.envs.opponents import Trust
from generala_env.files.safe_yaml import short_repr
from generala_env.suggest import closest

from . import specs
from .base import Agent, AgentError


def names() -> list[str]:
    """Every agent name ``load`` accepts: the built-in agents, the shipped checkpoints, then
    the agents other installed packages register."""
    return opponents.names()


def describe() -> dict[str, str]:
    """Each agent name with one line about it."""
    return opponents.describe()


def load(name, rules="classic", seed: int | None = None, *, trust_zip: bool = False, trust: Trust | None = None, **kwargs) -> Agent:
    """An agent from a spec (see :mod:`generala_agents.specs`): a registered name (:func:`names`), a
    checkpoint folder, ``pool:DIR``, ``module:attr``, ``path/to/file.py:attr``, or an SB3
    ``.zip`` with ``trust_zip=True`` (loading a zip runs the code inside it). An object
    with ``act(observation, info)``, or a factory, is taken as it is.

    ``trust`` is who asks (default ``Trust.PROGRAM``: code and folders, no zip);
    ``trust_zip=True`` adds the zips to it, for this call only. ``Trust.WEB`` takes registered
    names only. Every wrong spec is an :class:`AgentError` of one line."""
    policy = (Trust.PROGRAM if trust is None else trust).with_zip(trust_zip)
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str):
        if name is None or isinstance(name, (bytes, int, float)):
            raise AgentError(f"an agent is given by a non-empty name or spec, got {short_repr(name, 80)}; known agents: {', '.join(names())}")
        return specs.as_agent(name, rules=rules, seed=seed, **kwargs)
    if not name:
        raise AgentError(f"an agent is given by a non-empty name or spec; known agents: {', '.join(names())}")
    try:
        return opponents.make(name, rules=rules, seed=seed, trust=policy, **kwargs)
    except opponents.UnknownAgentError as e:
        if not (policy.code or policy.paths):
            raise AgentError(str(e)) from None
        where = specs.no_agent_at(name) if policy.paths else None
        if where is not None:  # a path: what is (not) there, not the list of names
            raise AgentError(where) from None
        if closest(name, names()) is not None:  # the name meant is said: no list of spec forms after it
            raise AgentError(str(e)) from None
        raise AgentError(f"{e}; or a spec: {specs.HELP}") from None
