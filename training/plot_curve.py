"""Learning curves from runs' ``evaluations.csv``: share of optimal against steps and against wall-clock.

python -m training.plot_curve runs/ppo_classic_bc runs/ppo_classic_scratch --out docs/learning_curve.png
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path


def read(run: Path) -> dict[str, list[float]]:
    with open(run / "evaluations.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return {k: [float(r[k]) for r in rows] for k in rows[0]} if rows else {}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m training.plot_curve", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--labels", help="comma-separated labels, one per run")
    p.add_argument("--out", default="docs/learning_curve.png")
    p.add_argument("--title", default="MaskablePPO on Generala (classic), seeded evaluations")
    p.add_argument(
        "--reference",
        action="append",
        default=None,
        metavar="Y:TEXT",
        help="a dashed line at Y %% with a label (repeatable; default: the 95%% target and 97%% aim)",
    )
    args = p.parse_args(argv)
    refs = args.reference or ["95:95% target", "97:97% aim"]
    args.reference = [(float(r.split(":", 1)[0]), r.split(":", 1)[1] if ":" in r else "") for r in refs]

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = args.labels.split(",") if args.labels else [Path(r).name for r in args.runs]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for run, label in zip(args.runs, labels, strict=True):
        d = read(Path(run))
        if not d:
            continue
        share = [100 * x for x in d["share_of_optimal"]]
        ax1.plot(d["step"], share, marker=".", label=label)
        ax2.plot([t / 60 for t in d["wall_seconds"]], share, marker=".", label=label)
    ax1.set_xlabel("environment steps")
    ax2.set_xlabel("wall-clock minutes of training")
    for ax in (ax1, ax2):
        ax.set_ylabel("% of the optimal expected score")
        for y, what in args.reference:
            ax.axhline(y, color="grey", linestyle="--", linewidth=1)
            ax.annotate(what, (0, y), xycoords=("axes fraction", "data"), fontsize=8, color="grey", va="bottom")
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=8)
    fig.suptitle(args.title)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
