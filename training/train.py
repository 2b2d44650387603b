"""Train a MaskablePPO agent on Generala from a YAML config.

    generala train --config ppo_classic [KEY=VALUE ...]       # a shipped config by name, or a YAML file
    generala train --resume runs/ppo_classic__seed0__20261129-1310 [KEY=VALUE ...]
    generala train --list-configs                               # the shipped configs
    python -m generala_training.train --config configs/ppo_tiny.yaml

Each run writes to its own folder: ``config.yaml`` (the resolved config), ``command.txt``,
``tb/`` (TensorBoard: episode score, share of the optimal expected score, win rate
against the evaluation opponent, losses, entropy), ``checkpoints/step_N.zip``,
``latest.zip`` with ``state.json`` (what ``--resume`` continues from, optimizer state and
step count included), ``best_model.zip`` and ``evaluations.csv``; a run trains whole rollouts
(``algo.n_steps`` x ``vec_env.n_envs`` steps each) up to ``total_timesteps`` rounded down to
whole rollouts (at least one), and says so when it starts; every model file is written
through a temporary file, so a kill never leaves a torn one. Ctrl-C or SIGTERM saves
``latest.zip`` before exiting, so a cut run loses nothing. A run cut before its first
``state.json`` (during pretraining, say) is started again by the same command or ``--resume``.

The run folder is locked (its ``.lock``) while a run or ``--resume`` uses it: a second one on
the same folder is refused with one line and touches nothing. ``evaluations.csv`` and
``command.txt`` grow by whole-line appends; a save that fails (a full disk) is one line naming
the file, and leaves the previous file whole and no temporary file. ``init_from`` is a
checkpoint folder (``generala export``), or an SB3 ``.zip`` with ``--trust-zip`` (a pickle:
it runs code when loaded); a run's own ``latest.zip`` needs no flag.

Overrides on ``--resume`` may change ``total_timesteps``, ``device``, ``threads``,
``checkpoint_every``, ``algo.*`` and ``eval.*``; the others made the saved model and its envs,
and are refused. Nothing is written to a run folder before its model has been built or loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import pickle
import re
import shlex
import signal
import stat
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import yaml
from stable_baselines3.common.callbacks import BaseCallback

from generala_env.files import FileProblem, append_line, lock_folder, lstat_or_none

from . import runs
from .config import Config, ConfigError, EnvConfig, list_configs, load_config, planned_timesteps, rollout_steps
from .runs import EVALUATIONS, Evaluator, Played, build_model, write_atomic

if TYPE_CHECKING:
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy


EVAL_SEED_BASE = 20_261_129  # evaluation games use fixed dice, the same for every run


# -- environments ---------------------------------------------------------------------
def _scale_wrapper():
    import gymnasium as gym

    class RewardScale(gym.RewardWrapper):
        """Multiplies rewards by a constant for learning (evaluations use raw points)."""

        def __init__(self, env, scale: float):
            super().__init__(env)
            self.scale = scale

        def reward(self, reward):
            return reward * self.scale

    return RewardScale


def _opponents_for(env_cfg: EnvConfig, rank: int):
    opp = env_cfg.opponents
    if env_cfg.num_players == 1:
        return None
    if isinstance(opp, list):
        # a mix: each env plays one entry (an entry may itself be a list, one per seat)
        return opp[rank % len(opp)]
    return opp


def make_env_fn(env_cfg: EnvConfig, rank: int, seed: int, opponent_trust=None):
    def _init():
        import gymnasium as gym
        from stable_baselines3.common.monitor import Monitor

        import generala_env  # noqa: F401  (registers Generala-v0)

        env = gym.make(
            "Generala-v0",
            rules=env_cfg.rules,
            num_players=env_cfg.num_players,
            opponents=_opponents_for(env_cfg, rank),
            reward=env_cfg.reward,
            agent_seat=env_cfg.agent_seat,
            exploring_starts=env_cfg.exploring_starts,
            opponent_trust=opponent_trust,
        )
        env = Monitor(_scale_wrapper()(env, env_cfg.reward_scale))
        env.reset(seed=seed + rank)
        env.action_space.seed(seed + rank)
        return env

    return _init


def _with_self_play(env_cfg: EnvConfig, run: Path | None) -> EnvConfig:
    """Replace the opponent name ``self-play`` by the pool of this run's own checkpoints."""
    opp = env_cfg.opponents
    if run is None or opp is None:
        return env_cfg
    pool = f"pool:{run / 'checkpoints'}"
    swap = lambda o: pool if o == "self-play" else o  # noqa: E731
    opp = [swap(o) for o in opp] if isinstance(opp, list) else swap(opp)
    return dataclasses.replace(env_cfg, opponents=opp)


