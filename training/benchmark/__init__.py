"""``generala benchmark``: RL algorithms on Generala's task suite, scored against the exact optimum.

    generala benchmark --algos ppo_mask,ppo,a2c,dqn,qrdqn,trpo --tasks classic --seeds 3 --steps 300000 --out runs/bench
    generala benchmark ... --backend ray [--ray-address ADDRESS]      # the same grid through Ray Tune
    generala benchmark score --agent SPEC --task classic [--json]     # any policy, on the suite's games
    generala benchmark report --runs GRID_OR_SUBMISSIONS ... --out OUT  # outside runs ranked with built-in ones
    generala benchmark offline --dataset DIR/ID --algos bc,cql,iql --out OUT  # offline RL on a Minari dataset (.offline)

From Python, :func:`score_policy` scores an agent spec, an agent object or a batched
``act_batch(observations, masks) -> actions`` exactly as a built-in run's final evaluation is
scored; :mod:`generala_training.benchmark.submission` writes and checks the JSON of a run made elsewhere.

A grid is every (algorithm, task, seed). Algorithm ids are rl-zoo3's names plus ``ppo_mask``
(sb3-contrib's MaskablePPO, the one that reads the legal-action mask); each has its
hyperparameters in ``configs/benchmark/ALGO.yaml``. Tasks are the versioned suite of
``configs/benchmark/tasks.yaml``. Each run trains in its own folder
(``OUT/runs/TASK/ALGO/seedN``, see :mod:`generala_training.benchmark.run`), is evaluated on the
suite's shared dice along the way, and can be cut and resumed: a finished run is skipped,
a cut one goes on from its last evaluation as if it had never stopped. When every run is
done, ``OUT`` gets ``results.json``, ``results.md`` and the plots
(:mod:`generala_training.benchmark.report`).

Runs go to local worker processes (``--workers``, default every core; one torch thread
each), or with ``--backend ray`` to Ray Tune trials of one CPU each, on a local Ray instance
or the cluster at ``--ray-address``. A run's result depends only on its spec, so both
backends give the same results.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
import time
import warnings
from pathlib import Path

from generala_env.files import (
    MANIFEST,
    FileProblem,
    OutputFolder,
    append_line,
    lock_folder,
    lstat_or_none,
    read_json_lines,
    read_regular,
    remove_temporaries,
    write_atomic,
)

from ..options import MissingExtra, parser, positive_int, require_extra
from .report import OUTPUTS, claim_outputs, one_line
from .run import STATE_FILE, check_hyperparams_build
from .scoring import score_policy
from .submission import MAX_POINTS, MAX_SECONDS, MAX_STEPS, number_field, score_field, share_field, whole_field
from .suite import (
    ALGOS,
    BenchmarkError,
    RunSpec,
    check_task,
    default_config_dir,
    load_algo,
    load_suite,
    run_folder,
    task_rules,
)

TRAIN_MODULES = ("torch", "stable_baselines3", "sb3_contrib")
REPORT_MODULES = ("rliable", "matplotlib")
DEFAULT_ALGOS = tuple(ALGOS)
CALLS_FILE = "calls.jsonl"
CALLS_LIMIT = 64 << 20  # bytes of OUT/calls.jsonl read: a few hundred bytes a call


def _ids(text: str, known, what: str) -> list[str]:
    ids = [x.strip() for x in text.split(",") if x.strip()]
    if not ids:
        raise BenchmarkError(f"--{what} names no {what}; known: {', '.join(known)}")
    unknown = [x for x in ids if x not in known]
    if unknown:
        raise BenchmarkError(f"unknown {what[:-1]} id(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if len(set(ids)) != len(ids):
        raise BenchmarkError(f"--{what} names an id twice: {text}")
    return ids


def plan(algos: list[str], tasks: list[str], seeds: int, steps: int, out: Path, config_dir: Path | None = None) -> list[RunSpec]:
    """The grid's runs, every input checked and every existing run folder matched against its
    spec, before anything is written or trained (a :class:`BenchmarkError` says what is wrong)."""
    if out.exists() and not out.is_dir():
        raise BenchmarkError(f"--out {out} is a file, not a folder")
    try:
        OutputFolder(out, "generala benchmark", create=False)  # not a link, nor anything but a folder
    except FileProblem as e:
        raise BenchmarkError(f"--out {e}") from None
    if steps > MAX_STEPS:
        raise BenchmarkError(f"--steps {steps:,} is more than {MAX_STEPS:,}, more than a run can train")
    suite = load_suite(config_dir)
    tasks_known = list(suite.tasks)
    for t in tasks:
        if t not in suite.tasks:
            raise BenchmarkError(f"unknown task id {t}; known: {', '.join(tasks_known)}")
    rules = {t: task_rules(suite.tasks[t]) for t in tasks}  # each task's rule set, loaded once for its checks
    for t in tasks:
        check_task(suite.tasks[t], rules[t])
    configs = {a: load_algo(a, config_dir) for a in algos}
    for a in algos:
        check_hyperparams_build(a, configs[a], suite.tasks[tasks[0]], rules[tasks[0]])
    ev = suite.evaluation
    evaluation = {"seed": ev.seed, "games": ev.games, "final_games": ev.final_games, "points": ev.points}
    specs = []
    for seed in range(seeds):
        for t in tasks:
            for a in algos:
                specs.append(
                    RunSpec(
                        a,
                        t,
                        seed,
                        steps,
                        suite.name,
                        suite.version,
                        suite.tasks[t].to_dict(),
                        configs[a].to_dict(),
                        evaluation,
                        str(run_folder(out.resolve(), a, t, seed)),
                    )
                )
    from .run import check_folder

    for s in specs:
        check_folder(s)
    return specs


@contextlib.contextmanager
def _lock(out: Path):
    """Hold ``OUT/.lock`` (:func:`generala_env.files.lock_folder`: never a link, never truncated):
    two benchmarks writing the same runs would spoil both."""
    try:
        with lock_folder(out, "another generala benchmark"):
            yield
    except FileProblem as e:
        raise BenchmarkError(str(e)) from None


def _end_torn_call(log: Path) -> None:
    """Cut from ``OUT/calls.jsonl`` a torn last line (a call whose logging was cut short), so that
    the next call is logged on a line of its own; a warning names the file and the line."""
    if lstat_or_none(log) is None:
        return
    raw = read_regular(log, CALLS_LIMIT, "the grid's log of calls")
    if not raw or raw.endswith(b"\n"):
        return
    keep = raw[: raw.rfind(b"\n") + 1]
    line = keep.count(b"\n") + 1
    warnings.warn(f"{log}, line {line}: a torn last record (a write cut short) is removed", stacklevel=2)
    write_atomic(log, keep)


@contextlib.contextmanager
def _logged_call(out: Path, command: str, runs: int, folders: list[str] | None = None):
    """Append this call to ``OUT/calls.jsonl`` when it ends (how it ended, how long it took, the
    run folders it trained): the wall-clock of a grid is that of the calls that trained its runs."""
    call = {"command": command, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs_to_train": runs, "outcome": "done"}
    if folders is not None:
        call["runs"] = folders
    t0 = time.perf_counter()
    try:
        yield call
    except BaseException:
        call["outcome"] = "interrupted"
        raise
    finally:
        call["seconds"] = round(time.perf_counter() - t0, 1)
        _end_torn_call(out / CALLS_FILE)
        append_line(out / CALLS_FILE, json.dumps(call, allow_nan=False))


def _line(spec: RunSpec, state: dict) -> str:
    f = state["final"]
    return f"{spec.algo} on {spec.task}, seed {spec.seed}: normalised score {f['normalized_score']:.3f} after {f['step']:,} steps ({state['train_seconds']:.0f} s training)"


def run_local(specs: list[RunSpec], workers: int, log=print) -> list[tuple[RunSpec, str]]:
    """Run ``specs`` in this process (one worker) or in ``workers`` processes; the failures."""
    from .run import run_one

    failures = []
    if workers <= 1 or len(specs) <= 1:
        for i, s in enumerate(specs, 1):
            try:
                log(f"[{i}/{len(specs)}] {_line(s, run_one(s))}")
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as e:  # noqa: BLE001 - one run's failure must not end the others
                failures.append((s, f"{type(e).__name__}: {e}"))
                log(f"[{i}/{len(specs)}] {s.algo} on {s.task}, seed {s.seed} failed: {type(e).__name__}: {e}")
        return failures
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from ..harness import stop_workers

    pool = ProcessPoolExecutor(max_workers=min(workers, len(specs)), mp_context=mp.get_context("spawn"))
    try:
        futures = {pool.submit(run_one, s): s for s in specs}
        for i, f in enumerate(as_completed(futures), 1):
            s = futures[f]
            try:
                log(f"[{i}/{len(specs)}] {_line(s, f.result())}")
            except Exception as e:  # noqa: BLE001
                failures.append((s, f"{type(e).__name__}: {e}"))
                log(f"[{i}/{len(specs)}] {s.algo} on {s.task}, seed {s.seed} failed: {type(e).__name__}: {e}")
    except BaseException:
        stop_workers(pool)
        raise
    pool.shutdown()
    return failures


def _ray_trial(config: dict) -> None:
    """One Ray Tune trial: one run, reporting each evaluation to Tune."""
    from ray import tune

    from .run import run_one

    numeric = lambda d: {k: v for k, v in d.items() if isinstance(v, (int, float))}  # noqa: E731
    state = run_one(RunSpec.from_dict(config["spec"]), report=lambda point: tune.report(numeric(point)))
    tune.report({**numeric(state["final"]), "done": 1})


def run_ray(specs: list[RunSpec], workers: int, out: Path, address: str | None = None, log=print) -> list[tuple[RunSpec, str]]:
    """Run ``specs`` as Ray Tune trials of one CPU each (at most ``workers`` at once); the failures.

    Without ``address`` a local Ray instance of ``workers`` CPUs is started (and stopped after).
    """
    import ray
    from ray import tune

    started = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        started = True
    try:
        tuner = tune.Tuner(
            tune.with_resources(_ray_trial, {"cpu": 1}),
            param_space={"spec": tune.grid_search([s.to_dict() for s in specs])},
            tune_config=tune.TuneConfig(
                max_concurrent_trials=workers,
                reuse_actors=True,  # a worker process imports torch and SB3 once, for all its trials
                trial_name_creator=lambda t: f"{t.config['spec']['task']}__{t.config['spec']['algo']}__seed{t.config['spec']['seed']}",
                trial_dirname_creator=lambda t: f"{t.config['spec']['task']}__{t.config['spec']['algo']}__seed{t.config['spec']['seed']}__{t.trial_id}",
            ),
            run_config=tune.RunConfig(name=f"benchmark_{time.strftime('%Y%m%d-%H%M%S')}", storage_path=str((out / "ray").resolve()), verbose=0),
        )
        grid = tuner.fit()
        failures = []
        for r in grid:  # type: ignore[attr-defined]  # ResultGrid iterates by __getitem__/__len__, which mypy does not count
            s = RunSpec.from_dict(r.config["spec"])
            if r.error is not None:
                failures.append((s, f"{type(r.error).__name__}: {r.error}"))
                log(f"{s.algo} on {s.task}, seed {s.seed} failed in Ray: {r.error}")
        return failures
    finally:
        if started:
            ray.shutdown()


def collect(specs: list[RunSpec], out: Path) -> tuple[list[dict], dict]:
    """The finished runs' records (their folders relative to ``out``) and learning curves, read from their folders."""
    import numpy as np

    from .run import run_state

    runs: list[dict] = []
    curves: dict[str, dict[str, list[list[dict]]]] = {}
    for s in specs:
        state = run_state(Path(s.folder))
        assert state is not None  # only finished runs are collected
        f = _checked_state(state, Path(s.folder) / STATE_FILE)
        runs.append(
            {
                "algo": s.algo,
                "task": s.task,
                "seed": s.seed,
                "steps": f["step"],
                "score": f["score"],
                "normalized_score": f["normalized_score"],
                "mean_total": f["mean_total"],
                "illegal_stops": f["illegal_stops"],
                "train_seconds": state["train_seconds"],
                "eval_seconds": state["eval_seconds"],
                "folder": Path(s.folder).relative_to(out.resolve()).as_posix(),
                "curve": [[int(e["step"]), float(e["normalized_score"])] for e in state["evaluations"]],
            }
        )
        curves.setdefault(s.task, {}).setdefault(s.algo, []).append(state["evaluations"])
    result: dict[str, dict[str, tuple[list, np.ndarray]]] = {}
    for t, by_algo in curves.items():
        result[t] = {}
        for a, evs in by_algo.items():
            steps = [e["step"] for e in evs[0]]
            if any([e["step"] for e in ev] != steps for ev in evs):
                raise BenchmarkError(f"the runs of {a} on {t} were evaluated at different steps: their curves cannot be aggregated")
            result[t][a] = (steps, np.array([[e["normalized_score"] for e in ev] for ev in evs], dtype=float))
    return runs, result


