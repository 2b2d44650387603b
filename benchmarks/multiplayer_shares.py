"""Reference shares of a suite task with opponents: each agent's share of the points, with its interval.

Every agent plays the task's own evaluation games, as :func:`generala_training.benchmark.score_policy`
scores it (game ``i`` on the shared dice of ``game_seed(evaluation.seed, i)``, from every seat,
the task's opponent in each of the others; a win 1, a win shared by k players 1/k), so its share
is the figure ``generala benchmark score`` prints. The 95% interval is over the dice: each
game's seats averaged first, so that the rotations of one deal count once. The time is the
wall-clock of the agent's games in this process, and the mean time of the agent's own ``act``
calls. ``--paired`` adds the first agent's share less each other's, deal by deal::

    python benchmarks/multiplayer_shares.py --task classic_3p_vs_greedy_margin \\
        --agents win-max,optimal,rules-of-thumb,greedy,random --out docs/benchmarks/classic_3p_reference/shares.json
    python benchmarks/multiplayer_shares.py --agents win-max,optimal --paired
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


class Timed:
    """``agent`` as it plays, its ``act`` calls counted and timed."""

    def __init__(self, agent):
        self.agent, self.spent, self.calls = agent, 0.0, 0

    def reset(self, seed=None) -> None:
        if hasattr(self.agent, "reset"):
            self.agent.reset(seed=seed)

    def act(self, observation, info):
        t = time.perf_counter()
        a = self.agent.act(observation, info)
        self.spent += time.perf_counter() - t
        self.calls += 1
        return a


def shares(spec: str, task: str, games: int | None) -> dict:
    """``spec``'s share of the points on ``task``'s evaluation games, its interval over the dice,
    its mean total, the games' wall-clock and its mean ``act`` time."""
    import generala_agents as agents
    from generala_training.benchmark.run import task_evaluator
    from generala_training.benchmark.suite import load_suite
    from generala_training.stats import mean_ci

    suite = load_suite()
    the_task = suite.tasks[task]
    n = suite.evaluation.final_games if games is None else games
    kept: dict = {}

    def figures(evaluator, played):
        kept["points"], kept["totals"], kept["stopped"] = played.points, played.totals, played.stopped
        return {}

    evaluator = task_evaluator(the_task, suite.evaluation.seed, n, figures=figures)
    agent = agents.load(spec, rules=evaluator.rules)
    if callable(getattr(agent, "act_batch", None)):
        raise SystemExit(f"multiplayer_shares: error: {spec} plays in batches; score it with generala benchmark score")
    timed = Timed(agent)
    t0 = time.perf_counter()
    evaluator.play_agent(timed)
    wall = time.perf_counter() - t0
    per_deal = kept["points"].reshape(n, the_task.num_players).mean(axis=1)  # game i's seats are entries i*P .. i*P+P-1
    share, low, high = mean_ci(per_deal)
    return {
        "agent": spec,
        "task": task,
        "suite": {"name": suite.name, "version": suite.version},
        "games": n,
        "seats_played": n * the_task.num_players,
        "share": share,
        "ci95": [low, high],
        "fair_share": the_task.fair_share,
        "mean_total": float(np.mean(kept["totals"])),
        "illegal_stops": float(np.mean(kept["stopped"])),
        "wall_seconds": round(wall, 1),
        "ms_per_decision": 1000 * timed.spent / max(timed.calls, 1),
        "per_deal": per_deal,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="classic_3p_vs_greedy_margin", help="a task of the suite with opponents")
    p.add_argument("--agents", default="win-max,optimal,rules-of-thumb,greedy,random", help="agent specs, comma-separated")
    p.add_argument("--games", type=int, default=None, help="evaluation games (default: the suite's final_games), each from every seat")
    p.add_argument("--out", default="", help="write the rows as JSON to this new file (never over one that is there)")
    p.add_argument("--paired", action="store_true", help="also the first agent's share less each other's, paired over the same deals")
    args = p.parse_args(argv)
    rows = []
    print(f"{'agent':<16}{'games':>7}{'share':>9}  {'95% CI':<17}{'fair':>7}{'mean total':>11}{'ms/decision':>12}{'wall s':>8}")
    for spec in [a.strip() for a in args.agents.split(",") if a.strip()]:
        r = shares(spec, args.task, args.games)
        if r["fair_share"] is None:
            raise SystemExit(f"multiplayer_shares: error: task {args.task} has no opponents: its score is not a share")
        rows.append(r)
        lo, hi = r["ci95"]
        print(
            f"{spec:<16}{r['seats_played']:>7}{r['share']:>9.2%}  {lo:.2%}-{hi:<9.2%}{r['fair_share']:>7.1%}{r['mean_total']:>11.2f}{r['ms_per_decision']:>12.2f}{r['wall_seconds']:>8.0f}",
            flush=True,
        )
    if args.paired:
        from generala_training.stats import mean_ci

        for r in rows[1:]:
            d, lo, hi = mean_ci(rows[0]["per_deal"] - r["per_deal"])
            print(f"{rows[0]['agent']} less {r['agent']}, paired over the deals: {d:+.2%} (95% CI {lo:+.2%} to {hi:+.2%})")
    for r in rows:
        del r["per_deal"]
    if args.out:
        from generala_env.files import create_new

        def write(tmp) -> None:
            tmp.write_text(json.dumps(rows, indent=1) + "\n")

        create_new(args.out, write)


if __name__ == "__main__":
    main()
