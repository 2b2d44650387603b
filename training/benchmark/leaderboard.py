"""``generala benchmark score`` and ``generala benchmark report``: outside policies and runs on the suite.

    generala benchmark score --agent my_pkg.agents:MyAgent --task classic --json
    generala benchmark report --runs docs/benchmarks/classic_1m my_runs/ --out runs/leaderboard

``score`` plays the suite's evaluation games (:func:`generala_training.benchmark.score_policy`);
``report`` ranks built-in grids (their ``results.json``) together with submission files
(:mod:`generala_training.benchmark.submission`) with the same statistics as a grid's own report.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import numpy as np

from generala_env.files import FileProblem, OutputFolder

from ..options import MissingExtra, parser, positive_int, require_extra
from .suite import BenchmarkError, default_config_dir, load_suite


# long: a third of it is the results.json mapping it returns, one key a line
def report_runs(paths: list, reps: int = 2000, config_dir: Path | None = None, command: str = "") -> dict:
    """``results.json``'s content for every run in ``paths`` (submissions, built-in results.json
    files, or folders of them), aggregated as a grid is."""
    from .report import aggregate
    from .run import task_optimum
    from .submission import collect

    suite = load_suite(config_dir)
    subs = collect(paths, suite)
    algos = list(dict.fromkeys(r["algorithm"] for r in subs))
    tasks = [t for t in suite.tasks if any(r["task"] == t for r in subs)]
    defs = {t: suite.tasks[t] for t in tasks}
    optimum = {t: (task_optimum(defs[t]) if defs[t].num_players == 1 else None) for t in tasks}
    runs: list[dict] = []
    curves: dict[str, dict[str, tuple[list[int], np.ndarray]]] = {}
    for r in subs:
        t, ns = r["task"], r["final"]["normalized_score"]
        runs.append(
            {
                "algo": r["algorithm"],
                "task": t,
                "seed": r["seed"],
                "steps": r["steps"],
                "score": ns * optimum[t] if optimum[t] else ns,
                "normalized_score": ns,
                "illegal_stops": r["final"].get("illegal_stops", 0.0),
                "train_seconds": r["wall_clock_seconds"],
                "eval_seconds": 0.0,
                "library": f"{r['library']['name']} {r['library']['version']}",
                "hardware": r["hardware"],
                "curve": r["curve"],
            }
        )
    for a in algos:
        for t in tasks:
            mine = sorted((x for x in runs if x["algo"] == a and x["task"] == t), key=lambda x: x["seed"])
            if not mine:
                raise BenchmarkError(f"{a} has no run on task {t}: every algorithm in a table needs runs on every task in it")
            # the runs' i-th points are one evaluation point when they lie within 1% of the budget of
            # each other (a run that counts its steps by whole games stops a little past each target)
            at = np.array([[p[0] for p in x["curve"]] for x in mine], dtype=float) if len({len(x["curve"]) for x in mine}) == 1 else None
            if at is None or (at.max(axis=0) - at.min(axis=0) > 0.01 * subs[0]["budget"]).any():
                raise BenchmarkError(f"the runs of {a} on {t} were evaluated at different steps: their curves cannot be aggregated")
            steps = [int(s) for s in np.median(at, axis=0)]
            curves.setdefault(t, {})[a] = (steps, np.array([[p[1] for p in x["curve"]] for x in mine], dtype=float))
    try:
        aggregates = aggregate(runs, curves, algos, tasks, reps)
    except ValueError as e:
        raise BenchmarkError(str(e)) from None
    wall = round(sum(r["wall_clock_seconds"] for r in subs), 1)
    return {
        "kind": "report",
        "suite": {"name": suite.name, "version": suite.version},
        "algos": algos,
        "tasks": tasks,
        "seeds": sorted({r["seed"] for r in subs}),
        "steps": subs[0]["budget"],
        "uses_dice_model": bool(subs[0].get("uses_dice_model", False)),
        "command": command,
        "evaluation": {
            "seed": suite.evaluation.seed,
            "games": suite.evaluation.games,
            "final_games": suite.evaluation.final_games,
            "points": suite.evaluation.points,
        },
        "task_definitions": {t: defs[t].to_dict() for t in tasks},
        "num_players": {t: defs[t].num_players for t in tasks},
        "optimum": optimum,
        "run_seconds_total": wall,
        "calls": [],
        "wall_seconds": wall,
        "runs": runs,
        "submissions": subs,
        "aggregates": aggregates,
    }


def score_main(argv: list[str]) -> int:
    from generala_agents.specs import HELP, TRUST_ZIP_HELP

    p = parser("generala benchmark score", "Score one policy on a task of the suite, on the suite's own evaluation games.")
    p.add_argument("--agent", required=True, help=f"the policy: {HELP}")
    p.add_argument("--task", default="classic", help="a task id of the suite (default classic)")
    p.add_argument("--trust-zip", action="store_true", help=TRUST_ZIP_HELP)
    p.add_argument("--games", type=positive_int, default=None, help="evaluation games (default: the suite's final_games, whose score is a run's score)")
    p.add_argument("--configs", help="a folder with tasks.yaml to use instead of the shipped suite")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    args = p.parse_args(argv)
    from .scoring import score_policy

    try:
        config_dir = Path(args.configs) if args.configs else default_config_dir()
        result = score_policy(args.agent, task=args.task, games=args.games, config_dir=config_dir, trust_zip=args.trust_zip)
    except BenchmarkError as e:
        print(f"generala benchmark score: error: {e}", file=sys.stderr)
        return 2
    result["agent"] = args.agent
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        fair = result.get("fair_share")
        what = (
            f"normalised score (mean total / optimum) {result['normalized_score']:.4f}"
            if fair is None
            else f"share of the points against the task's opponents {result['normalized_score']:.4f} (a win 1, a win shared by k players 1/k; fair share {fair:.4f})"
        )
        print(
            f"{args.agent} on {args.task} ({result['suite']['name']} v{result['suite']['version']}, {result['games']} games): "
            f"{what}; mean total {result['mean_total']:.2f}; illegal stops {result['illegal_stops']:.1%}"
        )
    return 0


def report_main(argv: list[str]) -> int:
    p = parser("generala benchmark report", "Rank built-in grids and submitted runs together: IQM with intervals, profiles, curves.")
    p.add_argument("--runs", nargs="+", required=True, help="submission JSON files, built-in results.json files, or folders of them")
    p.add_argument("--out", required=True, help="the folder for results.json, results.md and the plots")
    p.add_argument("--configs", help="a folder with tasks.yaml to use instead of the shipped suite")
    p.add_argument("--reps", type=positive_int, default=2000, help="bootstrap resamples of each interval (default 2000)")
    p.add_argument("--force", action="store_true", help="replace a report that a different generala benchmark report command wrote in --out")
    args = p.parse_args(argv)
    command = "generala benchmark report " + " ".join(shlex.quote(a) for a in argv)
    out = Path(args.out)
    try:
        require_extra("benchmark", ("rliable", "matplotlib"), "generala benchmark report")
        if out.exists() and not out.is_dir():
            raise BenchmarkError(f"--out {out} is a file, not a folder")
        from .report import claim_outputs, write

        claim_outputs(out, "generala benchmark report", command, args.force)
        res = report_runs(args.runs, args.reps, Path(args.configs) if args.configs else None, command)
        for path in write(res, OutputFolder(out, "generala benchmark report")):
            print(f"wrote {path}")
    except (BenchmarkError, FileProblem, MissingExtra, OSError) as e:
        from .report import one_line

        print(f"generala benchmark report: error: {one_line(e)}", file=sys.stderr)
        return 2
    return 0


__all__ = ["report_runs", "score_main", "report_main"]
