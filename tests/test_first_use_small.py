"""The smaller first-use items of issue 33: the video extra named when moviepy is missing, the
benchmark's aggregates plot laid out and counted in words, the moves log with the dice a reroll
served, a one-player game's end without a "winner", tournament rows in the order given."""

from __future__ import annotations

import copy
import itertools
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# -- 1. the missing-moviepy error names the project's extra ---------------------------------------
def test_record_video_without_moviepy_names_the_video_extra(monkeypatch, tmp_path):
    import gymnasium as gym

    import generala_env  # noqa: F401  (registers Generala-v0)
    from generala_env.video import RecordVideo

    monkeypatch.setitem(sys.modules, "moviepy", None)  # import moviepy now raises ImportError
    env = gym.make("Generala-v0", render_mode="rgb_array")
    with pytest.raises(gym.error.DependencyNotInstalled) as caught:
        RecordVideo(env, str(tmp_path / "videos"))
    message = str(caught.value)
    assert "generala-rl[video]" in message
    assert "gymnasium[other]" not in message
    assert "\n" not in message
    assert not (tmp_path / "videos").exists()
    env.close()


# -- 2. the aggregates plot ---------------------------------------------------------------------
SHIPPED_RESULTS = ROOT / "docs" / "benchmarks" / "more_tasks" / "results.json"  # 4 algorithms x 4 tasks x 3 seeds


def test_counted_says_one_seed_and_many_seeds():
    from generala_training.benchmark.report import counted, seeds_per_algorithm

    assert counted(1, "seed") == "1 seed"
    assert counted(0, "seed") == "0 seeds"
    assert counted(5, "algorithm") == "5 algorithms"
    runs = [{"algo": "a", "seed": 0}, {"algo": "b", "seed": 0}, {"algo": "b", "seed": 1}, {"algo": "b", "seed": 2}]
    assert seeds_per_algorithm({"algos": ["a"], "runs": runs[:1]}) == "1 seed"
    assert seeds_per_algorithm({"algos": ["b"], "runs": runs[1:]}) == "3 seeds"
    assert seeds_per_algorithm({"algos": ["a", "b"], "runs": runs}) == "1–3 seeds"


def _shown_texts(fig) -> list:
    """Every text the figure draws: its own, each panel's titles and labels, and the tick labels
    inside each panel's limits (matplotlib keeps labels for ticks outside them, undrawn)."""
    texts = [*fig.texts, fig._suptitle, fig._supxlabel]
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            lo, hi = sorted(limits)
            texts += [t.label1 for t in axis.get_major_ticks() if lo - 1e-9 <= t.get_loc() <= hi + 1e-9]
    unique = {id(t): t for t in texts if t is not None and t.get_visible() and t.get_text().strip()}
    return list(unique.values())


@pytest.mark.parametrize("shape", ["shipped", "one algorithm, twelve tasks"])
def test_the_aggregates_plot_has_no_text_over_another_and_none_outside(shape):
    pytest.importorskip("rliable")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from generala_training.benchmark.report import _aggregates_figure

    results = json.loads(SHIPPED_RESULTS.read_text())
    if shape != "shipped":  # a long title: it must wrap inside the figure
        results = copy.deepcopy(results)
        algo = results["algos"][0]
        results["algos"] = [algo]
        results["aggregates"]["overall"] = {algo: results["aggregates"]["overall"][algo]}
        results["runs"] = [r for r in results["runs"] if r["algo"] == algo]
        results["tasks"] = results["tasks"] * 3
    fig = _aggregates_figure(results, {a: "C0" for a in results["algos"]})
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in _shown_texts(fig)]
    assert len(boxes) >= 2 + 4 + 4 * 2 + len(results["algos"])  # title, label, panel titles, two ticks a panel, the algorithms
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"{a!r} overlaps {b!r}"
    page = fig.bbox
    for text, box in boxes:
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, f"{text!r} is outside the figure"
    title = fig._suptitle.get_text().replace("\n", " ")
    assert " 1 seeds" not in title and "3 seeds an algorithm" in title
    plt.close(fig)
