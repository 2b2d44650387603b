"""The model of a training run: built from its config, loaded from a run's save or a checkpoint.

:func:`algo_config` makes the run's algorithm (:class:`generala_training.algos.AlgoConfig`,
MaskablePPO) from the config; :func:`model_from_config` builds it fresh on the run's envs, or
starts it from ``init_from`` (a checkpoint folder, or an SB3 ``.zip`` with the zip opt-in);
:func:`load_latest` builds a run's model again from its config and its ``latest.safetensors`` to
resume it (the twin of ``latest.zip``: nothing unpickled).
"""

from __future__ import annotations

import os
import pickle
import stat
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from generala_env.files import lstat_or_none

from .algos import TRAIN_ALGO, AlgoConfig, algo_class
from .config import Config, ConfigError

if TYPE_CHECKING:
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from generala_env.core.rules import RuleSet


LOAD_ERRORS = (ValueError, KeyError, TypeError, OSError, EOFError, RuntimeError, AssertionError, zipfile.BadZipFile, pickle.UnpicklingError)


def algo_config(cfg: Config, rules: RuleSet | None) -> AlgoConfig:
    """The run's algorithm: MaskablePPO with the hyperparameters of ``cfg.algo`` on
    ``vec_env.n_envs`` games, and the network of ``cfg.policy`` for ``rules`` (``None``: no
    network, for loading a saved model, which holds its own)."""
    policy: type[MaskableActorCriticPolicy] | str = "MlpPolicy"
    policy_kwargs: dict = {}
    if rules is not None:
        policy, policy_kwargs = _policy(cfg, rules)
    return AlgoConfig(TRAIN_ALGO, cfg.vec_env.n_envs, policy_kwargs, cfg.algo.hyperparams(), cfg.algo.lr_schedule, policy)


TRUST_ZIP_HELP = (
    "load the SB3 .zip that config key init_from names: an SB3 zip is a pickle, which runs code when loaded, "
    "so pass this only for a zip you made (asked at every use, never remembered). --resume reads the run's latest.safetensors "
    "and needs it only for a run saved before those were written"
)


def load_sb3_zip(path: Path, why: str, *, trusted: bool, **kwargs):
    """``MaskablePPO.load`` (train's algorithm, :data:`generala_training.algos.TRAIN_ALGO`) of the SB3
    zip ``path``: the one way a training run unpickles a model.

    An SB3 zip runs code when it is loaded, so it is loaded only where the user asked at this
    call (``trusted``: ``--trust-zip``). Anything else is a :class:`ConfigError` naming ``why``
    (what asked for it), the flag and the safe route: a checkpoint folder (``generala export``),
    which holds weights only. The file is read through a descriptor opened without following links.
    """
    path = Path(path)
    if not trusted:
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
            return algo_class(TRAIN_ALGO).load(f, **kwargs)
    except LOAD_ERRORS as e:
        raise ConfigError(f"{why}: {path} cannot be loaded: {e}") from None


def model_from_config(cfg: Config, venv, tb_dir: Path, trust_zip: bool = False, rules: RuleSet | None = None):
    """The run's model on ``venv``: ``init_from``'s weights, or a fresh MaskablePPO of
    ``cfg.policy`` for ``rules`` (the run's rule set; ``None``: ``cfg.env.rules`` loaded here),
    with the hyperparameters of ``cfg.algo`` (:func:`algo_config`).

    ``init_from`` is a checkpoint folder (``generala export``: weights only, loaded into a
    fresh model of ``cfg.policy``, which must be its network) or, with ``trust_zip``, an SB3
    ``.zip`` (see :func:`load_sb3_zip`); either way the step count starts again at 0."""
    from generala_env.core.rules import load_rules

    if cfg.init_from and not Path(cfg.init_from).is_dir():
        # the saved weights, this config's hyperparameters
        hyper = dict(algo_config(cfg, None).constructor_kwargs(), tensorboard_log=str(tb_dir), seed=cfg.seed, verbose=0)
        model = load_sb3_zip(Path(cfg.init_from), "config key 'init_from'", trusted=trust_zip, env=venv, device=cfg.device, **hyper)
        model.num_timesteps = 0
        return model
    rules = load_rules(cfg.env.rules if rules is None else rules)
    algo = algo_config(cfg, rules)
    try:
        model = algo.build(venv, seed=cfg.seed, device=cfg.device, tensorboard_log=str(tb_dir))
    except (ValueError, RuntimeError, AssertionError) as e:
        raise ConfigError(f"cannot build the model from config keys 'policy', 'algo' and 'device': {e}") from None
    if cfg.init_from:
        load_checkpoint_weights(model, Path(cfg.init_from), cfg, rules)
    return model


