"""The exact two-player solver: closed forms, an untrimmed reference, consistency, simulated
play of the optimal-2p agent, the cache, and bad input."""

import json
import subprocess
import sys
from functools import cache

import gymnasium as gym
import numpy as np
import pytest

import generala_agents as agents
from generala_agents.solver2p import (
    SOLVER2P_VERSION,
    TILE,
    Layout,
    SolveTooBigError,
    TwoPlayerSolver,
    cache_path,
    load_or_solve_2p,
    turn_arrays,
)
from generala_env.core.dice import NUM_ROLLS, ROLL_COUNTS
from generala_env.core.rules import load_rules
from generala_env.core.scoring import points_table
from generala_training.harness import game_seed, play_many

SERVED = 6 / 6**5  # five alike on a turn's first roll
SMALL = {"lines": ["ones", "fives", "sixes", "full_house", "generala"]}


@cache
def solved(spec_json: str) -> TwoPlayerSolver:
    return TwoPlayerSolver(load_rules(json.loads(spec_json))).solve()


def solve(spec) -> TwoPlayerSolver:
    return solved(json.dumps(spec, sort_keys=True))


def test_one_generala_line_has_a_closed_form():
    # Seat 0 wins at once with a served generala (q). Otherwise, whatever seat 0 wrote, seat 1
    # wins with a served generala and else ties with seat 0's result or beats it by exactly the
    # chance seat 0 had: the value is q + (1 - q)^2 / 2, for any chance g of a generala.
    assert solve({"lines": ["generala"]}).first_player_value == pytest.approx(SERVED + (1 - SERVED) ** 2 / 2, abs=1e-6)
    # with no instant win the game is symmetric: each seat's generala is as likely, 1/2
    points = {"lines": ["generala"], "served_generala": "points", "served_generala_points": 50}
    assert solve(points).first_player_value == pytest.approx(0.5, abs=1e-6)


def test_one_number_line_is_a_fair_game():
    # sixes alone: both seats keep every six (each die ends a six with chance 1 - (5/6)^3,
    # whatever the target), so the totals are independent and alike: 1/2
    assert solve({"lines": ["sixes"]}).first_player_value == pytest.approx(0.5, abs=1e-6)


def reference_value(rules):
    """V(a, b, d) by plain recursion with no trimming of d, each turn by the one-player
    solver's array code: the untrimmed definition the kernel must agree with."""
    P = points_table(rules).astype(np.int64)
    L = rules.num_lines
    full = (1 << L) - 1
    gen, dbl = rules.generala_line, rules.double_generala_line
    five = ROLL_COUNTS.max(axis=1) == 5

    @cache
    def V(a, b, d):
        mask, flag = a >> 1, a & 1
        W = np.full((L, NUM_ROLLS, 2), -np.inf)
        for l in range(L):
            if (mask >> l) & 1:
                continue
            for r in range(NUM_ROLLS):
                for s in (0, 1):
                    pt = 0 if (l == dbl and not flag) else int(P[l, r, s])
                    nflag = int(pt > 0) if (l == gen and dbl >= 0) else flag
                    na = ((mask | 1 << l) << 1) | nflag
                    if (na >> 1) == full and (b >> 1) == full:
                        t = d + pt
                        W[l, r, s] = 1.0 if t > 0 else 0.5 if t == 0 else 0.0
                    else:
                        W[l, r, s] = 1.0 - V(b, na, -(d + pt))
        if rules.served_generala_wins(2) and gen >= 0 and not (mask >> gen) & 1:
            W[:, five, 1] = -np.inf
            W[gen, five, 1] = 1.0
        return float(turn_arrays(rules, W)["value"])

    return V


@pytest.mark.parametrize(
    "spec",
    [
        {"lines": ["ones", "generala"]},
        {"lines": ["twos", "generala", "double_generala"], "values": {"generala": 5, "double_generala": 7}},
        {"lines": ["ones", "full_house"], "locked_holds": True, "served_bonus": 3, "values": {"full_house": 4}},
    ],
)
def test_trimmed_table_equals_the_untrimmed_recursion(spec):
    rules = load_rules(spec)
    s = solve(spec)
    ref = reference_value(rules)
    lay = s.layout
    for p in range(lay.num_pairs):
        a, b = int(lay.pair_a[p]), int(lay.pair_b[p])
        for d in range(int(lay.lo[p]) - 3, int(lay.lo[p] + lay.size[p]) + 3):  # past both ends too
            if -lay.held[b] <= d <= lay.held[a]:  # differences that can be reached
                assert s.value(a, b, d) == pytest.approx(ref(a, b, d), abs=1e-6), (a, b, d)