def _checked_state(state: dict, path: Path) -> dict:
    """A finished run's ``state.json`` held to the ranges of a submission (finite numbers, steps,
    seconds, shares and normalised scores within bounds); its final figures."""
    where = str(path)
    f = state.get("final")
    if not isinstance(f, dict):
        raise BenchmarkError(f"{where}: final must be the run's final figures, got {type(f).__name__}; remove the run folder to run it again")
    whole_field(f.get("step"), f"{where}: final.step", 0, MAX_STEPS)
    score_field(f.get("normalized_score"), f"{where}: final.normalized_score")
    number_field(f.get("score"), f"{where}: final.score", 0.0, MAX_POINTS)
    number_field(f.get("mean_total"), f"{where}: final.mean_total", 0.0, MAX_POINTS)
    share_field(f.get("illegal_stops"), f"{where}: final.illegal_stops")
    number_field(state.get("train_seconds"), f"{where}: train_seconds")
    number_field(state.get("eval_seconds"), f"{where}: eval_seconds")
    evaluations = state.get("evaluations")
    if not isinstance(evaluations, list) or not evaluations:
        raise BenchmarkError(f"{where}: evaluations must be the run's list of evaluations; remove the run folder to run it again")
    for i, e in enumerate(evaluations):
        whole_field(e.get("step"), f"{where}: evaluations[{i}].step", 0, MAX_STEPS)
        score_field(e.get("normalized_score"), f"{where}: evaluations[{i}].normalized_score")
    return f


