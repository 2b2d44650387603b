"""Train a MaskablePPO agent on Generala from a YAML config.

    generala train --config ppo_classic [KEY=VALUE ...]       # a shipped config by name, or a YAML file
    generala train --resume runs/ppo_classic__seed0__20261129-1310 [KEY=VALUE ...]
    generala train --list-configs                               # the shipped configs
    python -m generala_training.train --config configs/ppo_tiny.yaml

Each run writes to its own folder: ``config.yaml`` (the resolved config), ``command.txt``,
``tb/`` (TensorBoard: episode score, share of the optimal expected score, win rate
against the evaluation opponent, losses, entropy), ``checkpoints/step_N.zip``,
``latest.zip`` with ``state.json`` (what ``--resume`` continues from, optimizer state and
step count included), ``best_model.zip`` and ``evaluations.csv``. Each ``NAME.zip`` has a
twin, ``NAME.safetensors``, of tensors and text (:mod:`generala_agents.sb3_tensors`): the zip
is for SB3 users, the twin is what this project reads back (``--resume``, ``generala export``,
the self-play pool), so nothing of the run is unpickled. A run trains whole rollouts
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
it runs code when loaded); ``--resume`` reads ``latest.safetensors`` and needs the flag only for
a run saved before twins were written, which has ``latest.zip`` alone.

Overrides on ``--resume`` may change ``total_timesteps``, ``device``, ``threads``,
``checkpoint_every``, ``algo.*`` and ``eval.*``; the others made the saved model and its envs,
and are refused. Nothing is written to a run folder before its model has been built or loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import yaml
from stable_baselines3.common.callbacks import BaseCallback

from generala_env.files import FileProblem, append_line, write_atomic

from .config import Config, ConfigError, load_config, planned_timesteps, rollout_steps, run_rules
from .config_presets import list_configs
from .envs import training_envs
from .models import TRUST_ZIP_HELP, load_latest, model_from_config
from .options import HelpFormatter
from .run_folder import (
    append_evaluation,
    check_run_name,
    fresh_run,
    open_run,
    reconcile_best,
    resume_config,
    save_latest,
    save_model,
    unfinished_start,
)
from .runs import EVALUATIONS, Evaluator, make_evaluator

if TYPE_CHECKING:
    from generala_env.core.rules import RuleSet


def evaluate_policy(evaluator: Evaluator, policy) -> dict:
    """The run's figures for ``policy``, which plays greedily among the legal actions: one
    batched forward pass a decision for one player, one game at a time with opponents."""
    from generala_agents.policy_net import masked_argmax_actions

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
        from generala_agents.policy_net import masked_argmax_actions

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

    def __init__(self, cfg: Config, run: Path, state: dict, total: int, evaluator: Evaluator, on_evaluation: Callable[[dict], None] | None = None):
        super().__init__()
        self.cfg, self.run, self.state, self.total, self.evaluator = cfg, run, state, total, evaluator
        self.on_evaluation = on_evaluation

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
        if self.on_evaluation is not None:
            self.on_evaluation(line)

    def _on_training_end(self) -> None:
        self.bar.close()


def make_callback(
    cfg: Config, run: Path, state: dict, total: int, evaluator: Evaluator | None = None, on_evaluation: Callable[[dict], None] | None = None
) -> TrainCallback:
    """The run's :class:`TrainCallback`; ``on_evaluation`` is called with each evaluation's row
    once it is recorded (a hyperparameter search reports and prunes there)."""
    return TrainCallback(cfg, run, state, total, evaluator or make_evaluator(cfg), on_evaluation)


# -- the program ----------------------------------------------------------------------------
def _build_envs(cfg: Config, run: Path, rules: RuleSet, trust_zip: bool):
    try:
        return training_envs(cfg, run, rules, trust_zip)
    except ConfigError:
        raise
    except (ValueError, TypeError, OSError, EOFError) as e:  # AgentError is a ValueError
        raise ConfigError(f"cannot build the training envs from config keys 'env' and 'vec_env': {e}") from None


def train(
    cfg: Config, run: Path, resume: bool = False, command: str = "", trust_zip: bool = False, on_evaluation: Callable[[dict], None] | None = None
) -> Path:
    """Train a fresh run in folder ``run``, or (``resume``) continue the one there.

    Nothing is written until the envs, the model (resuming: ``latest.zip`` loaded) and the
    evaluator are built, so a config that cannot train leaves no folder and changes no run.
    A fresh run needs ``run`` to be absent or empty: an earlier run there is never overwritten,
    unless it is a start cut short before its first ``state.json`` that holds nothing but what a
    run writes (:func:`unfinished_start`), which is started again. The folder is locked
    (:func:`lock_run`) for as long as the run uses it: resuming, from before its files are read.
    ``on_evaluation``: called with each evaluation's row (:func:`make_callback`).
    ``trust_zip``: ``init_from`` may name an SB3 zip, and a resumed run without
    ``latest.safetensors`` may load its ``latest.zip`` (:func:`load_sb3_zip`).
    """
    import torch

    if cfg.backend != "sb3":
        raise ConfigError(f"the config's backend is {cfg.backend!r}: train it with generala jax-train (generala train trains backend: sb3)")
    state: dict = {"train_seconds": 0.0, "evaluations": []}
    with contextlib.ExitStack() as held:
        open_run(held, run, resume, state)
        if not resume and unfinished_start(run):
            print(f"{run} was started but never saved (no state.json: stopped during pretraining or before its first checkpoint); starting it again")
        torch.set_num_threads(cfg.threads)
        rules = run_rules(cfg)
        venv = _build_envs(cfg, run, rules, trust_zip)
        try:
            model = load_latest(cfg, run, venv, trust_zip, rules) if resume else model_from_config(cfg, venv, run / "tb", trust_zip, rules)
            evaluator = make_evaluator(cfg, rules)
            if resume:
                reconcile_best(run, state, "mean_score" if cfg.env.num_players == 1 else "win_rate")
            else:
                held.enter_context(fresh_run(run))
            (run / "checkpoints").mkdir(exist_ok=True)
            write_atomic(run / "config.yaml", yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=False))
            append_line(run / "command.txt", command.replace("\n", "\\n"))
        except BaseException:
            venv.close()
            raise
        old = signal.signal(signal.SIGTERM, _term)
        try:
            _train_in(cfg, run, resume, state, model, venv, evaluator, rules, on_evaluation)
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


def _train_in(cfg: Config, run: Path, resume: bool, state: dict, model, venv, evaluator: Evaluator, rules: RuleSet, on_evaluation=None) -> Path:
    """The part of :func:`train` that runs in the run folder, SIGTERM raising KeyboardInterrupt."""
    if resume:
        print(f"resuming {run} at step {model.num_timesteps:,}")
    elif cfg.pretrain.games > 0 and not cfg.init_from:
        from .pretrain import behaviour_clone

        try:
            state["pretrain"] = behaviour_clone(model, cfg, rules)
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
    cb = make_callback(cfg, run, state, end, evaluator, on_evaluation)
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
    p = argparse.ArgumentParser(
        allow_abbrev=False, prog="generala train", description="Train MaskablePPO on Generala from a YAML config.", formatter_class=HelpFormatter
    )
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
            train(resume_config(run, args.overrides), run, resume=True, command=command, trust_zip=args.trust_zip)
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