@pytest.mark.parametrize(
    "spec",
    [
        SMALL,
        {**SMALL, "locked_holds": True},
        {"lines": ["twos", "fours", "straight", "generala", "double_generala"]},
    ],
)
def test_threads_and_tiles_do_not_change_a_single_value(spec):
    # one share, eight values a tile (tiles cut inside pairs and straddle their ends), against
    # three shares interleaved and tiles that run across many pairs: the same table, bit for bit
    rules = load_rules(spec)
    serial = TwoPlayerSolver(rules).solve(threads=1, lanes=8)
    parallel = TwoPlayerSolver(rules).solve(threads=3, lanes=TILE)
    assert parallel.layout.size.max() < TILE // 2  # tiles of the default width hold several pairs
    assert np.array_equal(np.asarray(serial.V), np.asarray(parallel.V))
    assert np.array_equal(np.asarray(serial.V), np.asarray(solve(spec).V))
    with pytest.raises(ValueError, match="lanes must be a positive multiple of 8"):
        TwoPlayerSolver(rules).solve(lanes=12)


def test_tiles_cover_each_layer_once_within_one_movers_sheet():
    from generala_agents.solver2p_solve import _tiles

    lay = Layout(load_rules(SMALL))
    for n in range(len(lay.layers)):
        pair, start, size = _tiles(lay, n, 64)
        first_value = int(lay.layer_start[n])
        ends = start + size
        assert start[0] == first_value and ends[-1] == first_value + int(lay.layer_values[n])
        assert np.array_equal(start[1:], ends[:-1]) and size.min() >= 1 and size.max() <= 64
        assert np.all(lay.off[pair] <= start) and np.all(start < lay.off[pair] + lay.size[pair])  # its first pair holds its first value
        last = np.searchsorted(lay.off, ends - 1, side="right") - 1  # the pair of each tile's last value
        assert np.array_equal(lay.pair_a[pair], lay.pair_a[last])


def test_a_threading_layer_that_cannot_be_loaded_falls_back_to_numbas_own(tmp_path):
    import os

    code = (
        "import json, numba, warnings; warnings.simplefilter('always')\n"
        "from generala_agents.solver2p import TwoPlayerSolver\n"
        f"s = TwoPlayerSolver({SMALL!r}).solve()\n"
        "print(json.dumps([s.first_player_value, numba.threading_layer()]))\n"
    )
    env = {**os.environ, "NUMBA_THREADING_LAYER": "no-such-layer"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    value, layer = json.loads(out.stdout.splitlines()[-1])
    assert layer == "workqueue" and value == pytest.approx(0.4934261441230774, abs=1e-6)
    assert "threading layer 'no-such-layer' cannot be loaded" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("spec", "value"),
    [  # seat 0's value from the first solver (version 1: float64 turns, the whole table in memory)
        (SMALL, 0.4934261441230774),
        ({**SMALL, "locked_holds": True}, 0.4932960271835327),
        ({"lines": ["twos", "fours", "straight", "generala", "double_generala"]}, 0.4921638071537018),
    ],
)
def test_the_first_players_value_is_the_first_solvers(spec, value):
    assert solve(spec).first_player_value == pytest.approx(value, abs=1e-6)


