"""A two-player training run's strength over training: each saved model against a yardstick.

Plays every model a run saved (``pretrained.zip``, then ``checkpoints/step_N.zip`` in step
order) head to head against ``--against`` (default ``optimal-2p``), seats swapped on the same
dice, and writes the points share (a win 1, a draw 1/2) with its 95% interval to
``--out``.csv and a figure to ``--out``.png, against steps and against the run's training
wall-clock where its ``state.json`` has it. The yardstick only measures: nothing here goes
back into training.

    python benchmarks/two_player_curve.py runs/ppo_classic_2p_scratch --games 1000 \\
        --out docs/learning_from_scratch_2p
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path


def models(run: Path) -> list[tuple[int, Path]]:
    """``(step, file)`` of the run's saved models: the cloned start at step 0, then the checkpoints."""
    out = [(0, run / "pretrained.zip")] if (run / "pretrained.zip").is_file() else []
    steps = []
    for f in (run / "checkpoints").glob("step_*.zip"):
        m = re.fullmatch(r"step_(\d+)\.zip", f.name)
        if m:
            steps.append((int(m.group(1)), f))
    return out + sorted(steps)


def wall_at(run: Path) -> dict[int, float]:
    """Training seconds at each evaluated step, and at step 0 the cloning's seconds."""
    try:
        state = json.loads((run / "state.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    pre = float((state.get("pretrain") or {}).get("seconds", 0.0))
    out = {0: pre}
    for e in state.get("evaluations") or []:
        out[int(e["step"])] = pre + float(e["wall_seconds"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a run folder made by generala train (two players)")
    ap.add_argument("--against", default="optimal-2p")
    ap.add_argument("--games", type=int, default=1000, help="dice seeds per model (each played in both seatings)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True, help="path without suffix: OUT.csv and OUT.png")
    args = ap.parse_args(argv)
    found = models(args.run)
    if not found:
        ap.error(f"{args.run} holds no pretrained.zip and no checkpoints/step_N.zip")
    from generala_training.stats import wilson
    from generala_training.tournament import tournament

    walls = wall_at(args.run)
    rows = []
    for step, path in found:
        (r,) = tournament({"model": str(path), args.against: args.against}, games=args.games, seed=args.seed, trust_zip=True)
        wins = r["wins"] if r["agent"] == "model" else r["losses"]  # the one row is the better side's
        n, points = r["games"], wins + 0.5 * r["draws"]
        _, lo, hi = wilson(points, n)
        rows.append({"step": step, "wall_seconds": walls.get(step, ""), "games": n, "points": points / n, "low": lo, "high": hi})
        print(f"step {step:>9,}: {points / n:.1%} ({lo:.1%}-{hi:.1%}) against {args.against} over {n} games", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out.with_suffix(".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, key, label in ((axes[0], "step", "PPO steps after cloning"), (axes[1], "wall_seconds", "training wall-clock (s), cloning included")):
        pts = [r for r in rows if r[key] != ""]
        ax.errorbar(
            [r[key] for r in pts],
            [100 * r["points"] for r in pts],
            yerr=[[100 * (r["points"] - r["low"]) for r in pts], [100 * (r["high"] - r["points"]) for r in pts]],
            marker="o",
            capsize=3,
        )
        ax.axhline(44, ls="--", c="grey")
        ax.axhline(50, ls=":", c="grey")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"points against {args.against} (%)")
    fig.suptitle(f"{args.run.name}: points against {args.against}, {args.games} dice seeds per model, seats swapped (dashed: 44% target)")
    fig.tight_layout()
    fig.savefig(args.out.with_suffix(".png"), dpi=110)
    print(f"wrote {args.out.with_suffix('.csv')} and {args.out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
