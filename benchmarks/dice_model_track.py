"""The benchmark suite's tasks played by td-search: a "uses the dice model" track.

For each one-player task of ``configs/benchmark/tasks.yaml`` it learns a ``td-search`` table
from scratch by TD from its own games (``generala_agents.td_search.OnePlayerLearner``, ``--games``
games from ``--seed``), then plays the suite's final evaluation: game ``i`` on the shared
dice of ``generala_training.harness.game_seed(20261130, i)``, ``i < 1000``, the same games every
model-free run of ``generala benchmark`` is scored on, normalised by the same optimum.
``classic_vs_greedy``: the shipped ``td-search-2p`` against ``greedy`` on those dice, each seed
from both seats (a shared win counts half).

    python benchmarks/dice_model_track.py            # about 10 minutes on one core
    python benchmarks/dice_model_track.py --games 5000 --eval-games 200   # quicker
    python benchmarks/dice_model_track.py --optimal  # the exact optimum's mean on the same dice
"""

from __future__ import annotations

import argparse
import time

import numpy as np

EVAL_SEED = 20261130
ONE_PLAYER = {"classic": "classic", "double": "double", "sixty": "sixty", "classic_locked_holds": {"base": "classic", "locked_holds": True}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=20000, help="training games per one-player task (default 20000)")
    ap.add_argument("--eval-games", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--optimal", action="store_true", help="only the yardstick: the exact optimal agent on the same evaluation dice")
    args = ap.parse_args(argv)

    import generala_agents as agents
    from generala_agents.solver import load_or_solve
    from generala_agents.td_search import OnePlayerLearner, TDSearchAgent
    from generala_env.core.game import outcome_points
    from generala_training.harness import game_seed, play_game

    seeds = [game_seed(EVAL_SEED, i) for i in range(args.eval_games)]
    if args.optimal:
        for task, rules in ONE_PLAYER.items():
            agent = agents.load("optimal", rules=rules)
            print(f"{task:<22} optimal on the same dice: {np.mean([int(play_game([agent], rules, s).totals[0]) for s in seeds]):.2f}")
        return 0
    print(f"{'task':<22} {'train games':>11} {'train s':>8} {'eval mean':>10} {'optimum':>8} {'% of optimum':>12} {'eval s':>7}")
    for task, rules in ONE_PLAYER.items():
        learner = OnePlayerLearner(rules)
        rng = np.random.default_rng(args.seed)
        t0 = time.perf_counter()
        for _ in range(args.games):
            learner.play_game(rng)
        train_s = time.perf_counter() - t0
        agent = TDSearchAgent(rules, values=learner.V)
        t0 = time.perf_counter()
        totals = [int(play_game([agent], rules, s).totals[0]) for s in seeds]
        eval_s = time.perf_counter() - t0
        optimum = load_or_solve(rules)[0].expected_score
        mean = float(np.mean(totals))
        print(f"{task:<22} {args.games:>11} {train_s:>8.1f} {mean:>10.2f} {optimum:>8.2f} {100 * mean / optimum:>11.1f}% {eval_s:>7.1f}", flush=True)
    me, greedy = agents.load("td-search-2p", rules="classic"), agents.load("greedy", rules="classic")
    t0 = time.perf_counter()
    points = []
    for s in seeds:
        for seat in (0, 1):
            players = [me, greedy] if seat == 0 else [greedy, me]
            points.append(outcome_points(play_game(players, "classic", s).winners, seat))
    print(
        f"classic_vs_greedy: td-search-2p (shipped) {100 * np.mean(points):.1f}% in points against greedy over {len(points)} games ({time.perf_counter() - t0:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
