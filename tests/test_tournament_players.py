"""``generala tournament`` at tables of 3 to 6: the same agent in several seats, each a player of
its own, and each player's win share (a win shared by k players 1/k) beside the fair share 1/N."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from helpers import ROOT

from generala_training.cli import main as cli
from generala_training.harness import GameRecord, game_seed
from generala_training.stats import Z95
from generala_training.tournament import play_tournament, player_specs, tournament, win_shares


def record(seed: int, seats: tuple[str, ...], winners: tuple[int, ...]) -> GameRecord:
    totals = np.array([100 if s in winners else 50 for s in range(len(seats))])
    return GameRecord(seed, seats, np.zeros((3, 11)), totals, winners, False, np.zeros(3, dtype=np.int64))


def test_win_shares_count_a_win_shared_by_k_players_as_1_over_k_each():
    # two seeds, each played in the three seat rotations of the players A, B, C
    recs = [
        record(1, ("A", "B", "C"), (0,)),  # A alone
        record(1, ("B", "C", "A"), (0, 1)),  # B and C share: 1/2 each
        record(1, ("C", "A", "B"), (0, 1, 2)),  # all three share: 1/3 each
        record(2, ("A", "B", "C"), (2,)),  # C
        record(2, ("B", "C", "A"), (2,)),  # A
        record(2, ("C", "A", "B"), (1,)),  # A
    ]
    rows = {r["agent"]: r for r in win_shares(["A", "B", "C"], recs)}
    # seed 1: A 1 + 0 + 1/3 = 4/3 over three games, B and C 1/2 + 1/3 = 5/6; seed 2: A 2, B 0, C 1
    per_seed = {"A": (4 / 9, 2 / 3), "B": (5 / 18, 0.0), "C": (5 / 18, 1 / 3)}
    for name, (s1, s2) in per_seed.items():
        mean, half = (s1 + s2) / 2, Z95 * abs(s1 - s2) / 2  # two seeds: sd |s1 - s2| / sqrt 2, over sqrt 2
        assert rows[name]["share"] == pytest.approx([mean, max(0.0, mean - half), mean + half])
        assert rows[name]["fair"] == pytest.approx(1 / 3) and rows[name]["edge"] == pytest.approx(mean - 1 / 3)
        assert rows[name]["games"] == 6 and rows[name]["seeds"] == 2
    assert rows["A"]["share"][0] == pytest.approx(5 / 9) and rows["B"]["share"][0] == pytest.approx(5 / 36)
    assert rows["B"]["share"][1] == 0.0  # the normal interval would reach below 0: cut at 0
    assert sum(r["share"][0] for r in rows.values()) == pytest.approx(1.0)  # every game hands out one point
    assert [(rows[n]["sole_wins"], rows[n]["shared_wins"]) for n in "ABC"] == [(3, 1), (0, 2), (1, 2)]


@pytest.mark.parametrize(
    "text, specs",
    [
        ("win-max,optimal,optimal", ["win-max", "optimal", "optimal"]),
        ("win-max,optimal*2", ["win-max", "optimal", "optimal"]),
        ("greedy*3", ["greedy", "greedy", "greedy"]),
        (" random , greedy*1", ["random", "greedy"]),
        ("runs/a*b", ["runs/a*b"]),  # no count after the star: the whole text is the spec
    ],
)
def test_an_agent_listed_k_times_or_as_name_star_k_is_k_players(text, specs):
    assert player_specs(text) == specs


@pytest.mark.parametrize("text", ["optimal*0", "optimal*7", "*2"])
def test_a_star_without_an_agent_or_with_a_count_no_table_seats_is_refused(text):
    with pytest.raises(ValueError) as e:
        player_specs(f"greedy,{text}")
    assert str(e.value) == f"--agents: {text!r} is not NAME*K with K from 1 to 6 (K players of the agent NAME)"


def test_the_same_agent_three_times_takes_a_third_of_the_points_exactly(tmp_path, capsys):
    """``greedy*3``: each seat plays as greedy with its seat's seed, so every seat rotation of a
    seed is the same game, and each of the three players sits once in the seat that won it:
    each takes exactly 1/3 of every seed's point, its interval of no width, its edge 0."""
    pytest.importorskip("matplotlib")  # the plot (the eval extra)
    out = tmp_path / "t"
    argv = ["tournament", "--agents", "greedy*3", "--players", "3", "--games", "4", "--out", str(out), "--no-progress", "--workers", "1"]
    assert cli(argv) == 0
    printed = capsys.readouterr().out
    assert "seat rotation: each of 4 dice seeds played 3 times, every player once in every seat (seed 0)" in printed
    assert "each listed agent a player of its own: greedy#2 = greedy, greedy#3 = greedy" in printed
    assert "win share: a win 1, a win shared by k players 1/k each; 95% interval over the seeds; fair share 1/3 = 33.3%" in printed
    rows = [line.split()[:6] for line in printed.splitlines() if line.startswith("greedy")]
    assert rows == [[name, "12", "33.33%", "33.33%–33.33%", "33.3%", "+0.00"] for name in ("greedy", "greedy#2", "greedy#3")]
    res = json.loads((out / "results.json").read_text())
    assert res["agents"] == ["greedy", "greedy#2", "greedy#3"] and res["seating"] == "seat rotation" and "matchups" not in res
    assert res["specs"] == {"greedy": "greedy", "greedy#2": "greedy", "greedy#3": "greedy"}
    assert [r["sole_wins"] + r["shared_wins"] for r in res["shares"]] == [4, 4, 4]
    assert len({r["mean_total"][0] for r in res["shares"]}) == 1
    assert (out / "winrates.png").read_bytes()[:4] == b"\x89PNG"