def load_checkpoint_weights(model, folder: Path, cfg: Config, rules: RuleSet | None = None) -> None:
    """Put the weights of the checkpoint folder ``folder`` into ``model`` (built from ``cfg.policy``).

    The checkpoint is checked as an agent is (its metadata: rules, players, observation layout;
    its ``policy.safetensors``: tensors only, bounded by the metadata), then every tensor of
    the model must be there with its shape: a checkpoint of another network is refused."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from generala_agents.base import AgentError
    from generala_agents.policy_net import WEIGHTS_FILE
    from generala_agents.ppo import PPOAgent

    why = "config key 'init_from'"
    try:
        PPOAgent(folder, rules=cfg.env.rules if rules is None else rules, num_players=cfg.env.num_players)
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


def _policy(cfg: Config, rules: RuleSet) -> tuple[type[MaskableActorCriticPolicy] | str, dict]:
    """The policy class of ``cfg.policy`` for ``rules`` and its keywords (the activation by name)."""
    from generala_env.core.encoding import observation_layout

    arch = list(cfg.policy.net_arch)
    vf_arch = list(cfg.policy.vf_arch) if cfg.policy.vf_arch is not None else arch
    policy_kwargs: dict = dict(net_arch=dict(pi=arch, vf=vf_arch), activation_fn=cfg.policy.activation, ortho_init=cfg.policy.ortho_init)
    if cfg.policy.head == "keep" and cfg.policy.entropy_on != "all":
        raise ConfigError("config key 'policy.entropy_on': holds works with policy.head mlp, not keep")
    if cfg.policy.head == "keep" and cfg.policy.dice == "onehot":
        raise ConfigError("config key 'policy.dice': onehot works with policy.head mlp, not keep")
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


def load_latest(cfg: Config, run: Path, venv, trust_zip: bool = False, rules: RuleSet | None = None):
    """The run's latest save on ``venv``, to resume it, with the hyperparameters of ``cfg.algo``
    (so overrides apply): a model built from ``cfg`` and filled from ``latest.safetensors`` (the
    weights, the optimizer's state and the counts: tensors and text, nothing unpickled). A run
    saved before twins were written has only ``latest.zip``, loaded only with ``trust_zip``
    (:func:`load_sb3_zip`)."""
    import dataclasses

    from generala_agents.sb3_tensors import TensorsError, twin

    from .model_tensors import load_twin

    latest = run / "latest.zip"
    if lstat_or_none(twin(latest)) is not None:
        model = model_from_config(dataclasses.replace(cfg, init_from=None), venv, run / "tb", rules=rules)
        try:
            load_twin(model, twin(latest), optimizer=True)
        except TensorsError as e:
            raise ConfigError(f"--resume: {e}") from None
        return model
    if not trust_zip:
        raise ConfigError(
            f"--resume: {run} has no latest.safetensors, only {latest.name}, an SB3 zip, which runs code when loaded "
            "(a run saved before tensors were written beside its zips): pass --trust-zip if you made the run"
        )
    kwargs = algo_config(cfg, None).constructor_kwargs()
    return load_sb3_zip(latest, "--resume", trusted=True, env=venv, device=cfg.device, tensorboard_log=str(run / "tb"), **kwargs)


# -- evaluation during training ---------------------------------------------------------
