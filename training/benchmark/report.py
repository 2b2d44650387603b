"""A finished grid's results: rliable's aggregates, ``results.json``, ``results.md`` and the plots.

Aggregates follow Agarwal et al. (2021), "Deep RL at the edge of the statistical precipice",
through their library ``rliable``: the interquartile mean (IQM) of the normalised scores with
95% stratified-bootstrap confidence intervals (runs resampled within each task), the mean,
median and optimality gap (how far below the optimum, 1.0, on average), performance
profiles (the share of runs scoring above each threshold) and the probability that one
algorithm's run beats another's on a task. Every bootstrap is seeded, so the same runs give
the same file.
"""

from __future__ import annotations

import itertools
import json
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np

from generala_env.files import OutputFolder

from ..options import claim_out
from .suite import BenchmarkError

METRICS = ("IQM", "Mean", "Median", "Optimality gap")
BOOTSTRAP_SEED = 0
TAUS = np.linspace(0.0, 1.05, 106)  # performance-profile thresholds on the normalised score


def _estimates(score_dict: dict, func, reps: int):
    """rliable's stratified-bootstrap point estimates and 95% intervals, seeded."""
    from rliable import library as rly

    # rliable 1.2's StratifiedBootstrap draws its resamples from NumPy's global generator
    # (np.random.choice), not from random_state: seed that one for the call, and put it back after
    held = np.random.get_state()
    np.random.seed(BOOTSTRAP_SEED)
    try:
        with warnings.catch_warnings():  # arch's notice that random_state will become generator=
            warnings.simplefilter("ignore", FutureWarning)
            return rly.get_interval_estimates(score_dict, func, reps=reps, random_state=np.random.RandomState(BOOTSTRAP_SEED))
    finally:
        np.random.set_state(held)


# rliable.metrics' statistics, computed in NumPy: the bootstrap calls them thousands of times,
# and scipy's trim_mean and mannwhitneyu, which rliable calls, cost a millisecond a call.
# tests/test_benchmark.py checks they equal rliable's.
def iqm(scores: np.ndarray, axis=None) -> np.ndarray:
    """The interquartile mean of all ``scores`` (``axis=None``, as rliable.metrics.aggregate_iqm:
    scipy's ``trim_mean(x, 0.25)``), or along ``axis``."""
    a = np.sort(np.ravel(scores) if axis is None else np.moveaxis(scores, axis, 0), axis=0)
    cut = int(0.25 * a.shape[0])
    return a[cut : a.shape[0] - cut].mean(axis=0)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """P(X > Y) averaged over tasks, ties counting half (rliable's Mann-Whitney U / (n_x n_y))."""
    xs, ys = x[:, None, :], y[None, :, :]
    return float(np.mean(np.mean((xs > ys) + 0.5 * (xs == ys), axis=(0, 1))))


def score_distribution(scores: np.ndarray, taus: np.ndarray = TAUS) -> np.ndarray:
    """The share of runs (all tasks together) scoring above each threshold (rliable.library.score_distributions)."""
    return np.mean(np.asarray(scores)[..., None] > taus, axis=tuple(range(np.ndim(scores))))


def metrics(x: np.ndarray) -> np.ndarray:
    """IQM, mean, median and optimality gap of a runs x tasks matrix (rliable.metrics' aggregate_*:
    the mean and median are over the tasks' mean scores, the gap is below 1, the optimum)."""
    task_means = x.mean(axis=0)
    return np.array([iqm(x), task_means.mean(), np.median(task_means), 1.0 - np.minimum(x, 1.0).mean()])


def _summary(point, ci) -> dict:
    return {m.lower().replace(" ", "_"): {"value": float(point[i]), "ci": [float(ci[0, i]), float(ci[1, i])]} for i, m in enumerate(METRICS)}


