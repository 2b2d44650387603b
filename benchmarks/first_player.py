"""The first player's chance under optimal play: exact, and from simulated games.

``generala_agents.solver2p`` gives seat 0's P(win) + ½·P(draw) when both seats play ``optimal-2p``;
this plays that many games on seeded dice and prints both, with the simulated 95% interval::

    python benchmarks/first_player.py --rules classic --games 10000 --seed 0
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rules", default="classic")
    p.add_argument("--games", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=None)
    args = p.parse_args(argv)

    from generala_agents.solver2p import load_or_solve_2p
    from generala_env.core.game import outcome_points
    from generala_env.core.rules import load_rules
    from generala_training.harness import game_seed, play_many
    from generala_training.stats import mean_ci

    rules = load_rules(args.rules)
    exact = load_or_solve_2p(rules)[0].first_player_value
    t0 = time.time()
    seeds = [game_seed(args.seed, i) for i in range(args.games)]
    recs = play_many([("optimal-2p", "optimal-2p")] * args.games, seeds, rules, workers=args.workers, progress=False)
    m, lo, hi = mean_ci([outcome_points(r.winners, 0) for r in recs])
    served = np.mean([r.served_generala_win for r in recs])
    print(f"rules {rules.name}: seat 0's P(win) + 1/2 P(draw), both seats optimal-2p")
    print(f"exact     {exact:.4f}")
    print(
        f"simulated {m:.4f} (95% CI {lo:.4f}-{hi:.4f}) over {args.games} games, seed {args.seed}; "
        f"{served:.1%} ended by a served generala; {time.time() - t0:.0f} s"
    )


if __name__ == "__main__":
    main()
