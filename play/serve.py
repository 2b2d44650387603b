"""``generala serve``: Generala in the browser, a table of people and agents.

    generala serve                          # http://127.0.0.1:8000, on this machine only
    generala serve --port 8080 --rules double

The page (one file, no network) seats 1 to 6 players: people (hot seat: they take turns at the
same browser, each with a name) and agents from the list it offers (the agents ``generala
agents`` lists that fit a game of the rules chosen and that number of players: a one-player
checkpoint, or one trained for other rules, is not offered; a table's agent seats are
``win-max`` where it is registered, else ``optimal``, unless chosen). The agents' turns play out
between the people's moves, each move in the log. A hint lists the moves of the person to move
with their expected final total (the exact one-player solver) and, at a table of two, their
chance to win from ``optimal-2p`` where its table is cached (a hint never starts a solve; nor
does a game against ``optimal-2p``, which is refused with the command that builds the table);
at larger tables no exact solver gives a chance to win, and the hint says so. A finished
game's replay (:mod:`generala_play.replay`, every move judged) is one link away. Each game
has its own seed, dice and lock (:mod:`generala_play.web_table`), so games at once never mix.

What comes from the web is data, as in a local notebook server (:mod:`generala_play.web_guard`):
the server listens on this machine only unless told otherwise (and then says loudly what that
means); it answers only requests addressed to it by a name it serves (``Host``: a page on
another site whose name points here, DNS rebinding, is refused), takes state-changing requests
only from its own page or from programs that send no ``Origin`` (curl, scripts), takes JSON
bodies only (``Content-Type: application/json``: a cross-site form cannot send one without
asking the browser first) of at most 64 KiB, and an agent is a name from its list
(:attr:`agents.Trust.WEB`): never a path, a module or a pickle; a person's name is 1 to 24
printable characters, shown as text. Slow work (a new game, a move, a hint, a replay) runs off
the event loop. It keeps at most ``--max-games`` games (the least recently played goes first);
every agent's tables are read or built once per rule set and shared by every game, read-only
(:mod:`generala_agents.shared`). A request's head and body arrive within ``--read-timeout``
seconds, at most ``--max-connections`` are held at once (:mod:`generala_play.web_limits`), and
a header the guard judges a request by is sent once. A bad
request gets a JSON ``{"detail": "..."}`` with a 4xx status that names the problem, quoting at
most 80 characters of any value.

JSON API (what the page uses): ``GET /api/agents?rules=R&players=N`` lists the agents offered
for ``N``-player games (default 2) of rules ``R``, and the default of an agent seat; ``POST
/api/games`` ``{"seats": [{"person": "Ana"}, {"person": "Bo"}, {"agent": "optimal"}], "rules":
"classic", "seed": 0}`` starts a table (``{"opponent": "greedy", "seat": 0}`` instead of
``seats``: one person, "you", against one agent; ``"opponent": null``: alone); ``GET
/api/games/{id}`` is its state; ``POST /api/games/{id}/move`` ``{"action": 32}`` or ``{"hold":
[0, 1]}`` (indices of the sorted dice to keep) or ``{"write": "fours"}`` plays the move of the
person to move; ``GET /api/games/{id}/hint``; ``GET /api/games/{id}/replay`` is the finished
game's replay page.
"""

# no "from __future__ import annotations": FastAPI reads the handlers' annotations (Request) at run time
import argparse
import json
import sys
from collections.abc import Iterable
from importlib.resources import files
from typing import Any

from generala_training.options import HelpFormatter, positive_float, positive_int, require_extra

from .web_games import HOW_NEW, MAX_GAMES, Games
from .web_guard import MAX_BODY, MAX_DETAIL, Guard, HostCheck, bounded, is_loopback, is_wildcard, shown
from .web_limits import KEEP_ALIVE, MAX_CONNECTIONS, MAX_HEAD, READ_TIMEOUT, bounded_protocol, descriptors_for
from .web_table import HOW_MOVE, GameError, Session

