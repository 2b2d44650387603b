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
    from generala_env.rendering.video import RecordVideo

    monkeypatch.setitem(sys.modules, "moviepy", None)  # import moviepy now raises ImportError
    env = gym.make("Generala-v0", render_mode="rgb_array")
    with pytest.raises(gym.error.DependencyNotInstalled) as caught:
        RecordVideo(env, str(tmp_path / "videos"))
    message = str(caught.value)
    assert message == 'RecordVideo needs moviepy, which is not installed; in the project\'s clone: pip install ".[video]"'
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
    from generala_env.core.dice import NUM_MASKS
    from generala_env.core.rules import load_rules
    from generala_play.serve import Session

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
    from generala_env.core.game import Game
    from generala_env.core.rules import load_rules

    game = Game(load_rules("classic"), num_players=1)
    rng = np.random.default_rng(0)
    game.reset(rng)
    while not game.over:
        game.step(32 + int(np.flatnonzero(game.legal_mask()[32:])[0]), rng)  # write on the first open line
    return game


def test_a_solo_game_ends_with_its_final_score_not_a_winner():
    from generala_env.rendering.picture import picture_of
    from generala_env.rendering.render import render_text

    game = _finished_solo_game()
    total = int(game.totals()[0])
    assert render_text(game).splitlines()[0] == f"Game over: final score {total}"
    assert picture_of(game).status == f"game over: final score {total}"
    text = render_text(game) + picture_of(game).status
    assert "winner" not in text.lower()


def test_a_two_player_game_still_names_its_winner():
    from generala_env.core.game import Game
    from generala_env.core.rules import load_rules
    from generala_env.rendering.render import render_text

    game = Game(load_rules("classic"), num_players=2)
    rng = np.random.default_rng(1)
    game.reset(rng)
    while not game.over:
        game.step(32 + int(np.flatnonzero(game.legal_mask()[32:])[0]), rng)
    winners = game.winners()
    head = render_text(game).splitlines()[0]
    assert head.startswith("Game over") and ("winner P" in head if len(winners) == 1 else "shared win" in head)


def test_a_solo_replay_marks_no_seat_as_the_winner():
    from generala_play.replay import page, record

    replays, notes = record(["greedy"], "classic", games=1, seed=3)
    html = page(replays, notes)
    assert "(won)" not in html and "winner" not in html
    assert f"Final total: {replays[0].totals[0]}" in html


def test_the_terminal_game_logs_a_reroll_on_a_console_without_arrows(monkeypatch):
    """A Windows console's cp1252 has no "→": the reroll's dice follow "->" there."""
    import io

    from generala_env.core.rules import load_rules
    from generala_play.table import Table

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

    rows = tournament(["random", "greedy", "rules-of-thumb"], players=players, games=10, seed=0, workers=1, pairwise=True)  # at 3 players, asked for
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


# -- 7. docs/write_an_agent.md, run as written ------------------------------------------------------
PAGE = ROOT / "docs" / "write_an_agent.md"
RUN_BLOCKS = """
import contextlib, io, json, sys
blocks = json.load(open(sys.argv[1]))
space, outputs = {"__name__": "__main__"}, []
for code in blocks:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<docs block>", "exec"), space)
    outputs.append(out.getvalue())
print(json.dumps(outputs))
"""


def page_blocks(text: str) -> list[tuple[str, str]]:
    """The page's fenced blocks in order, as (language, code)."""
    import re

    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)]


def test_page_blocks_reads_fences_in_order():
    text = "a\n```python\nprint(1)\n```\nb\n```text\n1\n```\n```bash\ngenerala agents\n```\n"
    assert page_blocks(text) == [("python", "print(1)\n"), ("text", "1\n"), ("bash", "generala agents\n")]