def _own_pool_trust(run: Path | None):
    """The opponents' trust: the zips of this run's own ``checkpoints/`` (its self-play pool) are its own."""
    from generala_env.opponents import Trust

    return None if run is None else Trust(zip_folders=(str(run / "checkpoints"),))


def make_vec_env(cfg: Config, run: Path | None = None):
    kind, n = cfg.vec_env.kind, cfg.vec_env.n_envs
    env_cfg, seed, trust = _with_self_play(cfg.env, run), cfg.seed, _own_pool_trust(run)
    if kind == "batched":
        try:
            from generala_env.sb3 import make_sb3_vec_env
        except ImportError as e:
            raise ConfigError(f"vec_env.kind 'batched' needs generala_env.sb3: {e}") from None
        return make_sb3_vec_env(n_envs=n, seed=seed, opponent_trust=trust, **dataclasses.asdict(env_cfg))
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    fns = [make_env_fn(env_cfg, i, seed * 1000, trust) for i in range(n)]
    if kind == "subproc":
        return SubprocVecEnv(fns, start_method="fork")
    return DummyVecEnv(fns)


def training_envs(cfg: Config, run: Path | None = None):
    """:func:`make_vec_env`, its rewards scaled by their running spread where
    ``algo.normalize_reward`` asks (the evaluations play their own, unscaled games)."""
    venv = make_vec_env(cfg, run)
    if cfg.algo.normalize_reward:
        from stable_baselines3.common.vec_env import VecNormalize

        venv = VecNormalize(venv, norm_obs=False, norm_reward=True, gamma=cfg.algo.gamma)
    return venv


# -- the model ------------------------------------------------------------------------
# what MaskablePPO.load may raise for a file that is missing, cut short or not a model of these envs
LOAD_ERRORS = (ValueError, KeyError, TypeError, OSError, EOFError, RuntimeError, AssertionError, zipfile.BadZipFile, pickle.UnpicklingError)


def algo_kwargs(cfg: Config) -> dict:
    """The MaskablePPO hyperparameters of ``cfg.algo``, the learning rate as its schedule."""
    a = cfg.algo
    lr0 = a.learning_rate
    lr: float | Callable[[float], float] = lr0
    if a.lr_schedule == "linear":
        lr = lambda progress_remaining: lr0 * progress_remaining  # noqa: E731
    keys = ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef", "max_grad_norm", "target_kl")
    return dict(learning_rate=lr, **{k: getattr(a, k) for k in keys})


TRUST_ZIP_HELP = (
    "load the SB3 .zip that config key init_from names: an SB3 zip is a pickle, which runs code when loaded, "
    "so pass this only for a zip you made (asked at every use, never remembered; a run's own latest.zip needs no flag)"
)


def load_sb3_zip(path: Path, why: str, *, trusted: bool, own_run: Path | None = None, **kwargs):
    """``MaskablePPO.load`` of the SB3 zip ``path``: the one way a training run unpickles a model.

    An SB3 zip runs code when it is loaded, so it is loaded only where the user asked at this
    call (``trusted``: ``--trust-zip``), or where it is the run's own file (``own_run``: a
    regular file, not a link, directly in that run folder, which the run wrote). Anything else
    is a :class:`ConfigError` naming ``why`` (what asked for it), the flag and the safe route: a
    checkpoint folder (``generala export``), which holds weights only. The file is read through
    a descriptor opened without following links.
    """
    from sb3_contrib import MaskablePPO

    from generala_agents import Trust

    path = Path(path)
    if not Trust(zip=trusted, zip_folders=(str(own_run),) if own_run is not None else ()).trusts_zips_in(path.parent):
        raise ConfigError(
            f"{why}: {path} is an SB3 zip, which runs code when loaded: pass --trust-zip if you made it, "
            "or start from a checkpoint folder (generala export RUN --name NAME makes one from a run; it holds weights only)"
        )
    st = lstat_or_none(path)
    if st is None:
        raise ConfigError(f"{why}: cannot load {path}: it does not exist")
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{why}: {path} is not a regular file (a link, a folder or a pipe): nothing is loaded from it")
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | nofollow)) as f:
            return MaskablePPO.load(f, **kwargs)
    except LOAD_ERRORS as e:
        raise ConfigError(f"{why}: {path} cannot be loaded: {e}") from None


