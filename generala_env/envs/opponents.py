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
    from generala_env.envs import opponents
    def register():
        opponents.register("mine", MyAgent)   # MyAgent(rules=..., seed=...) has act(obs, info)

A factory is called as ``factory(rules=RuleSet, seed=int | None, **kwargs)`` and returns an
object with ``act(observation, info) -> action``. A name may also have a batched version for
:class:`generala_env.envs.vector.GeneralaVectorEnv`: ``batched(rules)`` returns a
:class:`generala_env.envs.vector.BatchedOpponent` that makes the same choices for many games at
once. Names that are not known in advance (a folder holding a checkpoint) come in through a
prefix (``"pool:DIR"``) or a resolver.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from generala_env.core.rules import load_rules
from generala_env.files.safe_yaml import short_repr
from generala_env.suggest import refusal

ENTRY_POINT_GROUP = "generala.agents"


class UnknownAgentError(ValueError):
    """An agent name that no registered package provides."""


@dataclass(frozen=True)
class Trust:
    """What an agent spec may make this process do, decided by who asked for it.

    - ``code``: import the module or run the Python file a spec names (``module:attr``,
      ``file.py:attr``), and consult the prefixes and resolvers other packages registered;
    - ``paths``: read an agent from a file or folder the spec names (a checkpoint folder,
      td-search values, ``pool:DIR``);
    - ``zip``: unpickle SB3 ``.zip`` files (a bare one, a run folder's, those of ``pool:DIR``
      without twins): unpickling runs any code the file holds, so this is asked for at each use
      (``--trust-zip``), never remembered. No folder is trusted for having been written by this
      program: a run's saves are read back from their twins of tensors (``NAME.safetensors``).

    Registered names (``generala agents`` lists them) need none of these.
    ``Trust.PROGRAM``: a command line or a Python caller (code and paths, no zip).
    ``Trust.WEB``: a request from a web page (registered names only).
    """

    code: bool = True
    paths: bool = True
    zip: bool = False

    PROGRAM: ClassVar[Trust]
    WEB: ClassVar[Trust]

    def with_zip(self, allowed: bool = True) -> Trust:
        """This trust, SB3 zips allowed too (``allowed``; else unchanged)."""
        return replace(self, zip=True) if allowed and not self.zip else self

    def trusts_zips_in(self, folder) -> bool:
        """Whether the ``.zip`` files in ``folder`` may be unpickled: only where zips were asked
        for at this use, whatever the folder."""
        return self.paths and self.zip


Trust.PROGRAM = Trust()
Trust.WEB = Trust(code=False, paths=False)


@dataclass(frozen=True)
class Entry:
    """A registered name: how to make the agent, and its batched version if it has one."""

    factory: Callable[..., Any]
    batched: Callable[[Any], Any] | None = None
    summary: str | Callable[[], str] = ""
    takes_trust: bool = False  # a prefix's factory called with trust=
    fits: Callable[[Any, int], str | None] | None = None


_names: dict[str, Entry] = {}
_prefixes: dict[str, Entry] = {}
_resolvers: list[tuple[Callable[..., Callable[..., Any] | None], bool]] = []  # (resolver, takes_trust)
_entry_points_loaded = False