def _folder_key(spec: RunSpec, out: Path) -> str:
    return os.path.relpath(spec.folder, out)


def _ready(out: Path, specs: list[RunSpec]) -> None:
    """Under the grid's lock, before anything is trained: what a killed call was writing in
    ``out`` removed, and the log of calls checked (it can be read and appended to)."""
    remove_temporaries(out, (*OUTPUTS, MANIFEST, CALLS_FILE))
    with warnings.catch_warnings():  # a torn last call is named once, when the results read the log
        warnings.simplefilter("ignore")
        calls_of(out, specs)


def _check_call(call, log: Path, n: int) -> dict:
    where = f"{log}, call {n}"
    if not isinstance(call, dict):
        raise BenchmarkError(f"{where}: a call is a JSON object, got {type(call).__name__}; fix or remove that line")
    number_field(call.get("seconds"), f"{where}: seconds", 0.0, MAX_SECONDS)
    runs = call.get("runs")
    if runs is not None and (not isinstance(runs, list) or not all(isinstance(r, str) for r in runs)):
        raise BenchmarkError(f"{where}: runs must be a list of run folders, got {type(runs).__name__}; fix or remove that line")
    return call


def calls_of(out: Path, specs: list[RunSpec]) -> list[dict]:
    """The calls in ``OUT/calls.jsonl`` that trained runs of this grid (another grid trained in
    the same ``--out`` is not counted); a line from before calls named their runs is kept. A torn
    last line is skipped with a warning; any other line that is not a call is one error line."""
    log = out / CALLS_FILE
    try:
        calls = read_json_lines(log, CALLS_LIMIT, "the grid's log of calls") if lstat_or_none(log) is not None else []
    except FileProblem as e:
        raise BenchmarkError(str(e)) from None
    calls = [_check_call(c, log, n) for n, c in enumerate(calls, 1)]
    mine = {_folder_key(s, out) for s in specs}
    return [c for c in calls if not isinstance(c.get("runs"), list) or mine.intersection(c["runs"])]


