"""Train PPO compiled end to end in JAX (:mod:`generala_training.jax_ppo`) from a YAML config.

    generala jax-train --config jax_ppo_classic [KEY=VALUE ...]   # a shipped config by name, or a YAML file
    generala jax-train --resume runs/jax_ppo_classic__seed0__20261204-0500 [KEY=VALUE ...]

The config is a training config (:mod:`generala_training.config`, ``backend: jax``): the same
keys as ``generala train``'s, read by the same reader. The JAX learner takes one-player games
with the score reward and no opponents, exploring starts, behaviour cloning or ``init_from``;
a key it cannot honour is refused in one line. ``vec_env.n_envs`` games are stepped together
in JAX (``vec_env.kind`` is not used), and ``threads`` and ``device`` are torch's: JAX runs on
its default device (``JAX_PLATFORMS``).

A run's folder: ``config.yaml``, ``command.txt``, ``state.json`` with ``latest.safetensors``
(every array of the learner's state: weights, Adam's moments, the games under way and the random
key, so that ``--resume`` goes on bit for bit as if the run had not stopped),
``evaluations.csv`` (the evaluation of ``generala train``: ``eval.games`` seeded games against
``eval.opponent`` on the same dice, played by the exported policy in NumPy), ``best/``, the
checkpoint folder of the best evaluation, which is what the run folder plays as an agent
(``generala evaluate --agents RUN``), and ``checkpoints/step_N/`` every ``checkpoint_every``
steps and at the end. Every file is written through a temporary file and the folder is locked
while a run uses it, as for ``generala train``. Ctrl-C or SIGTERM saves ``latest.safetensors``
at the last whole update and exits with status 130.

The learner is model-free and from scratch: the metadata of every checkpoint says so
(``from_scratch``, ``solver_in_training: []``), with the steps, the wall-clock, the
machine and the versions of JAX, Flax, Optax and Pgx. The exact solver only gives the optimum
that evaluations are reported against.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import stat
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from generala_env.core.checks import is_whole
from generala_env.extras import how_to_install
from generala_env.files import FileProblem, append_line, lstat_or_none, read_json, read_regular, replace_folder, sha256_of, write_atomic
from generala_env.files.cache import how_long, record_seconds

from .config import Config, ConfigError, load_config, run_rules
from .options import HelpFormatter
from .run_folder import append_evaluation, check_run_name, fresh_run, open_run, reconcile_best, resume_config
from .runs import EVALUATIONS, Evaluator, make_evaluator

LATEST = "latest.safetensors"
LATEST_LIMIT = 4 << 30  # bytes of latest.safetensors read back: weights, Adam's moments and the games
BEST = "best"


# -- what the JAX learner takes ------------------------------------------------------------------
def jax_problems(cfg: Config) -> list[str]:
    """Each key of ``cfg`` the JAX learner cannot honour, as a phrase naming it and why."""
    out = []
    if cfg.backend != "jax":
        out.append(f"backend is {cfg.backend!r}: generala jax-train trains configs with backend: jax (generala train trains the others)")
    env, pol, algo = cfg.env, cfg.policy, cfg.algo
    if env.num_players != 1:
        out.append(f"env.num_players is {env.num_players}: the JAX learner trains one-player games")
    if env.reward != "score":
        out.append(f"env.reward is {env.reward!r}: the JAX learner trains on the score reward")
    for key, value, ok in (
        ("env.opponents", env.opponents, None),
        ("env.agent_seat", env.agent_seat, 0),
        ("env.exploring_starts", env.exploring_starts, 0.0),
        ("policy.head", pol.head, "mlp"),
        ("policy.entropy_on", pol.entropy_on, "all"),
        ("policy.dice", pol.dice, "plain"),
        ("algo.normalize_reward", algo.normalize_reward, False),
        ("algo.target_kl", algo.target_kl, None),
        ("pretrain.games", cfg.pretrain.games, 0),
        ("init_from", cfg.init_from, None),
    ):
        if value != ok:
            out.append(f"{key} is {value!r}: the JAX learner takes only {ok!r}")
    if cfg.device not in ("cpu", "auto"):
        out.append(f"device is {cfg.device!r}: device is torch's; JAX runs on its default device (set JAX_PLATFORMS), so leave it cpu or auto")
    if cfg.vec_env.n_envs * cfg.algo.n_steps < cfg.algo.batch_size:
        out.append(f"algo.batch_size {cfg.algo.batch_size} is more than a rollout's {cfg.vec_env.n_envs * cfg.algo.n_steps} samples")
    return out


def hyper_of(cfg: Config, updates: int):
    """The learner's :class:`~generala_training.jax_ppo.Hyper` from ``cfg``'s keys."""
    from .jax_ppo import Hyper

    a, p = cfg.algo, cfg.policy
    return Hyper(
        num_envs=cfg.vec_env.n_envs,
        num_steps=a.n_steps,
        minibatch_size=a.batch_size,
        epochs=a.n_epochs,
        learning_rate=a.learning_rate,
        lr_schedule=a.lr_schedule,
        total_updates=updates,
        gamma=a.gamma,
        gae_lambda=a.gae_lambda,
        clip=a.clip_range,
        ent_coef=a.ent_coef,
        vf_coef=a.vf_coef,
        max_grad_norm=a.max_grad_norm,
        reward_scale=cfg.env.reward_scale,
        net_arch=tuple(p.net_arch),
        vf_arch=tuple(p.vf_arch if p.vf_arch is not None else p.net_arch),
        activation=p.activation,
        layer_norm=p.layer_norm,
        ortho_init=p.ortho_init,
    )


def machine() -> dict:
    """What the run ran on: the processor, its cores, JAX's devices and the versions that matter."""
    import flax
    import jax
    import optax
    import pgx  # type: ignore[import-untyped]  # pgx ships no type information

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "jax_devices": [str(d) for d in jax.devices()],
        "jax": jax.__version__,
        "flax": flax.__version__,
        "optax": optax.__version__,
        "pgx": pgx.__version__,
        "python": platform.python_version(),
    }


