"""``generala serve``: Generala in the browser, a person against any agent.

    generala serve                          # http://127.0.0.1:8000, on this machine only
    generala serve --port 8080 --rules double

The page (one file, no network) starts a game against an agent it lists (the agents
``generala agents`` lists that fit a two-player game of the rules chosen: a one-player
checkpoint, or one trained for other rules, is not offered), or nobody for a solo game;
it shows the dice, the sheets and every move, and gives hints: the expected final total
of the best move from the exact one-player solver, and in two-player games the chance to
win from ``optimal-2p`` where its table is cached (a hint never starts a solve; nor does a
game against ``optimal-2p``, which is refused with the command that builds the table). The
rules are the environment's: each game is a :class:`generala_env.env.GeneralaEnv` with the
person as its agent and the agent as its opponent, so a move the env refuses is refused
here with the env's reason. Each game has its own env, seed and lock, so games at once
never mix.

What comes from the web is data, as in a local notebook server: the server listens on this
machine only unless told otherwise (and then says loudly what that means); it answers only
requests addressed to it by a name it serves (``Host``: a page on another site whose name
points here, DNS rebinding, is refused), takes state-changing requests only from its own
page or from programs that send no ``Origin`` (curl, scripts), takes JSON bodies only
(``Content-Type: application/json``: a cross-site form cannot send one without asking the
browser first) of at most 64 KiB, and an opponent is a name from its list
(:attr:`agents.Trust.WEB`): never a path, a module or a pickle. Slow work (a new game, a
move, a hint) runs off the event loop. It keeps at most ``--max-games`` games (the least
recently played goes first), and one two-player table per rule set it offers (read once,
shared by every game). A bad request gets a JSON ``{"detail": "..."}`` with a 4xx status
that names the problem, quoting at most 80 characters of any value.

JSON API (what the page uses): ``GET /api/agents?rules=R`` lists the opponents offered for
rules ``R``; ``POST /api/games`` ``{"opponent": "greedy", "rules": "classic", "seed": 0,
"seat": 0}`` starts a game; ``GET /api/games/{id}`` is its state; ``POST
/api/games/{id}/move`` ``{"action": 32}`` or ``{"hold": [0, 1]}`` (indices of the sorted
dice to keep) or ``{"write": "fours"}`` plays a move; ``GET /api/games/{id}/hint``.
"""

# no "from __future__ import annotations": FastAPI reads the handlers' annotations (Request) at run time
import argparse
import ipaddress
import json
import secrets
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable
from importlib.resources import files
from typing import Any

import numpy as np

from generala_env.dice import NUM_MASKS
from generala_env.game import OPEN, IllegalActionError
from generala_env.safe_yaml import short_repr
from generala_training.options import positive_int, require_extra

MAX_GAMES = 256  # games kept at once; the least recently played goes first
MAX_BODY = 64 * 1024  # bytes of a request body
MAX_DETAIL = 400  # characters of an error's detail
ECHO = 80  # characters of a value quoted in an error
MAX_SEED = 2**63 - 1
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
HOW = {
    "a move": '{"action": N}, {"hold": [indices of the sorted dice to keep]} or {"write": "line"}',
    "a new game": '{"opponent": "greedy", "rules": "classic", "seed": 0, "seat": 0}, each optional',
}
SERVE_MODULES = ("fastapi", "uvicorn")


def shown(value: Any) -> str:
    """A value from a request, quoted for an error message: at most :data:`ECHO` characters."""
    return short_repr(value, ECHO)


