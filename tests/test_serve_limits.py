"""What ``generala serve`` builds and holds, and for whom: each test is what a hostile review
sent (many games of win-max, the same first request four times at once, hundreds of sockets
that promise a body and stall, a guarded header sent twice) and what the server must answer.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
from fastapi.testclient import TestClient  # noqa: E402

import generala_agents as agents  # noqa: E402
from generala_agents import shared  # noqa: E402
from generala_agents import win_max as wm  # noqa: E402
from generala_env.core.rules import load_rules  # noqa: E402
from generala_play.serve import build_parser, make_app, server_settings
from generala_play.serve import main as serve_main  # noqa: E402
from generala_play.web_limits import MAX_CONNECTIONS, READ_TIMEOUT  # noqa: E402

SITE = "http://127.0.0.1:8000"
SMALL = "lines: [ones, twos, generala]\n"  # a game of three turns, tables built in a second


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    """A cache of this test's own: the tables it builds are its own too (the process's are keyed by their place)."""
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    return str(path)


@pytest.fixture
def counted_builds(monkeypatch):
    """win-max's table builds, counted; each takes a while longer, so requests at once overlap it."""
    calls: list[str] = []
    build = wm.load_or_build

    def slow_build(rules, *args, **kwargs):
        calls.append(rules.name)
        time.sleep(0.5)
        return build(rules, *args, **kwargs)

    monkeypatch.setattr(wm, "load_or_build", slow_build)
    return calls


def new(client, **body):
    r = client.post("/api/games", json=body, headers={"Origin": SITE})
    assert r.status_code == 200, r.text
    return r.json()


SIX = [{"person": "Ana"}, *[{"agent": "win-max"}] * 5]


# -- finding: win-max's tables per seat per game --------------------------------------------------
def test_every_game_with_win_max_plays_from_one_read_only_table_built_once(small, counted_builds):
    app = make_app(small, port=8000)
    client = TestClient(app, base_url=SITE)
    answers: list[int] = []

    def first_request():
        answers.append(client.post("/api/games", json={"seats": SIX, "seed": 1}, headers={"Origin": SITE}).status_code)

    four = [threading.Thread(target=first_request) for _ in range(4)]  # four first requests at once
    for t in four:
        t.start()
    for t in four:
        t.join(timeout=120)
    assert answers == [200] * 4 and len(counted_builds) == 1  # built once, the others waited for it
    ids = [new(client, seats=SIX, seed=s)["id"] for s in range(2, 10)]  # eight more six-seat games
    assert len(counted_builds) == 1
    key = str(wm.table_path(load_rules(small), load_rules(small).served_generala_wins(2)))
    assert shared.builds[key] == 1
    games = app.state.games
    seats = [chair.agent for gid in ids for chair in games.get(gid).seats if chair.agent is not None]
    assert len(seats) == 8 * 5 and len({id(a) for a in seats}) == 40  # an agent per seat...
    first = seats[0]
    for a in seats:  # ...and one table, and one solver, for all of them
        assert a.solver is first.solver and all(t is u for t, u in zip(a.tables, first.tables, strict=True))
    for array in (first.tables[0].dist, first.tables[0].served, first.tables[0].utility, first.solver.V):
        assert not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0  # no game can change what every game plays from
    # a finished game lets its agents go
    g = new(client, seats=[{"person": "Ana"}, {"agent": "win-max"}], seed=3)
    while not g["over"]:
        g = client.post(f"/api/games/{g['id']}/move", json={"write": next(iter(g["open_points"]))}, headers={"Origin": SITE}).json()
    assert [chair.agent for chair in games.get(g["id"]).seats] == [None, None]


def test_a_build_under_way_holds_up_no_other_game(small, monkeypatch):
    release, started = threading.Event(), threading.Event()
    build = wm.load_or_build

    def held_build(rules, *args, **kwargs):
        started.set()
        assert release.wait(60)
        return build(rules, *args, **kwargs)

    monkeypatch.setattr(wm, "load_or_build", held_build)
    client = TestClient(make_app(small, port=8000), base_url=SITE)
    other = new(client, opponent="greedy", rules="classic", seed=0)  # a game that needs no table
    waiting: list[int] = []
    slow = threading.Thread(target=lambda: waiting.append(client.post("/api/games", json={"seats": SIX}, headers={"Origin": SITE}).status_code))
    slow.start()
    try:
        assert started.wait(60)
        t0 = time.monotonic()
        assert client.get(f"/api/games/{other['id']}").status_code == 200
        assert client.post(f"/api/games/{other['id']}/move", json={"write": "ones"}, headers={"Origin": SITE}).status_code == 200
        assert new(client, opponent="random", seed=1)["your_move"]
        assert client.get("/api/agents?players=4").status_code == 200
        assert time.monotonic() - t0 < 10 and not waiting  # answered while the build still waits
    finally:
        release.set()
        slow.join(timeout=120)
    assert waiting == [200]


def test_agents_outside_the_server_share_the_tables_too_and_use_cache_false_keeps_its_own(small, counted_builds):
    a, b = agents.load("win-max", rules=small), agents.load("win-max", rules=small)
    assert a.tables[0] is b.tables[0] and len(counted_builds) == 1
    own = wm.WinMaxAgent(small, use_cache=False)
    assert own.tables[0] is not a.tables[0] and own.tables[0].dist.flags.writeable


