"""Training configuration: a YAML file overlaid on defaults, with checked keys and overrides.

Every key is listed in :data:`DEFAULTS` with its meaning; an unknown or mistyped key,
or a value of the wrong type, is an error that names it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A training config that cannot be used as given."""


# key -> default; comments say what each does (kept in one place, like CleanRL's Args)
DEFAULTS: dict[str, Any] = {
    "name": "ppo",  # run name prefix: runs are named NAME__seedS__TIME
    "seed": 0,  # seeds the envs, the policy and the evaluations
    "total_timesteps": 1_000_000,  # environment steps to train for
    "run_dir": "runs",  # folder that holds one sub-folder per run
    "device": "cpu",  # torch device for the policy
    "threads": 1,  # torch intra-op threads; 1 is fastest on a small shared machine (benchmarks/train_speed.py)
    "env": {
        "rules": "classic",  # preset name, YAML path or mapping of settings
        "num_players": 1,
        "reward": "score",  # "score" (points written) or "win" (+1/0/-1 at the end)
        "opponents": None,  # agent name(s) for the other seats; a list is a mix drawn per env
        "agent_seat": 0,  # seat number or "random"
        "reward_scale": 0.02,  # rewards are multiplied by this for learning (not in evaluations)
    },
    "vec_env": {
        "kind": "dummy",  # dummy | subproc | batched
        "n_envs": 16,
    },
    "policy": {
        "net_arch": [256, 256],  # hidden layers shared shape for policy and value nets
        "activation": "tanh",  # tanh | relu
        "ortho_init": True,
    },
    "algo": {  # MaskablePPO hyperparameters
        "learning_rate": 3.0e-4,
        "lr_schedule": "constant",  # constant | linear (decays to 0 at total_timesteps)
        "n_steps": 256,
        "batch_size": 1024,
        "n_epochs": 4,
        "gamma": 1.0,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "target_kl": None,
    },
    "eval": {
        "every": 100_000,  # environment steps between evaluations
        "games": 500,  # games per evaluation (seeded, same dice every time)
        "opponent": "greedy",  # win rate is measured against this agent
    },
    "pretrain": {  # optional behaviour cloning from the optimal player before PPO (training/pretrain.py)
        "games": 0,  # games of the optimal player to imitate (0 = pure PPO from scratch)
        "epochs": 10,
        "epsilon": 0.1,  # share of random legal moves mixed into the imitated games
        "learning_rate": 1.0e-3,
    },
    "checkpoint_every": 200_000,  # environment steps between saved checkpoints
    "init_from": None,  # a saved model (.zip) to start from instead of a fresh policy
}

_NULLABLE = {("env", "opponents"), ("algo", "target_kl"), ("init_from",)}


def _merge(base: dict, over: dict, path: tuple = ()) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        where = ".".join(path + (k,))
        if k not in base:
            known = ", ".join(sorted(base))
            raise ConfigError(f"unknown config key {where!r}; known keys here: {known}")
        if isinstance(base[k], dict):
            if not isinstance(v, dict):
                raise ConfigError(f"config key {where!r} must be a mapping, got {v!r}")
            out[k] = _merge(base[k], v, path + (k,))
        else:
            out[k] = _check_type(where, path + (k,), base[k], v)
    return out


def _check_type(where: str, key: tuple, default: Any, v: Any) -> Any:
    if v is None:
        if default is None or key in _NULLABLE:
            return None
        raise ConfigError(f"config key {where!r} may not be null")
    if default is None:
        return v
    if key == ("env", "agent_seat"):
        if v != "random" and (isinstance(v, bool) or not isinstance(v, int)):
            raise ConfigError(f"config key {where!r} must be a seat number or 'random', got {v!r}")
        return v
    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise ConfigError(f"config key {where!r} must be true or false, got {v!r}")
        return v
    if isinstance(default, int) and not isinstance(default, bool):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(f"config key {where!r} must be a whole number, got {v!r}")
        return v
    if isinstance(default, float):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ConfigError(f"config key {where!r} must be a number, got {v!r}")
        return float(v)
    if isinstance(default, str) and key == ("env", "rules"):
        return v  # a preset name, a path or a mapping
    if isinstance(default, list):
        if not isinstance(v, list):
            raise ConfigError(f"config key {where!r} must be a list, got {v!r}")
        return v
    if isinstance(default, str) and not isinstance(v, str):
        raise ConfigError(f"config key {where!r} must be text, got {v!r}")
    return v


CHOICES = {
    ("vec_env", "kind"): ("dummy", "subproc", "batched"),
    ("policy", "activation"): ("tanh", "relu"),
    ("algo", "lr_schedule"): ("constant", "linear"),
    ("env", "reward"): ("score", "win"),
}


def _validate(cfg: dict) -> None:
    for (a, b), allowed in CHOICES.items():
        if cfg[a][b] not in allowed:
            raise ConfigError(f"config key '{a}.{b}' must be one of {', '.join(allowed)}, got {cfg[a][b]!r}")
    for key in ("total_timesteps",):
        if cfg[key] <= 0:
            raise ConfigError(f"config key {key!r} must be positive")
    if cfg["vec_env"]["n_envs"] < 1:
        raise ConfigError("config key 'vec_env.n_envs' must be at least 1")
    if cfg["eval"]["games"] < 1 or cfg["eval"]["every"] < 1:
        raise ConfigError("config keys 'eval.games' and 'eval.every' must be at least 1")


def parse_override(text: str) -> tuple[list[str], Any]:
    """``algo.learning_rate=1e-4`` → (["algo", "learning_rate"], 0.0001)."""
    if "=" not in text:
        raise ConfigError(f"an override is KEY=VALUE (e.g. algo.learning_rate=1e-4), got {text!r}")
    key, raw = text.split("=", 1)
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    if isinstance(value, str):  # YAML reads 3e-5 (no dot) as text; people mean the number
        try:
            value = float(value)
        except ValueError:
            pass
    return key.strip().split("."), value


def load_config(path: "str | Path | dict | None" = None, overrides: list[str] | None = None) -> dict:
    """Defaults, overlaid by a YAML file (or a mapping), overlaid by ``KEY=VALUE`` overrides."""
    cfg = copy.deepcopy(DEFAULTS)
    if isinstance(path, dict):
        cfg = _merge(cfg, path)
    elif path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist")
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {p} is not valid YAML: {e}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"config file {p} must hold a mapping")
        cfg = _merge(cfg, data)
    for text in overrides or []:
        keys, value = parse_override(text)
        nested: Any = value
        for k in reversed(keys):
            nested = {k: nested}
        cfg = _merge(cfg, nested)
    _validate(cfg)
    return cfg