# -- a run ---------------------------------------------------------------------------------------------
class JaxRun:
    """One run of ``cfg`` in folder ``run``: the env, the compiled update and the evaluation."""

    def __init__(self, cfg: Config, run: Path, rules, evaluator: Evaluator):
        from generala_env.jax.env import make

        from . import jax_ppo

        self.cfg, self.run, self.rules, self.evaluator = cfg, run, rules, evaluator
        self.env = make(rules, 1, "score")
        rollout = cfg.vec_env.n_envs * cfg.algo.n_steps
        self.end_update = max(1, cfg.total_timesteps // rollout)
        self.hp = hyper_of(cfg, self.end_update)
        self.rollout = rollout
        self.update = jax_ppo.make_update(self.env, self.hp)
        self.template = jax_ppo.init_runner(self.env, self.hp, cfg.seed)
        self.evaluated = False  # whether this process has evaluated yet (its first evaluation is announced)

    # the files
    def load_latest(self, state: dict):
        """The runner of the run's ``latest.safetensors``, trusted in nothing
        (:func:`~generala_training.jax_ppo.runner_from_arrays` with the env: shapes, types, finite
        weights and moments, counters, games the env can reach), its updates agreeing with the
        steps it says it holds and ``state.json`` no ahead of it; one line otherwise."""
        from safetensors import SafetensorError
        from safetensors.numpy import load

        from .jax_ppo import runner_from_arrays

        path = self.run / LATEST
        try:
            data = read_regular(path, LATEST_LIMIT, "the run's state")
        except FileProblem as e:
            raise ConfigError(f"{e}: --resume needs the run's own {LATEST}") from None
        try:
            runner = runner_from_arrays(self.template, load(data), self.env)
            said = _said(data)
        except (SafetensorError, ValueError) as e:
            raise ConfigError(f"{path} cannot be resumed from: {e}") from None
        updates = int(runner.updates)
        rollout = said.get("rollout", self.rollout)  # a file from before it said: the config's
        steps = updates * rollout
        if said.get("num_timesteps", steps) != steps:
            raise ConfigError(
                f"{path} cannot be resumed from: it holds {updates:,} updates of {rollout:,} steps but says it holds {said['num_timesteps']:,} steps"
            )
        saved = state.get("num_timesteps")
        if not isinstance(saved, int) or saved > steps:
            raise ConfigError(
                f"{self.run / 'state.json'} says {saved!r} steps, but {path} holds {updates:,} updates of {rollout:,} steps ({steps:,}): "
                f"state.json is saved after {LATEST}, never ahead of it, so one of them is not the run's"
            )
        if saved < steps:  # a kill between the two saves of save_latest
            print(f"{path} holds step {steps:,}, state.json step {saved:,} (stopped between the two saves): the run goes on from step {steps:,}")
        return runner

    def save_latest(self, runner, state: dict) -> None:
        from safetensors.numpy import save

        from .jax_ppo import runner_arrays

        steps = int(runner.updates) * self.rollout
        write_atomic(self.run / LATEST, save(runner_arrays(runner), metadata={"num_timesteps": str(steps), "rollout": str(self.rollout)}))
        state["num_timesteps"] = steps
        write_atomic(self.run / "state.json", json.dumps(state, indent=2, default=float))

    def write_best(self, runner, state: dict, source: str) -> None:
        """The checkpoint of ``runner`` as the run's ``best/``, written whole in a fresh folder
        beside it and swapped in (:func:`generala_env.files.replace_folder`): a kill leaves the
        old ``best/`` or the new one, never new weights under old metadata."""
        fresh = Path(tempfile.mkdtemp(prefix=f".{BEST}.", suffix=".tmp", dir=self.run))
        try:
            os.chmod(fresh, 0o755)
            self.write_checkpoint(fresh, runner, state, source, name=self.run.name)
            replace_folder(fresh, self.run / BEST)
        finally:
            if fresh.is_dir() and not fresh.is_symlink():
                shutil.rmtree(fresh, ignore_errors=True)

    def write_checkpoint(self, folder: Path, runner, state: dict, source: str, name: str | None = None) -> None:
        """The policy of ``runner`` as a checkpoint folder (``policy.safetensors``, ``metadata.json``
        naming the weights' SHA-256, ``weights_sha256``) named ``name`` (default: the folder's)."""
        from safetensors.numpy import save

        from generala_agents.policy_net import WEIGHTS_FILE
        from generala_env.core.encoding import LAYOUT_VERSION

        from .export_metadata import seconds_at, solver_ingredients, write_metadata
        from .jax_ppo import export_tensors, network_metadata

        for own in (folder.parent, folder):  # checkpoints/ and step_N/ (or best/): never through a link
            if own.is_symlink():
                raise FileProblem(f"{own} is a symbolic link: a run writes only into its own folders")
            own.mkdir(exist_ok=True)
        weights = save(export_tensors(runner.params, self.hp))
        write_atomic(folder / WEIGHTS_FILE, weights)
        cfg = dataclasses.asdict(self.cfg)
        steps = int(runner.updates) * self.rollout
        inside = solver_ingredients(cfg)
        meta = {
            "name": name or folder.name,
            "weights_sha256": hashlib.sha256(weights).hexdigest(),
            "algorithm": "PPO in JAX (generala_training.jax_ppo: env, rollout and update compiled together)",
            "rules_name": self.rules.name,
            "rules": self.rules.settings(),
            "rules_fingerprint": self.rules.fingerprint(),
            "num_players": 1,
            "reward": "score",
            "layout_version": LAYOUT_VERSION,
            "obs_size": int(self.env.observation_shape[0]),
            "n_actions": int(self.env.num_actions),
            "network": network_metadata(self.env, self.hp),
            "training_steps": steps,
            "training_seconds": round(float(state["train_seconds"]), 1),
            "training_seconds_to_model": seconds_at(state, steps),
            "compile_seconds": round(float(state.get("compile_seconds", 0.0)), 1),
            "pretrain": None,
            "budget_seconds": {"ppo": round(float(state["train_seconds"]), 1), "total": round(float(state["train_seconds"]), 1)},
            "solver_in_training": inside,
            "from_scratch": not inside,
            "how": "model-free PPO from scratch: the env's observations, legal masks and score rewards only; no solver, dice model, cloning or opponents",
            "hardware": state.get("machine"),
            "source_run": str(self.run),
            "source_model": source,
            "config": cfg,
            "exported": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        write_metadata(folder, meta)

    def evaluate(self, runner) -> dict:
        """The run's evaluation of ``runner``'s policy, played in NumPy from its exported weights."""
        from generala_agents.policy_net import PolicyNet

        from .jax_ppo import export_tensors, network_metadata

        net = PolicyNet(network_metadata(self.env, self.hp), export_tensors(runner.params, self.hp), "the run's policy")
        return self.evaluator(lambda obs, masks: np.where(np.asarray(masks, dtype=bool), net.logits(obs), -np.inf).argmax(axis=1))


def _said(data: bytes) -> dict[str, int]:
    """What a ``latest.safetensors`` says of itself (its header's ``__metadata__``, written by
    :meth:`JaxRun.save_latest`): ``num_timesteps`` and ``rollout``, each a whole number ≥ 0."""
    size = int.from_bytes(data[:8], "little")
    said = json.loads(data[8 : 8 + size]).get("__metadata__") or {}
    out = {}
    for key in ("num_timesteps", "rollout"):
        if key in said:
            value = said[key]
            if not (isinstance(value, str) and value.isascii() and value.isdigit()) or (key == "rollout" and int(value) == 0):
                raise ValueError(f"its metadata's {key} is {value!r}, not a whole number of steps")
            out[key] = int(value)
    return out


def _best_steps(run: Path) -> int | None:
    """The step of the run's ``best/`` checkpoint, from its metadata, once its weights are checked
    to be those the metadata names (``weights_sha256``); ``None`` without ``best/``. A ``best/``
    that is not whole (new weights under old metadata, as a kill between the two writes of a
    version before ``best/`` was swapped in whole left it, or a file changed since) is one line."""
    from generala_agents.policy_net import WEIGHTS_FILE

    best = run / BEST
    st = lstat_or_none(best)
    if st is None:
        return None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{best} is not a folder (a link or a file): a run reads only the folders it wrote")
    try:
        meta = read_json(best / "metadata.json", what="the best model's metadata")
    except FileProblem as e:
        raise ConfigError(f"{e}; move {best} away to resume (the run writes it again at its next evaluation above state.json's best)") from None
    steps, named = (meta.get("training_steps"), meta.get("weights_sha256")) if isinstance(meta, dict) else (None, None)
    if not is_whole(steps) or steps < 0:
        raise ConfigError(f"{best / 'metadata.json'}: training_steps is {steps!r}, not a whole number of steps")
    found = sha256_of(best / WEIGHTS_FILE)
    if found is None or found != named:
        if named is None:
            why = f"its metadata.json (step {steps:,}) names no SHA-256 of its weights (a best/ written before it was written whole)"
        elif found is None:
            why = f"its {WEIGHTS_FILE} is missing or not a regular file"
        else:
            why = f"its {WEIGHTS_FILE} is not the file its metadata.json (step {steps:,}) names (a save cut short between the two, or a file changed since)"
        raise ConfigError(f"{best} is not whole: {why}; move {best} away to resume (the run writes it again at its next evaluation above state.json's best)")
    return int(steps)


_UNSWAPPED = re.compile(rf"\.{BEST}\.[A-Za-z0-9_]{{8}}\.tmp(?P<old>\.old)?")


def settle_best(run: Path) -> None:
    """On resume, the folders :meth:`JaxRun.write_best` leaves when a kill cuts it short: a new
    ``best/`` not yet swapped in is removed (its evaluation is after ``state.json`` and is made
    again); an old one renamed aside (where the file system cannot swap) is put back where no
    ``best/`` is, else removed. Only real folders of that name holding only regular files are
    touched."""
    from generala_agents.policy_net import WEIGHTS_FILE

    ours = {WEIGHTS_FILE, "metadata.json"}
    for p in sorted(run.iterdir()):
        m = _UNSWAPPED.fullmatch(p.name)
        if m is None or p.is_symlink() or not p.is_dir():
            continue
        files = list(p.iterdir())
        if any(
            f.is_symlink() or not f.is_file() or not (f.name in ours or (f.name.startswith(tuple(f".{n}." for n in ours)) and f.name.endswith(".tmp")))
            for f in files
        ):
            continue  # not what write_best makes: left alone
        if m.group("old") and lstat_or_none(run / BEST) is None:
            p.rename(run / BEST)
            print(f"put back {run / BEST} from {p.name} (stopped while it was being replaced)")
        else:
            shutil.rmtree(p)


def train(cfg: Config, run: Path, resume: bool = False, command: str = "") -> Path:
    """Train a fresh JAX run in folder ``run``, or (``resume``) go on with the one there; nothing
    is written before the learner is compiled and, resuming, its state read back."""
    problems = jax_problems(cfg)
    if problems:
        raise ConfigError("; ".join(problems))
    state: dict = {"train_seconds": 0.0, "eval_seconds": 0.0, "evaluations": []}
    with contextlib.ExitStack() as held:
        open_run(held, run, resume, state)
        rules = run_rules(cfg)
        evaluator = make_evaluator(cfg, rules)
        evaluator.prepare()  # its workers fork before JAX starts its threads
        t0 = time.time()
        with said_and_timed("setting up the JAX env and the learner's first state (compiled)", f"jax-train setup {cfg.vec_env.n_envs} games", 3, 30):
            job = JaxRun(cfg, run, rules, evaluator)
        runner = job.load_latest(state) if resume else job.template
        if resume:
            settle_best(run)
            reconcile_best(run, state, "mean_score", _best_steps)
        else:
            held.enter_context(fresh_run(run))
            state["machine"] = machine()
        (run / "checkpoints").mkdir(exist_ok=True)
        write_atomic(run / "config.yaml", yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=False))
        append_line(run / "command.txt", command.replace("\n", "\\n"))
        state["train_seconds"] += time.time() - t0
        if not resume:
            job.save_latest(runner, state)  # from here on --resume goes on
        old = signal.signal(signal.SIGTERM, _term)
        try:
            _train_in(job, runner, state)
        finally:
            signal.signal(signal.SIGTERM, old)
    return run


LINE_SECONDS = 5  # training prints a line at least this often (an evaluation's line included)


@contextlib.contextmanager
def said_and_timed(what: str, key: str, low: float, high: float):
    """A line saying ``what`` is done and how long it takes on this machine (as last recorded, or
    ``low``-``high`` s), then the wait, whose length is recorded."""
    print(f"{what} ({how_long(key, low, high)})", flush=True)
    t0 = time.time()
    yield
    record_seconds(key, time.time() - t0)


def compile_key(job: JaxRun) -> str:
    """What the training step's compile time is recorded under: it depends on the shapes compiled."""
    cfg = job.cfg
    return f"jax-train compile {cfg.vec_env.n_envs}x{cfg.algo.n_steps} minibatch {cfg.algo.batch_size} net {list(cfg.policy.net_arch)}"


def eval_key(job: JaxRun) -> str:
    return f"jax-train evaluation {len(job.evaluator.seeds)} games"


def _term(signum, frame):  # SIGTERM saves like Ctrl-C
    raise KeyboardInterrupt


def _train_in(job: JaxRun, runner, state: dict) -> None:
    cfg, run = job.cfg, job.run
    start = int(runner.updates)
    if start >= job.end_update:
        print(f"run {run} already has {start * job.rollout:,} steps, and {job.end_update * job.rollout:,} is its end (total_timesteps {cfg.total_timesteps:,})")
        return
    print(
        f"training {(job.end_update - start) * job.rollout:,} steps in JAX on {state.get('machine', {}).get('jax_devices', ['?'])[0]}: "
        f"{job.end_update - start:,} updates of {job.rollout:,} (algo.n_steps x vec_env.n_envs); a line every {LINE_SECONDS} s at most",
        flush=True,
    )
    every, ckpt = max(1, cfg.eval.every // job.rollout), max(1, cfg.checkpoint_every // job.rollout)
    t_mark, last_line = time.time(), time.time()
    done = start
    try:
        for u in range(start, job.end_update):
            t_up = time.time()
            if u == start:
                print(f"compiling the training step ({how_long(compile_key(job), 10, 90)}; its first update included)", flush=True)
            runner, metrics = job.update(runner)
            metrics = {k: float(v) for k, v in metrics.items()}  # waits for the update
            done = u + 1
            if u == start:
                record_seconds(compile_key(job), time.time() - t_up)
                if "compile_seconds" not in state:
                    state["compile_seconds"] = time.time() - t_up
            now = time.time()
            if done % every == 0 or done == job.end_update:
                state["train_seconds"] += now - t_mark
                t_mark = now
                _evaluate(job, runner, state, metrics)
                t_mark = time.time()
            elif now - last_line > LINE_SECONDS:
                print(f"step {done * job.rollout:,}: rollout score {metrics['episode_score']:.1f}, entropy {metrics['entropy']:.3f}", flush=True)
                last_line = now
            if done % ckpt == 0 or done == job.end_update:
                state["train_seconds"] += time.time() - t_mark
                t_mark = time.time()
                job.write_checkpoint(run / "checkpoints" / f"step_{done * job.rollout}", runner, state, f"step {done * job.rollout}")
                job.save_latest(runner, state)
    except KeyboardInterrupt:
        state["train_seconds"] += time.time() - t_mark
        job.save_latest(runner, state)
        print(f"\ninterrupted: saved {run / LATEST} at step {done * job.rollout:,}; continue with: generala jax-train --resume {run}")
        raise SystemExit(130) from None
    print(f"done: {done * job.rollout:,} steps, {state['train_seconds']:.0f} s of training (evaluations included); run folder {run}")


def _evaluate(job: JaxRun, runner, state: dict, metrics: dict) -> None:
    t = time.time()
    if not job.evaluated:  # the first of this process: what the pauses between lines are
        job.evaluated = True
        games = len(job.evaluator.seeds) * job.evaluator.players
        print(
            f"evaluating the policy on {games:,} seeded games in NumPy, every {job.cfg.eval.every:,} steps ({how_long(eval_key(job), 1, 30)} each)", flush=True
        )
    res = job.evaluate(runner)
    record_seconds(eval_key(job), time.time() - t)
    state["eval_seconds"] = state.get("eval_seconds", 0.0) + time.time() - t
    state["train_seconds"] += time.time() - t
    step = int(runner.updates) * job.rollout
    line = {"step": step, "wall_seconds": state["train_seconds"], **res}
    state["evaluations"].append(line)
    append_evaluation(job.run / EVALUATIONS, line)
    if res["mean_score"] > state.get("best", -np.inf):
        state["best"], state["best_step"] = res["mean_score"], step
        job.write_best(runner, state, f"step {step}")
    rate = step / max(state["train_seconds"], 1e-9)
    print(
        f"step {step:,} ({state['train_seconds']:.0f} s, {rate:,.0f} steps/s): eval score {res['mean_score']:.2f} "
        f"({res['share_of_optimal']:.1%} of the optimum), win rate vs {job.cfg.eval.opponent} {res['win_rate']:.1%}; "
        f"rollout score {metrics['episode_score']:.1f}, entropy {metrics['entropy']:.3f}, explained variance {metrics['explained_variance']:.3f}",
        flush=True,
    )


# -- the program -----------------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="generala jax-train",
        description="Train PPO in JAX (env and learner compiled together) from a YAML config.",
        formatter_class=HelpFormatter,
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", help="a YAML config with backend: jax, or the name of a shipped one (jax_ppo_classic)")
    src.add_argument("--resume", metavar="RUN_DIR", help=f"continue a run from its {LATEST}")
    p.add_argument("overrides", nargs="*", help="KEY=VALUE overrides, e.g. seed=1 total_timesteps=2e6")
    p.add_argument("--run-name", help="folder name under run_dir (default NAME__seedS__TIME)")
    return p.parse_intermixed_args(argv)


JAX_MODULES = ("jax", "pgx", "flax", "optax")


def missing_jax() -> str | None:
    """The first module of the jax extra that is not installed (found, not imported: JAX starts
    threads at import, and a run's evaluation forks its workers before that)."""
    import importlib.util

    return next((m for m in JAX_MODULES if importlib.util.find_spec(m) is None), None)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    missing = missing_jax()
    if missing is not None:
        print(f"generala jax-train: error: it needs {missing}, which is not installed; {how_to_install('jax')}", file=sys.stderr)
        return 2
    command = "generala jax-train " + " ".join(shlex.quote(a) for a in argv)
    try:
        if args.resume:
            run = Path(args.resume)
            train(resume_config(run, args.overrides, LATEST), run, resume=True, command=command)
            return 0
        cfg = load_config(args.config, args.overrides)
        name = check_run_name(args.run_name) if args.run_name is not None else f"{cfg.name}__seed{cfg.seed}__{time.strftime('%Y%m%d-%H%M%S')}"
        train(cfg, Path(cfg.run_dir) / name, command=command)
    except (ConfigError, FileProblem) as e:
        print(f"generala jax-train: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ngenerala jax-train: interrupted before training started; nothing was written", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
