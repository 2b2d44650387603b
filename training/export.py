"""``generala export``: turn a training run into a shipped checkpoint with its metadata.

    generala export runs/ppo_classic_bc --name ppo-classic --games 10000

Copies the run's model (``best_model.zip`` by default) to ``checkpoints/NAME/model.zip``
and writes ``metadata.json``: rules, players, reward, observation layout version and
size, training steps and time, the resolved config, and the evaluation figures measured
here on ``--games`` seeded games (one player: mean score and share of the optimal
expected score; several players: win rates against baselines, seats swapped).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import yaml

from .harness import game_seed, play_many
from .stats import mean_ci, wilson


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="generala export", description=__doc__.split("\n\n")[0])
    p.add_argument("run", help="a run folder made by generala train")
    p.add_argument("--name", required=True, help="checkpoint name, e.g. ppo-classic")
    p.add_argument("--model", default="best_model.zip", help="which model file of the run (best_model.zip, latest.zip, final_model.zip)")
    p.add_argument("--games", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--opponents", default="rules-of-thumb,optimal,greedy", help="for several players: whom to measure against")
    p.add_argument("--dest", default=None, help="checkpoints folder (default: the project's checkpoints/)")
    args = p.parse_args(argv)

    from agents.ppo import CHECKPOINTS
    from agents.solver import load_or_solve
    from generala_env.encoding import LAYOUT_VERSION, observation_size
    from generala_env.rules import load_rules

    run = Path(args.run)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    state = json.loads((run / "state.json").read_text()) if (run / "state.json").is_file() else {}
    model = run / args.model
    if not model.is_file():
        raise ValueError(f"{model} does not exist")
    rules = load_rules(cfg["env"]["rules"])
    players = int(cfg["env"]["num_players"])
    dest = Path(args.dest or CHECKPOINTS) / args.name
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model, dest / "model.zip")

    from sb3_contrib import MaskablePPO

    steps = int(MaskablePPO.load(model, device="cpu").num_timesteps)
    meta = {
        "name": args.name,
        "algorithm": "sb3-contrib MaskablePPO",
        "rules_name": rules.name,
        "rules": rules.settings(),
        "rules_fingerprint": rules.fingerprint(),
        "num_players": players,
        "reward": cfg["env"]["reward"],
        "layout_version": LAYOUT_VERSION,
        "obs_size": observation_size(rules, players),
        "n_actions": 32 + rules.num_lines,
        "training_steps": steps,
        "training_seconds": round(float(state.get("train_seconds", 0.0)), 1),
        "pretrain": state.get("pretrain"),
        "source_run": str(run),
        "source_model": args.model,
        "config": cfg,
        "exported": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    (dest / "metadata.json").write_text(json.dumps(meta, indent=2, default=float))

    seeds = [game_seed(args.seed, i) for i in range(args.games)]
    evaluation: dict = {"games": args.games, "seed": args.seed}
    if players == 1:
        optimal = load_or_solve(rules)[0].expected_score
        recs = play_many([(str(dest),)] * args.games, seeds, rules, desc=args.name)
        m, lo, hi = mean_ci([r.totals[0] for r in recs])
        evaluation.update(mean_score=m, ci95=[lo, hi], share_of_optimal=m / optimal, optimal_expected=optimal, command=f"generala evaluate --agents optimal,{args.name} --games {args.games} --seed {args.seed}")
        print(f"{args.name}: mean {m:.2f} (95% CI {lo:.2f}–{hi:.2f}) over {args.games} games = {m / optimal:.2%} of optimal {optimal:.2f}")
    else:
        for opp in [o for o in args.opponents.split(",") if o]:
            lineups, ss = [], []
            for s in seeds:
                for seat in range(players):
                    lu = [opp] * players
                    lu[seat] = str(dest)
                    lineups.append(tuple(lu))
                    ss.append(s)
            recs = play_many(lineups, ss, rules, desc=f"{args.name} vs {opp}")
            wins = draws = 0
            for lu, r in zip(lineups, recs):
                seat = lu.index(str(dest))
                wins += r.winners == (seat,)
                draws += seat in r.winners and len(r.winners) > 1
            n = len(recs)
            wr = wilson(wins, n)
            evaluation[f"vs_{opp}"] = {"games": n, "win_rate": wr, "draw_rate": draws / n, "command": f"generala tournament --agents {args.name},{opp} --players {players} --games {args.games} --seed {args.seed}"}
            print(f"{args.name} vs {opp}: win {wr[0]:.2%} (95% CI {wr[1]:.2%}–{wr[2]:.2%}), draws {draws / n:.2%}, {n} games")
    meta["evaluation"] = evaluation
    (dest / "metadata.json").write_text(json.dumps(meta, indent=2, default=float))
    print(f"wrote {dest}/model.zip and metadata.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
