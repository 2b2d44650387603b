"""Generala, the five-dice game, as a Gymnasium environment.

``import generala_env`` registers ``Generala-v0``::

    import gymnasium as gym, generala_env
    env = gym.make("Generala-v0", rules="classic")
"""

from gymnasium.envs.registration import register, registry

__version__ = "0.2.0"

from .checks import NotAnActionError
from .encoding import LAYOUT_VERSION, Encoder, observation_layout, observation_size
from .game import OPEN, Game, IllegalActionError, Outcome
from .info import points_now
from .rules import RulesError, RuleSet, load_rules, preset_names
from .scoring import line_points, points_table

ENV_ID = "Generala-v0"

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="generala_env.env:GeneralaEnv", vector_entry_point="generala_env.vector:GeneralaVectorEnv")


def __getattr__(name):  # GeneralaEnv imports gymnasium spaces; load it on first use
    if name in ("GeneralaEnv", "make_info"):
        from . import env

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