def model_from_config(cfg: Config, venv, tb_dir: Path, trust_zip: bool = False):
    """The run's model on ``venv``: ``init_from``'s weights, or a fresh MaskablePPO of
    ``cfg.policy`` (:func:`generala_training.runs.build_model`), with the hyperparameters of ``cfg.algo``.

    ``init_from`` is a checkpoint folder (``generala export``: weights only, loaded into a
    fresh model of ``cfg.policy``, which must be its network) or, with ``trust_zip``, an SB3
    ``.zip`` (see :func:`load_sb3_zip`); either way the step count starts again at 0."""
    from sb3_contrib import MaskablePPO

    if cfg.init_from and not Path(cfg.init_from).is_dir():
        # the saved weights, this config's hyperparameters
        hyper = dict(algo_kwargs(cfg), tensorboard_log=str(tb_dir), seed=cfg.seed, verbose=0)
        model = load_sb3_zip(Path(cfg.init_from), "config key 'init_from'", trusted=trust_zip, env=venv, device=cfg.device, **hyper)
        model.num_timesteps = 0
        return model
    try:
        policy_class, policy_kwargs = _policy(cfg)
        model = build_model(MaskablePPO, venv, policy_class, policy_kwargs, seed=cfg.seed, device=cfg.device, tensorboard_log=str(tb_dir), **algo_kwargs(cfg))
    except (ValueError, RuntimeError, AssertionError) as e:
        raise ConfigError(f"cannot build the model from config keys 'policy', 'algo' and 'device': {e}") from None
    if cfg.init_from:
        load_checkpoint_weights(model, Path(cfg.init_from), cfg)
    return model


def load_checkpoint_weights(model, folder: Path, cfg: Config) -> None:
    """Put the weights of the checkpoint folder ``folder`` into ``model`` (built from ``cfg.policy``).

    The checkpoint is checked as an agent is (its metadata: rules, players, observation layout;
    its ``policy.safetensors``: tensors only, bounded by the metadata), then every tensor of
    the model must be there with its shape: a checkpoint of another network is refused."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from generala_agents.base import AgentError
    from generala_agents.ppo import WEIGHTS_FILE, PPOAgent

    why = "config key 'init_from'"
    try:
        PPOAgent(folder, rules=cfg.env.rules, num_players=cfg.env.num_players)
    except AgentError as e:
        raise ConfigError(f"{why}: {e}") from None
    try:
        tensors = load_file(str(folder / WEIGHTS_FILE), device="cpu")
    except (SafetensorError, OSError, ValueError) as e:
        raise ConfigError(f"{why}: {folder / WEIGHTS_FILE} cannot be read: {e}") from None
    want = model.policy.state_dict()
    wrong = sorted(set(want) ^ set(tensors)) or sorted(k for k in want if tuple(want[k].shape) != tuple(tensors[k].shape))
    if wrong:
        raise ConfigError(
            f"{why}: checkpoint {folder} holds another network than config key 'policy' makes "
            f"(first difference: {wrong[0]}); give 'policy' the checkpoint's network (its metadata.json says which)"
        )
    model.policy.load_state_dict(tensors)


def _policy(cfg: Config) -> tuple[type[MaskableActorCriticPolicy] | str, dict]:
    """The policy class of ``cfg.policy`` and its keywords (the activation by name)."""
    from generala_env.encoding import observation_layout
    from generala_env.rules import load_rules

    arch = list(cfg.policy.net_arch)
    vf_arch = list(cfg.policy.vf_arch) if cfg.policy.vf_arch is not None else arch
    policy_kwargs: dict = dict(net_arch=dict(pi=arch, vf=vf_arch), activation_fn=cfg.policy.activation, ortho_init=cfg.policy.ortho_init)
    if cfg.policy.head == "keep" and cfg.policy.entropy_on != "all":
        raise ConfigError("config key 'policy.entropy_on': holds works with policy.head mlp, not keep")
    if cfg.policy.head == "keep" and cfg.policy.dice == "onehot":
        raise ConfigError("config key 'policy.dice': onehot works with policy.head mlp, not keep")
    rules = load_rules(cfg.env.rules)
    layout = observation_layout(rules, cfg.env.num_players)
    dice = (layout["dice_sorted"].start, layout["dice_sorted"].stop)
    policy_class: type[MaskableActorCriticPolicy] | str
    if cfg.policy.head == "keep":
        from .policies import KeepHeadMaskablePolicy as policy_class

        policy_kwargs.update(dice_slice=dice, num_lines=rules.num_lines, keep_width=cfg.policy.keep_width, layer_norm=cfg.policy.layer_norm)
    elif cfg.policy.entropy_on == "holds":
        from .policies import HoldEntropyLayerNormPolicy, HoldEntropyMaskablePolicy

        policy_class = HoldEntropyLayerNormPolicy if cfg.policy.layer_norm else HoldEntropyMaskablePolicy
        policy_kwargs.update(no_rolls_at=layout["rolls_left"].start)
    elif cfg.policy.layer_norm:
        from .policies import LayerNormMaskablePolicy as policy_class
    else:
        policy_class = "MlpPolicy"
    if cfg.policy.dice == "onehot":
        from .policies import OneHotDice

        policy_kwargs.update(features_extractor_class=OneHotDice, features_extractor_kwargs=dict(dice_slice=dice))
    return policy_class, policy_kwargs


def load_latest(cfg: Config, run: Path, venv):
    """The run's ``latest.zip`` on ``venv``, with the hyperparameters of ``cfg.algo`` (so overrides
    apply): the run's own file, which needs no ``--trust-zip`` (:func:`load_sb3_zip`)."""
    return load_sb3_zip(
        run / "latest.zip", "--resume", trusted=False, own_run=run, env=venv, device=cfg.device, tensorboard_log=str(run / "tb"), **algo_kwargs(cfg)
    )


