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

from generala_env.core.checks import is_whole
from generala_env.files.safe_yaml import short_repr


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

# -- sizes: what a config may ask the machine to allocate -----------------------------------------
# Every size that allocates has a bound, checked when the config is read, before anything is
# built: past it, one line names the key, its value and the bound (``policy.net_arch=[100000000]``
# once asked for 20 GB and was stopped by the kernel's OOM killer). Each bound is generous for
# real use on a 24 GiB machine: a few times the largest the project's recipes use, and at most
# a few GiB on its own. An observation is 54 float32 values (216 bytes), a move's mask 32 holds
# plus one per line of the sheet.
MAX_LAYER_WIDTH = 4096
"""units in one hidden layer: a 4096 x 4096 layer is 16.8M weights, 64 MiB of float32 (four times
that with its gradient and Adam's two moments); the shipped recipes use 128 to 512"""
MAX_LAYERS = 8
"""hidden layers in one net: eight of 4096 are 134M weights, 2 GiB with the gradient and Adam's
state, per net (the policy and the value net each); the shipped recipes use 2"""
MAX_N_ENVS = 65_536
"""games stepped together: the JAX trainer's batched games hold a few KiB of state each (65,536:
a few hundred MiB); SB3's batched env the same; the shipped recipes use 16 to 256"""
MAX_SUBPROC_ENVS = 128
"""games of ``vec_env.kind: subproc``, one process each (a forked Python with torch and numba,
100 MiB or more): past the cores of a large workstation, more only contend"""
MAX_ROLLOUT = 2**22
"""samples in one rollout, ``n_steps`` x ``n_envs`` (4,194,304): SB3's rollout buffer keeps about
500 bytes a sample (observation, mask, value, advantage...) and copies it to torch, 4 GiB at the
bound; the JAX trainer's 65,536 games x 64 steps are exactly the bound; the shipped recipes
use 4,096 to 16,384"""
MAX_BATCH = MAX_ROLLOUT
"""samples in one minibatch (a minibatch is cut from a rollout or a replay buffer)"""
MAX_BUFFER = 2**22
"""transitions in a replay buffer (``buffer_size``, DQN and QR-DQN): an observation and the next,
432 bytes a transition, 1.7 GiB at the bound; rl-zoo3's Atari buffers are 100,000 to 1,000,000"""
MAX_ACTIVATIONS = 2**30
"""values a minibatch's forward pass keeps for its gradient, ``batch_size`` x the hidden units of
the nets (policy and value): 4 GiB of float32 at the bound, about as much again in the backward
pass. With the shipped [256, 256] nets a minibatch may hold a million samples"""
MAX_EPOCHS = 1000
"""passes over a rollout (``n_epochs``, ``pretrain.epochs``): nothing allocated, but each pass is
a full sweep of the rollout; the shipped recipes use 4 to 15"""
MAX_EVAL_GAMES = 50_000
"""games of one evaluation, all played at once: about 7 KiB a game for each seat (measured on
six-player games, each played from every seat: 2 GiB at the bound); the standard error of a
mean score over 50,000 games is about 0.1 points; the shipped recipes use 500 to 1,000"""
MAX_TEACHER_GAMES = 100_000
"""games of behaviour cloning (``pretrain.games``): every decision's observation and mask are kept,
about 20 KiB a game while they are played (2 GiB at the bound); the shipped recipes use 20,000"""
MAX_THREADS = 1024
"""torch's intra-op threads: one each, started by torch (a stack each)"""


def bounded(low: int, high: int, unit: str = "") -> tuple[Callable[[Any], bool], str]:
    """The test and the words of a whole number from ``low`` to ``high`` (the bound, with what it bounds)."""
    return (lambda v: low <= v <= high), f"from {low:,} to {high:,}" + (f" ({unit})" if unit else "")