def bounded(text: str, limit: int = MAX_DETAIL) -> str:
    """An error's detail cut to ``limit`` characters."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class GameError(ValueError):
    """A request the game cannot take; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class Session:
    """One game in the browser: the env (the person is its agent), its lock, and its opponent's name."""

    def __init__(self, opponent: str | None, agent, rules, seed: int, seat: int):
        from generala_env.env import GeneralaEnv

        self.rules = rules
        self.opponent = opponent
        players = 1 if agent is None else 2
        self.env = GeneralaEnv(rules=self.rules, num_players=players, opponents=agent, agent_seat=seat, illegal_action="raise")
        self.seed = seed
        self.lock = threading.Lock()
        self.log: list[str] = []
        self.stopped: str | None = None  # why the game cannot go on: its opponent failed
        self.two_player: Any = None  # optimal-2p for the hints, or why there is none
        try:
            _, self.info = self.env.reset(seed=seed)
        except Exception as e:  # the opponent moves first and fails
            raise GameError(f"the game cannot start: {self._failure(e)}", 409) from None
        self._note_moves()

    def _failure(self, e: BaseException) -> str:
        return bounded(f"the opponent {self.opponent} failed: {type(e).__name__}: {e}", 300)

    # -- playing ---------------------------------------------------------------------
    def action_of(self, move: dict) -> int:
        """The action of a move request: ``action``, ``hold`` (indices of the sorted dice) or ``write`` (a line)."""
        unknown = set(move) - {"action", "hold", "write"}
        if unknown:
            raise GameError(f"a move is one of {HOW['a move']}, not {bounded(', '.join(sorted(unknown)), ECHO)}")
        given = [k for k in ("action", "hold", "write") if move.get(k) is not None]
        if len(given) != 1:
            raise GameError(f"a move is one of {HOW['a move']}")
        if given[0] == "action":
            a = move["action"]
            if isinstance(a, bool) or not isinstance(a, int):
                raise GameError(f"action must be an integer, got {shown(a)}")
            return a
        if given[0] == "hold":
            held = move["hold"]
            if (
                not isinstance(held, list)
                or len(held) > 5
                or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < 5 for i in held)
                or len(set(held)) != len(held)
            ):
                raise GameError(f"hold must be a list of distinct dice indices from 0 to 4, got {shown(held)}")
            return sum(1 << i for i in held)
        line = move["write"]
        lines = self.rules.lines
        key = line.strip().lower().replace(" ", "_") if isinstance(line, str) else None
        if key not in lines:
            raise GameError(f"write must name a line of the sheet ({', '.join(lines)}), got {shown(line)}")
        return NUM_MASKS + lines.index(key)

    def play(self, move: dict) -> None:
        if self.stopped:
            raise GameError(f"the game cannot go on: {self.stopped}; start a new one", 409)
        if self.env.game.over:
            raise GameError("the game is over: start a new one", 409)
        a = self.action_of(move)
        try:
            _, _, _, _, self.info = self.env.step(a)
        except IllegalActionError as e:
            if self.env.game.player == self.env.seat and not self.env.game.over:  # the person's move was refused; nothing changed
                raise GameError(bounded(f"illegal move: {e}")) from None
            self.stopped = self._failure(e)  # the opponent played an illegal action
            raise GameError(f"the game cannot go on: {self.stopped}; start a new one", 409) from None
        except Exception as e:  # the opponent failed in its turn: the env stops there
            self.stopped = self._failure(e)
            raise GameError(f"the game cannot go on: {self.stopped}; start a new one", 409) from None
        self._note_moves()

    def _note_moves(self) -> None:
        """Log the moves since the person's last one, a reroll with the dice it gave: ``you:
        held 4 4, rerolled 3 → 1 4 4 5 6``."""
        from generala_env.dice import ROLLS
        from generala_env.picture import describe_move

        from .moves import faces_text

        names = self.names()
        moves = self.env.last_moves
        for k, (seat, action, points, roll) in enumerate(moves):
            text = describe_move(self.rules, seat, action, points, roll).split(" ", 1)[1]
            if action < NUM_MASKS:  # the same player moves next, from the dice it rolled: the next move's roll before, or the dice now
                rolled = moves[k + 1][3] if k + 1 < len(moves) else self.env.game.roll
                text += f" → {faces_text(ROLLS[rolled])}"
            self.log.append(f"{names[seat]}: {text}")

    # -- what the page shows -----------------------------------------------------------
    def names(self) -> list[str]:
        seat = self.env.seat
        return ["you" if s == seat else (self.opponent or "") for s in range(self.env.num_players)]

    def state(self) -> dict[str, Any]:
        from .moves import points_if_written

        g, info = self.env.game, self.info
        seat = self.env.seat
        mine = not g.over and g.player == seat and not self.stopped
        legal = np.asarray(info["action_mask"]).astype(bool) if mine else np.zeros(g.num_actions, bool)
        preview = {}
        if mine:
            for line_no, line in enumerate(self.rules.lines):
                if legal[NUM_MASKS + line_no]:
                    preview[line] = points_if_written(g, line_no)[0]
        from generala_env.picture import held_dice

        return {
            "rules": self.rules.name,
            "lines": list(self.rules.lines),
            "players": self.names(),
            "seat": int(seat),
            "seed": self.seed,
            "dice": g.dice.tolist(),
            "held": held_dice(g),
            "rolls_left": int(g.rolls_left),
            "your_move": bool(mine),
            "can_reroll": bool(mine and legal[:NUM_MASKS].any()),
            "sheets": [[None if v == OPEN else int(v) for v in row] for row in g.sheets.tolist()],
            "totals": g.totals().tolist(),
            "open_points": preview,
            "over": bool(g.over),
            "winners": list(g.winners()),
            "served_generala_win": g.served_generala_winner is not None,
            "stopped": self.stopped,
            "log": list(self.log),
        }

    def hint(self, one_player_solver) -> dict[str, Any]:
        """The best move by the expected final total, and the chance to win where the table is cached."""
        from generala_training.diagnose import judged_values

        from .hints import two_player_table
        from .moves import describe

        g, info = self.env.game, self.info
        if self.stopped or g.over or g.player != self.env.seat:
            raise GameError("no hint: it is not your move", 409)
        vals = judged_values(one_player_solver, info)
        best = int(np.argmax(vals))
        total = int(g.totals()[g.player])
        out: dict[str, Any] = {"move": describe(g, best), "action": best, "expected_total": round(total + float(vals[best]), 2)}
        if self.env.num_players == 2:
            if self.two_player is None:
                self.two_player = two_player_table(self.rules)  # never solves: the cached table, or why there is none
            two = self.two_player
            if isinstance(two, str):
                out["win_note"] = f"no chance to win: {two}"
            else:
                w = np.where(np.asarray(info["action_mask"]).astype(bool), two.action_values(info), -np.inf)
                b = int(np.argmax(w))
                out.update(win_move=describe(g, b), win_action=b, win_chance=round(float(w[b]), 4))
        return out