# -- evaluation during training ---------------------------------------------------------
def _figures(evaluator: Evaluator, played: Played) -> dict:
    """A run's figures: its mean score, as a share of the optimum, and its win rate against
    ``eval.opponent`` (in the other seats, or alone on the same dice)."""
    assert played.points is not None  # a run always has an eval.opponent
    mean = float(played.totals.mean())
    return {"mean_score": mean, "share_of_optimal": mean / evaluator.optimum, "win_rate": float(np.mean(played.points))}


def make_evaluator(cfg: Config) -> Evaluator:
    """The run's evaluation (:class:`generala_training.runs.Evaluator`): ``eval.games`` seeded games, the
    same dice for every run; with several players half as many, each played from every seat."""
    from generala_env.rules import load_rules

    rules = load_rules(cfg.env.rules)
    players = cfg.env.num_players
    games = cfg.eval.games if players == 1 else max(1, cfg.eval.games // 2)
    try:  # an unknown opponent fails now, not at the first evaluation
        return Evaluator(rules, players, cfg.eval.opponent, EVAL_SEED_BASE, games, _figures)
    except ValueError as e:
        raise ConfigError(f"config key 'eval.opponent': {e}") from None


def evaluate_policy(evaluator: Evaluator, policy) -> dict:
    """The run's figures for ``policy``, which plays greedily among the legal actions: one
    batched forward pass a decision for one player, one game at a time with opponents."""
    from generala_agents.ppo import masked_argmax_actions

    if evaluator.players == 1:
        return evaluator(lambda o, m: masked_argmax_actions(policy, o, m))
    return evaluator.play_agent(_PolicyAgent(policy))


class _PolicyAgent:
    name = "policy"

    def __init__(self, policy):
        self.policy = policy

    def reset(self, seed=None):
        pass

    def act(self, obs, info):
        from generala_agents.ppo import masked_argmax_actions

        return int(masked_argmax_actions(self.policy, np.asarray(obs)[None], np.asarray(info["action_mask"])[None])[0])


class TrainCallback(BaseCallback):
    """What a run does between PPO's steps: a progress bar, the episode scores of each rollout,
    evaluations every ``eval.every`` steps (``evaluations.csv``, ``best_model.zip``) and
    checkpoints every ``checkpoint_every`` steps (with ``latest.zip`` and ``state.json``).

    :param cfg: the run's config
    :param run: the run folder
    :param state: the run's ``state.json`` so far; evaluations and the best result are added to it
    :param total: the step count the run trains to (the progress bar's end)
    :param evaluator: the run's evaluation games (:func:`make_evaluator`)
    """

    def __init__(self, cfg: Config, run: Path, state: dict, total: int, evaluator: Evaluator):
        super().__init__()
        self.cfg, self.run, self.state, self.total, self.evaluator = cfg, run, state, total, evaluator

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        every, ckpt = self.cfg.eval.every, self.cfg.checkpoint_every
        self.bar = tqdm(total=self.total, initial=self.num_timesteps, unit="step", dynamic_ncols=True, desc=self.run.name[:40])
        self.next_eval = (self.num_timesteps // every + 1) * every
        self.next_ckpt = (self.num_timesteps // ckpt + 1) * ckpt
        self.t_start = time.time()
        self.steps_start = self.num_timesteps
        self.scores: list[float] = []

    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
            if done and "totals" in info:
                self.scores.append(float(info["totals"][info.get("seat", 0)]))  # the agent's own total
        self.bar.update(max(0, min(self.training_env.num_envs, self.total - self.bar.n)))  # never past its total
        if self.num_timesteps >= self.next_eval:
            self.next_eval += self.cfg.eval.every
            self.evaluate()
        if self.num_timesteps >= self.next_ckpt:
            self.next_ckpt += self.cfg.checkpoint_every
            save_model(self.model, self.run / "checkpoints" / f"step_{self.num_timesteps}.zip")
            save_latest(self.model, self.run, self.state, self.t_start)
        return True

    def _on_rollout_end(self) -> None:
        if self.scores:
            self.logger.record("rollout/episode_score", float(np.mean(self.scores)))
            self.logger.record("rollout/episode_share_of_optimal", float(np.mean(self.scores)) / self.evaluator.optimum)
            self.scores = []
        elapsed = time.time() - self.t_start
        if elapsed > 0:
            self.logger.record("time/steps_per_second", (self.num_timesteps - self.steps_start) / elapsed)

    def evaluate(self) -> None:
        run, state = self.run, self.state
        res = evaluate_policy(self.evaluator, self.model.policy)
        for k, v in res.items():
            self.logger.record(f"eval/{k}", v)
        self.logger.record(f"eval/win_rate_vs_{self.cfg.eval.opponent}", res["win_rate"])
        key = "mean_score" if self.cfg.env.num_players == 1 else "win_rate"
        line = {"step": self.num_timesteps, "wall_seconds": state["train_seconds"] + time.time() - self.t_start, **res}
        state["evaluations"].append(line)
        append_evaluation(run / EVALUATIONS, line)
        if res[key] > state.get("best", -np.inf):
            state["best"] = res[key]
            state["best_step"] = self.num_timesteps
            save_model(self.model, run / "best_model.zip")
        self.bar.set_postfix(score=f"{res['mean_score']:.1f}", opt=f"{res['share_of_optimal']:.1%}", win=f"{res['win_rate']:.1%}")
        self.logger.dump(self.num_timesteps)

    def _on_training_end(self) -> None:
        self.bar.close()


def _callback(cfg: Config, run: Path, state: dict, total: int, evaluator: Evaluator | None = None) -> TrainCallback:
    """The run's :class:`TrainCallback` (tests replace this to wrap it)."""
    return TrainCallback(cfg, run, state, total, evaluator or make_evaluator(cfg))


def append_evaluation(path: Path, line: dict) -> None:
    """One evaluation as a row of ``evaluations.csv`` (its header first, in a new file): each a
    whole line in one append (:func:`generala_env.files.append_line`), never through a link."""
    st = lstat_or_none(path)
    if st is None or st.st_size == 0:
        append_line(path, ",".join(line))
    append_line(path, ",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in line.values()))


def save_model(model, path: Path) -> None:
    """``model.save`` into a fresh hidden temporary file beside ``path``, renamed over it
    (:func:`generala_env.files.write_atomic`): a cut save leaves the old file whole (or none),
    never a torn zip that a resume or a self-play pool would load; a failed save (a full disk)
    removes the temporary file and is one line naming ``path``; a link at ``path`` is refused."""
    from generala_env.files import write_atomic as write_file

    write_file(path, model.save)  # SB3 writes a zip to a binary file it is given and leaves it open


def save_latest(model, run: Path, state: dict, t_start: float) -> None:
    save_model(model, run / "latest.zip")
    s = dict(state)
    s["num_timesteps"] = int(model.num_timesteps)
    s["train_seconds"] = state["train_seconds"] + (time.time() - t_start)
    write_atomic(run / "state.json", json.dumps(s, indent=2, default=float))


# -- resuming ---------------------------------------------------------------------------------
# keys that --resume applies (to the loaded model, or to the callback); the others made the
# saved model and its envs, and changing them needs a new run
RESUMABLE = ("total_timesteps", "device", "threads", "checkpoint_every", "algo.", "eval.")


def _changed(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two configs."""
    out = []
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(old.get(k), dict):
            out += _changed(old[k], v, f"{prefix}{k}.")
        elif old.get(k) != v:
            out.append(prefix + k)
    return out


def resume_config(run: Path, overrides: list[str] | None = None) -> Config:
    """The saved config of ``run`` with ``overrides``; a ConfigError names what stops the run from resuming."""
    if not run.is_dir():
        raise ConfigError(f"{run} is not a run folder")
    for name in ("config.yaml", "latest.zip", "state.json"):
        st = lstat_or_none(run / name)
        if st is None:
            raise ConfigError(f"{run / name} is missing: --resume needs a run folder with config.yaml, latest.zip and state.json")
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{run / name} is not a regular file (a link, a folder or a pipe): a run reads only the files it wrote")
    path = run / "config.yaml"
    try:
        saved = load_config(path)
    except ConfigError as e:
        raise ConfigError(str(e) if str(path) in str(e) else f"{path}: {e}") from None
    cfg = load_config(saved, overrides)
    fixed = [k for k in _changed(dataclasses.asdict(saved), dataclasses.asdict(cfg)) if not k.startswith(RESUMABLE)]
    if fixed:
        raise ConfigError(
            f"{', '.join(fixed)} cannot change when resuming {run}: the saved model and its envs were made with "
            f"the values in {path}. On resume only total_timesteps, device, threads, checkpoint_every, algo.* and "
            "eval.* can change; for the others start a new run"
        )
    return cfg


def read_state(run: Path) -> dict:
    """The run's ``state.json`` (:func:`generala_training.runs.read_state`): steps, training time, best result and evaluations so far."""
    state = runs.read_state(run / "state.json", ConfigError, "it is written with latest.zip, so the run cannot resume")
    assert state is not None  # a required state file is read or refused
    return state


# -- runs cut short -------------------------------------------------------------------------
# what a run writes before its first state.json; a folder holding only these (and the
# temporary files of their saves) and no state.json is a start that was cut short, and starts again
_START_FILES = {"config.yaml", "command.txt", "pretrained.zip", "latest.zip", "best_model.zip", "evaluations.csv", ".lock"}
_RUN_FILES = ("config.yaml", "state.json", "evaluations.csv", "latest.zip", "best_model.zip", "final_model.zip", "pretrained.zip")
# a save's temporary file: files.write_atomic's ".NAME.XXXXXXXX.tmp", or an older version's ".NAME.tmp" / "NAME.tmp"
_TEMPORARY = re.compile(r"\.?(?P<name>[A-Za-z0-9_.]+?)(\.[a-z0-9_]{8})?\.tmp")


def _temporary_of(name: str, files: tuple[str, ...] | re.Pattern) -> bool:
    """Whether ``name`` is the temporary file of a save of one of ``files`` (names, or a pattern of names)."""
    m = _TEMPORARY.fullmatch(name)
    if m is None:
        return False
    return m.group("name") in files if isinstance(files, tuple) else bool(files.fullmatch(m.group("name")))


_STEP = re.compile(r"step_\d+\.zip")


def sweep_temporaries(run: Path) -> list[str]:
    """Remove the temporary files of saves cut short (a kill during a save) from ``run`` and its
    ``checkpoints/``; called with the run folder locked, when no save of the run is under way.
    Only regular files with a save's temporary name are removed."""
    gone = []
    for folder, names in ((run, _RUN_FILES), (run / "checkpoints", _STEP)):
        if not folder.is_dir() or folder.is_symlink():
            continue
        for p in folder.iterdir():
            if p.name.endswith(".tmp") and _temporary_of(p.name, names) and stat.S_ISREG(p.lstat().st_mode):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
                    gone.append(p.name)
    return gone


def _own_tree(folder: Path, ok) -> bool:
    """Whether ``folder`` is a real folder whose every file (links refused) passes ``ok(name)``."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    return not any(p.is_symlink() or (p.is_file() and not ok(p.name)) or not (p.is_file() or p.is_dir()) for p in folder.rglob("*"))


def unfinished_start(run: Path) -> bool:
    """Whether ``run`` is a run folder cut short before it first saved ``state.json``, holding
    nothing but files a run writes (so starting it again loses nothing anyone else made)."""
    if run.is_symlink() or not run.is_dir() or os.path.lexists(run / "state.json") or not any(p.name != ".lock" for p in run.iterdir()):
        return False
    for p in run.iterdir():
        if p.name == "checkpoints":
            ok = _own_tree(p, lambda n: bool(_STEP.fullmatch(n)) or _temporary_of(n, _STEP))
        elif p.name == "tb":
            ok = _own_tree(p, lambda n: n.startswith("events.out.tfevents."))
        else:
            ok = (p.name in _START_FILES or _temporary_of(p.name, _RUN_FILES)) and p.is_file() and not p.is_symlink()
        if not ok:
            return False
    return True


def clear_unfinished(run: Path) -> None:
    """Remove what a cut-short start wrote (see :func:`unfinished_start`), keeping the folder
    and its ``.lock`` (held by the run that clears it)."""
    import shutil

    for p in run.iterdir():
        if p.name == ".lock":
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def _model_steps(path: Path) -> int | None:
    """The step count saved in an SB3 model zip (its ``data`` entry), without loading the model."""
    try:
        with zipfile.ZipFile(path) as z:
            steps = json.loads(z.read("data")).get("num_timesteps")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, AttributeError):
        return None
    return steps if isinstance(steps, int) else None


def reconcile_best(run: Path, state: dict, key: str) -> None:
    """Make a resumed run's state agree with the files beside it after a kill.

    ``best_model.zip`` may be newer than ``state.json`` (which is saved with ``latest.zip``): its
    step's row of ``evaluations.csv`` becomes the best, so a later, worse model cannot replace it.
    Rows of ``evaluations.csv`` after ``latest.zip``'s step are dropped: those steps are trained again.
    """
    csv = run / EVALUATIONS
    header, rows = runs.read_evaluations(csv, ConfigError)  # a torn last row is skipped with a warning
    best_step = _model_steps(run / "best_model.zip") if (run / "best_model.zip").is_file() else None
    if best_step is not None and best_step != state.get("best_step"):
        row = next((r for r in rows if r.get("step") == best_step and key in r), None)
        if row is not None:
            state["best"], state["best_step"] = row[key], best_step
            print(f"best_model.zip is the model of step {best_step:,} ({key} {row[key]:.4g}), saved after state.json: it stays the best")
    saved = state.get("num_timesteps")
    cut = any(r.get("step", 0) > saved for r in rows) if isinstance(saved, int) else False
    if header and (cut or _torn(csv)):
        kept = [r for r in rows if not isinstance(saved, int) or r.get("step", 0) <= saved]
        lines = [",".join(header)] + [",".join(f"{r[h]:.6g}" if h != "step" else str(int(r[h])) for h in header) for r in kept]
        write_atomic(csv, "\n".join(lines) + "\n")


def _torn(path: Path) -> bool:
    """Whether ``path`` ends without a newline (its last append was cut short)."""
    try:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:
        return False


def check_run_name(name: str) -> str:
    """``--run-name``: one folder name under ``run_dir``, never a path out of it."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name or len(name) > 200:
        raise ConfigError(f"--run-name must be a folder name of at most 200 characters, without path separators and not '..', got {name[:80]!r}")
    return name


# -- the program ----------------------------------------------------------------------------
def _build_envs(cfg: Config, run: Path):
    try:
        return training_envs(cfg, run)
    except ConfigError:
        raise
    except (ValueError, TypeError, OSError, EOFError) as e:  # RulesError and AgentError are ValueErrors
        raise ConfigError(f"cannot build the training envs from config keys 'env' and 'vec_env': {e}") from None


def lock_run(run: Path):
    """Hold the run folder's lock (:func:`generala_env.files.lock_folder`) while a run uses it: a
    second ``generala train`` or ``--resume`` on the folder is refused with one line."""
    return lock_folder(run, "another generala train (or --resume)")


def _check_fresh(run: Path) -> None:
    """Refuse a folder a fresh run may not use: a link, a file, or a folder that holds anything
    but a start cut short (:func:`unfinished_start`) or the lock."""
    if run.is_symlink():
        raise ConfigError(f"run folder {run} is a symbolic link: a run writes only into a real folder; pick another --run-name")
    if unfinished_start(run):
        return
    if os.path.lexists(run) and (not run.is_dir() or any(p.name != ".lock" for p in run.iterdir())):
        raise ConfigError(f"run folder {run} already exists and is not empty; continue it with --resume {run} or pick another --run-name")


@contextlib.contextmanager
def _fresh_run(run: Path):
    """Make and lock the folder of a fresh run, checked again under the lock (another run may
    have taken it since the first check); a start cut short there is cleared."""
    run.mkdir(parents=True, exist_ok=True)
    with lock_run(run):
        _check_fresh(run)
        if unfinished_start(run):
            clear_unfinished(run)
        yield


def train(cfg: Config, run: Path, resume: bool = False, command: str = "", trust_zip: bool = False) -> Path:
    """Train a fresh run in folder ``run``, or (``resume``) continue the one there.

    Nothing is written until the envs, the model (resuming: ``latest.zip`` loaded) and the
    evaluator are built, so a config that cannot train leaves no folder and changes no run.
    A fresh run needs ``run`` to be absent or empty: an earlier run there is never overwritten,
    unless it is a start cut short before its first ``state.json`` that holds nothing but what a
    run writes (:func:`unfinished_start`), which is started again. The folder is locked
    (:func:`lock_run`) for as long as the run uses it: resuming, from before its files are read.
    ``trust_zip``: ``init_from`` may name an SB3 zip (:func:`load_sb3_zip`).
    """
    import torch

    state: dict = {"train_seconds": 0.0, "evaluations": []}
    with contextlib.ExitStack() as held:
        if resume:
            held.enter_context(lock_run(run))
            gone = sweep_temporaries(run)
            if gone:
                print(f"removed the temporary files of saves cut short in {run}: {', '.join(gone)}")
            state.update(read_state(run))
        else:
            _check_fresh(run)
            if unfinished_start(run):
                print(f"{run} was started but never saved (no state.json: stopped during pretraining or before its first checkpoint); starting it again")
        torch.set_num_threads(cfg.threads)
        venv = _build_envs(cfg, run)
        try:
            model = load_latest(cfg, run, venv) if resume else model_from_config(cfg, venv, run / "tb", trust_zip)
            evaluator = make_evaluator(cfg)
            if resume:
                reconcile_best(run, state, "mean_score" if cfg.env.num_players == 1 else "win_rate")
            else:
                held.enter_context(_fresh_run(run))
            (run / "checkpoints").mkdir(exist_ok=True)
            write_atomic(run / "config.yaml", yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=False))
            append_line(run / "command.txt", command.replace("\n", "\\n"))
        except BaseException:
            venv.close()
            raise
        old = signal.signal(signal.SIGTERM, _term)
        try:
            _train_in(cfg, run, resume, state, model, venv, evaluator)
        finally:
            signal.signal(signal.SIGTERM, old)
    return run


def _rounding_note(cfg: Config, end: int) -> str:
    """What the run's end is, where it is not ``total_timesteps`` itself."""
    if end == cfg.total_timesteps:
        return ""
    if end > cfg.total_timesteps:
        return f", to step {end:,}: total_timesteps {cfg.total_timesteps:,} is less than one rollout"
    return f", to step {end:,}: total_timesteps {cfg.total_timesteps:,} rounded down to whole rollouts"


def _term(signum, frame):  # SIGTERM saves like Ctrl-C
    raise KeyboardInterrupt


def _train_in(cfg: Config, run: Path, resume: bool, state: dict, model, venv, evaluator) -> Path:
    """The part of :func:`train` that runs in the run folder, SIGTERM raising KeyboardInterrupt."""
    if resume:
        print(f"resuming {run} at step {model.num_timesteps:,}")
    elif cfg.pretrain.games > 0 and not cfg.init_from:
        from .pretrain import behaviour_clone

        try:
            state["pretrain"] = behaviour_clone(model, cfg)
        except KeyboardInterrupt:
            venv.close()
            print(f"\ninterrupted during behaviour cloning, before anything was saved; the same command, or generala train --resume {run}, starts it again")
            raise SystemExit(130) from None
        save_model(model, run / "pretrained.zip")
        save_latest(model, run, state, time.time())  # from here on --resume goes on from the cloned policy
    target = planned_timesteps(cfg)
    rollout = rollout_steps(cfg)
    rollouts = (target - model.num_timesteps) // rollout  # whole rollouts only: never past the target
    if rollouts <= 0:
        venv.close()
        print(f"run {run} already has {model.num_timesteps:,} steps, and {target:,} is its end (total_timesteps {cfg.total_timesteps:,})")
        return run
    remaining = rollouts * rollout
    end = model.num_timesteps + remaining
    print(f"training {remaining:,} steps: {rollouts:,} rollouts of {rollout:,} (algo.n_steps x vec_env.n_envs)" + _rounding_note(cfg, end))
    cb = _callback(cfg, run, state, end, evaluator)
    t0 = time.time()
    try:
        model.learn(total_timesteps=remaining, callback=cb, reset_num_timesteps=False, tb_log_name="ppo")
    except KeyboardInterrupt:
        save_latest(model, run, state, t0)
        print(f"\ninterrupted at step {model.num_timesteps:,}: saved {run / 'latest.zip'}; continue with: generala train --resume {run}")
        raise SystemExit(130) from None
    except Exception:
        bar = getattr(cb, "bar", None)
        if bar is not None:
            bar.close()  # the error's line starts a line of its own
        raise
    finally:
        venv.close()
    save_latest(model, run, state, t0)
    save_model(model, run / "final_model.zip")
    print(f"done: {model.num_timesteps:,} steps in {time.time() - t0:.0f} s; run folder {run}")
    return run


def parse_args(argv):
    p = argparse.ArgumentParser(allow_abbrev=False, prog="generala train", description="Train MaskablePPO on Generala from a YAML config.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", help="a YAML config file, or the name of a shipped one (ppo_tiny, ppo_classic, ...: see --list-configs)")
    src.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its latest.zip")
    src.add_argument("--list-configs", action="store_true", help="list the shipped configs, one line each, and exit")
    p.add_argument("overrides", nargs="*", help="KEY=VALUE overrides, e.g. algo.learning_rate=1e-4 total_timesteps=2e6")
    p.add_argument("--run-name", help="folder name under run_dir (default NAME__seedS__TIME)")
    p.add_argument("--trust-zip", action="store_true", help=TRUST_ZIP_HELP)
    return p.parse_intermixed_args(argv)


def main(argv=None) -> int:
    from generala_agents.base import AgentError

    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    command = "generala train " + " ".join(shlex.quote(a) for a in argv)
    if args.list_configs:
        return list_configs()
    try:
        if args.resume:
            run = Path(args.resume)
            if unfinished_start(run) and (run / "config.yaml").is_file():
                print(f"{run} was cut short before its first save (no state.json): starting it again from its config.yaml")
                train(load_config(run / "config.yaml", args.overrides), run, command=command, trust_zip=args.trust_zip)
                return 0
            train(resume_config(run, args.overrides), run, resume=True, command=command)
            return 0
        cfg = load_config(args.config, args.overrides)
        name = check_run_name(args.run_name) if args.run_name is not None else f"{cfg.name}__seed{cfg.seed}__{time.strftime('%Y%m%d-%H%M%S')}"
        train(cfg, Path(cfg.run_dir) / name, command=command, trust_zip=args.trust_zip)
    except (ConfigError, FileProblem) as e:  # FileProblem: a save that failed (a full disk), a folder in use, a link
        print(f"generala train: error: {e}", file=sys.stderr)
        return 2
    except AgentError as e:  # an opponent that cannot play on (a self-play pool's unreadable step_N.zip)
        print(f"generala train: error: {e}; the run keeps its last checkpoint", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before the run folder was made: nothing to save
        print("\ngenerala train: interrupted before training started; nothing was written", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