def test_a_solve_started_by_a_program_says_so_at_once_and_shows_its_layers(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    agents.load("optimal-2p", rules=SMALL)
    lines = capsys.readouterr().err.splitlines()
    first = lines[0]
    assert "solving the two-player table" in first and "optimal-2p" in first and "about " in first
    assert str(tmp_path) in first and "'generala solve --players 2 --rules " in first
    # five lines a sheet: ten layers of turns, the last line at the end of the last one
    assert "layer 10 of 10, 100% of the values" in lines[-1]
    agents.load("optimal-2p", rules=SMALL)  # from the table this process holds: nothing to say
    assert capsys.readouterr().err == ""


def test_the_progress_lines_name_the_layer_and_the_time_left():
    import io

    from generala_agents.solver2p import SolveReport

    out = io.StringIO()
    report = SolveReport(load_rules(SMALL), None, every=0.0, stream=out)
    lay = Layout(load_rules(SMALL))
    total = lay.num_values
    # the layers are solved last first: the values up to the end of the first one solved
    first_layer = int(lay.layer_values[-1])
    for done in (first_layer, first_layer + 1, total // 2, total):
        report(done, total)
    lines = out.getvalue().splitlines()
    assert "not kept (no cache)" in lines[0] and f"{total:,} values" in lines[0] and "generala solve" not in lines[0]
    assert "layer 1 of 10" in lines[1] and "layer 2 of 10" in lines[2]
    assert "left" in lines[3]
    assert "layer 10 of 10, 100% of the values" in lines[4] and "left" not in lines[4]


def test_a_solve_that_has_not_started_says_it_is_getting_ready():
    import io
    import time

    from generala_agents.solver2p import SolveReport

    out = io.StringIO()
    report = SolveReport(load_rules(SMALL), None, every=0.02, stream=out)
    deadline = time.monotonic() + 30
    while "getting ready" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)
    report.close()
    assert "getting ready" in out.getvalue()


@pytest.mark.parametrize(
    "spec",
    [
        SMALL,
        {**SMALL, "locked_holds": True},
        {"lines": ["ones", "straight", "generala", "double_generala"], "served_generala": "points", "served_generala_points": 80},
    ],
)
def test_values_are_probabilities_rising_with_the_lead_and_match_the_array_code(spec):
    s = solve(spec)
    lay = s.layout
    assert np.all(s.V >= -1e-6) and np.all(s.V <= 1 + 1e-6)
    for p in range(lay.num_pairs):  # a bigger lead is never worse
        v = s.V[lay.off[p] : lay.off[p] + lay.size[p]]
        assert np.all(np.diff(v) >= -1e-6)
    rng = np.random.default_rng(0)
    for p in rng.integers(0, lay.num_pairs, 25):  # the kernel against the agent's NumPy turn
        a, b = int(lay.pair_a[p]), int(lay.pair_b[p])
        d = int(lay.lo[p] + rng.integers(lay.size[p]))
        assert s.value(a, b, d) == pytest.approx(s.turn(a, b, d)["value"], abs=1e-6)


def test_the_first_player_value_is_the_mean_result_of_optimal_play(tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules(SMALL)
    value = load_or_solve_2p(rules)[0].first_player_value
    games = 2000
    recs = play_many([("optimal-2p", "optimal-2p")] * games, [game_seed(7, i) for i in range(games)], rules, workers=2, progress=False)
    seat0 = np.array([1.0 if r.winners == (0,) else 0.5 if len(r.winners) == 2 else 0.0 for r in recs])
    se = seat0.std(ddof=1) / np.sqrt(games)
    assert abs(seat0.mean() - value) < 4 * se, (seat0.mean(), value, se)


def test_optimal_2p_beats_the_score_maximiser(tmp_path, monkeypatch):
    # the score-maximiser is one of the strategies the solver ranks: against it optimal-2p
    # wins at least as often as it would against itself, seats swapped on the same dice
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules(SMALL)
    n = 1500
    seeds = [game_seed(11, i) for i in range(n)]
    a = play_many([("optimal-2p", "optimal")] * n, seeds, rules, workers=2, progress=False)
    b = play_many([("optimal", "optimal-2p")] * n, seeds, rules, workers=2, progress=False)
    pts = [1.0 if r.winners == (0,) else 0.5 if len(r.winners) == 2 else 0.0 for r in a]
    pts += [1.0 if r.winners == (1,) else 0.5 if len(r.winners) == 2 else 0.0 for r in b]
    pts = np.array(pts)
    assert pts.mean() - 0.5 > 2 * pts.std(ddof=1) / np.sqrt(len(pts)), pts.mean()


def test_agent_plays_either_seat_through_the_env_and_refuses_other_games(tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    ag = agents.load("optimal-2p", rules=SMALL)
    assert ag.first_player_value == pytest.approx(solve(SMALL).first_player_value, abs=1e-7)
    env = gym.make("Generala-v0", rules=SMALL, num_players=2, opponents="optimal-2p", reward="win")
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            obs, r, term, trunc, info = env.step(ag.act(obs, info))
            done = term or trunc
    one = gym.make("Generala-v0", rules=SMALL)
    obs, info = one.reset(seed=0)
    with pytest.raises(agents.AgentError, match="two-player games only"):
        ag.act(obs, info)


def test_cache_is_used_and_a_damaged_one_is_rebuilt(tmp_path, monkeypatch):
    import generala_agents.solver2p as s2p
    from generala_env.files.cache import CacheWarning

    def new_process():  # the table a process shares is read once: the next process reads the file
        s2p.forget_tables()

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules({"lines": ["ones", "twos", "generala"]})
    s1, src1 = load_or_solve_2p(rules)
    s2, src2 = load_or_solve_2p(rules)
    assert (src1, src2) == ("solved", "cache") and s2 is s1  # one table for the process
    new_process()
    s3, src3 = load_or_solve_2p(rules)
    assert src3 == "cache" and np.array_equal(s1.V, s3.V)
    path = cache_path(rules)
    V = np.load(path)
    V[0] += 0.5
    np.save(path, V)  # tampered: the checksum no longer matches
    new_process()
    with pytest.warns(CacheWarning, match="do not match their checksum"):
        assert load_or_solve_2p(rules)[1] == "solved"
    path.write_bytes(path.read_bytes()[:64])  # truncated
    new_process()
    with pytest.warns(CacheWarning, match="cannot be read"):
        assert load_or_solve_2p(rules)[1] == "solved"
    meta = json.loads(path.with_suffix(".json").read_text())
    meta["solver_version"] = SOLVER2P_VERSION + 1
    path.with_suffix(".json").write_text(json.dumps(meta))
    new_process()
    with pytest.warns(CacheWarning, match="solver version"):
        assert load_or_solve_2p(rules)[1] == "solved"
    new_process()
    assert load_or_solve_2p(rules)[1] == "cache"


def test_a_table_too_big_is_refused_before_anything_is_allocated():
    need = Layout.bytes_needed(load_rules("double"))
    assert 2**30 < need < 2 * 2**30  # two layers of the 11-line sheets with a double generala: the default allows it
    with pytest.raises(SolveTooBigError, match="GiB"):
        TwoPlayerSolver("double").solve(max_memory=2**30)
    with pytest.raises(SolveTooBigError, match="needs about"):
        TwoPlayerSolver(SMALL).solve(max_memory=1000)
    # the estimate is what the solve holds: two neighbouring layers' values and the pair arrays
    lay = Layout(load_rules(SMALL))
    two_layers = max(int(lay.size[lay.layers[n]].sum() + lay.size[lay.layers[n + 1]].sum()) for n in range(len(lay.layers) - 1))
    assert Layout.bytes_needed(load_rules(SMALL)) >= two_layers * 4 + lay.num_pairs * 8


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "generala_training.cli", *args], capture_output=True, text=True, env=env)


def test_cli_solves_two_players_as_json_and_refuses_three(tmp_path):
    import os

    env = {**os.environ, "GENERALA_CACHE": str(tmp_path)}
    rules_file = tmp_path / "five.yaml"
    rules_file.write_text("lines: [ones, fives, sixes, full_house, generala]\n")
    out = run_cli("solve", "--rules", str(rules_file), "--players", "2", "--json", env=env)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["first_player_value"] == pytest.approx(solve(SMALL).first_player_value, abs=1e-7)
    assert res["source"] == "solved" and res["peak_memory_mib"] > 0 and res["solve_seconds"] > 0
    text = run_cli("solve", "--rules", str(rules_file), "--players", "2", env=env)
    assert text.returncode == 0 and "read from cache" in text.stdout and "peak memory" in text.stdout
    three = run_cli("solve", "--players", "3", env=env)
    assert three.returncode != 0 and "only one and two players are solved exactly" in three.stderr
    big = run_cli("solve", "--rules", "double", "--players", "2", "--max-memory", "0.5", env=env)
    assert big.returncode != 0 and "GiB" in big.stderr and "Traceback" not in big.stderr


def test_behaviour_cloning_from_optimal_2p_learns_its_exact_chances(tmp_path, monkeypatch):
    from generala_training.config import EnvConfig
    from generala_training.export_metadata import solver_ingredients
    from generala_training.pretrain import _generate

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    env_cfg = EnvConfig(rules=SMALL, num_players=2, reward="win", reward_scale=0.5, agent_seat=0, opponents="self-play")
    obs, masks, acts, vals = _generate((env_cfg, load_rules(SMALL), 3, [0, 1, 2, 3], 0.0, "optimal-2p"))
    assert len(acts) == len(vals) >= 4 * len(SMALL["lines"])  # at least one decision a turn
    assert masks[np.arange(len(acts)), acts].all()
    # targets are the teacher's exact chance to win as a reward (2p - 1), times the reward scale:
    # inside [-0.5, 0.5], and not only the game results (+-0.5 or 0)
    assert np.all(np.abs(vals) <= 0.5 + 1e-6)
    assert np.mean(~np.isin(np.round(vals, 6), [-0.5, 0.0, 0.5])) > 0.5
    assert solver_ingredients({"pretrain": {"games": 10, "teacher": "optimal-2p"}})[0].endswith("(behaviour cloning from the optimal-2p player)")


def test_values_whose_metadata_cannot_be_written_are_not_left_behind(tmp_path, monkeypatch):
    import generala_agents.solver2p as s2p

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules({"lines": ["ones", "twos", "generala"]})

    def disk_full_for_json(path, value, indent=2):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(s2p, "write_json", disk_full_for_json)
    with pytest.warns(RuntimeWarning, match=r"writing .*\.json"):
        load_or_solve_2p(rules)
    assert list(tmp_path.iterdir()) == []  # no .npy without its .json