def aggregate(runs: list[dict], curves: dict, algos: list[str], tasks: list[str], reps: int) -> dict:
    """The aggregates of ``runs`` (one per algorithm, task and seed, every combination present).

    ``curves[task][algo]`` is ``(steps, scores)``: the evaluation steps and a runs x points
    matrix of normalised scores.
    """
    by = {(r["algo"], r["task"], r["seed"]): r["normalized_score"] for r in runs}
    matrix = {}  # runs x tasks, each algorithm with its own seeds
    for a in algos:
        seeds = sorted({r["seed"] for r in runs if r["algo"] == a})
        missing = [(t, s) for t in tasks for s in seeds if (a, t, s) not in by]
        if missing:
            raise ValueError(f"{a} has no run on task {missing[0][0]} with seed {missing[0][1]}: every algorithm needs the same seeds on every task")
        matrix[a] = np.array([[by[(a, t, s)] for t in tasks] for s in seeds], dtype=float)

    point, ci = _estimates(matrix, metrics, reps)
    overall = {a: _summary(point[a], ci[a]) for a in algos}
    per_task = {}
    for j, t in enumerate(tasks):
        sub = {a: matrix[a][:, j : j + 1] for a in algos}
        p, c = _estimates(sub, metrics, reps)
        per_task[t] = {a: _summary(p[a], c[a]) for a in algos}

    pairs = list(itertools.combinations(algos, 2))  # P(y > x) is 1 - P(x > y): ties count half
    poi = []
    if pairs:
        pair_dict = {f"{x},{y}": (matrix[x], matrix[y]) for x, y in pairs}
        p, c = _estimates(pair_dict, probability_of_improvement, reps)
        poi = [{"x": x, "y": y, "probability": float(np.ravel(p[f"{x},{y}"])[0]), "ci": [float(v) for v in np.ravel(c[f"{x},{y}"])]} for x, y in pairs]

    # rliable.library.create_performance_profile's score distributions, through the same
    # get_interval_estimates but seeded (it takes no random_state) and vectorised over tau
    profiles, profile_ci = _estimates(matrix, score_distribution, reps)

    curve_out: dict[str, dict[str, dict[str, list]]] = {}
    for t in tasks:
        curve_out[t] = {}
        for a in algos:
            steps, scores = curves[t][a]  # runs x points
            p, c = _estimates({a: scores}, lambda x: iqm(x, axis=0), reps)
            curve_out[t][a] = {"steps": [int(s) for s in steps], "iqm": p[a].tolist(), "ci_low": c[a][0].tolist(), "ci_high": c[a][1].tolist()}

    return {
        "overall": overall,
        "per_task": per_task,
        "probability_of_improvement": poi,
        "performance_profile": {
            "tau": [round(float(x), 4) for x in TAUS],
            "share_above": {a: profiles[a].tolist() for a in algos},
            "ci_low": {a: profile_ci[a][0].tolist() for a in algos},
            "ci_high": {a: profile_ci[a][1].tolist() for a in algos},
        },
        "curves": curve_out,
        "bootstrap": {"method": "stratified bootstrap, percentile intervals (rliable)", "reps": reps, "confidence": 0.95, "seed": BOOTSTRAP_SEED},
    }


_MARKDOWN = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "[": "\\[", "]": "\\]", "&": "&amp;", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " "})


def md(value) -> str:
    """``value`` as text that Markdown shows as it is, in a table cell or a line: ``|``,
    backticks, backslashes and link brackets escaped, ``&``, ``<`` and ``>`` as HTML entities
    (no tag gets through), a line break as a space."""
    return str(value).translate(_MARKDOWN)


def md_code(value) -> str:
    """``value`` as one inline code span, shown as it is: fenced with more backticks than its
    longest run of them (Markdown escapes nothing inside a code span), a line break as a space."""
    text = str(value).replace("\r", " ").replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _ci(x: dict, pct: bool = True) -> str:
    f = (lambda v: f"{100 * v:.1f}") if pct else (lambda v: f"{v:.3f}")
    return f"{f(x['value'])} [{f(x['ci'][0])}–{f(x['ci'][1])}]"


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: "1 seed", "0 seeds", "5 seeds"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def seeds_per_algorithm(results: dict) -> str:
    """How many seeds each algorithm ran: "1 seed", "5 seeds", or "3–5 seeds" where they differ."""
    algos = results["algos"]
    per_algo = sorted({len({r["seed"] for r in results["runs"] if r["algo"] == a}) for a in algos})
    return counted(per_algo[0], "seed") if len(per_algo) == 1 else f"{per_algo[0]}–{per_algo[-1]} seeds"


def task_measure(players: int, optimum: float | None) -> str:
    """What a task's normalised score measures, for its table's heading: the optimum of a
    one-player task, the win rate of a two-player one, the share of the points and its fair
    share (1/players) at a larger table."""
    if players == 1:
        return f"optimum {optimum:.2f}"
    if players == 2:
        return "win rate"
    return f"share of the points; fair share 1/{players} = {100 / players:.1f}%"


