"""The algorithms that training and the benchmark train, and the one algorithm config.

:data:`ALGOS` names every algorithm by its id (rl-zoo3's names, plus ``ppo_mask`` for
sb3-contrib's MaskablePPO). ``generala train`` trains :data:`TRAIN_ALGO` from a training
config's ``algo:``, ``vec_env.n_envs`` and ``policy:`` (:func:`generala_training.models.algo_config`);
``generala benchmark`` trains each id from its ``configs/benchmark/ALGO.yaml``
(:meth:`AlgoConfig.from_mapping`). Either way the algorithm is an :class:`AlgoConfig`, its
values are checked by the tests below in the same words, and its model is built by
:meth:`AlgoConfig.build`.
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from generala_env.checks import is_whole
from generala_env.safe_yaml import short_repr


@dataclass(frozen=True)
class Algo:
    """An algorithm id: the class that trains it and what its training needs."""

    module: str
    cls: str
    masked: bool
    """its policy reads the legal-action mask"""
    off_policy: bool
    """it keeps a replay buffer (saved beside a benchmark run's checkpoint)"""
    minibatch_advantages: bool = False
    """it normalizes advantages per minibatch, so a minibatch needs two samples or more"""


ALGOS = {
    "ppo_mask": Algo("sb3_contrib", "MaskablePPO", masked=True, off_policy=False, minibatch_advantages=True),
    "ppo": Algo("stable_baselines3", "PPO", masked=False, off_policy=False, minibatch_advantages=True),
    "a2c": Algo("stable_baselines3", "A2C", masked=False, off_policy=False),
    "trpo": Algo("sb3_contrib", "TRPO", masked=False, off_policy=False),
    "dqn": Algo("stable_baselines3", "DQN", masked=False, off_policy=True),
    "qrdqn": Algo("sb3_contrib", "QRDQN", masked=False, off_policy=True),
}

TRAIN_ALGO = "ppo_mask"  # generala train's algorithm: its evaluations, saves and exports read the mask

LR_SCHEDULES = ("constant", "linear")
ACTIVATIONS = ("tanh", "relu")
# constructor arguments the pipeline sets itself, never a config's hyperparameters
RESERVED_HYPERPARAMS = ("policy", "env", "seed", "device", "verbose", "tensorboard_log", "policy_kwargs", "_init_setup_model")

_NUMBER, _WHOLE, _NUMBER_OR_NULL = "a finite number", "a whole number", "null or a finite number"

# constructor keywords checked wherever a config gives them: the kind of value, its bound and the bound's words
HYPERPARAMS: dict[str, tuple[str, Callable[[Any], bool], str]] = {
    "learning_rate": (_NUMBER, lambda v: v > 0, "greater than 0"),
    "n_steps": (_WHOLE, lambda v: v >= 1, "at least 1"),
    "batch_size": (_WHOLE, lambda v: v >= 1, "at least 1"),
    "n_epochs": (_WHOLE, lambda v: v >= 1, "at least 1"),
    "gamma": (_NUMBER, lambda v: 0 < v <= 1, "greater than 0 and at most 1"),
    "gae_lambda": (_NUMBER, lambda v: 0 <= v <= 1, "from 0 to 1"),
    "clip_range": (_NUMBER, lambda v: v > 0, "greater than 0"),
    "ent_coef": (_NUMBER, lambda v: v >= 0, "0 or more"),
    "vf_coef": (_NUMBER, lambda v: v >= 0, "0 or more"),
    "max_grad_norm": (_NUMBER, lambda v: v > 0, "greater than 0"),
    "target_kl": (_NUMBER_OR_NULL, lambda v: v is None or v > 0, "null or greater than 0"),
}


def _is(kind: str, v: Any) -> bool:
    number = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
    if kind == _WHOLE:
        return is_whole(v)
    return number or (kind == _NUMBER_OR_NULL and v is None)


def hyperparam_problem(algo: str, key: str, value: Any) -> str | None:
    """What is wrong with ``value`` as ``algo``'s constructor keyword ``key`` (``"must be …,
    got …"``); ``None`` where nothing is, or ``key`` is not one of :data:`HYPERPARAMS`."""
    if key not in HYPERPARAMS:
        return None
    kind, ok, what = HYPERPARAMS[key]
    if key == "batch_size" and ALGOS[algo].minibatch_advantages:
        ok, what = (lambda v: v >= 2), "at least 2 (advantages are normalized per minibatch)"
    if not _is(kind, value):
        return f"must be {kind}, got {short_repr(value)}"
    return None if ok(value) else f"must be {what}, got {short_repr(value)}"


def layer_sizes_problem(value: Any, *, empty_ok: bool = False, null_ok: bool = False) -> str | None:
    """What is wrong with ``value`` as a network's hidden layer sizes; ``None`` where nothing is.
    ``empty_ok``: no hidden layer is fine; ``null_ok``: ``None`` is (it means another list)."""
    if value is None and null_ok:
        return None
    if isinstance(value, list) and (value or empty_ok) and all(is_whole(n) and n >= 1 for n in value):
        return None
    what = f"a{'' if empty_ok else ' non-empty'} list of layer sizes, each a whole number of at least 1{' (or null)' if null_ok else ''}"
    return f"must be {what}, got {short_repr(value)}"


def leaves_one_sample(algo: str, n_steps: int, n_envs: int, batch_size: int) -> bool:
    """Whether a rollout of ``n_steps`` x ``n_envs`` samples, cut into minibatches of
    ``batch_size``, leaves a last one of a single sample: it has no spread, and MaskablePPO
    normalizes its advantage to NaN (SB3's PPO skips the normalization there)."""
    return algo == "ppo_mask" and (n_steps * n_envs) % batch_size == 1


def algo_class(algo: str):
    """The SB3 / sb3-contrib class that trains ``algo``."""
    a = ALGOS[algo]
    return getattr(importlib.import_module(a.module), a.cls)


def constructor_defaults(algo: str) -> dict[str, Any]:
    """The keywords ``algo``'s constructor takes (the pipeline's own left out), each with its default."""
    params = inspect.signature(algo_class(algo).__init__).parameters
    return {k: p.default for k, p in params.items() if k not in ("self", *RESERVED_HYPERPARAMS)}


def build_model(cls, venv, policy, policy_kwargs: dict, *, seed: int, device: str, **hyperparams):
    """A fresh model of ``cls`` (an SB3 or sb3-contrib algorithm class) with ``policy`` (a
    policy class or name) on ``venv``, silent (``verbose=0``).

    ``policy_kwargs["activation_fn"]`` names the activation (``relu``, the default, or
    ``tanh``); the other policy keywords and ``hyperparams`` go to the constructor as they are.
    """
    import torch

    kwargs = dict(policy_kwargs)
    kwargs["activation_fn"] = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[kwargs.get("activation_fn", "relu")]
    return cls(policy, venv, policy_kwargs=kwargs, seed=seed, device=device, verbose=0, **hyperparams)


@dataclass(frozen=True)
class AlgoConfig:
    """An algorithm of :data:`ALGOS` and what builds it on the training games.

    :param algo: the algorithm's id
    :param n_envs: games stepped together
    :param policy_kwargs: the network: ``net_arch``, ``activation_fn`` (by name) and any other
        keyword of the algorithm's policy
    :param hyperparams: keywords of the algorithm's constructor, as given (the others keep the
        constructor's defaults)
    :param lr_schedule: ``constant``, or ``linear``: the learning rate decays to 0 at the end
        of the run's budget
    :param policy: the policy class, or the name of one of the algorithm's own
    """

    algo: str
    n_envs: int
    policy_kwargs: dict = field(default_factory=dict)
    hyperparams: dict = field(default_factory=dict)
    lr_schedule: str = "constant"
    policy: Any = "MlpPolicy"

    def to_dict(self) -> dict:
        """What a benchmark run's spec records (its ``algo_config``): ``lr_schedule`` only where it
        is not the default, so that the specs of algorithm files without it stay as they were."""
        d = {"n_envs": self.n_envs, "policy_kwargs": dict(self.policy_kwargs), "hyperparams": dict(self.hyperparams)}
        if self.lr_schedule != "constant":
            d["lr_schedule"] = self.lr_schedule
        return d

    @property
    def info(self) -> Algo:
        return ALGOS[self.algo]

    def constructor_kwargs(self) -> dict:
        """``hyperparams``, the learning rate as its schedule (a function of the progress remaining)."""
        kwargs = dict(self.hyperparams)
        if self.lr_schedule == "linear":
            lr0 = float(kwargs.get("learning_rate", constructor_defaults(self.algo).get("learning_rate", 3e-4)))
            kwargs["learning_rate"] = lambda progress_remaining: lr0 * progress_remaining
        return kwargs

    def build(self, venv, *, seed: int, device: str, cls=None, **extra):
        """A fresh model of the algorithm (or of ``cls``, a subclass of its class) on ``venv``
        (:func:`build_model`); ``extra`` goes to the constructor too (``tensorboard_log``)."""
        return build_model(cls or algo_class(self.algo), venv, self.policy, self.policy_kwargs, seed=seed, device=device, **self.constructor_kwargs(), **extra)

    @classmethod
    def from_mapping(cls, algo: str, data: dict, where: str, error: type[ValueError] = ValueError) -> AlgoConfig:
        """The algorithm of a benchmark algorithm file's keys (``n_envs``, ``policy_kwargs``,
        ``hyperparams``, ``lr_schedule``), checked; any fault is one ``error`` line that starts with
        ``where`` (the file) and names the key. The hyperparameters must be keywords of the
        algorithm's constructor (so its library must be installed)."""
        known = ("n_envs", "policy_kwargs", "hyperparams", "lr_schedule")
        unknown = sorted(map(str, set(data) - set(known)))
        if unknown:
            raise error(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}")
        if "n_envs" not in data:
            raise error(f"{where}: missing key(s) n_envs")
        n_envs = data["n_envs"]
        if not is_whole(n_envs) or n_envs < 1:
            raise error(f"{where}: n_envs must be a whole number of at least 1, got {short_repr(n_envs)}")
        n_envs = int(n_envs)
        pk, hp = data.get("policy_kwargs") or {}, data.get("hyperparams") or {}
        if not isinstance(pk, dict) or not isinstance(hp, dict):
            raise error(f"{where}: policy_kwargs and hyperparams must be mappings")
        problem = layer_sizes_problem(pk.get("net_arch", [64, 64]), empty_ok=True)
        if problem:
            raise error(f"{where}: policy_kwargs.net_arch {problem}")
        if pk.get("activation_fn", "relu") not in ACTIVATIONS:
            raise error(f"{where}: policy_kwargs.activation_fn must be one of {', '.join(ACTIVATIONS)}, got {short_repr(pk.get('activation_fn'))}")
        schedule = data.get("lr_schedule", "constant")
        if schedule not in LR_SCHEDULES:
            raise error(f"{where}: lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {short_repr(schedule)}")
        defaults = constructor_defaults(algo)
        unknown = sorted(set(hp) - set(defaults))
        if unknown:
            raise error(
                f"{where}: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not hyperparameter(s) of {ALGOS[algo].cls}; it takes: {', '.join(sorted(defaults))}"
            )
        for key, value in hp.items():
            problem = hyperparam_problem(algo, key, value)
            if problem:
                raise error(f"{where}: hyperparams.{key} {problem}")
        n_steps, batch_size = (hp.get(k, defaults.get(k)) for k in ("n_steps", "batch_size"))
        if isinstance(n_steps, int) and isinstance(batch_size, int) and leaves_one_sample(algo, n_steps, n_envs, batch_size):
            raise error(
                f"{where}: hyperparams.n_steps x n_envs = {n_steps * n_envs} samples per rollout leave a minibatch "
                f"(hyperparams.batch_size = {batch_size}) of one sample; change one of them"
            )
        return cls(algo, n_envs, dict(pk), dict(hp), str(schedule))


__all__ = ["ALGOS", "TRAIN_ALGO", "Algo", "AlgoConfig", "algo_class", "build_model", "hyperparam_problem", "layer_sizes_problem"]
