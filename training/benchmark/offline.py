"""``generala benchmark offline``: offline RL algorithms trained on a dataset, scored as online runs are.

    generala benchmark offline --dataset DIR/generala/classic/expert-v0 --algos bc,cql,iql --seeds 5 --steps 5000 --out runs/offline

Each (dataset, algorithm, seed) trains :mod:`generala_training.offline`'s algorithm for ``--steps``
gradient steps on the dataset's transitions, then plays the suite's evaluation games of the
dataset's task through :func:`~generala_training.benchmark.score_policy`: the same seeds, the score
normalised by the exact optimum (one player) or the share of the points (two players), and every
algorithm played by a masked argmax, so none can play an illegal action. The task is the suite's
task whose game the dataset's games are (rules, players, opponent, reward), or ``--task``; a
dataset played under other rules, or at another table, than the task scored is refused.

``OUT`` gets ``results.json`` (every run's figures) and ``results.md`` (the mean and spread of
each algorithm on each dataset), written as every benchmark output is: atomically, and never over
a file the program did not write.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import numpy as np

from generala_env.files import FileProblem, OutputFolder

from ..options import MissingExtra, parser, positive_int, require_extra
from .suite import BenchmarkError, Task, default_config_dir, load_suite, task_rules

PROGRAM = "generala benchmark offline"
OUTPUTS = ("results.json", "results.md")


def dataset_task(meta: dict, tasks: dict[str, Task], name: str | None, where: str) -> Task:
    """The suite task whose games the dataset's are: ``name``'s, checked to be the dataset's game,
    or the first task of the same rules, players, opponent and reward."""
    g = meta["generala"]

    def differs(task: Task) -> str | None:
        rules = task_rules(task)
        if rules.fingerprint() != g["rules_fingerprint"]:
            return f"{where} was played under the rules {g['rules']!r}, but task {task.name!r} plays {rules.name!r}: an offline policy is scored on the rules its data was played under"
        if task.num_players != g["players"]:
            return f"{where} holds {g['players']}-player games, but task {task.name!r} plays {task.num_players}-player ones"
        if task.num_players > 1 and task.env.get("opponents", "greedy") != g["opponent"]:
            return f"{where} was played against {g['opponent']}, but task {task.name!r} plays against {task.env.get('opponents', 'greedy')}"
        return None

    if name is not None:
        if name not in tasks:
            raise BenchmarkError(f"unknown task id {name}; known: {', '.join(tasks)}")
        why = differs(tasks[name])
        if why is not None:
            raise BenchmarkError(why)
        return tasks[name]
    fits = [t for t in tasks.values() if differs(t) is None]
    same_reward = [t for t in fits if t.env.get("reward", "score") == g["reward"]]
    if not (same_reward or fits):
        raise BenchmarkError(f"{where}: no task of the suite plays its games ({g['rules']} rules, {g['players']} player(s)); name one with --task")
    return (same_reward or fits)[0]


def run_one(data, task: Task, algo: str, seed: int, steps: int, games: int, config_dir) -> dict:
    """One run: ``algo`` trained on ``data`` from ``seed``, scored on ``task``'s evaluation games."""
    from ..offline import Hyper, train
    from .scoring import score_policy

    t0 = time.perf_counter()
    policy = train(algo, data, seed=seed, steps=steps, hp=Hyper(reward_scale=task.reward_scale))
    t1 = time.perf_counter()
    scored = score_policy(policy.act_batch, task=task.name, games=games, config_dir=config_dir)
    return {
        "algo": algo,
        "seed": seed,
        "task": task.name,
        "steps": steps,
        "normalized_score": scored["normalized_score"],
        "mean_total": scored["mean_total"],
        "illegal_stops": scored["illegal_stops"],
        "train_seconds": round(t1 - t0, 1),
        "games": scored["games"],
    }