# long: the page's tables in order, one row a line
def markdown(results: dict) -> str:
    """``results.md``: the tables of ``results.json``."""
    agg, algos, tasks = results["aggregates"], results["algos"], results["tasks"]
    lines = [
        f"# Benchmark results: {md(results['suite']['name'])} v{md(results['suite']['version'])}"
        + (" — the track that uses the dice model" if results.get("uses_dice_model") else ""),
        "",
        f"{counted(len(algos), 'algorithm')} x {counted(len(tasks), 'task')} x {seeds_per_algorithm(results)}, {results['steps']:,} steps a run. "
        "Normalised score, in % (one player: mean final total / exact optimum; with opponents: the share of the points, "
        "a win 1 and a win shared by k players 1/k: at two players the win rate). "
        f"IQM and 95% stratified-bootstrap intervals ({agg['bootstrap']['reps']:,} resamples, rliable).",
        "",
        f"Command: {md_code(results['command'])}",
        "",
        (
            f"Time: {results['run_seconds_total']:,.0f} s of training and evaluation over all runs, as each run states it "
            "(built-in runs: their own training and evaluation seconds; submissions: their wall-clock)."
            if results.get("kind") == "report"
            else f"Time: {results['run_seconds_total']:,.0f} s of training and evaluation over all runs; "
            f"wall-clock of the {counted(len(results['calls']), 'call')} that trained them: {results['wall_seconds']:,.0f} s."
        ),
        "",
    ]
    order = sorted(algos, key=lambda a: -agg["overall"][a]["iqm"]["value"])
    if len(tasks) > 1:
        lines += [f"## All tasks ({', '.join(map(md, tasks))})", "", "| algorithm | IQM % | mean % | median % | optimality gap % |", "|---|---|---|---|---|"]
        for a in order:
            o = agg["overall"][a]
            lines.append(f"| {md(a)} | {_ci(o['iqm'])} | {_ci(o['mean'])} | {_ci(o['median'])} | {_ci(o['optimality_gap'])} |")
        lines.append("")
    for t in tasks:
        what = task_measure(results["num_players"][t], results["optimum"].get(t))
        lines += [f"## {md(t)} ({what})", "", "| algorithm | IQM % | mean % | score per seed | illegal stops | train s per run |", "|---|---|---|---|---|---:|"]
        for a in sorted(algos, key=lambda a: -agg["per_task"][t][a]["iqm"]["value"]):
            rs = sorted((r for r in results["runs"] if r["algo"] == a and r["task"] == t), key=lambda r: r["seed"])
            scores = ", ".join(f"{r['score']:.3f}" if results["num_players"][t] > 1 else f"{r['score']:.1f}" for r in rs)
            stops = max(r["illegal_stops"] for r in rs)
            secs = np.mean([r["train_seconds"] for r in rs])
            lines.append(f"| {md(a)} | {_ci(agg['per_task'][t][a]['iqm'])} | {_ci(agg['per_task'][t][a]['mean'])} | {scores} | {stops:.1%} max | {secs:,.0f} |")
        lines.append("")
    if agg["probability_of_improvement"]:
        lines += [
            "## Probability of improvement",
            "",
            "P(a run of X beats a run of Y on a task), with 95% intervals.",
            "",
            "| X | Y | P(X > Y) |",
            "|---|---|---|",
        ]
        rows = []
        for p in agg["probability_of_improvement"]:
            x, y, prob = p["x"], p["y"], p["probability"]
            lo, hi = p["ci"]
            if order.index(x) > order.index(y):  # the one of higher IQM first
                x, y, prob, lo, hi = y, x, 1 - prob, 1 - hi, 1 - lo
            rows.append((order.index(x), order.index(y), f"| {md(x)} | {md(y)} | {prob:.2f} [{lo:.2f}–{hi:.2f}] |"))
        lines += [r[2] for r in sorted(rows)]
        lines.append("")
    if results.get("kind") == "report":
        lines += ["## The runs", "", "| algorithm | library | seeds | hardware | wall-clock s per run |", "|---|---|---|---|---:|"]
        for a in algos:
            rs = [r for r in results["runs"] if r["algo"] == a]
            seeds = ", ".join(str(x) for x in sorted({r["seed"] for r in rs}))
            hw = "; ".join(sorted({md(r["hardware"]) for r in rs}))
            lines.append(f"| {md(a)} | {md(rs[0]['library'])} | {seeds} | {hw} | {np.mean([r['train_seconds'] for r in rs]):,.0f} |")
        lines.append("")
    lines += ["Illegal stops: the share of evaluation games an illegal action ended (unmasked algorithms only).", ""]
    return "\n".join(lines)


OUTPUTS = ("results.json", "results.md", "learning_curves.png", "aggregates.png", "performance_profile.png")


