"""``generala serve``'s JSON API: whole games, hints, bad requests and games at once."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from generala_env.envs.env import GeneralaEnv  # noqa: E402
from generala_play.serve import make_app  # noqa: E402
from generala_training.cli import main as cli_main  # noqa: E402


@pytest.fixture
def client():
    return TestClient(make_app(allowed_hosts=["testserver"]))  # TestClient's Host


def new(client, **kw):
    r = client.post("/api/games", json=kw)
    assert r.status_code == 200, r.text
    return r.json()


def first_legal(g) -> dict:
    """Write on the first open line (always legal on your move)."""
    return {"write": next(iter(g["open_points"]))}


def test_a_whole_game_against_an_agent_is_the_envs_game(client):
    g = new(client, opponent="greedy", seed=11)
    env = GeneralaEnv(num_players=2, opponents="greedy", illegal_action="raise")
    _, info = env.reset(seed=11)
    moves = 0
    while not g["over"]:
        assert g["your_move"] and g["dice"] == info["dice"].tolist()
        m = {"hold": [0, 1]} if g["can_reroll"] and moves % 2 == 0 else first_legal(g)
        action = sum(1 << i for i in m["hold"]) if "hold" in m else 32 + g["lines"].index(m["write"])
        _, _, done, _, info = env.step(action)
        r = client.post(f"/api/games/{g['id']}/move", json=m)
        assert r.status_code == 200, r.text
        g = r.json()
        moves += 1
    assert done and g["totals"] == info["totals"].tolist() and g["winners"] == np.flatnonzero(info["winners"]).tolist()
    assert g["sheets"] == [[None if v < 0 else v for v in row] for row in info["sheets"].tolist()]
    assert any(line.startswith("greedy: wrote") for line in g["log"]) and any(line.startswith("you: ") for line in g["log"])
    r = client.post(f"/api/games/{g['id']}/move", json={"action": 32})
    assert r.status_code == 409 and "game is over" in r.json()["detail"]


def test_the_hint_is_the_solvers_best_move(client):
    from generala_agents.solver import load_or_solve
    from generala_env.core.rules import load_rules
    from generala_training.diagnose import judged_values

    g = new(client, opponent=None, seed=3, rules="double")
    h = client.get(f"/api/games/{g['id']}/hint").json()
    env = GeneralaEnv(rules="double")
    _, info = env.reset(seed=3)
    vals = judged_values(load_or_solve(load_rules("double"))[0], info)
    assert h["action"] == int(np.argmax(vals)) and h["expected_total"] == pytest.approx(float(vals.max()), abs=0.01)
    assert h["move"].startswith(("keep", "write", "roll", "cross"))
    assert "win_chance" not in h and "win_note" not in h  # one player: no chance to win


def test_a_two_player_hint_without_a_cached_table_says_so_at_once(client, tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    g = new(client, opponent="greedy", seed=0)
    h = client.get(f"/api/games/{g['id']}/hint").json()
    assert "expected_total" in h and "not in the cache" in h["win_note"] and "win_chance" not in h
    assert not list(tmp_path.glob("solve2p-*"))


def test_bad_requests_get_clear_errors_and_the_server_goes_on(client):
    g = new(client, opponent="random", seed=0)
    url = f"/api/games/{g['id']}/move"
    cases = [
        ({"action": "x"}, 400, "action must be an integer"),
        ({"action": 999}, 400, "illegal move: action 999 is out of range"),
        ({"action": 31}, 400, "illegal move: holding all five dice"),
        ({"hold": [5]}, 400, "hold must be a list of distinct dice indices"),
        ({"hold": [0, 0]}, 400, "distinct"),
        ({"write": "sevens"}, 400, "write must name a line"),
        ({"write": "ones", "action": 32}, 400, "a move is one of"),
        ({}, 400, "a move is one of"),
        ([1, 2], 400, "a move is a JSON object"),
    ]
    for body, status, text in cases:
        r = client.post(url, json=body)
        assert r.status_code == status and text in r.json()["detail"], (body, r.text)
    r = client.post(url, content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "JSON object" in r.json()["detail"]
    assert client.post("/api/games/nope/move", json={"action": 32}).status_code == 404
    assert client.get("/api/games/nope/hint").status_code == 404
    for body, text in [
        ({"opponent": "no-such-agent"}, "opponent 'no-such-agent' is not offered"),
        ({"rules": "/etc/passwd"}, "rules must be one of"),
        ({"seed": -1}, "seed must be a whole number"),
        ({"seat": 3}, "seat must be 0 or 1"),
        ({"color": "red"}, "not color"),
    ]:
        r = client.post("/api/games", json=body)
        assert r.status_code == 400 and text in r.json()["detail"], (body, r.text)
    r = client.post(url, json={"write": "ones"})  # the game is as it was
    assert r.status_code == 200 and r.json()["sheets"][0][0] is not None


def test_games_at_once_do_not_mix(client):
    a, b = new(client, opponent="greedy", seed=5), new(client, opponent="greedy", seed=5)
    assert a["id"] != b["id"] and a["dice"] == b["dice"]
    a2 = client.post(f"/api/games/{a['id']}/move", json={"write": "sixes"}).json()
    b_now = client.get(f"/api/games/{b['id']}").json()
    assert b_now["sheets"] == b["sheets"] and a2["sheets"] != b["sheets"]
    b2 = client.post(f"/api/games/{b['id']}/move", json={"write": "sixes"}).json()
    assert b2["sheets"] == a2["sheets"] and b2["dice"] == a2["dice"]  # same seed, same moves: the same game


def test_the_page_is_served_with_no_outside_link(client):
    text = client.get("/").text
    assert "<title>Generala</title>" in text and "http://" not in text and "https://" not in text


def test_the_page_offers_every_preset(client):
    from generala_env.core.rules import preset_names

    text = client.get("/").text
    assert "{RULES_OPTIONS}" not in text
    assert all(f"<option>{name}</option>" in text for name in preset_names()) and len(preset_names()) >= 3


def test_cli_knows_serve_and_refuses_a_bad_port(capsys):
    assert cli_main(["serve", "--port", "70000"]) == 2
    assert "--port must be from 1 to 65535" in capsys.readouterr().err


# -- a table of 2 to 6 seats: people by name (hot seat) and agents ---------------------------------
FOUR = [{"person": "Ana"}, {"agent": "greedy"}, {"person": "Bo"}, {"agent": "optimal"}]


def scripted(g) -> dict:
    """A person's move: keep the two lowest dice at a turn's first roll, else write on the first open line."""
    return {"hold": [0, 1]} if g["can_reroll"] and g["rolls_left"] == 2 else first_legal(g)


def test_a_four_seat_table_with_two_people_plays_to_the_end(client):
    g = new(client, seats=FOUR, seed=7)
    assert g["players"] == ["Ana", "greedy", "Bo", "optimal"] and g["to_move"] == "Ana" and g["player"] == 0
    assert [s["person"] for s in g["seats"]] == [True, False, True, False]
    movers, logged = [], 0
    while not g["over"]:
        assert g["your_move"] and g["seats"][g["player"]]["person"] and g["seat"] == g["player"]
        movers.append(g["to_move"])
        m = scripted(g)
        who, points, before = g["player"], g["open_points"].get(m.get("write")), sorted(g["dice"])
        r = client.post(f"/api/games/{g['id']}/move", json=m)
        assert r.status_code == 200, r.text
        g = r.json()
        new_lines = g["log"][logged:]
        logged = len(g["log"])
        assert new_lines[0].startswith(("Ana: ", "Bo: "))
        if "write" in m:
            assert g["sheets"][who][g["lines"].index(m["write"])] == points
            agents_between = [line.split(":")[0] for line in new_lines[1:] if not line.startswith(("Ana:", "Bo:"))]
            if not g["over"]:  # the agent in the next seat played its whole turn before the other person's move
                assert set(agents_between) == {"greedy" if who == 0 else "optimal"} and new_lines[-1].split(": ")[1].startswith(("wrote", "crossed")), new_lines
        else:  # the log says what was held and the dice the reroll gave
            assert new_lines[0] == f"{movers[-1]}: held {before[0]} {before[1]}, rerolled 3 → {' '.join(map(str, sorted(g['dice'])))}"
    assert set(movers) == {"Ana", "Bo"} and movers[:2] == ["Ana", "Ana"] and "Bo" in movers[2:4]
    if not g["served_generala_win"]:
        assert all(v is not None for row in g["sheets"] for v in row)  # 4 sheets of 10 lines, all written
        assert g["totals"] == [sum(row) for row in g["sheets"]]
    assert g["winners"] and max(g["totals"]) == g["totals"][g["winners"][0]]
    assert any(line.startswith("optimal: held") and "→" in line for line in g["log"])  # an agent's reroll, with its dice
    r = client.post(f"/api/games/{g['id']}/move", json={"action": 32})
    assert r.status_code == 409 and "game is over" in r.json()["detail"]
    page = client.get(f"/api/games/{g['id']}/replay")  # the game's replay, every move judged
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == "default-src 'none'; style-src 'unsafe-inline'"
    assert page.text.count('<tr id="g1m') == len(g["log"]) and "<script" not in page.text
    assert "P0 Ana vs P1 greedy vs P2 Bo vs P3 optimal" in page.text and "<th>regret</th>" in page.text


@pytest.mark.parametrize(
    ("seats", "text"),
    [
        ([], "seats is a list of 2 to 6 seats"),
        ([{"person": f"P{i}"} for i in range(7)], "seats is a list of 2 to 6 seats (or one person alone), got 7"),
        ("Ana", "seats is a list"),
        ([{"person": ""}, {"agent": "greedy"}], "seat 0: a person's name is 1 to 24 printable characters"),
        ([{"person": "Ana"}, {"person": "x" * 25}], "seat 1: a person's name is 1 to 24 printable characters"),
        ([{"person": "A\x07na"}, {"agent": "greedy"}], "a person's name is 1 to 24 printable"),
        ([{"person": 7}, {"agent": "greedy"}], "a person's name is 1 to 24 printable"),
        ([{"person": "Ana"}, {"person": " ana "}], "each person at the table has a name of their own"),
        ([{"agent": "greedy"}, {"agent": "greedy"}], "a table needs at least one person"),
        ([{"person": "Ana"}, {"agent": "os:system"}], "opponent 'os:system' is not offered for 2-player"),
        ([{"person": "Ana"}, {"agent": "optimal-2p"}, {"agent": "greedy"}], "opponent 'optimal-2p' is not offered for 3-player"),
        ([{"person": "Ana"}, {"agent": "ppo-classic"}], "not offered"),
        ([{"person": "Ana", "agent": "greedy"}], 'seat 0 is {"person": "a name"} or {"agent": "a listed agent"}'),
        ([{"person": "Ana"}, "greedy"], "seat 1 is"),
        ([{"person": "Ana"}, {"agent": None}], "seat 1: an agent is a name from the list offered"),
    ],
)
def test_a_tables_seats_are_checked_with_one_line_each(client, seats, text):
    r = client.post("/api/games", json={"seats": seats})
    detail = r.json()["detail"]
    assert r.status_code == 400 and text in detail and "\n" not in detail and len(detail) <= 400, detail


def test_seats_and_the_one_person_form_do_not_mix(client):
    r = client.post("/api/games", json={"seats": [{"person": "Ana"}, {"agent": "greedy"}], "opponent": "greedy"})
    assert r.status_code == 400 and "seats, or opponent and seat, not both" in r.json()["detail"]


def test_the_agents_offered_depend_on_the_number_of_players_and_a_table_defaults_to_the_best_player(client):
    import generala_agents as agents

    two, four = (client.get("/api/agents", params={"players": n}).json() for n in (2, 4))
    assert "optimal-2p" in two["agents"] and "optimal-2p" not in four["agents"] and "greedy" in four["agents"]
    assert four["default"] == ("win-max" if "win-max" in agents.names() else "optimal") and four["players"] == 4
    assert client.get("/api/agents", params={"players": 7}).status_code == 400


def test_names_are_kept_as_given_and_agents_named_like_people_are_told_apart(client):
    g = new(client, seats=[{"person": "greedy"}, {"agent": "greedy"}, {"agent": "greedy"}, {"person": "<b>Bo</b>"}], seed=1)
    assert g["players"] == ["greedy", "greedy 2", "greedy 3", "<b>Bo</b>"]


def test_a_hint_at_a_table_of_four_lists_every_move_by_expected_total_and_says_why_no_chance_to_win(client):
    from generala_agents.solver import load_or_solve
    from generala_env.core.game import Game
    from generala_env.core.rules import load_rules
    from generala_env.envs.env import make_info
    from generala_training.diagnose import judged_values

    g = new(client, seats=FOUR, seed=3)
    h = client.get(f"/api/games/{g['id']}/hint").json()
    assert h["player"] == "Ana" and "no exact solver covers 4 players" in h["win_note"] and "win_chance" not in h
    totals = [o["expected_total"] for o in h["options"]]
    assert totals == sorted(totals, reverse=True) and len({o["move"] for o in h["options"]}) == len(h["options"])
    assert h["options"][0] == {"move": h["move"], "action": h["action"], "expected_total": h["expected_total"]}
    game = Game(load_rules("classic"), 4)  # the oracle: the same position, judged by the solver directly
    game.set_state(dice=g["dice"], rolls_left=2, player=0)
    vals = judged_values(load_or_solve(load_rules("classic"))[0], make_info(game, 0))
    assert h["expected_total"] == pytest.approx(float(vals.max()), abs=0.01)
    assert any(o["move"].startswith("write") for o in h["options"]) and any(o["move"].startswith("keep") for o in h["options"])


def test_a_hint_for_two_people_shows_each_moves_chance_to_win_from_the_cached_table(tmp_path, monkeypatch):
    from generala_agents.solver2p import load_or_solve_2p

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
    rules = tmp_path / "small.yaml"
    rules.write_text("lines: [ones, twos, generala]\n")
    client = TestClient(make_app(str(rules), allowed_hosts=["testserver"]))
    g = new(client, seats=[{"person": "Ana"}, {"person": "Bo"}], seed=2)
    h = client.get(f"/api/games/{g['id']}/hint").json()
    assert "not available" in h["win_note"] and "generala solve --players 2 --rules small" in h["win_note"] and "win_chance" not in h
    load_or_solve_2p(str(rules))  # seconds for three lines
    h = client.get(f"/api/games/{g['id']}/hint").json()
    assert "win_note" not in h and all(0 <= o["win_chance"] <= 1 for o in h["options"])
    assert h["win_chance"] == max(o["win_chance"] for o in h["options"]) and h["player"] == "Ana"


def test_the_replay_link_answers_once_the_game_is_over_and_shows_names_as_text(client):
    g = new(client, seats=[{"person": "<i>Ana</i>"}, {"agent": "greedy"}], seed=4)
    r = client.get(f"/api/games/{g['id']}/replay")
    assert r.status_code == 409 and "once the game is over" in r.json()["detail"]
    while not g["over"]:
        g = client.post(f"/api/games/{g['id']}/move", json=first_legal(g)).json()
    page = client.get(f"/api/games/{g['id']}/replay").text
    assert "P0 &lt;i&gt;Ana&lt;/i&gt; vs P1 greedy" in page and "<i>Ana" not in page
    assert page.count('<tr id="g1m') == len(g["log"]) and "http://" not in page and "https://" not in page
    assert client.get("/api/games/nope/replay").status_code == 404
