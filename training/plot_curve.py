"""Learning curves from runs' ``evaluations.csv``: score and share of optimal against steps.

    python -m training.plot_curve runs/ppo_classic_bc runs/ppo_classic_scratch --out docs/learning_curve.png
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path


def read(run: Path) -> dict[str, list[float]]:
    rows = list(csv.DictReader(open(run / "evaluations.csv")))
    return {k: [float(r[k]) for r in rows] for k in rows[0]} if rows else {}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.plot_curve", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--labels", help="comma-separated labels, one per run")
    p.add_argument("--out", default="docs/learning_curve.png")
    p.add_argument("--title", default="MaskablePPO on Generala (classic), seeded evaluations")
    args = p.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = args.labels.split(",") if args.labels else [Path(r).name for r in args.runs]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for run, label in zip(args.runs, labels):
        d = read(Path(run))
        if not d:
            continue
        ax1.plot(d["step"], d["mean_score"], marker=".", label=label)
        ax2.plot(d["step"], [100 * x for x in d["share_of_optimal"]], marker=".", label=label)
    ax1.set_xlabel("environment steps")
    ax1.set_ylabel("mean score (seeded evaluation games)")
    ax2.set_xlabel("environment steps")
    ax2.set_ylabel("% of the optimal expected score")
    ax2.axhline(97, color="grey", linestyle="--", linewidth=1, label="97% target")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(args.title)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
