"""Training configuration: a YAML file overlaid on defaults, with checked keys and overrides.

Every key is a field of :class:`Config` or of one of its sections, with its default and
its meaning beside it (as in CleanRL's ``Args``). A config file holds the same keys, nested
the same way; an unknown or mistyped key, or a value of the wrong type or out of its
bounds, is an error that names it.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from generala_env.core.checks import is_whole
from generala_env.core.game import MAX_PLAYERS
from generala_env.files.safe_yaml import YamlFileError, parse_yaml, read_yaml, short_repr
from generala_env.suggest import refusal

from .algos import (
    ACTIVATIONS,
    HYPERPARAMS,
    LR_SCHEDULES,
    MAX_EPOCHS,
    MAX_EVAL_GAMES,
    MAX_LAYER_WIDTH,
    MAX_N_ENVS,
    MAX_SUBPROC_ENVS,
    MAX_TEACHER_GAMES,
    MAX_THREADS,
    TRAIN_ALGO,
    activations_problem,
    bounded,
    hyperparam_problem,
    layer_sizes_problem,
    leaves_one_sample,
    rollout_problem,
)
from .config_presets import shipped_configs

if TYPE_CHECKING:
    from generala_env.core.rules import RuleSet


class ConfigError(ValueError):
    """A training config that cannot be used as given."""


@dataclass
class EnvConfig:
    """The training envs (``env:``)."""

    rules: str | dict = "classic"
    """preset name, YAML path or mapping of settings"""
    num_players: int = 1
    """players at the table, the agent included"""
    reward: str = "score"
    """score (points written) or win (+1/0/-1 at the end)"""
    opponents: str | list | None = None
    """agent name(s) for the other seats; a list is a mix drawn per env (an entry may list one name per seat); "self-play" is the run's own checkpoints"""
    agent_seat: int | str = 0
    """the agent's seat: a seat number, or "random" (drawn anew each game)."""
    reward_scale: float = 0.02
    """rewards are multiplied by this for learning (not in evaluations)"""
    exploring_starts: float = 0.0
    """share of training episodes that start from partly filled sheets (evaluations never do)"""


@dataclass
class VecEnvConfig:
    """How the envs are stepped together (``vec_env:``)."""

    kind: str = "dummy"
    """dummy | subproc | batched"""
    n_envs: int = 16
    """games played side by side"""


@dataclass
class PolicyConfig:
    """The network (``policy:``)."""

    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """hidden layers of the policy net, and of the value net unless vf_arch is given"""
    vf_arch: list[int] | None = None
    """hidden layers of the value net (null: the same as net_arch)"""
    activation: str = "tanh"
    """tanh | relu"""
    ortho_init: bool = True
    """orthogonal initialization of the weights (SB3's default)"""
    layer_norm: bool = False
    """LayerNorm after each hidden layer (training/policies.py)"""
    head: str = "mlp"
    """mlp (SB3's linear action layer) | keep (one scorer shared by all holds, training/policies.py)"""
    keep_width: int = 32
    """width of the keep head's hold scorer"""
    entropy_on: str = "all"
    """all | holds: where algo.ent_coef's entropy bonus counts (holds: only at states with rolls left)"""
    dice: str = "plain"
    """plain (the sorted faces / 6, as the env gives them) | onehot (also each die as a one-hot
    face, 30 more inputs; a training lever: such a model cannot be exported)"""


