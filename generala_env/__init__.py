"""Generala, the five-dice game, as a Gymnasium environment.

``import generala_env`` registers ``Generala-v0``::

    import gymnasium as gym, generala_env
    env = gym.make("Generala-v0", rules="classic")
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

from gymnasium.envs.registration import register, registry

__version__ = "0.2.0"

from generala_env.core.checks import NotAnActionError
from generala_env.core.encoding import LAYOUT_VERSION, Encoder, observation_layout, observation_size
from generala_env.core.game import OPEN, Game, IllegalActionError, Outcome
from generala_env.core.info import points_now
from generala_env.core.rules import RulesError, RuleSet, load_rules, preset_names
from generala_env.core.scoring import line_points, points_table

ENV_ID = "Generala-v0"

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="generala_env.envs.env:GeneralaEnv", vector_entry_point="generala_env.envs.vector:GeneralaVectorEnv")


# where each module of 0.2.0 lives now; the old path still imports, with a DeprecationWarning,
# until the next release
MOVED = {
    "batched": "compiled.batched", "cache": "files.cache", "checks": "core.checks", "compiling": "compiled.compiling",
    "dice": "core.dice", "dice_stream": "compiled.dice_stream", "drawing_process": "rendering.drawing_process",
    "encoding": "core.encoding", "engine": "core.engine", "env": "envs.env", "env_core": "envs.env_core",
    "env_loops": "compiled.env_loops", "episode": "envs.episode", "file_io": "files.file_io", "folders": "files.folders",
    "game": "core.game", "game_dice": "core.game_dice", "game_facts": "core.game_facts", "game_states": "core.game_states",
    "info": "core.info", "jax_env": "jax.env", "jax_picture": "jax.picture", "jax_rules": "jax.rules", "model": "planning.model", "mp4": "rendering.mp4",
    "multiagent": "envs.multiagent", "numba_cache": "compiled.numba_cache", "observe": "core.observe",
    "one_game": "compiled.one_game", "openspiel": "adapters.openspiel", "opponents": "envs.opponents",
    "outcome": "core.outcome", "picture": "rendering.picture", "planner": "planning.planner", "render": "rendering.render",
    "rules": "core.rules", "safe_yaml": "files.safe_yaml", "sb3": "adapters.sb3", "scoring": "core.scoring",
    "vector": "envs.vector", "vector_opponents": "envs.vector_opponents", "video": "rendering.video",
}  # fmt: skip


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import generala_env.OLD`` for a module that moved (:data:`MOVED`): a module holding the
    new module's names, and a :class:`DeprecationWarning` saying where it lives now."""

    def find_spec(self, fullname, path=None, target=None):
        head, _, old = fullname.partition(".")
        if head == __name__ and old in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        new = f"{__name__}.{MOVED[module.__name__.partition('.')[2]]}"
        # stacklevel 2: the import's line (the warnings module passes over importlib's own frames)
        warnings.warn(f"{module.__name__} moved to {new}; the old name goes in the next release", DeprecationWarning, stacklevel=2)
        real = importlib.import_module(new)
        module.__dict__.update({k: v for k, v in vars(real).items() if not k.startswith("__") or k in ("__all__", "__doc__")})


sys.meta_path.insert(0, _MovedModules())  # before any finder that could still see an old file


def __getattr__(name):  # GeneralaEnv imports gymnasium spaces; load it on first use
    if name in ("GeneralaEnv", "make_info"):
        from generala_env.envs import env

        return getattr(env, name)
    raise AttributeError(name)


__all__ = [
    "__version__",
    "ENV_ID",
    "Game",
    "GeneralaEnv",
    "IllegalActionError",
    "LAYOUT_VERSION",
    "NotAnActionError",
    "OPEN",
    "Outcome",
    "RuleSet",
    "RulesError",
    "Encoder",
    "line_points",
    "load_rules",
    "observation_layout",
    "observation_size",
    "points_now",
    "points_table",
    "preset_names",
]