class Games:
    """The games being played, by id (each with its own lock), the least recently played
    forgotten first beyond ``max_games``; and what the games share: the opponents offered and
    the one-player solvers, one per rule set."""

    def __init__(self, rules="classic", max_games: int = MAX_GAMES):
        from generala_env.rules import load_rules, preset_names

        self.default = load_rules(rules)
        # the rule sets a request may name: the presets, and the server's own by the name it was given
        self.rule_names = [*preset_names(), *([rules] if isinstance(rules, str) and rules not in preset_names() else [])]
        self.max_games = max_games
        self._games: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self._offered: dict[str, list[str]] = {}
        self._solvers: dict[str, Any] = {}
        self._shared_lock = threading.Lock()

    def rules_of(self, name: Any):
        """The rule set a request names (``None``: the server's), from the list it serves only."""
        from generala_env.rules import load_rules

        if name is None:
            return self.default
        if not isinstance(name, str) or name not in self.rule_names:  # no file on the server is read for a request
            raise GameError(f"rules must be one of {', '.join(self.rule_names)}, got {shown(name)}")
        return load_rules(name)

    def offered(self, rules) -> list[str]:
        """The opponents offered for two-player games of ``rules``: every registered agent that
        fits them (as far as its package says)."""
        import generala_agents as agents
        from generala_env import opponents

        key = rules.fingerprint()
        with self._shared_lock:
            if key not in self._offered:
                self._offered[key] = [n for n in agents.names() if opponents.cannot_play(n, rules, 2) is None]
            return self._offered[key]

    def solver(self, rules):
        """The one-player solver of ``rules`` (seconds to solve where it is not cached), one per rule set."""
        from generala_agents.solver import load_or_solve

        key = rules.fingerprint()
        with self._shared_lock:
            if key not in self._solvers:
                self._solvers[key] = load_or_solve(rules)[0]
            return self._solvers[key]

    def opponent(self, name: str, rules):
        """The agent ``name`` for a new game: listed for ``rules``, loaded as the web may (registered names only)."""
        import generala_agents as agents

        from .hints import two_player_table

        offered = self.offered(rules)
        if name not in offered:
            raise GameError(f"opponent {shown(name)} is not offered for two-player {rules.name!r} games; choose one of {', '.join(offered)}")
        if name == "optimal-2p":
            table = two_player_table(rules)  # never solves
            if isinstance(table, str):
                raise GameError(f"optimal-2p cannot play now: {table}", 409)
            return table
        try:
            return agents.load(name, rules=rules, trust=agents.Trust.WEB)
        except agents.AgentError as e:
            raise GameError(bounded(f"opponent {name} cannot play {rules.name!r}: {e}"), 409) from None

    def start(self, body: dict) -> dict[str, Any]:
        """A new game from a request's body: its id and state."""
        unknown = set(body) - {"opponent", "rules", "seed", "seat"}
        if unknown:
            raise GameError(f"a new game takes opponent, rules, seed and seat, not {bounded(', '.join(sorted(unknown)), ECHO)}")
        opponent, seed, seat = body.get("opponent", "greedy"), body.get("seed"), body.get("seat", 0)
        if opponent is not None and (not isinstance(opponent, str) or not opponent):
            raise GameError(f"opponent must be an agent's name or null (a solo game), got {shown(opponent)}")
        rules = self.rules_of(body.get("rules"))
        if seed is None:
            seed = secrets.randbelow(2**31)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise GameError(f"seed must be a whole number from 0 to 2**63 - 1, got {shown(seed)}")
        if isinstance(seat, bool) or not isinstance(seat, int) or seat not in (0, 1) or (opponent is None and seat != 0):
            raise GameError(f"seat must be 0 or 1 (0 in a solo game), got {shown(seat)}")
        agent = None if opponent is None else self.opponent(opponent, rules)
        s = Session(opponent, agent, rules, seed, seat)
        gid = secrets.token_urlsafe(9)
        with self._lock:
            self._games[gid] = s
            while len(self._games) > self.max_games:
                self._games.popitem(last=False)
        with s.lock:
            return {"id": gid, **s.state()}

    def get(self, gid: str) -> Session:
        """The game ``gid``, now the most recently played."""
        with self._lock:
            s = self._games.get(gid)
            if s is not None:
                self._games.move_to_end(gid)
        if s is None:
            raise GameError(f"no game {shown(gid)} (a new server forgets old games, and one keeps the {self.max_games} last played): start a new one", 404)
        return s

    def state(self, gid: str) -> dict[str, Any]:
        s = self.get(gid)
        with s.lock:
            return {"id": gid, **s.state()}

    def move(self, gid: str, body: dict) -> dict[str, Any]:
        s = self.get(gid)
        with s.lock:
            s.play(body)
            return {"id": gid, **s.state()}

    def hint(self, gid: str) -> dict[str, Any]:
        s = self.get(gid)
        solver = self.solver(s.rules)
        with s.lock:
            return s.hint(solver)