def register(
    name: str,
    factory: Callable[..., Any],
    *,
    batched: Callable[[Any], Any] | None = None,
    summary: str | Callable[[], str] = "",
    fits: Callable[[Any, int], str | None] | None = None,
) -> None:
    """Make ``name`` known: ``factory(rules=..., seed=..., **kwargs)`` builds the agent.

    ``batched(rules)``, if given, builds a batched opponent that plays exactly as the agent
    does (the vector env uses it for the name, and for agents whose class is ``factory``).
    ``summary``: one line for listings, or a function that gives it. ``fits(rules,
    num_players)``, if given, says in one line why the agent cannot play such games, or
    returns ``None`` (see :func:`cannot_play`). Registering a name again replaces it.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"an agent name is a non-empty string, got {name!r}")
    if not callable(factory):
        raise TypeError(f"the factory of agent {name!r} must be callable, got {factory!r}")
    _names[name] = Entry(factory, batched, summary, fits=fits)


def register_prefix(prefix: str, factory: Callable[..., Any], *, summary: str = "", takes_trust: bool = False) -> None:
    """Names that start with ``prefix`` (such as ``"pool:"``) are built by
    ``factory(rest_of_the_name, rules=..., seed=..., **kwargs)``; with ``takes_trust``, by
    ``factory(rest_of_the_name, trust=Trust, rules=..., ...)``, which decides what the name
    may do. A prefix that does not take the trust is consulted only where it allows code."""
    if not isinstance(prefix, str) or not prefix:
        raise ValueError(f"a prefix is a non-empty string, got {prefix!r}")
    _prefixes[prefix] = Entry(factory, None, summary, takes_trust=takes_trust)


def register_resolver(resolver: Callable[..., Callable[..., Any] | None], *, takes_trust: bool = False) -> None:
    """``resolver(name)`` returns a factory for names that are neither registered nor
    prefixed (a checkpoint folder given by its path), or ``None``; with ``takes_trust``,
    ``resolver(name, trust)``, which may also refuse the name with an error of one line.
    A resolver that does not take the trust is consulted only where it allows code."""
    if all(r is not resolver for r, _ in _resolvers):
        _resolvers.append((resolver, takes_trust))


def unregister(name: str) -> None:
    """Forget ``name`` (nothing happens if it is not registered)."""
    _names.pop(name, None)


def unregister_prefix(prefix: str) -> None:
    """Forget ``prefix`` (nothing happens if it is not registered)."""
    _prefixes.pop(prefix, None)


def unregister_resolver(resolver: Callable[..., Callable[..., Any] | None]) -> None:
    """Forget ``resolver`` (nothing happens if it is not registered)."""
    _resolvers[:] = [(r, t) for r, t in _resolvers if r is not resolver]


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


def _find(name: str, trust: Trust) -> Callable[..., Any] | None:
    entry = _names.get(name)
    if entry is not None:
        return entry.factory
    if not (trust.code or trust.paths):  # registered names only
        return None
    for prefix, entry in _prefixes.items():
        if name.startswith(prefix) and (entry.takes_trust or trust.code):
            rest, factory = name[len(prefix) :], entry.factory
            if entry.takes_trust:
                return lambda **kwargs: factory(rest, trust=trust, **kwargs)
            return lambda **kwargs: factory(rest, **kwargs)
    for resolver, takes_trust in _resolvers:
        if takes_trust:
            found = resolver(name, trust)
        elif trust.code:
            found = resolver(name)
        else:
            continue
        if found is not None:
            return found
    return None


def _factory(name: str, trust: Trust) -> Callable[..., Any]:
    if not isinstance(trust, Trust):
        raise TypeError(f"trust is a generala_env.envs.opponents.Trust, got {short_repr(trust, 80)}")
    if not isinstance(name, str) or not name:
        raise UnknownAgentError(f"an agent is given by a non-empty name, got {short_repr(name, 80)}; known agents: {', '.join(names())}")
    factory = _find(name, trust)
    if factory is None and not _entry_points_loaded:
        load_entry_points()
        factory = _find(name, trust)
    if factory is None:
        known = names()
        raise UnknownAgentError(refusal(f"unknown agent {short_repr(name, 80)}", name, known, f"known agents: {', '.join(known)}"))
    return factory


def factory_of(name: str) -> Callable[..., Any] | None:
    """The factory registered under exactly ``name``, or ``None``."""
    entry = _names.get(name)
    return None if entry is None else entry.factory


def make(name: str, rules="classic", seed: int | None = None, *, trust: Trust = Trust.PROGRAM, **kwargs) -> Any:
    """The agent called ``name``, built for ``rules``, doing only what ``trust`` allows;
    :class:`UnknownAgentError` lists the known names when nobody provides it."""
    return _factory(name, trust)(rules=load_rules(rules), seed=seed, **kwargs)


def make_batched(name: str, rules="classic", *, trust: Trust = Trust.PROGRAM) -> Any | None:
    """The batched version of agent ``name`` for ``rules``, or ``None`` if it has none
    (an unknown name, or one ``trust`` refuses, is an error)."""
    if name not in _names:
        _factory(name, trust)  # loads the entry points if needed; raises for unknown names
    entry = _names.get(name)
    return entry.batched(load_rules(rules)) if entry is not None and entry.batched is not None else None


def cannot_play(name: str, rules, num_players: int) -> str | None:
    """Why the agent registered as ``name`` cannot play ``num_players``-player games of
    ``rules`` (one line), or ``None``: it can, or its package did not say (``fits``)."""
    entry = _names.get(name)
    if entry is None or entry.fits is None:
        return None
    return entry.fits(load_rules(rules), num_players)


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
    "Trust",
    "UnknownAgentError",
    "batched_version",
    "cannot_play",
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
    "unregister_resolver",
]
