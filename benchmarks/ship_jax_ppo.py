"""Ship a ``generala jax-train`` checkpoint as a named agent: its ``policy.safetensors`` and
``metadata.json`` copied into ``checkpoints/NAME`` with the name set, its evaluation on
``--games`` seeded games recorded (``evaluation``, as ``generala export`` records one), and
the same figures for the final checkpoints of the recipe's other seeds (``seeds``).

    python benchmarks/ship_jax_ppo.py runs/B0/checkpoints/step_5996544 --name jax-ppo-classic \\
        --other runs/B1/checkpoints/step_5996544 runs/B2/checkpoints/step_5996544 --games 10000 --seed 0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not an installed one

from generala_env.files import read_json  # noqa: E402


def record(folder: Path, name: str, games: int, seed: int) -> tuple[dict, dict]:
    from generala_env.core.rules import load_rules
    from generala_training.export import evaluate

    meta = read_json(folder / "metadata.json")
    ev = evaluate(folder, name, load_rules(meta["rules"]), 1, games, seed, [])
    seed_row = {
        "seed": meta["config"]["seed"],
        "run": meta["source_run"],
        "training_steps": meta["training_steps"],
        "budget_seconds": meta["budget_seconds"],
        **{k: ev[k] for k in ("mean_score", "ci95", "share_of_optimal")},
    }
    return meta, {"evaluation": ev, "seed_row": seed_row}


def main(argv=None) -> None:
    from generala_agents.policy_net import WEIGHTS_FILE
    from generala_agents.ppo import METADATA_FILE, SHIPPED
    from generala_env.files import read_regular, write_atomic
    from generala_training.export_metadata import write_metadata

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", type=Path, help="a jax-train checkpoint folder (RUN/checkpoints/step_N)")
    p.add_argument("--name", required=True)
    p.add_argument("--other", type=Path, nargs="*", default=[], help="the other seeds' final checkpoints")
    p.add_argument("--games", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    dest = SHIPPED / args.name
    if dest.exists():
        sys.exit(f"{dest} exists: remove it first")
    meta, got = record(args.checkpoint, args.name, args.games, args.seed)
    others = [record(o, f"{args.name} (another seed)", args.games, args.seed)[1]["seed_row"] for o in args.other]
    dest.mkdir(parents=True)
    write_atomic(dest / WEIGHTS_FILE, read_regular(args.checkpoint / WEIGHTS_FILE, 64 << 20, "the checkpoint's weights"))
    meta.update(
        name=args.name, evaluation={**got["evaluation"], "command": f"generala evaluate --agents optimal,{args.name} --games {args.games} --seed {args.seed}"}
    )
    meta["seeds"] = [got["seed_row"], *others]
    write_metadata(dest, meta)
    print(f"wrote {dest}/{WEIGHTS_FILE} and {METADATA_FILE}")


if __name__ == "__main__":
    main()