def results(specs: list[RunSpec], out: Path, algos: list[str], tasks: list[str], seeds: int, steps: int, reps: int, command: str) -> dict:
    """``results.json``'s content for the finished grid of ``specs``."""
    from .report import aggregate
    from .run import task_optimum
    from .suite import Task

    runs, curves = collect(specs, out)
    calls = calls_of(out, specs)
    first = {s.task: s for s in specs}
    tasks_def = {t: Task(t, **first[t].task_def) for t in tasks}
    import stable_baselines3

    from .submission import hardware

    return {
        "suite": {"name": specs[0].suite, "version": specs[0].suite_version},
        "library": {"name": "stable-baselines3", "version": stable_baselines3.__version__},
        "hardware": hardware(),
        "algos": algos,
        "tasks": tasks,
        "seeds": list(range(seeds)),
        "steps": steps,
        "command": command,
        "evaluation": specs[0].evaluation,
        "task_definitions": {t: tasks_def[t].to_dict() for t in tasks},
        "num_players": {t: tasks_def[t].num_players for t in tasks},
        "optimum": {t: (task_optimum(tasks_def[t]) if tasks_def[t].num_players == 1 else None) for t in tasks},
        "hyperparameters": {a: next(s.algo_config for s in specs if s.algo == a) for a in algos},
        "run_seconds_total": round(sum(r["train_seconds"] + r["eval_seconds"] for r in runs), 1),
        "calls": calls,
        "wall_seconds": round(sum(c["seconds"] for c in calls), 1),
        "runs": runs,
        "aggregates": aggregate(runs, curves, algos, tasks, reps),
    }


