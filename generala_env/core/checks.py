"""The checks of the arguments every env takes (the single, the vector, the PettingZoo and the
JAX env): one place for each, so that a bad value gets the same one-line error from every env;
an action among them (:func:`action_number`, :func:`action_numbers`)."""

from __future__ import annotations

import math
from typing import TypeGuard

import numpy as np


def is_whole(v) -> TypeGuard[int | np.integer]:
    """Whether ``v`` is a whole number: a Python or numpy integer, not a bool (``True`` is an
    ``int`` to Python; to a rule or an argument it is not a number). The one test of it."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


class NotAnActionError(TypeError):
    """An action given to an env that is not an integer (3.7, nan, ``"a"``, ``None``, ``True``):
    no game state makes it legal or illegal, so it is refused in every env with one line naming it."""


def not_an_action(action, num_actions: int, described: str | None = None) -> str:
    """The one line every env gives for an action that is not an integer (``described``: what
    it is, where its value is unknown, as under ``jax.jit``)."""
    return f"an action is an integer from 0 to {num_actions - 1}, got {described or repr(action)}"


def action_number(action, num_actions: int) -> int:
    """One action as given to an env, as a Python int: a Python or NumPy integer of any size (one
    outside ``0 … num_actions - 1``, ``2**63`` as ``42``, is an illegal action, which the env
    handles as it handles any), or a 0-d integer array (what a policy's ``predict`` gives).
    Anything else is :class:`NotAnActionError` naming it: a float (``3.7``, ``nan``, ``inf``,
    ``3.0``), a string, ``None``, and a bool, which is no action number (``True`` is not ``1``).
    The one check of an action for every env."""
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action[()]
    if not is_whole(action):
        raise NotAnActionError(not_an_action(action, num_actions))
    return int(action)


_INT64 = np.iinfo(np.int64)


def action_numbers(actions, num_envs: int, num_actions: int) -> tuple[np.ndarray, list[int] | None]:
    """The actions of ``num_envs`` games (an array or a sequence, one a game), each checked as
    :func:`action_number` checks one (a non-integer in game ``j`` is :class:`NotAnActionError`
    ``"game j: ..."``), as the int64 array the env core takes. An integer that int64 cannot hold
    (``2**63``, ``-2**70``, a uint64 above ``2**63 - 1``) is given to the core as ``-1``, an
    illegal action as ``42`` is; the numbers as given come back too, to name it (``None`` when
    every one fits)."""
    # a list keeps its numbers as given: NumPy would make 2**63 a float and True a 1
    listed = isinstance(actions, (list, tuple))
    a = actions if isinstance(actions, np.ndarray) else np.asarray(actions, dtype=object if listed else None)
    if a.shape != (num_envs,):
        raise ValueError(f"actions must have shape ({num_envs},), got {a.shape}")
    if a.dtype.kind == "i" or (a.dtype.kind == "u" and not (a > _INT64.max).any()):
        return np.require(a, np.int64, ("C", "W")), None  # int64, contiguous, writable: one compiled step (a read-only or strided array is another signature)
    given = []
    for j, x in enumerate(a.tolist()):  # Python scalars, named as a user would write them
        try:
            given.append(action_number(x, num_actions))
        except NotAnActionError as e:
            raise NotAnActionError(f"game {j}: {e}") from None
    fits = [_INT64.min <= g <= _INT64.max for g in given]
    return np.array([g if ok else -1 for g, ok in zip(given, fits, strict=True)], dtype=np.int64), None if all(fits) else given


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
