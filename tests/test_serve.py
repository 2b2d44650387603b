"""``generala serve``'s JSON API: whole games, hints, bad requests and games at once."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from generala_env.env import GeneralaEnv  # noqa: E402
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
    from generala_env.rules import load_rules
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
    from generala_env.rules import preset_names

    text = client.get("/").text
    assert "{RULES_OPTIONS}" not in text
    assert all(f"<option>{name}</option>" in text for name in preset_names()) and len(preset_names()) >= 3


def test_cli_knows_serve_and_refuses_a_bad_port(capsys):
    assert cli_main(["serve", "--port", "70000"]) == 2
    assert "--port must be from 1 to 65535" in capsys.readouterr().err
