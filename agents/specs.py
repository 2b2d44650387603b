"""Agent specs: every way of naming an agent that :func:`agents.load` and the programs accept.

A spec is one of:

- a registered name (``greedy``, ``optimal``, ``ppo-classic``; ``generala agents`` lists them);
- a checkpoint folder made by ``generala export`` (``exports/my-agent``), or ``pool:DIR``;
- a training run's folder (``runs/NAME``, made by ``generala train``): its best model (else its
  final, else its latest), an SB3 zip, with ``trust_zip=True``; without it, the checkpoint
  folder exported into the run (``generala export RUN --name N --dest RUN``), if it holds one;
- ``module:attr`` or ``path/to/file.py:attr``, where ``attr`` is an object with
  ``act(observation, info) -> action``, a factory called as ``attr(rules=..., seed=...)``
  that returns one, or a plain function ``act(observation, info) -> action``;
- a stable-baselines3 / sb3-contrib ``.zip``, only with ``trust_zip=True`` (``--trust-zip``):
  loading a zip unpickles it, and unpickling runs whatever code the file holds.

What a spec may do is decided by who asks (:class:`agents.Trust`): a command line or a Python
caller may name code and folders, a zip only when asked for at that use; a web request names
only registered agents.

Every wrong spec is an :class:`~generala_agents.base.AgentError` of one line that names it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path
from typing import Any

from generala_env.envs.opponents import Trust

from .base import Agent, AgentError

# one text for every program's --agents / --agent help
HELP = (
    "an agent spec: a registered name (see `generala agents`), a checkpoint folder, a training run's folder (with --trust-zip), "
    "module:attr or path/to/file.py:attr (an object with act(observation, info), a factory attr(rules=..., seed=...), "
    "or a function act(observation, info) -> action), or an SB3 .zip with --trust-zip"
)
TRUST_ZIP_HELP = (
    "allow stable-baselines3 .zip files as agents. Loading a zip unpickles it, which runs any code inside it: "
    "use it only for files you trust. Asked for at every use, never remembered"
)

_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_ATTR = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def is_zip(spec: str) -> bool:
    return isinstance(spec, str) and spec.lower().endswith(".zip")


def zip_refused(spec: str) -> AgentError:
    return AgentError(
        f"agent {spec!r} is an SB3 .zip, and loading one unpickles it, which runs any code inside it: "
        "pass --trust-zip (Python: trust_zip=True) if you trust the file; the safe route is a checkpoint folder "
        "of plain tensors, which `generala export RUN --name NAME` makes from a `generala train` run"
    )


def require_trusted_zip(path, trust: Trust) -> None:
    """Refuse, in one line naming ``--trust-zip``, to unpickle the SB3 zip ``path`` unless
    ``trust`` allows zips (``--trust-zip`` at this use): what every route that opens a zip asks first."""
    if not os.path.isfile(path):
        raise AgentError(f"agent {os.fspath(path)!r}: there is no file {os.fspath(path)}")
    if not trust.trusts_zips_in(os.path.dirname(os.path.abspath(path))):
        raise zip_refused(os.fspath(path))


def looks_like_path(spec: str) -> bool:
    """Whether ``spec`` names a file or folder rather than an agent: it has a path separator,
    starts with ``.`` or ``~``, or is there."""
    seps = [s for s in (os.sep, os.altsep) if s]
    return any(s in spec for s in seps) or spec.startswith((".", "~")) or os.path.lexists(spec)


def no_agent_at(spec: str) -> str | None:
    """The one line for a path-like ``spec`` that no resolver took (see :func:`looks_like_path`):
    nothing there ("no such folder"), a file, or a folder that holds no agent; else ``None``."""
    if not looks_like_path(spec):
        return None
    path = os.path.expanduser(spec)
    if not os.path.lexists(path):
        return f"agent {spec!r}: no such folder {path}"
    if not os.path.isdir(path):
        return (
            f"agent {spec!r}: {path} is a file, not an agent's folder (a checkpoint folder made by generala export, or a training run's); "
            "Python code is named path/to/file.py:attr"
        )
    return (
        f"agent {spec!r}: the folder {path} holds no agent: neither a checkpoint (made by generala export), "
        "a training run (made by generala train) nor td-search values"
    )


def split(spec: str) -> tuple[str, str] | None:
    """``(module or file, attr)`` of a ``module:attr`` or ``file.py:attr`` spec, else ``None``."""
    if not isinstance(spec, str) or ":" not in spec:
        return None
    where, attr = spec.rsplit(":", 1)
    if not where or not _ATTR.match(attr):
        return None
    if where.endswith(".py") or _MODULE.match(where):
        return where, attr
    return None


MAX_SOURCE_BYTES = 16 << 20  # an agent's Python file: a few kilobytes; refused past 16 MiB


def _import_file(path: str, spec: str):
    """The module of the Python file ``path``, run once. Its source is read by the one reader of
    files (:func:`generala_env.files.read_regular`: a regular file, bounded; a FIFO, a device or a
    ``/proc`` file is one line) and run from those bytes, never read again by the import system."""
    from generala_env.files import FileProblem, read_regular

    file = Path(path).expanduser()
    if not os.path.lexists(file):
        raise AgentError(f"agent spec {spec!r}: there is no file {path}")
    file = file.resolve()
    name = "_generala_agent_" + hashlib.sha1(str(file).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    try:
        source = read_regular(file, MAX_SOURCE_BYTES, f"agent spec {spec!r}: the file", links=True)
    except FileProblem as e:
        raise AgentError(str(e)) from None
    loader_spec = importlib.util.spec_from_file_location(name, file)
    if loader_spec is None:
        raise AgentError(f"agent spec {spec!r}: {path} cannot be imported as Python")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    try:
        exec(compile(source, str(file), "exec"), module.__dict__)  # noqa: S102 - the caller named this file to run (Trust.code)
    except BaseException as e:
        del sys.modules[name]
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise AgentError(f"agent spec {spec!r}: running {path} failed: {type(e).__name__}: {e}") from None
    return module


def _import_module(where: str, spec: str):
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:  # as `python -m` would: the current folder's modules too
        sys.path.append(cwd)
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as e:
        if e.name is not None and (where == e.name or where.startswith(e.name + ".")):
            raise AgentError(f"agent spec {spec!r}: no module named {e.name!r} (is it installed, or on the path?)") from None
        raise AgentError(f"agent spec {spec!r}: importing {where} failed: {type(e).__name__}: {e}") from None
    except Exception as e:  # noqa: BLE001 - the user's module: any error it raises is reported in one line
        raise AgentError(f"agent spec {spec!r}: importing {where} failed: {type(e).__name__}: {e}") from None


def find(spec: str) -> Any:
    """The object a ``module:attr`` or ``file.py:attr`` spec names."""
    parts = split(spec)
    if parts is None:
        raise AgentError(f"agent spec {spec!r} is not module:attr or path/to/file.py:attr")
    where, attr = parts
    obj = _import_file(where, spec) if where.endswith(".py") else _import_module(where, spec)
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AgentError(f"agent spec {spec!r}: {where} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


class ExternalAgent(Agent):
    """An agent from outside the project: its ``act`` checked to return an action number.

    ``reset(seed)`` is passed on when the wrapped object has one.
    """

    def __init__(self, act, rules="classic", seed: int | None = None, name: str = "external", source: Any = None):
        super().__init__(rules, seed)
        self.name = name
        self._act = act
        self._source = source

    def reset(self, seed: int | None = None) -> None:
        reset = getattr(self._source, "reset", None)
        if callable(reset):
            reset(seed=seed)

    def act(self, observation, info) -> int:
        a = self._act(observation, info)
        try:
            action = int(a)
        except (TypeError, ValueError):
            raise AgentError(f"agent {self.name!r}: act() returned {_short(a)}, not an action number") from None
        if action != a and not (hasattr(a, "dtype") and getattr(a, "size", 1) == 1):
            raise AgentError(f"agent {self.name!r}: act() returned {_short(a)}, not a whole action number")
        return action


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _takes_rules(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "rules" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def as_agent(obj: Any, rules="classic", seed: int | None = None, name: str | None = None, **kwargs) -> Agent:
    """An :class:`Agent` from an object with ``act``, a factory, or a function ``act(observation, info)``."""
    label = name or getattr(obj, "name", None) or getattr(obj, "__name__", None) or type(obj).__name__
    if isinstance(obj, Agent):
        return obj
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "act") and _takes_rules(obj)):
        # a factory takes rules= and seed=; a class whose constructor takes neither is made with none
        args = {"rules": rules, "seed": seed, **kwargs} if _takes_rules(obj) or kwargs else {}
        try:
            made = obj(**args)
        except AgentError:
            raise
        except Exception as e:  # noqa: BLE001 - the user's factory: reported in one line
            call = f"{label}(rules=..., seed=...)" if args else f"{label}()"
            raise AgentError(f"agent {label!r}: {call} failed: {type(e).__name__}: {e}") from None
        if made is None or not callable(getattr(made, "act", None)):
            raise AgentError(f"agent {label!r}: its factory returned {_short(made)}, which has no act(observation, info)")
        return made if isinstance(made, Agent) else ExternalAgent(made.act, rules, seed, name=str(label), source=made)
    act = getattr(obj, "act", None)
    if callable(act):
        return ExternalAgent(act, rules, seed, name=str(label), source=obj)
    if callable(obj):
        return ExternalAgent(obj, rules, seed, name=str(label))
    raise AgentError(
        f"agent {label!r} is {_short(obj)}, not an agent: give an object with act(observation, info), "
        "a factory called as f(rules=..., seed=...), or a function act(observation, info) -> action"
    )


def resolver(spec: str, trust: Trust = Trust.PROGRAM):
    """The registry's resolver for specs that are not names: ``module:attr`` and
    ``file.py:attr`` where ``trust`` allows code, an SB3 ``.zip`` where it allows that zip
    (else refused in one line naming ``--trust-zip``), a training run's folder where it
    or ``None`` (a training run's folder is :mod:`generala_agents.run_folder`'s)."""
    if is_zip(spec):
        if not trust.paths:
            return None
        require_trusted_zip(spec, trust)

        def open_zip(rules="classic", seed: int | None = None, **kwargs):
            from .sb3_zip import SB3ZipAgent

            return SB3ZipAgent(spec, rules=rules, seed=seed, **kwargs)

        return open_zip
    parts = split(spec)
    if parts is None:
        return None
    if not trust.code or (parts[0].endswith(".py") and not trust.paths):
        raise AgentError(f"agent spec {spec!r} names Python code to run, which is not taken here: name a listed agent")

    def factory(rules="classic", seed: int | None = None, **kwargs):
        return as_agent(find(spec), rules=rules, seed=seed, name=spec, **kwargs)

    return factory


def portable(spec: Any) -> bool:
    """Whether a fresh Python process builds the same agent from ``spec``: a string that names
    nothing defined only in this process (``__main__``, or a name registered at run time there)."""
    if not isinstance(spec, str):
        return False
    parts = split(spec)
    if parts is not None:
        return parts[0] != "__main__"
    from generala_env.envs import opponents

    factory = opponents.factory_of(spec)
    if factory is None:
        return True  # a folder, a prefix or a resolver: rebuilt from the text alone
    module = getattr(factory, "__module__", None) or getattr(getattr(factory, "func", None), "__module__", None)
    return module is not None and module != "__main__"
