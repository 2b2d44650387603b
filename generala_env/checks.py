"""The checks of the arguments every env takes (the single, the vector and the PettingZoo env):
one place for each, so that a bad value gets the same one-line error from every env."""

from __future__ import annotations

import math
from typing import TypeGuard

import numpy as np


def is_whole(v) -> TypeGuard[int | np.integer]:
    """Whether ``v`` is a whole number: a Python or numpy integer, not a bool (``True`` is an
    ``int`` to Python; to a rule or an argument it is not a number). The one test of it."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


REWARDS = ("score", "win")
OBS_TYPES = ("flat", "dict")
MAX_ILLEGAL_IN_A_ROW = 100  # the default cap: that many illegal actions in a row truncate the episode


def check_reward(reward) -> str:
    """``reward``, one of :data:`REWARDS`, or ``ValueError`` naming them."""
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
    return reward


def check_arguments(num_players: int, reward, agent_seat, render_mode, render_modes, illegal_action, illegal_penalty) -> str | None:
    """Validate the env arguments shared by the single and the batched env (clear errors);
    the render mode to use: ``render_mode``, or ``None`` with a warning for one the env lacks
    (as Gymnasium's ``make`` warns: SB3's ``make_vec_env`` asks for ``"rgb_array"``)."""
    check_reward(reward)
    seat_ok = is_whole(agent_seat) and 0 <= agent_seat < num_players
    if not (isinstance(agent_seat, str) and agent_seat == "random") and not seat_ok:  # a bool is no seat
        raise ValueError(f"agent_seat must be 'random' or a seat from 0 to {num_players - 1}, got {agent_seat!r}")
    if illegal_action not in ("penalize", "raise"):
        raise ValueError(f"illegal_action must be 'penalize' or 'raise', got {illegal_action!r}")
    check_finite("illegal_penalty", illegal_penalty)
    return check_render_mode(render_mode, render_modes)


def check_render_mode(render_mode, render_modes) -> str | None:
    """``render_mode`` if the env has it (or ``None``); else a warning, and ``None``."""
    if render_mode is not None and render_mode not in render_modes:
        from gymnasium import logger

        logger.warn(f"render_mode={render_mode!r} is not one of this env's render modes {list(render_modes)}: it renders as with render_mode=None")
        return None
    return render_mode


def check_obs_type(obs_type) -> str:
    if not isinstance(obs_type, str) or obs_type not in OBS_TYPES:
        raise ValueError(f"obs_type must be one of {', '.join(OBS_TYPES)}, got {obs_type!r}")
    return obs_type


def check_max_illegal(value) -> int | None:
    """``max_illegal_in_a_row`` as an int (a positive integer), or ``None`` (no cap)."""
    if value is None:
        return None
    if not is_whole(value) or value < 1:
        raise ValueError(f"max_illegal_in_a_row must be a positive integer or None, got {value!r}")
    return int(value)


def check_finite(name: str, value) -> float:
    """``value`` as a float if it is a finite real number (not a bool), else a ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_share(name: str, value) -> float:
    """``value`` as a float if it is a finite number from 0 to 1, else a ValueError naming ``name``."""
    v = check_finite(name, value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be from 0 to 1, got {value!r}")
    return v
