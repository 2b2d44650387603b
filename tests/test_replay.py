"""``generala replay``: every move of the games on one self-contained page, judged by the optimum."""

from __future__ import annotations

import re

import numpy as np
import pytest

from generala_env.core.rules import load_rules
from generala_play.replay import page, record, write_page
from generala_training.cli import main as cli_main
from generala_training.harness import game_seed, play_game

SMALL = {"lines": ["ones", "fives", "sixes", "full_house", "generala"]}


def test_every_move_is_a_row_and_the_regrets_are_the_diagnosis():
    import generala_agents as agents
    from generala_agents.solver import load_or_solve
    from generala_training.diagnose import Decisions, Judged

    replays, notes = record(["greedy"], "classic", games=2, seed=3)
    rules = load_rules("classic")
    for i, rep in enumerate(replays):
        # the same game as the harness plays, and the same judgement as training.diagnose
        rec = Decisions()
        plain = play_game([Judged(agents.load("greedy", rules=rules), load_or_solve(rules)[0], rec)], rules, game_seed(3, i))
        assert rep.totals == plain.totals.tolist() and len(rep.moves) == int(plain.decisions[0])
        assert [m.regret for m in rep.moves] == pytest.approx(rec.regret)
        assert sum(m.points for m in rep.moves if m.action >= 32) == rep.totals[0]
        assert sum(m.action >= 32 for m in rep.moves) == rules.num_lines
    assert any(m.regret > 0.5 for r in replays for m in r.moves)  # greedy makes mistakes
    text = page(replays, notes)
    assert len(re.findall(r'<tr id="g\d+m\d+"', text)) == sum(len(r.moves) for r in replays)
    costly = max((m for m in replays[0].moves), key=lambda m: m.regret)
    assert costly.best_text != costly.text and costly.best_text in text
    assert f"{costly.regret:.2f}" in text


def test_the_optimal_player_has_no_regret():
    (rep,), _ = record(["optimal"], "classic", games=1, seed=0)
    assert all(m.regret == pytest.approx(0, abs=1e-9) for m in rep.moves)
    assert all(m.best_text == m.text for m in rep.moves)


def test_the_page_is_self_contained():
    replays, notes = record(["greedy", "random"], SMALL, games=1, seed=0)
    text = page(replays, notes)
    assert "<script" not in text and not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)", text)
    assert "http" not in text.replace("http-equiv", "")


def test_two_players_without_a_cached_table_say_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    (rep,), notes = record(["greedy", "optimal"], SMALL, games=1, seed=0)
    assert all(m.win_before is None for m in rep.moves)
    assert any("not in the cache" in n and "--solve-2p" in n for n in notes)
    assert not list(tmp_path.glob("solve2p-*"))  # no two-player table was solved or written
    assert "not in the cache" in page([rep], notes)


def test_two_players_with_a_table_show_the_chance_to_win(tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    (rep,), notes = record(["greedy", "optimal-2p"], SMALL, games=1, seed=1, solve_2p=True)
    assert all(0.0 <= m.win_after <= m.win_before + 1e-9 <= 1.0 + 1e-9 for m in rep.moves)
    assert all(m.win_after == pytest.approx(m.win_before) for m in rep.moves if m.seat == 1)  # optimal-2p loses nothing
    (again,), notes = record(["greedy", "optimal-2p"], SMALL, games=1, seed=1)  # now read from the cache
    assert [m.win_before for m in again.moves] == [m.win_before for m in rep.moves]
    assert "chance to win before" in page([again], notes)


def test_cli_writes_the_page_and_never_overwrites(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert cli_main(["replay", "greedy", "--rules", "double", "--games", "2", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "Game 2" in text
    out.write_text("mine")
    assert cli_main(["replay", "greedy", "--out", str(out)]) == 2
    assert "exists: pass --force" in capsys.readouterr().err and out.read_text() == "mine"
    assert cli_main(["replay", "greedy", "--out", str(out), "--force"]) == 2  # --force replaces a page of its own, never the user's file
    assert "was not written by generala replay" in capsys.readouterr().err and out.read_text() == "mine"
    out.unlink()
    assert cli_main(["replay", "greedy", "--out", str(out)]) == 0
    assert cli_main(["replay", "greedy", "--games", "2", "--out", str(out), "--force"]) == 0 and "Game 2" in out.read_text()
    assert cli_main(["replay", "no-such-agent", "--out", str(tmp_path / "x.html")]) == 2
    assert "no-such-agent" in capsys.readouterr().err and not (tmp_path / "x.html").exists()
    with pytest.raises(ValueError, match="is a folder"):
        write_page(tmp_path, "x", force=True)


def test_same_seed_same_page():
    a, notes = record(["greedy"], SMALL, games=1, seed=5)
    b, _ = record(["greedy"], SMALL, games=1, seed=5)
    assert page(a, notes) == page(b, notes)
    assert np.array_equal(a[0].sheets, b[0].sheets)


def test_evaluate_writes_replays_of_its_own_games(tmp_path):
    pytest.importorskip("matplotlib")
    import json

    from generala_training.evaluate import main as evaluate_main

    out = tmp_path / "ev"
    assert evaluate_main(["--agents", "greedy,random", "--games", "3", "--replays", "2", "--workers", "1", "--no-progress", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results
    for name in ("greedy", "random"):
        text = (out / f"replays-{name}.html").read_text()
        assert "Game 2" in text and "Game 3" not in text
    replays, _ = record(["greedy"], "classic", games=2, seed=0)
    text = (out / "replays-greedy.html").read_text()
    for r in replays:  # the evaluation's first games: the same seeds, the same totals
        assert f"(seed {r.seed})" in text and f"Final total: {r.totals[0]};" in text
