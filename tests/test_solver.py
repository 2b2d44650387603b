"""The exact solver: hand-worked values, agreement with simulated play, the disk cache."""

import json

import numpy as np
import pytest

import generala_agents as agents
from generala_agents.solver import SOLVER_VERSION, Solver, cache_path, load_or_solve
from generala_env.core.rules import load_rules
from generala_env.files.cache import CacheWarning
from generala_training.harness import game_seed, play_many


def one_line(line, **extra):
    return load_rules({"lines": [line], **extra})


def test_single_number_line_is_keep_every_such_die():
    # Each die shows a six within three rolls with probability 1 - (5/6)^3; keeping sixes is optimal.
    p = 1 - (5 / 6) ** 3
    assert Solver(one_line("sixes")).solve().expected_score == pytest.approx(30 * p, abs=1e-9)
    assert Solver(one_line("ones")).solve().expected_score == pytest.approx(5 * p, abs=1e-9)


def test_single_generala_line_is_the_known_yacht_probability():
    # P(five alike within three rolls, keeping the most common face) = 2783176 / 6^10 (the Yahtzee figure).
    p = 2783176 / 6**10
    assert p == pytest.approx(0.04603, abs=1e-5)
    assert Solver(one_line("generala")).solve().expected_score == pytest.approx(50 * p, abs=1e-9)


def test_served_bonus_only_counts_on_the_first_roll():
    # full_house alone: a served full house is worth 35, a later one 30. Without the bonus the value drops.
    with_bonus = Solver(one_line("full_house")).solve().expected_score
    without = Solver(one_line("full_house", served_bonus=0)).solve().expected_score
    assert with_bonus > without
    # the bonus can add at most 5 x P(full house on the first roll) = 5 * 300/7776
    assert with_bonus - without <= 5 * 300 / 7776 + 1e-9


def test_locked_holds_never_help():
    for rules in ("classic", {"lines": ["fours", "fives", "sixes", "full_house", "generala"]}):
        free = Solver(load_rules(rules)).solve().expected_score
        locked = Solver(load_rules({**(rules if isinstance(rules, dict) else {}), "locked_holds": True})).solve().expected_score
        assert locked <= free + 1e-9


def test_presets_optimal_values():
    # regression anchors for the README's table (computed by this solver, checked by simulation below)
    assert Solver("classic").solve().expected_score == pytest.approx(149.1133, abs=1e-3)


@pytest.mark.parametrize(
    "rules, games",
    [
        ("classic", 1500),
        ({"lines": ["fours", "fives", "sixes", "full_house", "generala", "double_generala"], "locked_holds": True}, 3000),
        ({"lines": ["threes", "straight", "three_of_a_kind"], "straight_gap": True, "served_generala": "points", "served_generala_points": 80}, 3000),
    ],
)
def test_expected_score_matches_simulated_optimal_play(rules, games, tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules(rules)
    expected = load_or_solve(rules)[0].expected_score
    recs = play_many([("optimal",)] * games, [game_seed(99, i) for i in range(games)], rules, workers=2, progress=False)
    totals = np.array([r.totals[0] for r in recs], dtype=float)
    se = totals.std(ddof=1) / np.sqrt(games)
    assert abs(totals.mean() - expected) < 4 * se, (totals.mean(), expected, se)


def test_optimal_beats_every_baseline_on_the_same_dice(tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    seeds = [game_seed(5, i) for i in range(400)]
    means = {}
    for name in ("optimal", "turn-optimal", "rules-of-thumb", "greedy", "random"):
        recs = play_many([(name,)] * len(seeds), seeds, "classic", workers=2, progress=False)
        means[name] = np.mean([r.totals[0] for r in recs])
    assert all(means["optimal"] > means[n] for n in means if n != "optimal"), means


def test_cache_is_used_and_corruption_or_staleness_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules({"lines": ["ones", "twos", "generala"]})
    s1, src1 = load_or_solve(rules)
    s2, src2 = load_or_solve(rules)
    assert (src1, src2) == ("solved", "cache")
    assert np.array_equal(s1.V, s2.V)
    path = cache_path(rules)

    # tampered values: the checksum no longer matches, so the cache is not trusted
    with np.load(path) as z:
        V, meta = z["V"].copy(), str(z["meta"])
    V[0] += 1.0
    np.savez(path, V=V, meta=np.array(meta))
    with pytest.warns(CacheWarning, match="do not match their checksum"):
        s3, src3 = load_or_solve(rules)
    assert src3 == "solved" and s3.expected_score == pytest.approx(s1.expected_score)

    # a truncated file
    path.write_bytes(path.read_bytes()[:100])
    with pytest.warns(CacheWarning, match="cannot be read"):
        assert load_or_solve(rules)[1] == "solved"

    # a file from another solver version
    m = json.loads(meta)
    m["solver_version"] = SOLVER_VERSION + 1
    np.savez(path, V=s1.V, meta=np.array(json.dumps(m)))
    with pytest.warns(CacheWarning, match="solver version"):
        assert load_or_solve(rules)[1] == "solved"
    assert load_or_solve(rules)[1] == "cache"


def test_cache_is_keyed_by_the_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    a = load_or_solve({"lines": ["sixes", "generala"]})[0].expected_score
    b = load_or_solve({"lines": ["sixes", "generala"], "values": {"generala": 60}})[0].expected_score
    assert b > a


def test_optimal_agent_reports_its_expected_score():
    ag = agents.load("optimal", rules="classic")
    assert ag.expected_score == pytest.approx(149.1133, abs=1e-3)


def test_a_cache_of_complex_values_with_a_matching_checksum_is_not_trusted(tmp_path, monkeypatch):
    import generala_agents.solver as solver_mod

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules({"lines": ["ones", "twos", "generala"]})
    s1, _ = load_or_solve(rules)
    path = cache_path(rules)
    V = s1.V.astype(np.complex128)  # same shape, a checksum made for it: only the dtype gives it away
    meta = solver_mod.cache_meta(rules, SOLVER_VERSION, V, 0.0)
    np.savez(path, V=V, meta=np.array(json.dumps(meta)))
    with pytest.warns(CacheWarning, match="complex128"):
        s2, src = load_or_solve(rules)
    assert src == "solved" and s2.V.dtype == np.float64