def parse_args(argv):
    p = parser(
        "generala benchmark",
        "Train RL algorithms on Generala's task suite and score them with rliable. "
        "Also: `generala benchmark score --help` (score any policy), `generala benchmark report --help` (rank outside runs with built-in ones) "
        "and `generala benchmark offline --help` (offline RL on a Minari dataset).",
    )
    p.add_argument("--algos", default=",".join(DEFAULT_ALGOS), help=f"comma-separated algorithm ids (default all: {','.join(DEFAULT_ALGOS)})")
    p.add_argument("--tasks", default="classic", help="comma-separated task ids of the suite (default classic)")
    p.add_argument("--seeds", type=positive_int, default=3, help="runs per algorithm and task, seeds 0 … N-1 (default 3)")
    p.add_argument("--steps", type=positive_int, required=True, help="environment steps per run")
    p.add_argument("--out", required=True, help="the grid's folder: run folders, results.json, results.md, plots")
    p.add_argument("--workers", type=positive_int, default=None, help="runs at once (default: every core)")
    p.add_argument("--backend", choices=("local", "ray"), default="local", help="local processes, or Ray Tune trials (extra [ray])")
    p.add_argument("--ray-address", help="a running Ray cluster to use (default: start a local instance)")
    p.add_argument("--configs", help="a folder with tasks.yaml and ALGO.yaml files to use instead of the shipped configs/benchmark")
    p.add_argument("--reps", type=positive_int, default=2000, help="bootstrap resamples of each interval (default 2000)")
    p.add_argument("--force", action="store_true", help="replace results.json that a different generala benchmark command wrote in --out")
    return p.parse_args(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("score", "report", "offline"):
        from .leaderboard import report_main, score_main
        from .offline import main as offline_main

        return {"score": score_main, "report": report_main, "offline": offline_main}[argv[0]](argv[1:])
    args = parse_args(argv)
    command = "generala benchmark " + " ".join(shlex.quote(a) for a in argv)
    try:
        require_extra("benchmark", TRAIN_MODULES + REPORT_MODULES, "generala benchmark")
        if args.backend == "ray":
            require_extra("ray", ("ray", "ray.tune"), "generala benchmark --backend ray")
        elif args.ray_address:
            raise BenchmarkError("--ray-address is for --backend ray")
        algos = _ids(args.algos, list(ALGOS), "algos")
        config_dir = Path(args.configs) if args.configs else default_config_dir()
        if not config_dir.is_dir():
            raise BenchmarkError(f"--configs {config_dir} is not a folder")
        tasks = _ids(args.tasks, list(load_suite(config_dir).tasks), "tasks")
        out = Path(args.out)
        specs = plan(algos, tasks, args.seeds, args.steps, out, config_dir)
        claim_outputs(out, "generala benchmark", command, args.force)
        folder = OutputFolder(out, "generala benchmark")  # made here, once every input is checked
        with _lock(out):
            from .report import counted
            from .run import check_folder

            _ready(out, specs)
            pending = [s for s in specs if check_folder(s) != "done"]
            print(
                f"{counted(len(specs), 'run')} ({counted(len(algos), 'algorithm')} x {counted(len(tasks), 'task')} x {counted(args.seeds, 'seed')}); {len(specs) - len(pending)} already done; output in {out}"
            )
            if pending:
                from ..harness import signals_interrupt

                workers = args.workers or os.cpu_count() or 1
                with (
                    signals_interrupt(),
                    _logged_call(out, command, len(pending), [_folder_key(s, out) for s in pending]) as call,
                ):  # SIGTERM too ends as Ctrl-C does
                    failures = run_ray(pending, workers, out, args.ray_address) if args.backend == "ray" else run_local(pending, workers)
                    if failures:
                        call["outcome"] = "failed"
                        print(f"generala benchmark: {len(failures)} run(s) failed; run the same command again to retry them:", file=sys.stderr)
                        for s, why in failures:
                            print(f"  {s.algo} on {s.task}, seed {s.seed} ({s.folder}): {why}", file=sys.stderr)
                        return 1
            res = results(specs, out, algos, tasks, args.seeds, args.steps, args.reps, command)
            from .report import write

            for path in write(res, folder):
                print(f"wrote {path}")
    except (BenchmarkError, FileProblem, MissingExtra, OSError) as e:
        print(f"generala benchmark: error: {one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished runs are kept, cut ones resume from their last evaluation; run the same command again", file=sys.stderr)
        return 130
    return 0


__all__ = ["main", "plan", "score_policy"]
