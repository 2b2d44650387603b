"""One benchmark run: an algorithm trained on a task from a seed, evaluated along the way.

A run trains in chunks, one per evaluation point. Every chunk starts from the run's saved
checkpoint (``model.safetensors``, the twin of ``model.zip`` that holds the model's tensors
and counts, and the replay buffer of DQN and QR-DQN as arrays; nothing is unpickled), on freshly made games,
with every random generator seeded from ``(seed, chunk)``; the chunk ends at the next
evaluation point, where the run evaluates the policy and saves its checkpoint and
``state.json``. An interrupted run therefore resumes at its last evaluation point and goes
on exactly as an uninterrupted one: both start each chunk from the same file and seeds.

A run folder holds ``spec.json`` (what decides its results), ``state.json`` (steps,
evaluations, times; ``done`` once finished), ``curve.csv`` (the learning curve), the current
checkpoint in ``ckpt_STEPS/`` while it trains, and ``final_model.zip`` (with its twin
``final_model.safetensors``) once done. A folder is
a run's when its ``spec.json`` is the run's spec; every file is written into it atomically and
never through a link (:mod:`generala_env.files`), and its spec and state are read only from
regular files (a link, a FIFO or a folder of that name is refused).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import stat
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from generala_env.files import FileProblem, lstat_or_none, read_json, remove_temporaries, write_atomic, write_json

from ..algos import ALGOS, AlgoConfig, algo_class
from ..envs import make_envs
from ..runs import Evaluator, Played, read_state
from .suite import BenchmarkError, RunSpec, Task, task_rules

SPEC_FILE, STATE_FILE, CURVE_FILE, FINAL_MODEL, FINAL_TENSORS = "spec.json", "state.json", "curve.csv", "final_model.zip", "final_model.safetensors"


# -- the games -------------------------------------------------------------------------------
def make_venv(task: Task, cfg: AlgoConfig, seed: int, n_envs: int | None = None, rules=None):
    """The task's training games (:func:`generala_training.envs.make_envs`): ``n_envs`` (default
    ``cfg.n_envs``) games of the batched env, with the task's training reward (the env's own, or
    the score margin), scaled, seeded, unmonitored. ``rules``: the task's rule set, loaded once a run."""
    return make_envs(
        n_envs or cfg.n_envs,
        seed,
        reward_scale=task.reward_scale,
        training_reward=task.training_reward,
        win_bonus=task.win_bonus,
        monitor=False,
        **task.game(rules),
    )


def task_optimum(task: Task, rules=None) -> float:
    """The exact optimal expected one-player total of the task's rules (solved once, then cached)."""
    from generala_agents.solver import load_or_solve

    return float(load_or_solve(task_rules(task) if rules is None else rules)[0].expected_score)


class TaskEvaluator(Evaluator):
    """The suite's evaluation games (:class:`generala_training.runs.Evaluator`), each game's
    points :func:`generala_env.core.game.outcome_points`: a win shared by ``k`` players counts ``1/k``
    at any table, so every game hands out one point and a task's fair share is ``1/players``."""


def _figures(evaluator: Evaluator, played: Played) -> dict:
    """The suite's figures: the mean total, the normalised score (one player: of the optimum;
    with opponents: the share of the points, :func:`generala_env.core.game.outcome_points`, also ``score`` and ``win_rate``,
    its name at two players) and the share of games an illegal action ended."""
    out = {"score": float(played.totals.mean()), "mean_total": float(played.totals.mean()), "illegal_stops": float(np.mean(played.stopped))}
    if played.points is None:
        out["normalized_score"] = out["score"] / evaluator.optimum
    else:
        out["score"] = out["win_rate"] = out["normalized_score"] = float(np.mean(played.points))
    return out


def task_evaluator(task: Task, seed: int, games: int, rules=None, figures=_figures) -> TaskEvaluator:
    """The task's evaluation games on shared dice (:class:`TaskEvaluator`): the same games for
    every algorithm and run; with opponents, each game played from every seat, the task's
    opponent in each of the others. Playing them returns ``figures(evaluator, played)``
    (default: the suite's, :func:`_figures`). ``rules``: the task's rule set (``None``: loaded here)."""
    opponent = task.env.get("opponents", "greedy") if task.num_players > 1 else None
    return TaskEvaluator(task_rules(task) if rules is None else rules, task.num_players, opponent, seed, games, figures)


