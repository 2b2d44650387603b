"""The smaller first-use items of issue 33: the video extra named when moviepy is missing, the
benchmark's aggregates plot laid out and counted in words, the moves log with the dice a reroll
served, a one-player game's end without a "winner", tournament rows in the order given."""

from __future__ import annotations

import copy
import itertools
import json
import sys
from pathlib import Path

import numpy as np
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


# -- 4. the moves log says the dice a reroll gave ------------------------------------------------
def test_the_browser_games_log_says_the_dice_each_reroll_gave():
    pytest.importorskip("fastapi")
    from generala_env.dice import NUM_MASKS
    from generala_env.rules import load_rules
    from generala_training.serve import Session

    seen: list[str] = []  # the dice the opponent is shown at each of its decisions: what its rerolls gave

    def opponent(observation, info):
        seen.append(" ".join(str(int(d)) for d in sorted(info["dice"])))
        legal = np.flatnonzero(info["action_mask"])
        if info["rolls_left"] == 2:
            return 0  # the first decision of a turn: hold nothing, reroll all five
        return int(legal[legal >= NUM_MASKS][0])  # then write on the first open line

    s = Session("scripted", opponent, load_rules("classic"), seed=5, seat=0)
    first = s.state()["dice"]
    s.play({"hold": [0, 1]})  # keep the two lowest dice, reroll three
    state = s.state()
    assert s.log == [f"you: held {first[0]} {first[1]}, rerolled 3 → {' '.join(map(str, state['dice']))}"]
    s.play({"write": "sixes"})
    assert len(seen) == 2  # the opponent rerolled once, then wrote
    assert s.log[2] == f"scripted: rerolled all five → {seen[1]}"
    assert s.log[3].startswith("scripted: wrote ") or s.log[3].startswith("scripted: crossed out ")
    assert sum("→" in line for line in s.log) == 2


# -- 5. a game alone ends with its score, not a winner -----------------------------------------
def _finished_solo_game():
    from generala_env.game import Game
    from generala_env.rules import load_rules

    game = Game(load_rules("classic"), num_players=1)
    rng = np.random.default_rng(0)
    game.reset(rng)
    while not game.over:
        game.step(32 + int(np.flatnonzero(game.legal_mask()[32:])[0]), rng)  # write on the first open line
    return game


def test_a_solo_game_ends_with_its_final_score_not_a_winner():
    from generala_env.picture import picture_of
    from generala_env.render import render_text

    game = _finished_solo_game()
    total = int(game.totals()[0])
    assert render_text(game).splitlines()[0] == f"Game over: final score {total}"
    assert picture_of(game).status == f"game over: final score {total}"
    text = render_text(game) + picture_of(game).status
    assert "winner" not in text.lower()


def test_a_two_player_game_still_names_its_winner():
    from generala_env.game import Game
    from generala_env.render import render_text
    from generala_env.rules import load_rules

    game = Game(load_rules("classic"), num_players=2)
    rng = np.random.default_rng(1)
    game.reset(rng)
    while not game.over:
        game.step(32 + int(np.flatnonzero(game.legal_mask()[32:])[0]), rng)
    winners = game.winners()
    head = render_text(game).splitlines()[0]
    assert head.startswith("Game over") and ("winner P" in head if len(winners) == 1 else "shared win" in head)


def test_a_solo_replay_marks_no_seat_as_the_winner():
    from generala_training.replay import page, record

    replays, notes = record(["greedy"], "classic", games=1, seed=3)
    html = page(replays, notes)
    assert "(won)" not in html and "winner" not in html
    assert f"Final total: {replays[0].totals[0]}" in html


def test_the_terminal_game_logs_a_reroll_on_a_console_without_arrows(monkeypatch):
    """A Windows console's cp1252 has no "→": the reroll's dice follow "->" there."""
    import io

    from generala_env.rules import load_rules
    from generala_training.table import Table

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="cp1252", errors="strict", write_through=True)
    table = Table(load_rules("classic"), ["human"], seed=4, color=False, unicode=False, out=out)
    monkeypatch.setattr(sys, "stdin", io.StringIO("roll all\nquit\n"))
    assert table.play() == 0
    text = raw.getvalue().decode("cp1252")
    dice = " ".join(str(int(d)) for d in table.game.dice)
    assert f"P0 you: rerolled all five -> {dice}" in text


# -- 6. tournament rows in the order the agents were given ----------------------------------------
@pytest.mark.parametrize(
    "players, expected",
    [
        (2, [("random", "greedy"), ("random", "rules-of-thumb"), ("greedy", "rules-of-thumb")]),
        (
            3,
            [
                ("random", "greedy"),
                ("random", "rules-of-thumb"),
                ("greedy", "random"),
                ("greedy", "rules-of-thumb"),
                ("rules-of-thumb", "random"),
                ("rules-of-thumb", "greedy"),
            ],
        ),
    ],
)
def test_tournament_rows_come_in_the_order_the_agents_were_given(players, expected):
    from generala_training.tournament import tournament

    rows = tournament(["random", "greedy", "rules-of-thumb"], players=players, games=10, seed=0, workers=1)
    assert [(r["agent"], r["opponent"]) for r in rows] == expected
    if players == 2:  # random, listed first, is the weakest: a sort by points would put its rows last
        assert rows[0]["points_rate"] < rows[-1]["points_rate"]


def test_the_tournament_table_says_its_row_order(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from generala_training.cli import main as cli

    out = tmp_path / "t"
    assert cli(["tournament", "--agents", "random,greedy,rules-of-thumb", "--games", "5", "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    assert "rows in the order the agents were given" in printed and "sorted" not in printed
    res = json.loads((out / "results.json").read_text())
    assert [(r["agent"], r["opponent"]) for r in res["matchups"]] == [("random", "greedy"), ("random", "rules-of-thumb"), ("greedy", "rules-of-thumb")]
    table = [line.split()[:2] for line in printed.splitlines() if line.split()[:1] in (["random"], ["greedy"])]
    assert table == [["random", "greedy"], ["random", "rules-of-thumb"], ["greedy", "rules-of-thumb"]]
