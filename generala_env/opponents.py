"""Opponents by name: a registry that agent packages fill, so that the env never imports them.

The env plays the other seats with agents it knows only by name (``opponents="greedy"``).
Packages that provide agents register them here: the project's ``agents`` package when it
is imported, and any installed package through the entry-point group ``generala.agents``.
Entry points are loaded the first time a name is asked for that nobody has registered
(and by :func:`names`)::

    # pyproject.toml of a package with agents
    [project.entry-points."generala.agents"]
    mine = "my_agents.generala:register"   # a function called with no arguments, or a module

    # my_agents/generala.py
    from generala_env import opponents

    def register():
        opponents.register("mine", MyAgent)   # MyAgent(rules=..., seed=...) has act(obs, info)

A factory is called as ``factory(rules=RuleSet, seed=int | None, **kwargs)`` and returns an
object with ``act(observation, info) -> action``. A name may also have a batched version for
:class:`generala_env.vector.GeneralaVectorEnv`: ``batched(rules)`` returns a
:class:`generala_env.vector.BatchedOpponent` that makes the same choices for many games at
once. Names that are not known in advance (a folder holding a checkpoint) come in through a
prefix (``"pool:DIR"``) or a resolver.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .rules import load_rules

ENTRY_POINT_GROUP = "generala.agents"


class UnknownAgentError(ValueError):
    """An agent name that no registered package provides."""


@dataclass(frozen=True)
class Entry:
    """A registered name: how to make the agent, and its batched version if it has one."""

    factory: Callable[..., Any]
    batched: Callable[[Any], Any] | None = None
    summary: str | Callable[[], str] = ""


_names: dict[str, Entry] = {}
_prefixes: dict[str, Entry] = {}
_resolvers: list[Callable[[str], Callable[..., Any] | None]] = []
_entry_points_loaded = False


def register(name: str, factory: Callable[..., Any], *, batched: Callable[[Any], Any] | None = None, summary: str | Callable[[], str] = "") -> None:
    """Make ``name`` known: ``factory(rules=..., seed=..., **kwargs)`` builds the agent.

    ``batched(rules)``, if given, builds a batched opponent that plays exactly as the agent
    does (the vector env uses it for the name, and for agents whose class is ``factory``).
    ``summary``: one line for listings, or a function that gives it. Registering a name
    again replaces it.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"an agent name is a non-empty string, got {name!r}")
    if not callable(factory):
        raise TypeError(f"the factory of agent {name!r} must be callable, got {factory!r}")
    _names[name] = Entry(factory, batched, summary)


def register_prefix(prefix: str, factory: Callable[..., Any], *, summary: str = "") -> None:
    """Names that start with ``prefix`` (such as ``"pool:"``) are built by
    ``factory(rest_of_the_name, rules=..., seed=..., **kwargs)``."""
    if not isinstance(prefix, str) or not prefix:
        raise ValueError(f"a prefix is a non-empty string, got {prefix!r}")
    _prefixes[prefix] = Entry(factory, None, summary)


def register_resolver(resolver: Callable[[str], Callable[..., Any] | None]) -> None:
    """``resolver(name)`` returns a factory for names that are neither registered nor
    prefixed (a checkpoint folder given by its path), or ``None``."""
    if resolver not in _resolvers:
        _resolvers.append(resolver)


def unregister(name: str) -> None:
    """Forget ``name`` (nothing happens if it is not registered)."""
    _names.pop(name, None)


def unregister_prefix(prefix: str) -> None:
    """Forget ``prefix`` (nothing happens if it is not registered)."""
    _prefixes.pop(prefix, None)


def load_entry_points() -> None:
    """Load the ``generala.agents`` entry points of the installed packages, once.

    Each names a module (importing it registers its agents) or a function to call with no
    arguments. One that fails is reported with a warning and skipped.
    """
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import distributions

    # every distribution on the path, not only the first of each name (what entry_points()
    # reads): a stale egg-info in a checkout must not hide the installed metadata
    seen = set()
    for ep in (ep for dist in distributions() for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP):
        if ep.value in seen:  # one package seen twice on the path
            continue
        seen.add(ep.value)
        try:
            hook = ep.load()
            if callable(hook):
                hook()
        except Exception as e:  # a broken plug-in must not take the other agents down
            warnings.warn(f"{ENTRY_POINT_GROUP} entry point {ep.name!r} ({ep.value}) failed: {type(e).__name__}: {e}", stacklevel=2)


def _find(name: str) -> Callable[..., Any] | None:
    entry = _names.get(name)
    if entry is not None:
        return entry.factory
    for prefix, entry in _prefixes.items():
        if name.startswith(prefix):
            rest, factory = name[len(prefix) :], entry.factory
            return lambda **kwargs: factory(rest, **kwargs)
    for resolver in _resolvers:
        found = resolver(name)
        if found is not None:
            return found
    return None


def _factory(name: str) -> Callable[..., Any]:
    if not isinstance(name, str) or not name:
        raise UnknownAgentError(f"an agent is given by a non-empty name, got {name!r}; known agents: {', '.join(names())}")
    factory = _find(name)
    if factory is None and not _entry_points_loaded:
        load_entry_points()
        factory = _find(name)
    if factory is None:
        raise UnknownAgentError(f"unknown agent {name!r}; known agents: {', '.join(names())}")
    return factory


def factory_of(name: str) -> Callable[..., Any] | None:
    """The factory registered under exactly ``name``, or ``None``."""
    entry = _names.get(name)
    return None if entry is None else entry.factory


def make(name: str, rules="classic", seed: int | None = None, **kwargs) -> Any:
    """The agent called ``name``, built for ``rules``; :class:`UnknownAgentError` lists the
    known names when nobody provides it."""
    return _factory(name)(rules=load_rules(rules), seed=seed, **kwargs)


def make_batched(name: str, rules="classic") -> Any | None:
    """The batched version of agent ``name`` for ``rules``, or ``None`` if it has none
    (an unknown name is an :class:`UnknownAgentError`)."""
    if name not in _names:
        _factory(name)  # loads the entry points if needed; raises for unknown names
    entry = _names.get(name)
    return entry.batched(load_rules(rules)) if entry is not None and entry.batched is not None else None


def batched_version(agent: Any) -> Any | None:
    """A batched opponent that plays as ``agent`` does, or ``None``: only for an agent whose
    class (exactly: a subclass may choose differently) is a registered factory with a
    batched version."""
    for entry in list(_names.values()):
        if entry.batched is not None and type(agent) is entry.factory:
            return entry.batched(agent.rules)
    return None


def names() -> list[str]:
    """Every registered name, in the order registered (entry points loaded first)."""
    load_entry_points()
    return list(_names)


def describe() -> dict[str, str]:
    """Each registered name with its one-line summary."""
    load_entry_points()
    return {name: (e.summary() if callable(e.summary) else e.summary) for name, e in _names.items()}


__all__ = [
    "ENTRY_POINT_GROUP",
    "UnknownAgentError",
    "batched_version",
    "describe",
    "factory_of",
    "load_entry_points",
    "make",
    "make_batched",
    "names",
    "register",
    "register_prefix",
    "register_resolver",
    "unregister",
    "unregister_prefix",
]