__all__ = ["MAX_BODY", "MAX_DETAIL", "MAX_GAMES", "GameError", "Games", "Guard", "HostCheck", "Session", "make_app", "main", "shown"]

HOW = {"a move": HOW_MOVE, "a new game": HOW_NEW}
SERVE_MODULES = ("fastapi", "uvicorn")
REPLAY_POLICY = "default-src 'none'; style-src 'unsafe-inline'"  # the replay page has no script, image or link outside it


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

    from generala_env.core.rules import preset_names

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
    def agent_names(rules: str | None = None, players: int = 2):
        chosen = games.rules_of(rules)
        if not 1 <= players <= 6:
            raise GameError(f"players must be from 1 to 6, got {players}")
        return {
            "agents": games.offered(chosen, players),
            "default": games.default_agent(chosen, players),
            "rules": games.default.name if rules is None else rules,
            "players": players,
        }

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

    @app.get("/api/games/{gid}/replay", response_class=HTMLResponse)
    def replay(gid: str):
        return HTMLResponse(games.replay(gid), headers={"Content-Security-Policy": REPLAY_POLICY})

    return app


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="generala serve", description=__doc__.split("\n\n")[0], formatter_class=HelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only; any other is reachable by others)")
    p.add_argument("--port", type=positive_int, default=8000, help="port to listen on")
    p.add_argument("--rules", default="classic", help="the rules of a new game unless the page asks for others")
    p.add_argument(
        "--max-games", type=positive_int, default=MAX_GAMES, help=f"games kept at once, the least recently played forgotten first (default {MAX_GAMES})"
    )
    p.add_argument(
        "--read-timeout",
        type=positive_float,
        default=READ_TIMEOUT,
        metavar="SECONDS",
        help=f"a request's head and body arrive within this many seconds of its first byte, or it gets a 408 and its connection is closed (default {READ_TIMEOUT:g})",
    )
    p.add_argument(
        "--max-connections",
        type=positive_int,
        default=MAX_CONNECTIONS,
        metavar="N",
        help=f"connections held at once; one more gets a 503 and is closed at once (default {MAX_CONNECTIONS}; an idle one is closed after {KEEP_ALIVE} s)",
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


def server_settings(host: str = "127.0.0.1", port: int = 8000, read_timeout: float = READ_TIMEOUT, max_connections: int = MAX_CONNECTIONS) -> dict[str, Any]:
    """uvicorn's settings (``uvicorn.run(app, **settings)``): its h11 protocol with a deadline
    per request and a cap on connections (:mod:`generala_play.web_limits`), idle connections
    closed after :data:`~generala_play.web_limits.KEEP_ALIVE` seconds, no ``Server`` header."""
    return {
        "host": host,
        "port": port,
        "http": bounded_protocol(read_timeout, max_connections),
        "ws": "none",  # the page uses no websocket: an Upgrade is answered as a plain request
        "limit_concurrency": max_connections,  # requests in the app at once: the connections' cap again
        "timeout_keep_alive": KEEP_ALIVE,
        "h11_max_incomplete_event_size": MAX_HEAD,
        "log_level": "warning",
        "server_header": False,
    }


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    require_extra("serve", SERVE_MODULES, "generala serve")
    if args.port > 65535:
        raise ValueError(f"--port must be from 1 to 65535, got {args.port}")
    import uvicorn

    why = descriptors_for(args.max_connections)
    if why is not None:
        raise ValueError(why)
    app = make_app(args.rules, args.max_games, host=args.host, port=args.port, allowed_hosts=args.allowed_host)
    if not is_loopback(args.host):
        print(exposure_warning(args.host, args.port), file=sys.stderr, flush=True)
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Generala at http://{shown_host}:{args.port}/ (Ctrl-C stops)", flush=True)
    uvicorn.run(app, **server_settings(args.host, args.port, args.read_timeout, args.max_connections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