def test_the_write_an_agent_page_runs_as_written_and_prints_what_it_shows(tmp_path):
    """Each python block runs in order in one namespace, in a fresh folder holding the page's
    files (a block whose first line is ``# NAME.py``); a text block right after a python block
    is what that block prints; each ``generala`` line of a bash block runs as a command there."""
    import subprocess

    blocks = page_blocks(PAGE.read_text(encoding="utf-8"))
    files = {
        code.split("\n", 1)[0][2:].strip(): code
        for lang, code in blocks
        if lang == "python" and code.startswith("# ") and code.split("\n", 1)[0].endswith(".py")
    }
    assert set(files) == {"my_agent.py"}
    for name, code in files.items():
        (tmp_path / name).write_text(code)
    runs, shown = [], {}
    for k, (lang, code) in enumerate(blocks):
        if lang == "python" and code not in files.values():
            runs.append(code)
            if k + 1 < len(blocks) and blocks[k + 1][0] == "text":
                shown[len(runs) - 1] = blocks[k + 1][1]
    assert len(runs) == 4 and len(shown) == 4  # what it reads, points of a line, one game, evaluate
    (tmp_path / "blocks.json").write_text(json.dumps(runs))
    (tmp_path / "run_blocks.py").write_text(RUN_BLOCKS)
    done = subprocess.run([sys.executable, "run_blocks.py", "blocks.json"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout.splitlines()[-1])
    for k, text in shown.items():
        assert printed[k] == text, f"block {k + 1} printed\n{printed[k]}\nthe page shows\n{text}"

    commands = [line for lang, code in blocks if lang == "bash" for line in code.splitlines() if line.startswith("generala ")]
    assert commands == ["generala evaluate --agents greedy,my_agent.py:MostPoints --games 500 --seed 0"]
    for command in commands:
        args = command.split()[1:] + ["--no-progress"]
        done = subprocess.run([sys.executable, "-m", "generala_training.cli", *args], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        rows = {line.split()[0]: float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith(("greedy ", "my_agent.py:MostPoints "))}
        assert set(rows) == {"greedy", "my_agent.py:MostPoints"} and all(100 < mean < 149.2 for mean in rows.values())


# -- points_now: the points of each line an agent may write now -----------------------------------
def _info(rules_name: str, dice, rolls_left: int, sheet=None, players: int = 1, seat: int = 0):
    from generala_env import OPEN, Game, load_rules
    from generala_env.envs.env import make_info

    rules = load_rules(rules_name)
    game = Game(rules, players)
    game.reset(np.random.default_rng(0))
    sheets = None
    if sheet is not None:
        sheets = np.full((players, rules.num_lines), OPEN)
        for line, points in sheet.items():
            sheets[0, rules.lines.index(line)] = points
    game.set_state(sheets=sheets, dice=dice, rolls_left=rolls_left)
    return make_info(game, seat), rules


def test_points_now_counts_the_served_bonus_on_the_first_roll_only():
    from generala_env import points_now

    info, rules = _info("classic", [4, 4, 2, 4, 4], rolls_left=2)
    now = points_now(info, rules)
    assert list(now) == list(rules.lines)  # every line open, in sheet order
    assert now == {"ones": 0, "twos": 2, "threes": 0, "fours": 16, "fives": 0, "sixes": 0, "straight": 0, "full_house": 0, "four_of_a_kind": 45, "generala": 0}
    info, _ = _info("classic", [4, 4, 2, 4, 4], rolls_left=1)
    assert points_now(info, "classic")["four_of_a_kind"] == 40  # after a reroll: not served
    info, _ = _info("classic", [1, 2, 3, 4, 5], rolls_left=0)
    assert points_now(info, "classic")["straight"] == 20


def test_points_now_leaves_out_filled_lines_and_blocks_double_generala_before_a_generala():
    from generala_env import points_now

    info, rules = _info("double", [3, 3, 3, 3, 3], rolls_left=1)
    assert points_now(info, rules)["generala"] == 50 and points_now(info, rules)["double_generala"] == 0
    info, rules = _info("double", [3, 3, 3, 3, 3], rolls_left=1, sheet={"generala": 50})
    now = points_now(info, rules)
    assert "generala" not in now and now["double_generala"] == 100 and now["threes"] == 15


def test_points_now_is_empty_off_your_move_and_refuses_other_rules():
    from generala_env import points_now

    info, _ = _info("classic", [1, 1, 2, 3, 6], rolls_left=2, players=2, seat=1)  # seat 0 to move
    assert points_now(info, "classic") == {}
    from generala_env.envs.env import make_info

    assert points_now(make_info(_finished_solo_game(), 0), "classic") == {}  # over: every action is marked legal, none is a move
    info, _ = _info("double", [1, 1, 2, 3, 6], rolls_left=2)
    with pytest.raises(ValueError, match=r"has 43 actions but rules 'classic' have 42"):
        points_now(info, "classic")