@dataclass
class AlgoSection:
    """MaskablePPO's hyperparameters with this recipe's defaults (``algo:``): with ``vec_env.n_envs``
    and ``policy:`` they make the run's :class:`generala_training.algos.AlgoConfig`
    (:func:`generala_training.models.algo_config`), whose checks they pass."""

    learning_rate: float = 3.0e-4
    """Adam's step size"""
    lr_schedule: str = "constant"
    """constant | linear (decays to 0 at total_timesteps)"""
    n_steps: int = 256
    """steps per env in each rollout"""
    batch_size: int = 1024
    """samples per minibatch"""
    n_epochs: int = 4
    """passes over each rollout"""
    gamma: float = 1.0
    """discount factor"""
    gae_lambda: float = 0.95
    """GAE's bias/variance trade-off"""
    clip_range: float = 0.2
    """PPO's clip on the probability ratio"""
    ent_coef: float = 0.01
    """weight of the entropy bonus in the loss"""
    normalize_reward: bool = False
    """scale rewards by a running estimate of the returns' spread (SB3's VecNormalize on the
    training envs only; evaluations play unscaled games). ``--resume`` starts the estimate anew"""
    vf_coef: float = 0.5
    """weight of the value loss in the loss"""
    max_grad_norm: float = 0.5
    """gradients are clipped to this norm"""
    target_kl: float | None = None
    """a rollout's epochs stop early when the approximate KL divergence passes this (null: never)"""

    def hyperparams(self) -> dict:
        """The constructor keywords among these keys (``lr_schedule`` is how the learning rate
        is given; ``normalize_reward`` wraps the training envs)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in ("lr_schedule", "normalize_reward")}


@dataclass
class EvalConfig:
    """Evaluations during training (``eval:``)."""

    every: int = 100_000
    """environment steps between evaluations"""
    games: int = 500
    """games per evaluation (seeded, same dice every time)"""
    opponent: str = "greedy"
    """win rate is measured against this agent"""


@dataclass
class PretrainConfig:
    """Optional behaviour cloning from a teacher before PPO (``pretrain:``, training/pretrain.py)."""

    games: int = 0
    """games of the teacher to imitate (0 = no behaviour cloning)"""
    epochs: int = 10
    """passes over the imitated decisions"""
    epsilon: float = 0.1
    """share of random legal moves mixed into the imitated games"""
    learning_rate: float = 1.0e-3
    """Adam's step size while imitating"""
    teacher: str = "optimal"
    """whom to imitate: the exact solvers optimal (the score-maximiser) and optimal-2p (the
    two-player win-maximiser), or the learned td-search and td-search-2p (from scratch: a run
    that imitates them still saw no solver), or a folder of td-search values trained by
    ``python -m generala_training.td_search --out FOLDER``"""