def table(results: dict) -> str:
    """Each dataset's algorithms: the mean normalised score over the seeds, its range, the data's own."""
    out = [
        "| dataset | task | data's own score | algorithm | seeds | normalised score (mean) | min – max | illegal stops |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for d in results["datasets"]:
        for algo in results["algos"]:
            runs = [r for r in d["runs"] if r["algo"] == algo]
            if not runs:
                continue
            s = np.array([r["normalized_score"] for r in runs])
            out.append(
                f"| `{d['id']}` | {d['task']} | {d['data_score']:.3f} | {algo} | {len(runs)} | {s.mean():.3f} | {s.min():.3f} – {s.max():.3f} | {np.mean([r['illegal_stops'] for r in runs]):.3f} |"
            )
    return "\n".join(out)


def data_score(data, players: int) -> float:
    """The dataset's own policy on the same scale: its mean return over the optimum (one player),
    or its share of the points (two players, reward win: a return of +1 / 0 / -1)."""
    episodes = max(1, int(data.dones.sum()))
    mean_return = float(data.rewards.sum()) / episodes
    return (mean_return + 1.0) / 2.0 if players > 1 else mean_return / data.metadata["generala"]["optimum"]


def run_grid(loaded, algos: list[str], seeds: int, steps: int, games: int, config_dir) -> list[dict]:
    """Every (dataset, algorithm, seed) of ``loaded`` (``(where, transitions, task)``), a line printed as each run ends."""
    datasets = []
    for where, data, task in loaded:
        entry = {
            "dataset": str(where),
            "id": data.metadata["dataset_id"],
            "task": task.name,
            "transitions": len(data),
            "data_score": data_score(data, task.num_players),
            "runs": [],
        }
        datasets.append(entry)
        for algo in algos:
            for seed in range(seeds):
                r = run_one(data, task, algo, seed, steps, games, config_dir)
                entry["runs"].append(r)
                print(f"{entry['id']}: {algo} seed {seed}: normalised score {r['normalized_score']:.3f} ({r['train_seconds']:.0f} s training)", flush=True)
    return datasets


def parse_args(argv):
    p = parser(PROGRAM, "Train offline RL algorithms (behaviour cloning, discrete CQL, discrete IQL) on Minari datasets and score them on the suite's games.")
    p.add_argument("--dataset", action="append", required=True, help="a dataset folder (ROOT/ID) or a Minari id under $MINARI_DATASETS_PATH; repeat for more")
    p.add_argument("--algos", default="bc,cql,iql", help="comma-separated: bc, cql, iql (default all)")
    p.add_argument("--seeds", type=positive_int, default=5, help="runs per algorithm and dataset, seeds 0 … N-1 (default 5)")
    p.add_argument("--steps", type=positive_int, default=5000, help="gradient steps per run (default 5000)")
    p.add_argument("--task", help="the suite task to score on (default: the one whose games the dataset's are)")
    p.add_argument("--games", type=positive_int, help="evaluation games (default the suite's final_games)")
    p.add_argument("--configs", help="a folder with tasks.yaml to use instead of the shipped configs/benchmark")
    p.add_argument("--out", required=True, help="the folder for results.json and results.md")
    return p.parse_args(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    try:
        require_extra("offline", ("minari", "torch"), PROGRAM)
        import torch

        from ..offline import ALGOS, OfflineError, load_transitions

        torch.set_num_threads(1)
        algos = [a for a in args.algos.split(",") if a]
        unknown = [a for a in algos if a not in ALGOS]
        if unknown or not algos:
            raise BenchmarkError(f"--algos: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(ALGOS)}")
        config_dir = Path(args.configs) if args.configs else default_config_dir()
        suite = load_suite(config_dir)
        out = Path(args.out)
        OutputFolder(out, PROGRAM, create=False).claim(OUTPUTS)  # before any work: nothing of the user's is replaced
        loaded = []
        for where in args.dataset:
            data = load_transitions(where)
            task = dataset_task(data.metadata, suite.tasks, args.task, where)
            loaded.append((where, data, task))
        results: dict = {
            "command": "generala benchmark offline " + " ".join(shlex.quote(a) for a in argv),
            "algos": algos,
            "seeds": args.seeds,
            "steps": args.steps,
        }
        results["datasets"] = run_grid(loaded, algos, args.seeds, args.steps, args.games or suite.evaluation.final_games, config_dir)
        folder = OutputFolder(out, PROGRAM)
        folder.write_json("results.json", results)
        folder.write("results.md", table(results) + "\n")
        print()
        print(table(results))
        return 0
    except (BenchmarkError, OfflineError, FileProblem, MissingExtra) as e:
        print(f"{PROGRAM}: error: {e}", file=sys.stderr)
        return 2


__all__ = ["main", "dataset_task", "run_one"]