def policy_actions(model, masked: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``act_batch`` for :class:`Evaluator`: the model's deterministic actions, masked if the algorithm is."""
    if masked:
        return lambda obs, masks: model.predict(obs, action_masks=masks, deterministic=True)[0]
    return lambda obs, masks: model.predict(obs, deterministic=True)[0]


# -- the model -------------------------------------------------------------------------------
_BUDGETED: dict = {}


def budgeted_class(algo: str):
    """The algorithm's class with its schedules tied to the run's whole budget.

    SB3 computes learning-rate and exploration schedules from the progress of the current
    ``learn()`` call; a run calls ``learn()`` once per chunk, so the progress is taken
    against the run's ``budget_steps`` instead.
    """
    if algo not in _BUDGETED:
        base = algo_class(algo)

        def _update_current_progress_remaining(self, num_timesteps: int, total_timesteps: int) -> None:
            base._update_current_progress_remaining(self, num_timesteps, self.budget_steps)

        _BUDGETED[algo] = type(base.__name__, (base,), {"_update_current_progress_remaining": _update_current_progress_remaining, "budget_steps": 1})
    return _BUDGETED[algo]


def new_model(algo: str, cfg: AlgoConfig, venv, seed: int, steps: int):
    """A fresh model of ``algo`` on ``venv`` (:meth:`generala_training.algos.AlgoConfig.build`: CPU, no
    logging), its schedules over ``steps`` (:func:`budgeted_class`)."""
    model = cfg.build(venv, seed=seed, device="cpu", cls=budgeted_class(algo))
    model.budget_steps = steps
    return silent(model)


def silent(model):
    """``model`` logging nowhere: without a logger of its own, SB3's ``learn()`` makes an empty
    ``SB3-<date>`` folder in the system's temporary folder at every call (a run calls it once a
    chunk)."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def check_hyperparams_build(algo: str, cfg: AlgoConfig, task: Task, rules=None) -> None:
    """Build the model once on the task's games, so that hyperparameters the constructor refuses fail now."""
    venv = make_venv(task, cfg, seed=0, n_envs=cfg.n_envs, rules=rules)
    try:
        new_model(algo, cfg, venv, seed=0, steps=1)
    except (ValueError, TypeError, AssertionError) as e:
        raise BenchmarkError(f"{algo}: the hyperparameters of {algo}.yaml do not build a model for task {task.name!r}: {e}") from None
    finally:
        venv.close()


# -- the run folder --------------------------------------------------------------------------
def _regular_or_absent(path: Path) -> bool:
    """Whether ``path`` is a regular file (``False``: absent); a link, a FIFO or a folder there is
    a :class:`BenchmarkError`, so that nothing is read through it or waits on it."""
    try:
        st = lstat_or_none(path)
    except FileProblem as e:
        raise BenchmarkError(str(e)) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise BenchmarkError(f"{path} is {what}: a run folder holds only the files the benchmark wrote; remove it, or the run folder to start the run again")
    return st is not None


def run_state(folder: Path) -> dict | None:
    """The run's ``state.json`` (:func:`generala_training.runs.read_state`); ``None`` if it has none yet."""
    if not _regular_or_absent(folder / STATE_FILE):
        return None
    return read_state(folder / STATE_FILE, BenchmarkError, "remove the run folder to start the run again", required=False)


def _no_links_below(folder: Path) -> None:
    """Refuse a run folder ``OUT/runs/TASK/ALGO/seedN`` reached through a link below ``OUT``: a
    run writes only inside the grid's own folders."""
    for here in (folder, *list(folder.parents)[:3]):
        st = lstat_or_none(here)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise BenchmarkError(f"{here} is a symbolic link: a run writes only into folders of the grid; remove the link or use another --out")


def check_folder(spec: RunSpec) -> str:
    """What the run folder holds for ``spec``: ``"new"``, ``"partial"`` or ``"done"``; a
    :class:`BenchmarkError` if it holds something else (another spec, a file)."""
    folder = Path(spec.folder)
    _no_links_below(folder)
    if folder.exists() and not folder.is_dir():
        raise BenchmarkError(f"run folder {folder} is a file")
    if not _regular_or_absent(folder / SPEC_FILE):
        if folder.is_dir() and any(folder.iterdir()):
            raise BenchmarkError(f"run folder {folder} holds files but no {SPEC_FILE}: not a benchmark run; move it away or use another --out")
        return "new"
    try:
        held = read_json(folder / SPEC_FILE, 1 << 20, "the run's spec")
    except FileProblem as e:
        raise BenchmarkError(f"run folder {folder}: {e}") from None
    want = spec.identity()
    if isinstance(held, dict) and held.get("suite_version") != want["suite_version"]:
        raise BenchmarkError(
            f"run folder {folder} holds a run made under suite version {held.get('suite_version')!r}; this is version "
            f"{want['suite_version']}: its results would not belong to this grid; use another --out, or remove the folder"
        )
    if held != want:
        diff = sorted(k for k in set(held) | set(want) if held.get(k) != want.get(k))
        raise BenchmarkError(
            f"run folder {folder} holds a run with other settings ({', '.join(diff)} differ): "
            "its results would not belong to this grid; use another --out, or remove the folder"
        )
    state = run_state(folder)
    return "done" if state and state.get("done") else "partial"


def _chunk_seed(seed: int, chunk: int) -> int:
    from ..harness import game_seed

    return game_seed(seed, chunk) % 2**31  # SB3 seeds torch, numpy and random: 31 bits suit all


def _targets(steps: int, points: int) -> list[int]:
    """The evaluation points: ``points`` step counts spread evenly up to ``steps``."""
    return sorted({max(1, round(k * steps / points)) for k in range(1, points + 1)})


def _remove_checkpoint(path: Path) -> None:
    """Remove a checkpoint folder of the run; a link of that name is removed, never followed."""
    st = lstat_or_none(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)  # rmtree removes links inside a folder, never what they point to
    else:
        path.unlink()


def _own_checkpoint(folder: Path, name) -> Path:
    """The run's checkpoint folder ``name`` (``ckpt_STEPS``, as :func:`_save_checkpoint` names
    it, a real folder of the run) holding ``model.safetensors``, the tensors the run goes on
    from: a ``state.json`` naming anything else is refused, and no zip is ever unpickled."""
    from generala_agents.sb3_tensors import twin

    if not isinstance(name, str) or not re.fullmatch(r"ckpt_\d+", name):
        raise BenchmarkError(f"{folder / STATE_FILE}: checkpoint {name!r} is not a checkpoint folder of the run (ckpt_STEPS)")
    ck = folder / name
    st = lstat_or_none(ck)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise BenchmarkError(f"{ck} is not a checkpoint folder of the run (a link, a file, or missing): nothing is loaded from it")
    st = lstat_or_none(twin(ck / "model.zip"))
    if st is None or not stat.S_ISREG(st.st_mode):
        raise BenchmarkError(
            f"{ck} holds no model.safetensors (a run saved before tensors were written beside its zips, or a link): "
            "its model.zip is never unpickled; run it again in a new --out folder"
        )
    return ck


def _from_checkpoint(ck: Path, algo: str, cfg: AlgoConfig, venv, seed: int, steps: int, off_policy: bool):
    """A model of ``algo`` built from ``cfg`` on ``venv`` and filled from the checkpoint ``ck``:
    its weights, optimizer state and counts, and (off-policy) its replay buffer, all tensors."""
    from generala_agents.sb3_tensors import TensorsError, twin

    from ..model_tensors import REPLAY_FILE, load_replay, load_twin

    model = new_model(algo, cfg, venv, seed, steps)
    try:
        load_twin(model, twin(ck / "model.zip"), optimizer=True)
        if off_policy:
            load_replay(model, ck / REPLAY_FILE)
    except TensorsError as e:
        raise BenchmarkError(str(e)) from None
    return model


def _save_checkpoint(model, folder: Path, off_policy: bool) -> str:
    from ..model_tensors import REPLAY_FILE, save_model, save_replay

    name = f"ckpt_{model.num_timesteps}"
    ck = folder / name
    _remove_checkpoint(ck)  # one a cut save left behind
    ck.mkdir()
    save_model(model, ck / "model.zip", optimizer=True)  # the zip for SB3 users, its twin for the run
    if off_policy:
        save_replay(model, ck / REPLAY_FILE)
    return name


def _drop_checkpoints(folder: Path, keep: str | None) -> None:
    for p in folder.glob("ckpt_*"):
        if p.name != keep:
            with contextlib.suppress(OSError, FileProblem):  # one that cannot be removed is left; the run goes on from its own
                _remove_checkpoint(p)


def _write_curve(folder: Path, evaluations: list[dict]) -> None:
    keys = ["step", "score", "normalized_score", "illegal_stops", "train_seconds"]
    lines = [",".join(keys)] + [",".join(f"{e[k]:.6g}" if isinstance(e[k], float) else str(e[k]) for k in keys) for e in evaluations]
    write_atomic(folder / CURVE_FILE, "\n".join(lines) + "\n")


def _copy_into(source: Path):
    """A writer for :func:`write_atomic` that copies the regular file ``source``."""

    def copy(f) -> None:
        with open(source, "rb") as src:
            shutil.copyfileobj(src, f)

    return copy


# long: one run's life in order (start, a chunk per evaluation point, the final evaluation), as the module docstring tells it
def run_one(spec: RunSpec, report: Callable[[dict], None] | None = None, threads: int = 1) -> dict:
    """Train and evaluate the run of ``spec`` in its folder, resuming it if it was cut;
    a finished run is left as it is. Returns its final state. ``report(evaluation)`` is
    called after each evaluation (Ray Tune's progress)."""
    import torch

    folder = Path(spec.folder)
    status = check_folder(spec)
    if status == "done":
        state = run_state(folder)
        assert state is not None  # check_folder says "done" only after reading the state file
        return state
    torch.set_num_threads(threads)
    task = Task(spec.task, **spec.task_def)
    cfg = AlgoConfig(spec.algo, **spec.algo_config)
    algo = ALGOS[spec.algo]
    ev = spec.evaluation
    rules = task_rules(task)  # once for the run: its games of every chunk and its evaluations
    evaluator = task_evaluator(task, ev["seed"], ev["games"], rules)
    folder.mkdir(parents=True, exist_ok=True)
    remove_temporaries(folder, (SPEC_FILE, STATE_FILE, CURVE_FILE, FINAL_MODEL, FINAL_TENSORS))  # what a killed run was writing
    state = run_state(folder) if status == "partial" else None
    if state is None:  # a new run: the untrained policy is the curve's first point
        write_json(folder / SPEC_FILE, spec.identity())
        venv = make_venv(task, cfg, seed=spec.seed, rules=rules)
        model = new_model(spec.algo, cfg, venv, spec.seed, spec.steps)
        t0 = time.perf_counter()
        first = {"step": 0, **evaluator(policy_actions(model, algo.masked)), "train_seconds": 0.0}
        state = {
            "steps": 0,
            "checkpoint": _save_checkpoint(model, folder, algo.off_policy),
            "evaluations": [first],
            "train_seconds": 0.0,
            "eval_seconds": time.perf_counter() - t0,
            "done": False,
        }
        venv.close()
        write_json(folder / STATE_FILE, state)
        _write_curve(folder, state["evaluations"])
        if report:
            report(first)
    _drop_checkpoints(folder, state["checkpoint"])  # one a cut save left behind
    for target in _targets(spec.steps, ev["points"]):
        if state["steps"] >= target:
            continue
        chunk = len(state["evaluations"])
        seed = _chunk_seed(spec.seed, chunk)
        venv = make_venv(task, cfg, seed=seed, rules=rules)
        ck = _own_checkpoint(folder, state["checkpoint"])
        model = _from_checkpoint(ck, spec.algo, cfg, venv, spec.seed, spec.steps, algo.off_policy)
        model.set_random_seed(seed)  # numpy, torch, random, the action space, and the games' next reset
        model._last_obs = None  # the saved model's last observation belongs to games that are gone: start new ones
        t0 = time.perf_counter()
        model.learn(total_timesteps=target - model.num_timesteps, reset_num_timesteps=False)
        t1 = time.perf_counter()
        venv.close()
        state["train_seconds"] += t1 - t0
        point = {"step": int(model.num_timesteps), **evaluator(policy_actions(model, algo.masked)), "train_seconds": state["train_seconds"]}
        state["eval_seconds"] += time.perf_counter() - t1
        state["evaluations"].append(point)
        state["steps"] = int(model.num_timesteps)
        state["checkpoint"] = _save_checkpoint(model, folder, algo.off_policy)
        write_json(folder / STATE_FILE, state)
        _drop_checkpoints(folder, state["checkpoint"])
        _write_curve(folder, state["evaluations"])
        if report:
            report(point)
    # the run's score: the final policy on the evaluation's longer set of games
    ck = _own_checkpoint(folder, state["checkpoint"])
    venv = make_venv(task, cfg, seed=spec.seed, rules=rules)
    model = _from_checkpoint(ck, spec.algo, cfg, venv, spec.seed, spec.steps, off_policy=False)
    venv.close()
    t0 = time.perf_counter()
    state["final"] = {"step": state["steps"], **task_evaluator(task, ev["seed"], ev["final_games"], rules)(policy_actions(model, algo.masked))}
    state["eval_seconds"] += time.perf_counter() - t0
    write_atomic(folder / FINAL_MODEL, _copy_into(ck / "model.zip"))
    write_atomic(folder / FINAL_TENSORS, _copy_into(ck / "model.safetensors"))
    state["done"], state["checkpoint"] = True, None
    write_json(folder / STATE_FILE, state)
    _drop_checkpoints(folder, None)
    return state
