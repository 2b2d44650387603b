"""The "uses the dice model" track of the benchmark: td-search learned from scratch, scored by the suite.

For each seed, a ``td-search`` table is learned from scratch by TD from its own games
(``generala_agents.td_search.OnePlayerLearner``: expectimax over the turn through the dice model, the
turn's end valued by the table) until its training games hold ``--budget`` decisions (the
benchmark's environment steps). Along the way, at ``points`` evenly spaced steps, and at the
end it is scored with ``generala_training.benchmark.score_policy`` on the suite's own evaluation games:
the same dice, the same normalisation by the exact optimum as every model-free run. Each seed
is written as a submission with ``uses_dice_model: true``, so ``generala benchmark report``
ranks the track in a table of its own:

    python benchmarks/dice_model_submissions.py --seeds 5 --out docs/benchmarks/submissions/classic-1m-dice-model
    generala benchmark report --runs docs/benchmarks/submissions/classic-1m-dice-model --out docs/benchmarks/classic_1m_dice_model
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def run(task: str, seed: int, budget: int, out: Path | None) -> dict:
    """One seed: learn to ``budget`` steps, scored along the way; its submission (written to ``out``)."""
    import generala_env
    from generala_agents.td_search import OnePlayerLearner, TDSearchAgent
    from generala_training.benchmark import score_policy, submission
    from generala_training.benchmark.suite import load_suite

    suite = load_suite()
    rules = suite.tasks[task].env.get("rules", "classic")
    learner = OnePlayerLearner(rules)
    rng = np.random.default_rng(seed)
    targets = sorted({max(1, round(k * budget / suite.evaluation.points)) for k in range(1, suite.evaluation.points + 1)})
    t0 = time.perf_counter()

    def score(games: int) -> dict:
        return score_policy(TDSearchAgent(rules, values=learner.V.copy()), task=task, games=games)

    curve = [[0, score(suite.evaluation.games)["normalized_score"]]]
    while targets:
        learner.play_game(rng)
        if learner.steps >= targets[0] or learner.steps >= budget:
            while targets and learner.steps >= targets[0]:
                targets.pop(0)
            if learner.steps >= budget:
                targets.clear()
            curve.append([learner.steps, score(suite.evaluation.games)["normalized_score"]])
    final = score(suite.evaluation.final_games)
    seconds = time.perf_counter() - t0
    data = submission.make(
        task=task,
        algorithm="td-search",
        library=("generala-rl", generala_env.__version__),
        seed=seed,
        budget=budget,
        steps=learner.steps,
        wall_clock_seconds=seconds,
        hardware=submission.hardware(),
        curve=curve,
        final=final,
        suite=suite,
        uses_dice_model=True,
        notes=(
            f"agents.td_search.OnePlayerLearner from scratch, {learner.games:,} games: expectimax over the turn through the dice model, "
            "end-of-turn values learned by TD(0) with the model's expected target from its own games; no solver values; "
            "benchmarks/dice_model_submissions.py"
        ),
    )
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        submission.write(out / f"td-search-{task}-seed{seed}.json", data)
    return data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="classic", help="a one-player task of the suite (default classic)")
    ap.add_argument("--seeds", type=int, default=5, help="runs, seeds 0 … N-1 (default 5)")
    ap.add_argument("--budget", type=int, default=1_000_000, help="training steps of each run, a named budget (default 1,000,000)")
    ap.add_argument("--out", type=Path, help="a folder for the submissions")
    args = ap.parse_args(argv)
    for seed in range(args.seeds):
        d = run(args.task, seed, args.budget, args.out)
        print(
            f"td-search on {args.task}, seed {seed}: normalised score {d['final']['normalized_score']:.4f} after {d['steps']:,} steps "
            f"({d['wall_clock_seconds']:.0f} s, scoring included)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