# -- who may ask -------------------------------------------------------------------------------
def _split_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a ``Host`` header (the name lower-cased; an IPv6 address in brackets), or ``None``."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] if rest else None
    else:
        name, _, port = value.partition(":") if value.count(":") <= 1 else (value, "", None)
        port = port or None
    if not name or (port is not None and not (port.isdigit() and len(port) <= 5)):
        return None
    return name, None if port is None else int(port)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") else name)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """Whether the address ``host`` (what ``--host`` takes) reaches this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """Whether ``host`` listens on every address of the machine (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host == ""


class HostCheck:
    """Which ``Host`` headers name this server: ``localhost``, ``127.0.0.1`` and ``[::1]`` when it
    listens on loopback; the address it listens on otherwise (any IP address when that is every
    address: a name that an attacker's DNS controls is never an IP address); and the names in
    ``allowed`` (``name`` for any port, ``name:port`` for one). The port, where the server knows
    it, must be its own."""

    def __init__(self, host: str = "127.0.0.1", port: int | None = None, allowed: Iterable[str] = ()):
        self.port = port
        bound = host.lower()
        bound = f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound
        self.names = {bound}
        if is_loopback(host) or is_wildcard(host):
            self.names |= set(LOOPBACK_NAMES)
        self.any_ip = is_wildcard(host)
        self.extra = {a.strip().lower() for a in allowed}

    def __call__(self, header: str) -> bool:
        if header.strip().lower() in self.extra:
            return True
        parts = _split_host(header)
        if parts is None:
            return False
        name, port = parts
        if name in self.extra:
            return True
        if name not in self.names and not (self.any_ip and _is_ip(name)):
            return False
        return self.port is None or port == self.port or (port is None and self.port == 80)


def _error_body(detail: str) -> bytes:
    return json.dumps({"detail": bounded(detail)}).encode()


class Guard:
    """ASGI middleware in front of every route: refuses a request addressed by a name the
    server does not serve (403), a state-changing one from another site's page (403), one
    whose body is not JSON (415) or is larger than ``max_body`` bytes (413); each with a JSON
    ``detail`` of one line."""

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app, hosts: HostCheck, max_body: int = MAX_BODY):
        self.app, self.hosts, self.max_body = app, hosts, max_body

    @staticmethod
    async def refuse(send, status: int, detail: str) -> None:
        body = _error_body(detail)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers: dict[str, list[str]] = {}
        for k, v in scope.get("headers", []):
            headers.setdefault(k.decode("latin-1").lower(), []).append(v.decode("latin-1"))
        host = headers.get("host", [])
        if len(host) != 1 or not self.hosts(host[0]):
            got = shown(host[0]) if len(host) == 1 else f"{len(host)} Host headers"
            return await self.refuse(send, 403, f"this server answers requests addressed to it by the name it serves, not {got}")
        if scope["method"] in self.SAFE_METHODS:
            return await self.app(scope, receive, send)
        origin = headers.get("origin", [])
        if origin and (len(origin) != 1 or origin[0].lower() not in (f"http://{host[0].lower()}", f"https://{host[0].lower()}")):
            return await self.refuse(send, 403, f"a request from another site's page is refused (Origin {shown(origin[0])})")
        if headers.get("sec-fetch-site", [""])[0].lower() == "cross-site":
            return await self.refuse(send, 403, "a request from another site's page is refused (Sec-Fetch-Site: cross-site)")
        kind = headers.get("content-type", [""])
        if len(kind) != 1 or kind[0].split(";", 1)[0].strip().lower() != "application/json":
            return await self.refuse(send, 415, f"a request body is JSON: send Content-Type: application/json, not {shown(kind[0] if kind else None)}")
        length = headers.get("content-length", [])
        if length and (not length[0].strip().isdigit() or int(length[0]) > self.max_body):
            return await self.refuse(send, 413, f"a request body is at most {self.max_body:,} bytes")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return await self.refuse(send, 413, f"a request body is at most {self.max_body:,} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, given = b"".join(chunks), False

        async def replay():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


# long: the routes are closures over this app's games, defined inside it as FastAPI has them
def make_app(rules="classic", max_games: int = MAX_GAMES, *, host: str = "127.0.0.1", port: int | None = None, allowed_hosts: Iterable[str] = ()):
    """The FastAPI app: the page at ``/`` and the JSON API under ``/api``.

    ``host`` and ``port``: where it is served, for the ``Host`` check (:class:`HostCheck`;
    ``port=None`` takes any port); ``allowed_hosts``: other names it answers to."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    from generala_env.rules import preset_names

    games = Games(rules, max_games)
    app = FastAPI(title="Generala", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.games = games
    app.add_middleware(Guard, hosts=HostCheck(host, port, allowed_hosts))

    def error(status: int, detail: Any) -> JSONResponse:
        return JSONResponse({"detail": bounded(str(detail))}, status_code=status)

    @app.exception_handler(GameError)
    async def _game_error(request: Request, exc: GameError):
        return error(exc.status, exc)

    @app.exception_handler(ValueError)  # a rule set, an agent or a file that cannot serve this request
    async def _value_error(request: Request, exc: ValueError):
        return error(400, exc)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException):
        return error(exc.status_code, exc.detail)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        return error(400, "the request's parameters are not what this route takes")

    @app.exception_handler(Exception)  # a fault of the server's own: said in one bounded line, the game state is not shown
    async def _fault(request: Request, exc: Exception):
        return error(500, f"the server failed on this request ({type(exc).__name__}); start a new game")

    page = (
        (files("generala_play") / "page.html")
        .read_text(encoding="utf-8")
        .replace("{RULES_OPTIONS}", "".join(f"<option>{name}</option>" for name in preset_names()))
    )  # the presets folder's

    @app.get("/", response_class=HTMLResponse)
    def index():
        return page

    @app.get("/api/agents")
    def agent_names(rules: str | None = None):
        return {"agents": games.offered(games.rules_of(rules)), "rules": games.default.name if rules is None else rules}

    async def body_of(request: Request, what: str) -> dict:
        raw = await request.body()  # the Guard has bounded it
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            body = None
        if not isinstance(body, dict):
            raise GameError(f"{what} is a JSON object: {HOW[what]}")
        return body

    @app.post("/api/games")
    async def new_game(request: Request):
        body = await body_of(request, "a new game")
        return await run_in_threadpool(games.start, body)  # loading an agent reads files: off the event loop

    @app.get("/api/games/{gid}")
    def get_game(gid: str):
        return games.state(gid)

    @app.post("/api/games/{gid}/move")
    async def move(gid: str, request: Request):
        body = await body_of(request, "a move")
        return await run_in_threadpool(games.move, gid, body)  # the opponent's moves are computed here

    @app.get("/api/games/{gid}/hint")
    def hint(gid: str):
        return games.hint(gid)

    return app


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="generala serve", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only; any other is reachable by others)")
    p.add_argument("--port", type=positive_int, default=8000)
    p.add_argument("--rules", default="classic", help="the rules of a new game unless the page asks for others")
    p.add_argument(
        "--max-games", type=positive_int, default=MAX_GAMES, help=f"games kept at once, the least recently played forgotten first (default {MAX_GAMES})"
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name this server answers to in the Host header (this machine's name on the network, with --host 0.0.0.0); repeatable",
    )
    return p


def exposure_warning(host: str, port: int) -> str:
    """What the person who serves on ``host`` (not loopback) should know, in several lines."""
    where = "any IP address of this machine" if is_wildcard(host) else host
    return "\n".join([
        f"WARNING: generala serve listens on {host}:{port}, not on this machine only (127.0.0.1).",
        "WARNING: anyone who can reach this address can start games here and use this machine's CPU and memory;",
        "WARNING: nothing is encrypted and nobody is asked who they are.",
        f"WARNING: it answers requests addressed to {where} (and to the names given with --allowed-host).",
        "WARNING: to play on this machine only, leave out --host (127.0.0.1 is the default).",
    ])  # fmt: skip


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    require_extra("serve", SERVE_MODULES, "generala serve")
    if args.port > 65535:
        raise ValueError(f"--port must be from 1 to 65535, got {args.port}")
    import uvicorn

    app = make_app(args.rules, args.max_games, host=args.host, port=args.port, allowed_hosts=args.allowed_host)
    if not is_loopback(args.host):
        print(exposure_warning(args.host, args.port), file=sys.stderr, flush=True)
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Generala at http://{shown_host}:{args.port}/ (Ctrl-C stops)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", server_header=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