@dataclass
class Config:
    """One training run's whole config; ``config.yaml`` in a run folder is this, resolved."""

    name: str = "ppo"
    """run name prefix: runs are named NAME__seedS__TIME"""
    backend: str = "sb3"
    """sb3: MaskablePPO in torch (generala train); jax: PPO compiled with the env in JAX
    (generala jax-train, generala_training.jax_train: one-player games, no opponents)"""
    seed: int = 0
    """seeds the envs, the policy and the evaluations"""
    total_timesteps: int = 1_000_000
    """environment steps to train for, rounded down to whole rollouts of ``algo.n_steps`` x
    ``vec_env.n_envs`` steps (at least one rollout): PPO learns from whole rollouts only, and a
    run never trains past this count (:func:`planned_timesteps`)"""
    run_dir: str = "runs"
    """folder that holds one sub-folder per run"""
    device: str = "cpu"
    """torch device for the policy"""
    threads: int = 1
    """torch intra-op threads; 1 is fastest on a small shared machine (benchmarks/train_speed.py)"""
    env: EnvConfig = field(default_factory=EnvConfig)
    vec_env: VecEnvConfig = field(default_factory=VecEnvConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    algo: AlgoSection = field(default_factory=AlgoSection)
    eval: EvalConfig = field(default_factory=EvalConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    checkpoint_every: int = 200_000
    """environment steps between saved checkpoints"""
    init_from: str | None = None
    """a model to start from instead of a fresh policy: a checkpoint folder (generala export;
    weights only, of the network 'policy' makes) or an SB3 .zip, which runs code when loaded and
    is loaded only with generala train --trust-zip, asked at every use"""


# every key with its default, nested as in a config file; a value's type is checked against its default's
DEFAULTS: dict[str, Any] = dataclasses.asdict(Config())

_NULLABLE = {("env", "opponents"), ("algo", "target_kl"), ("init_from",)}


def _merge(base: dict, over: dict, path: tuple = ()) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        where = ".".join(map(str, path + (k,)))
        if k not in base:
            known = sorted(base)
            full = [".".join(map(str, path + (x,))) for x in known]  # the name meant, as the file spells it
            raise ConfigError(refusal(f"unknown config key {short_repr(where)}", where, full, f"known keys here: {', '.join(known)}"))
        if isinstance(base[k], dict):
            if not isinstance(v, dict):
                raise ConfigError(f"config key {short_repr(where)} must be a mapping, got {short_repr(v)}")
            out[k] = _merge(base[k], v, path + (k,))
        else:
            out[k] = _check_type(where, path + (k,), base[k], v)
    return out


def _check_type(where: str, key: tuple, default: Any, v: Any) -> Any:
    if v is None:
        if default is None or key in _NULLABLE:
            return None
        raise ConfigError(f"config key {short_repr(where)} may not be null")
    if default is None:
        return v
    if key == ("env", "agent_seat"):
        if v != "random" and (not is_whole(v)):
            raise ConfigError(f"config key {short_repr(where)} must be a seat number or 'random', got {short_repr(v)}")
        return v
    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise ConfigError(f"config key {short_repr(where)} must be true or false, got {short_repr(v)}")
        return v
    if is_whole(default):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if not is_whole(v):
            raise ConfigError(f"config key {short_repr(where)} must be a whole number, got {short_repr(v)}")
        return v
    if isinstance(default, float):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ConfigError(f"config key {short_repr(where)} must be a number, got {short_repr(v)}")
        if not math.isfinite(v):
            raise ConfigError(f"config key {short_repr(where)} must be a finite number, got {short_repr(v)}")
        return float(v)
    if isinstance(default, str) and key == ("env", "rules"):
        if not isinstance(v, (str, dict)):
            raise ConfigError(f"config key {short_repr(where)} must be a preset name, a YAML path or a mapping of settings, got {short_repr(v)}")
        return v
    if isinstance(default, list):
        if not isinstance(v, list):
            raise ConfigError(f"config key {short_repr(where)} must be a list, got {short_repr(v)}")
        return v
    if isinstance(default, str) and not isinstance(v, str):
        raise ConfigError(f"config key {short_repr(where)} must be text, got {short_repr(v)}")
    return v


# the players behaviour cloning may imitate; the exact solvers first, then the learned agents
# (trained from scratch, so a run that imitates them still saw no solver)
SOLVER_TEACHERS = ("optimal", "optimal-2p")
LEARNED_TEACHERS = ("td-search", "td-search-2p")
TEACHERS = SOLVER_TEACHERS + LEARNED_TEACHERS

CHOICES = {
    ("vec_env", "kind"): ("dummy", "subproc", "batched"),
    ("policy", "activation"): ACTIVATIONS,
    ("policy", "head"): ("mlp", "keep"),
    ("policy", "entropy_on"): ("all", "holds"),
    ("policy", "dice"): ("plain", "onehot"),
    ("algo", "lr_schedule"): LR_SCHEDULES,
    ("env", "reward"): ("score", "win"),
    ("backend",): ("sb3", "jax"),
}

# key -> (test, what a value must be); checked after the types, so a number here is a finite number;
# the algo keys are checked as every algorithm's hyperparameters are (generala_training.algos), and
# every size that allocates has its bound there (MAX_..., each with why it is that large)
BOUNDS: dict[tuple, tuple[Callable[[Any], bool], str]] = {
    ("seed",): (lambda v: 0 <= v < 2**32, "from 0 to 2**32 - 1"),
    ("total_timesteps",): (lambda v: v >= 1, "at least 1"),
    ("threads",): bounded(1, MAX_THREADS, "the bound of torch's threads"),
    ("env", "num_players"): (lambda v: 1 <= v <= MAX_PLAYERS, f"from 1 to {MAX_PLAYERS}"),
    ("env", "reward_scale"): (lambda v: v > 0, "greater than 0"),
    ("env", "exploring_starts"): (lambda v: 0 <= v <= 1, "from 0 to 1"),
    ("vec_env", "n_envs"): bounded(1, MAX_N_ENVS, "the bound of games stepped together"),
    ("eval", "every"): (lambda v: v >= 1, "at least 1"),
    ("eval", "games"): bounded(1, MAX_EVAL_GAMES, "the bound of an evaluation's games"),
    ("pretrain", "games"): bounded(0, MAX_TEACHER_GAMES, "the bound of the teacher's games"),
    ("pretrain", "epochs"): bounded(1, MAX_EPOCHS, "the bound of passes over the imitated decisions"),
    ("pretrain", "epsilon"): (lambda v: 0 <= v <= 1, "from 0 to 1"),
    ("pretrain", "learning_rate"): (lambda v: v > 0, "greater than 0"),
    ("checkpoint_every",): (lambda v: v >= 1, "at least 1"),
    ("policy", "keep_width"): bounded(1, MAX_LAYER_WIDTH, "the bound of a layer's width"),
}

DEVICE = re.compile(r"cpu|cuda(:\d+)?|mps|auto")


def _get(cfg: Config, key: tuple) -> Any:
    for k in key:
        cfg = getattr(cfg, k)
    return cfg


def _fail(key: tuple, what: str, v: Any) -> ConfigError:
    return ConfigError(f"config key {'.'.join(key)!r} must be {what}, got {short_repr(v)}")


def _teacher_folder(teacher: str) -> str:
    """The name of the td-search agent that a ``python -m generala_training.td_search --out`` folder
    holds; a config error for anything else."""
    from generala_agents.base import AgentError
    from generala_agents.td_search import folder_agent

    try:
        cls = folder_agent(teacher)
    except AgentError as e:  # a folder whose td_search.json cannot be read: one line naming the file
        raise ConfigError(f"config key 'pretrain.teacher': {e}") from None
    if cls is None:
        raise _fail(
            ("pretrain", "teacher"), f"one of {', '.join(TEACHERS)}, or a folder of td-search values (python -m generala_training.td_search --out)", teacher
        )
    return cls.name


# long: one check a key, each with its own message, in the order a config is read
def _validate(cfg: Config) -> None:
    """Check every value against its bounds and the keys against each other."""
    key: tuple[str, ...]
    for key, allowed in CHOICES.items():
        if _get(cfg, key) not in allowed:
            raise _fail(key, f"one of {', '.join(allowed)}", _get(cfg, key))
    for key, (ok, what) in BOUNDS.items():
        if not ok(_get(cfg, key)):
            raise _fail(key, what, _get(cfg, key))
    for name in (f.name for f in dataclasses.fields(AlgoSection) if f.name in HYPERPARAMS):
        problem = hyperparam_problem(TRAIN_ALGO, name, getattr(cfg.algo, name))
        if problem:
            raise ConfigError(f"config key {'algo.' + name!r} {problem}")

    for key in (("name",), ("run_dir",), ("eval", "opponent")):
        if not _get(cfg, key).strip():
            raise _fail(key, "non-empty text", _get(cfg, key))
    if "/" in cfg.name or "\\" in cfg.name:
        raise _fail(("name",), "a name without path separators (it names the run folder)", cfg.name)
    if not DEVICE.fullmatch(cfg.device):
        raise _fail(("device",), "cpu, cuda, cuda:N, mps or auto", cfg.device)
    init = cfg.init_from
    if init is not None and (not isinstance(init, str) or not init.strip()):
        raise _fail(("init_from",), "null or the path of a saved model (a checkpoint folder, or an SB3 .zip with --trust-zip)", init)

    for arch_key in ("net_arch", "vf_arch"):
        problem = layer_sizes_problem(getattr(cfg.policy, arch_key), null_ok=arch_key == "vf_arch")
        if problem:
            raise ConfigError(f"config key {'policy.' + arch_key!r} {problem}")
    check_sizes(cfg)

    env = cfg.env
    seat = env.agent_seat
    if seat != "random" and not 0 <= cast(int, seat) < env.num_players:  # _check_type lets through only 'random' or a whole number
        raise _fail(("env", "agent_seat"), f"'random' or a seat from 0 to {env.num_players - 1}", seat)
    opp = env.opponents
    if opp is not None:
        entries = opp if isinstance(opp, list) else [opp]  # a list is a mix; an entry may list one name per seat
        names = lambda e: e if isinstance(e, list) else [e]  # noqa: E731
        if not entries or not all(names(e) and all(isinstance(n, str) and n.strip() for n in names(e)) for e in entries):
            raise _fail(("env", "opponents"), "null, an agent name, or a non-empty list of agent names (or of lists of them, one per seat)", opp)

    teacher = cfg.pretrain.teacher
    if teacher not in TEACHERS:
        teacher = _teacher_folder(teacher)
    if teacher in ("optimal-2p", "td-search-2p") and (env.num_players != 2 or env.reward != "win"):
        raise _fail(("pretrain", "teacher"), f"optimal or td-search ({teacher} teaches two-player games with env.reward: win)", teacher)
    if teacher == "td-search" and env.num_players != 1:
        raise _fail(("pretrain", "teacher"), "optimal, optimal-2p or td-search-2p (td-search teaches one-player games)", teacher)

    if leaves_one_sample(TRAIN_ALGO, cfg.algo.n_steps, cfg.vec_env.n_envs, cfg.algo.batch_size):
        raise ConfigError(
            f"config keys 'algo.n_steps' x 'vec_env.n_envs' = {rollout_steps(cfg)} samples per rollout leave a minibatch "
            f"('algo.batch_size' = {cfg.algo.batch_size}) of one sample; change one of them"
        )


def check_sizes(cfg: Config) -> None:
    """Refuse sizes that are each within their bounds but too large together: a subproc env of
    more processes than :data:`~generala_training.algos.MAX_SUBPROC_ENVS`, a rollout past
    :data:`~generala_training.algos.MAX_ROLLOUT` samples, a minibatch whose activations pass
    :data:`~generala_training.algos.MAX_ACTIVATIONS` values."""
    n_envs, algo, pol = cfg.vec_env.n_envs, cfg.algo, cfg.policy
    if cfg.vec_env.kind == "subproc" and n_envs > MAX_SUBPROC_ENVS:
        raise _fail(("vec_env", "n_envs"), f"from 1 to {MAX_SUBPROC_ENVS} with vec_env.kind: subproc (the bound of its processes, one a game)", n_envs)
    problem = rollout_problem(algo.n_steps, n_envs)
    if problem:
        raise ConfigError(f"config keys 'algo.n_steps' x 'vec_env.n_envs' {problem}")
    problem = activations_problem(algo.batch_size, pol.net_arch, pol.vf_arch if pol.vf_arch is not None else pol.net_arch)
    if problem:
        raise ConfigError(f"config keys 'algo.batch_size' x the units of 'policy.net_arch' and 'policy.vf_arch' {problem}")


def parse_override(text: str) -> tuple[list[str], Any]:
    """``algo.learning_rate=1e-4`` → (["algo", "learning_rate"], 0.0001)."""
    if "=" not in text:
        raise ConfigError(f"an override is KEY=VALUE (e.g. algo.learning_rate=1e-4), got {short_repr(text)}")
    key, raw = text.split("=", 1)
    try:
        value = parse_yaml(raw, f"override {short_repr(key)}")
    except YamlFileError as e:
        if "is not valid YAML" not in str(e):  # an alias bomb or deep nesting is refused, not read as text
            raise ConfigError(str(e)) from None
        value = raw
    if isinstance(value, str):  # YAML reads 3e-5 (no dot) as text; people mean the number
        with contextlib.suppress(ValueError):
            value = float(value)
    return key.strip().split("."), value


def _build(cls: type, values: dict) -> Any:
    """The dataclass ``cls`` from merged ``values``, its sections built as their own dataclasses."""
    sections = {f.name: cast(type, f.default_factory) for f in dataclasses.fields(cls) if dataclasses.is_dataclass(f.default_factory)}
    return cls(**{k: _build(sections[k], v) if k in sections else v for k, v in values.items()})


def rollout_steps(cfg: Config) -> int:
    """Environment steps in one rollout: ``algo.n_steps`` in each of ``vec_env.n_envs`` envs."""
    return cfg.algo.n_steps * cfg.vec_env.n_envs


def planned_timesteps(cfg: Config) -> int:
    """The steps a run of ``cfg`` trains to: ``total_timesteps`` rounded down to whole rollouts,
    and at least one rollout (PPO updates on whole rollouts, so a run stops at a rollout's end)."""
    rollout = rollout_steps(cfg)
    return max(1, cfg.total_timesteps // rollout) * rollout


def read_config_file(path: str | Path, what: str, error: type[ValueError] = ConfigError) -> dict:
    """The mapping of keys in the YAML file ``path`` (an empty file: no keys), read with the
    bounds of :func:`generala_env.files.safe_yaml.read_yaml`: the one reader of every config file
    (training configs, a run's ``config.yaml``, the benchmark's task suite and algorithm files).

    Anything that stops it (no such file, a FIFO, a device or a ``/proc`` file, not YAML, too
    large, not a mapping) is one line of ``error``: ``what`` (the kind of file), then the file's name and the problem."""
    p = Path(path)
    try:
        data = read_yaml(p, what)
    except YamlFileError as e:
        raise error(str(e)) from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise error(f"{what} {p} must hold a mapping of keys, got {type(data).__name__}")
    return data


def resolve_config_path(path: str | Path) -> Path:
    """The config file ``path`` names: the file itself where it exists; else a shipped config
    given by its name (``ppo_tiny``, ``ppo_tiny.yaml``, or the checkout's spelling
    ``configs/ppo_tiny.yaml``), so that names work from any folder and in a wheel install.
    A :class:`ConfigError` names the shipped configs when it is neither."""
    p = Path(path)
    if p.exists():
        return p
    shipped = shipped_configs()
    name = p.name[: -len(p.suffix)] if p.suffix in (".yaml", ".yml") else p.name
    if name in shipped and p.parent in (Path("."), Path("configs")):
        return shipped[name]
    listed = f"the shipped configs are {', '.join(shipped) or 'none'} (generala train --list-configs)"
    raise ConfigError(refusal(f"config file {p} does not exist", name, shipped, listed))


def load_config(path: str | Path | dict | Config | None = None, overrides: list[str] | None = None) -> Config:
    """Defaults, overlaid by a YAML file (or a mapping, or a config), overlaid by ``KEY=VALUE`` overrides.

    ``path`` may also name a shipped config (``ppo_tiny``: :func:`resolve_config_path`)."""
    values = copy.deepcopy(DEFAULTS)
    if isinstance(path, Config):
        path = dataclasses.asdict(path)
    if isinstance(path, dict):
        values = _merge(values, path)
    elif path is not None:
        p = resolve_config_path(path)
        data = read_config_file(p, "config file")
        try:
            values = _merge(values, data)
        except ConfigError as e:
            raise ConfigError(f"config file {p}: {e}") from None
    for text in overrides or []:
        keys, value = parse_override(text)
        nested: Any = value
        for k in reversed(keys):
            nested = {k: nested}
        values = _merge(values, nested)
    cfg = _build(Config, values)
    _validate(cfg)
    return cfg


def run_rules(cfg: Config) -> RuleSet:
    """The run's rule set, loaded once where the run starts (``env.rules``) and passed to its
    envs, its model, its evaluation and its behaviour cloning."""
    from generala_env.core.rules import RulesError, load_rules

    try:
        return load_rules(cfg.env.rules)
    except RulesError as e:
        raise ConfigError(f"config key 'env.rules': {e}") from None