def test_a_repeated_agent_and_its_star_form_play_the_same_games(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    common = ["--players", "3", "--games", "3", "--no-progress", "--workers", "1"]
    assert cli(["tournament", "--agents", "rules-of-thumb,random,random", "--out", str(tmp_path / "a"), *common]) == 0
    assert cli(["tournament", "--agents", "rules-of-thumb,random*2", "--out", str(tmp_path / "b"), *common]) == 0
    a, b = (json.loads((tmp_path / x / "results.json").read_text()) for x in "ab")
    assert a["shares"] == b["shares"] and [r["agent"] for r in a["shares"]] == ["rules-of-thumb", "random", "random#2"]
    assert sum(r["share"][0] for r in a["shares"]) == pytest.approx(1.0)


def test_pairwise_is_asked_for_and_says_what_even_means(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "t"
    argv = ["tournament", "--agents", "greedy,random*2", "--players", "3", "--games", "2", "--pairwise", "--out", str(out), "--no-progress", "--workers", "1"]
    assert cli(argv) == 0
    printed = capsys.readouterr().out
    assert "pairwise: each player against each other in the same games; even = neither of the two won (a third did), or they shared the win" in printed
    assert " draw " not in printed
    res = json.loads((out / "results.json").read_text())
    assert [(m["agent"], m["opponent"]) for m in res["matchups"]][:2] == [("greedy", "random"), ("greedy", "random#2")]
    assert "## Pairwise: each player against each other in the same games" in (out / "results.md").read_text()


class Seated:
    """An agent that notes, at each game's start, which object it is and the seed it got."""

    log: list[tuple[int, int | None]] = []

    def __init__(self, rules=None, seed=None):
        from generala_agents.baselines import GreedyAgent

        self.inner = GreedyAgent(rules)

    def reset(self, seed=None):
        Seated.log.append((id(self), seed))

    def act(self, observation, info):
        return self.inner.act(observation, info)


def test_each_seat_of_a_repeated_agent_is_a_player_of_its_own_with_its_own_seed():
    from generala_env.core.rules import load_rules

    Seated.log.clear()
    spec = f"{__name__}:Seated"
    table = {"seated": spec, "seated#2": spec, "seated#3": spec}
    plan, recs = play_tournament(table, load_rules("classic"), 3, 2, 0, workers=1)
    assert len(recs) == 6 and len(Seated.log) == 3 * 6
    for g, (_, seed, _) in enumerate(plan):
        game = Seated.log[3 * g : 3 * g + 3]
        assert len({who for who, _ in game}) == 3  # three objects, one a seat
        assert [s for _, s in game] == [game_seed(seed, seat) for seat in range(3)]  # each seat's own seed


def test_tournament_returns_the_share_rows_at_three_players():
    rows = tournament(["greedy", "random", "random"], players=3, games=2, seed=0, workers=1)
    assert [r["agent"] for r in rows] == ["greedy", "random", "random#2"]
    assert all(set(r) >= {"share", "fair", "edge"} for r in rows)


def test_win_max_against_two_optimal_is_the_benchmark_scripts_table():
    """The docs' tables of ``win-max`` against N-1 ``optimal`` came from benchmarks/win_max_eval.py;
    ``generala tournament --agents win-max,optimal*2 --players 3`` plays the same games (the same
    seeds, every seat rotation) and gives the same share and interval."""
    spec = importlib.util.spec_from_file_location("win_max_eval", ROOT / "benchmarks" / "win_max_eval.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    from generala_env.core.rules import load_rules

    theirs = script.play_table(["optimal", "optimal"], load_rules("classic"), 3, 0, 1)
    mine = tournament(["win-max", "optimal", "optimal"], players=3, games=3, seed=0, workers=1)[0]
    assert mine["agent"] == "win-max" and mine["share"] == pytest.approx([theirs["share"], max(0.0, theirs["low"]), min(1.0, theirs["high"])])
