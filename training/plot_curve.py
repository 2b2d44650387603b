"""Learning curves from runs' ``evaluations.csv``: share of optimal against steps and against wall-clock.

python -m generala_training.plot_curve runs/ppo_classic_bc runs/ppo_classic_scratch --out docs/learning_curve.png

``--out`` is written atomically and never through a link; a file already there is replaced
only when this program wrote it there (and nobody changed it since): move any other away first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROG = "python -m generala_training.plot_curve"


def read(run: Path) -> dict[str, list[float]]:
    """A run's ``evaluations.csv`` as columns (:func:`generala_training.runs.read_evaluations`: a torn
    last row skipped with a warning, any other bad row one line naming the file and line)."""
    from .runs import EVALUATIONS, read_evaluations

    header, rows = read_evaluations(Path(run) / EVALUATIONS)
    return {k: [r[k] for r in rows] for k in header} if rows else {}


def main(argv=None) -> int:
    from generala_env.files import FileProblem

    try:
        return _main(argv)
    except (FileProblem, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2


def _main(argv=None) -> int:
    from generala_env.files import OutputFolder

    p = argparse.ArgumentParser(allow_abbrev=False, prog=PROG, description=__doc__.split("\n\n")[0])
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
    out = Path(args.out)
    before = OutputFolder(out.parent, PROG, create=False)  # checked before any work: a link or a file of the user's there is refused
    before.check(out.name)
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
    folder = OutputFolder(out.parent, PROG)
    with folder.temporary(out.name) as tmp:
        fig.savefig(tmp, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