# -- finding: incomplete requests held forever ---------------------------------------------------
class Serving:
    """The app on a real socket on loopback, in a thread, with ``generala serve``'s settings."""

    def __init__(self, app, **limits):
        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, **server_settings("127.0.0.1", self.port, **limits)))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive()
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def stalled(self, n: int) -> list[socket.socket]:
        """``n`` sockets that promise 60,000 bytes of body and send one."""
        head = f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{{"
        out = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            s.sendall(head.encode())
            out.append(s)
        return out

    def ask(self, method="GET", path="/api/agents", body=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Host": f"127.0.0.1:{self.port}", "Content-Type": "application/json"}
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        out = r.status, json.loads(r.read() or b"null")
        c.close()
        return out


def closed(s: socket.socket, within: float) -> bytes | None:
    """What the server sent before closing ``s`` within ``within`` seconds, or ``None`` (still open)."""
    s.settimeout(within)
    got = b""
    try:
        while chunk := s.recv(4096):
            got += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return got


def test_a_flood_of_stalled_requests_leaves_the_server_answering_and_is_closed_after_the_timeout():
    with Serving(make_app(), read_timeout=4.0, max_connections=400) as srv:
        flood = srv.stalled(300)
        try:
            t0 = time.monotonic()
            status, body = srv.ask("POST", "/api/games", b'{"opponent": "greedy", "seed": 0}')
            assert status == 200 and body["players"] == ["you", "greedy"]
            assert time.monotonic() - t0 < 5  # answered at once, the flood still open
            assert closed(flood[-1], 0.2) is None  # the last one opened still waits on its body within the deadline
            t1 = time.monotonic()
            answers = [closed(s, 15) for s in flood]
            assert time.monotonic() - t1 < 20
            assert all(a is not None and a.startswith(b"HTTP/1.1 408") for a in answers), answers[:3]
            assert b"within 4 s" in answers[0]
        finally:
            for s in flood:
                s.close()
        assert srv.ask()[0] == 200


def test_a_connection_that_sends_nothing_or_half_a_head_is_closed_too():
    with Serving(make_app(), read_timeout=1.0) as srv:
        silent = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        half = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        half.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head never finished
        try:
            for s in (silent, half):
                got = closed(s, 8)
                assert got is not None and got.startswith(b"HTTP/1.1 408")
        finally:
            silent.close()
            half.close()
        # a kept-alive connection's next request has its own deadline; a prompt one is answered
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        for _ in range(2):
            c.request("GET", "/api/agents", headers={"Host": f"127.0.0.1:{srv.port}"})
            r = c.getresponse()
            assert r.status == 200 and r.read()
            time.sleep(1.5)  # longer than the read timeout, shorter than keep-alive: idle is not slow
        c.close()


def test_beyond_the_cap_a_connection_gets_a_503_at_once_and_the_server_recovers():
    with Serving(make_app(), read_timeout=2.0, max_connections=20) as srv:
        flood = srv.stalled(20)
        try:
            extra = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
            got = closed(extra, 5)
            extra.close()
            assert got is not None and got.startswith(b"HTTP/1.1 503") and b"20 connections" in got
        finally:
            for s in flood:
                s.close()
        deadline = time.monotonic() + 10
        while srv.ask()[0] != 200:  # the closed sockets leave as the server notices
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_the_limits_are_options_with_their_defaults_said(monkeypatch):
    import uvicorn

    args = build_parser().parse_args([])
    assert (args.read_timeout, args.max_connections) == (READ_TIMEOUT, MAX_CONNECTIONS)
    text = build_parser().format_help()
    assert "--read-timeout" in text and "--max-connections" in text and "408" in text and "503" in text
    served = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(kw))
    assert serve_main(["--read-timeout", "3", "--max-connections", "40"]) == 0
    protocol = served[0]["http"]
    assert (protocol.read_timeout, protocol.max_connections, served[0]["limit_concurrency"]) == (3.0, 40, 40)


# -- finding: the first of repeated guarded headers ----------------------------------------------
@pytest.mark.parametrize(
    "repeated",
    [
        [("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Site", "cross-site")],  # the first alone says same-origin
        [("Content-Type", "application/json"), ("Content-Type", "text/plain")],
        [("Origin", SITE), ("Origin", "http://evil.example")],
        [("Host", "127.0.0.1:8000"), ("Host", "evil.example")],
    ],
)
def test_a_guarded_header_sent_twice_is_refused_whatever_the_first_says(repeated):
    client = TestClient(make_app(port=8000), base_url=SITE)
    with Serving(make_app(port=None)) as srv:  # on a real socket, where repeated headers reach the app as sent
        name = repeated[0][0]
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        c.putrequest("POST", "/api/games", skip_host=True, skip_accept_encoding=True)
        if name != "Host":
            c.putheader("Host", f"127.0.0.1:{srv.port}")
        if name != "Content-Type":
            c.putheader("Content-Type", "application/json")
        for k, v in repeated:
            c.putheader(k, v.replace("127.0.0.1:8000", f"127.0.0.1:{srv.port}").replace(SITE, f"http://127.0.0.1:{srv.port}"))
        body = b'{"opponent": "greedy"}'
        c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        assert r.status == 400
        if name == "Host":  # h11 refuses two Host headers before the app sees them
            assert text == "Invalid HTTP request received."
        else:
            assert json.loads(text)["detail"] == f"a request sends its {name} header once, not 2 times"
    assert new(client, opponent="greedy")["your_move"]  # each header once: played


def test_more_connections_than_the_process_may_open_files_is_one_line():
    resource = pytest.importorskip("resource")
    from generala_play.web_limits import SPARE_FILES, descriptors_for

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit of open files here")
    why = descriptors_for(hard)
    assert (
        why == f"--max-connections {hard} needs {hard + SPARE_FILES} open files and this process may open {hard} (ulimit -n): give at most {hard - SPARE_FILES}"
    )
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (soft, hard)  # nothing changed
    assert descriptors_for(min(64, soft - SPARE_FILES)) is None