def _aggregates_figure(results: dict, colors: dict):
    """rliable's interval plot of the four aggregates, laid out so that nothing overlaps:
    matplotlib's constrained layout places the title (wrapped to the figure's width), the
    panels' titles, the ticks and one axis label below the panels apart from each other."""
    import textwrap

    from rliable import plot_utils

    agg, algos = results["aggregates"], results["algos"]
    point = {a: np.array([agg["overall"][a][m.lower().replace(" ", "_")]["value"] for m in METRICS]) for a in algos}
    interval = {a: np.array([[agg["overall"][a][m.lower().replace(" ", "_")]["ci"][k] for m in METRICS] for k in (0, 1)]) for a in algos}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig, axes = plot_utils.plot_interval_estimates(
            point, interval, metric_names=list(METRICS), algorithms=algos, colors=colors, xlabel="", row_height=0.45, subfigure_width=3.2
        )
    for text in list(fig.texts):  # rliable's x label, placed at a fixed height that the ticks run into
        text.remove()
    for ax in np.ravel(axes):
        ax.tick_params(labelsize="medium")
        ax.title.set_fontsize("large")
    np.ravel(axes)[0].tick_params(axis="y", labelsize="large")
    width = 3.2 * len(METRICS)  # inches
    title = f"{', '.join(results['tasks'])}: {results['steps']:,} steps a run, {seeds_per_algorithm(results)} an algorithm, 95% intervals"
    lines = textwrap.wrap(title, width=int(width * 8))  # about 8 characters an inch at 12 points
    fig.set_size_inches(width, 1.3 + 0.4 * len(algos) + 0.25 * len(lines))
    fig.set_layout_engine("constrained", w_pad=0.1, wspace=0.08)  # replaces rliable's subplots_adjust
    fig.supxlabel("normalised score (optimality gap: how far below 1, the optimum, on average)", fontsize="medium")
    fig.suptitle("\n".join(lines), fontsize="large")
    return fig


def plot(results: dict, folder: OutputFolder) -> list[Path]:
    """The learning curves, the aggregate intervals and the performance profiles, as PNG files
    written into ``folder`` (each through a temporary file, never over a file it did not write)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from rliable import plot_utils

    agg, algos, tasks = results["aggregates"], results["algos"], results["tasks"]
    tab10 = plt.get_cmap("tab10")
    assert isinstance(tab10, ListedColormap)  # a qualitative map: its colours listed
    palette = cast("Sequence[tuple[float, float, float]]", tab10.colors)  # its ten RGB triples
    colors = dict(zip(algos, palette, strict=False))  # ten colours for at most ten algorithms
    written = []

    def save(fig, name: str, **kwargs) -> None:
        try:
            with folder.temporary(name) as tmp:
                fig.savefig(tmp, dpi=110, format="png", **kwargs)
        finally:
            plt.close(fig)
        written.append(folder.folder / name)

    fig, axes = plt.subplots(1, len(tasks), figsize=(4.5 * len(tasks), 3.6), squeeze=False)
    for ax, t in zip(axes[0], tasks, strict=True):
        for a in algos:
            c = agg["curves"][t][a]
            ax.plot(c["steps"], c["iqm"], label=a, color=colors[a])
            ax.fill_between(c["steps"], c["ci_low"], c["ci_high"], color=colors[a], alpha=0.2)
        ax.set_title(t)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("normalised score (IQM, 95% CI)")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save(fig, "learning_curves.png")

    save(_aggregates_figure(results, colors), "aggregates.png", bbox_inches="tight")

    pp = agg["performance_profile"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plot_utils.plot_performance_profiles(
            {a: np.array(pp["share_above"][a]) for a in algos},
            np.array(pp["tau"]),
            performance_profile_cis={a: np.array([pp["ci_low"][a], pp["ci_high"][a]]) for a in algos},
            colors=colors,
            xlabel=r"normalised score ($\tau$)",
            ax=ax,
        )
    ax.legend([plt.Line2D([0], [0], color=colors[a]) for a in algos], algos, fontsize=8, loc="lower left")
    fig.tight_layout()
    save(fig, "performance_profile.png", bbox_inches="tight")
    return written


def one_line(e: Exception) -> str:
    """A program's error line: the message of a refusal, or for an error of the system the file it names and what went wrong."""
    if not isinstance(e, OSError):
        return str(e)
    what = e.strerror or type(e).__name__
    return f"{e.filename}: {what}" if e.filename else what


def claim_outputs(out: Path, program: str, command: str, force: bool) -> None:
    """Check, before any work, that ``program`` may write :data:`OUTPUTS` into the folder ``out``
    (which need not exist yet): each absent, or a regular file that ``program`` wrote there and
    nobody changed since (never the user's own, a link or a FIFO), by the same ``command``
    unless ``force``."""
    OutputFolder(out, program, create=False).claim(OUTPUTS)
    try:
        claim_out(out, program, command, OUTPUTS, force)
    except ValueError as e:
        raise BenchmarkError(str(e)) from None


def write(results: dict, folder: OutputFolder) -> list[Path]:
    """``results.json``, ``results.md`` and the plots in ``folder`` (see :data:`OUTPUTS`), each
    atomic and never over a file the benchmark did not write there; the paths written."""
    try:
        text = json.dumps(results, indent=1, allow_nan=False) + "\n"
    except ValueError:
        raise BenchmarkError("the results hold a number that is not finite: nothing was written") from None
    paths = [folder.write("results.json", text), folder.write("results.md", markdown(results))]
    return paths + plot(results, folder)