# constructor keywords checked wherever a config gives them: the kind of value, its bound and the bound's words
HYPERPARAMS: dict[str, tuple[str, Callable[[Any], bool], str]] = {
    "learning_rate": (_NUMBER, lambda v: v > 0, "greater than 0"),
    "n_steps": (_WHOLE, *bounded(1, MAX_ROLLOUT, "the bound of a rollout's samples")),
    "batch_size": (_WHOLE, *bounded(1, MAX_BATCH, "the bound of a minibatch's samples")),
    "n_epochs": (_WHOLE, *bounded(1, MAX_EPOCHS, "the bound of passes over a rollout")),
    "buffer_size": (_WHOLE, *bounded(1, MAX_BUFFER, "the bound of a replay buffer's transitions")),
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
        ok, what = (lambda v: 2 <= v <= MAX_BATCH), f"from 2 (advantages are normalized per minibatch) to {MAX_BATCH:,} (the bound of a minibatch's samples)"
    if not _is(kind, value):
        return f"must be {kind}, got {short_repr(value)}"
    return None if ok(value) else f"must be {what}, got {short_repr(value)}"


def layer_sizes_problem(value: Any, *, empty_ok: bool = False, null_ok: bool = False) -> str | None:
    """What is wrong with ``value`` as a network's hidden layer sizes (at most :data:`MAX_LAYERS`
    layers of at most :data:`MAX_LAYER_WIDTH` units); ``None`` where nothing is. ``empty_ok``: no
    hidden layer is fine; ``null_ok``: ``None`` is (it means another list)."""
    if value is None and null_ok:
        return None
    if isinstance(value, list) and (value or empty_ok) and len(value) <= MAX_LAYERS and all(is_whole(n) and 1 <= n <= MAX_LAYER_WIDTH for n in value):
        return None
    what = (
        f"a{'' if empty_ok else ' non-empty'} list of at most {MAX_LAYERS} layer sizes (the bound of a net's depth), "
        f"each a whole number from 1 to {MAX_LAYER_WIDTH:,} (the bound of a layer's width){' (or null)' if null_ok else ''}"
    )
    got = f"{len(value)} layers" if isinstance(value, list) and len(value) > MAX_LAYERS else short_repr(value)
    return f"must be {what}, got {got}"


def rollout_problem(n_steps: int, n_envs: int) -> str | None:
    """What is wrong with a rollout of ``n_steps`` in each of ``n_envs`` games (its samples past
    :data:`MAX_ROLLOUT`); ``None`` where nothing is."""
    samples = n_steps * n_envs
    return f"= {samples:,} samples per rollout, more than the bound of {MAX_ROLLOUT:,}; make one smaller" if samples > MAX_ROLLOUT else None


def activations_problem(batch_size: int, *nets: list[int]) -> str | None:
    """What is wrong with minibatches of ``batch_size`` through the hidden layers ``nets`` (the
    values kept for the gradient past :data:`MAX_ACTIVATIONS`); ``None`` where nothing is."""
    values = batch_size * sum(sum(net) for net in nets)
    if values <= MAX_ACTIVATIONS:
        return None
    return f"= {values:,} values kept for a minibatch's gradient, more than the bound of {MAX_ACTIVATIONS:,} (4 GiB of float32); make one smaller"


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
        if not is_whole(n_envs) or not 1 <= n_envs <= MAX_N_ENVS:
            raise error(f"{where}: n_envs must be a whole number from 1 to {MAX_N_ENVS:,} (the bound of games stepped together), got {short_repr(n_envs)}")
        n_envs = int(n_envs)
        pk, hp = data.get("policy_kwargs") or {}, data.get("hyperparams") or {}
        if not isinstance(pk, dict) or not isinstance(hp, dict):
            raise error(f"{where}: policy_kwargs and hyperparams must be mappings")
        problem = layer_sizes_problem(pk.get("net_arch", [64, 64]), empty_ok=True)
        if problem:
            raise error(f"{where}: policy_kwargs.net_arch {problem}")
        quantiles = pk.get("n_quantiles", 1)  # QR-DQN's outputs per action: a layer's width
        if not is_whole(quantiles) or not 1 <= quantiles <= MAX_LAYER_WIDTH:
            raise error(
                f"{where}: policy_kwargs.n_quantiles must be a whole number from 1 to {MAX_LAYER_WIDTH:,} (the bound of a layer's width), got {short_repr(quantiles)}"
            )
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
        problem = rollout_problem(n_steps, n_envs) if isinstance(n_steps, int) else None
        if problem:
            raise error(f"{where}: hyperparams.n_steps x n_envs {problem}")
        # the policy's net and the value net (PPO, A2C, TRPO), or the Q-net and its target (DQN)
        # (A2C takes no batch_size: its minibatch is the whole rollout)
        batch, batch_key = (
            (batch_size, "batch_size") if "batch_size" in defaults else (n_steps * n_envs if isinstance(n_steps, int) else None, "n_steps x n_envs")
        )
        net = pk.get("net_arch", [64, 64])
        problem = activations_problem(batch, net, net) if isinstance(batch, int) else None
        if problem:
            raise error(f"{where}: hyperparams.{batch_key} x the units of policy_kwargs.net_arch (twice: two nets) {problem}")
        if isinstance(n_steps, int) and isinstance(batch_size, int) and leaves_one_sample(algo, n_steps, n_envs, batch_size):
            raise error(
                f"{where}: hyperparams.n_steps x n_envs = {n_steps * n_envs} samples per rollout leave a minibatch "
                f"(hyperparams.batch_size = {batch_size}) of one sample; change one of them"
            )
        return cls(algo, n_envs, dict(pk), dict(hp), str(schedule))


__all__ = [
    "ALGOS",
    "TRAIN_ALGO",
    "Algo",
    "AlgoConfig",
    "activations_problem",
    "algo_class",
    "build_model",
    "hyperparam_problem",
    "layer_sizes_problem",
    "rollout_problem",
]
