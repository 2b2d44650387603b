"""``generala serve``: Generala in the browser, a person against any agent.

    generala serve                          # http://127.0.0.1:8000, on this machine only
    generala serve --port 8080 --rules double

The page (one file, no network) starts a game against the agent chosen (any name
``generala agents`` lists, a checkpoint folder, or nobody for a solo game), shows the
dice, the sheets and every move, and gives hints: the expected final total of the best
move from the exact one-player solver, and in two-player games the chance to win from
``optimal-2p`` where its table is cached (a hint never starts a solve). The rules are
the environment's: each game is a :class:`generala_env.env.GeneralaEnv` with the person
as its agent and the agent as its opponent, so a move the env refuses is refused here
with the env's reason. Each game has its own env, seed and lock, so games at once never
mix; a bad request gets a JSON ``{"detail": "..."}`` with a 4xx status, never a crash.

JSON API (what the page uses): ``POST /api/games`` ``{"opponent": "greedy", "rules":
"classic", "seed": 0, "seat": 0}`` starts a game; ``GET /api/games/{id}`` is its state;
``POST /api/games/{id}/move`` ``{"action": 32}`` or ``{"hold": [0, 1]}`` (indices of the
sorted dice to keep) or ``{"write": "fours"}`` plays a move; ``GET /api/games/{id}/hint``.
"""

# no "from __future__ import annotations": FastAPI reads the handlers' annotations (Request) at run time
import argparse
import secrets
import sys
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from generala_env.dice import NUM_MASKS
from generala_env.game import OPEN, IllegalActionError

from .options import positive_int, require_extra

MAX_GAMES = 256  # games kept at once; the oldest goes first
HOW = {
    "a move": '{"action": N}, {"hold": [indices of the sorted dice to keep]} or {"write": "line"}',
    "a new game": '{"opponent": "greedy", "rules": "classic", "seed": 0, "seat": 0}, each optional',
}
SERVE_MODULES = ("fastapi", "uvicorn")


class GameError(ValueError):
    """A request the game cannot take; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class Session:
    """One game in the browser: the env (the person is its agent), and its lock."""

    def __init__(self, opponent: str | None, rules, seed: int, seat: int):
        import agents
        from generala_env.env import GeneralaEnv
        from generala_env.rules import load_rules

        self.rules = load_rules(rules)
        self.opponent = opponent or None
        if isinstance(seat, bool) or seat not in (0, 1) or (self.opponent is None and seat != 0):
            raise GameError(f"seat must be 0 or 1 (0 in a solo game), got {seat!r}")
        opp = None
        if self.opponent is not None:
            try:
                opp = agents.load(self.opponent, rules=self.rules)
            except Exception as e:  # an unknown name, a checkpoint for other rules
                known = agents.names()
                why = (
                    f"unknown agent {self.opponent!r}; known agents: {', '.join(known)}"
                    if self.opponent not in known
                    else f"agent {self.opponent!r} cannot play these rules: {e}"
                )
                raise GameError(why) from None
        players = 1 if opp is None else 2
        self.env = GeneralaEnv(rules=self.rules, num_players=players, opponents=opp, agent_seat=seat, illegal_action="raise")
        self.seed = seed
        self.lock = threading.Lock()
        self.log: list[str] = []
        _, self.info = self.env.reset(seed=seed)
        self._note_moves()

    # -- playing ---------------------------------------------------------------------
    def action_of(self, move: dict) -> int:
        """The action of a move request: ``action``, ``hold`` (indices of the sorted dice) or ``write`` (a line)."""
        given = [k for k in ("action", "hold", "write") if move.get(k) is not None]
        if len(given) != 1:
            raise GameError(f"a move is one of {HOW['a move']}")
        if given[0] == "action":
            a = move["action"]
            if isinstance(a, bool) or not isinstance(a, int):
                raise GameError(f"action must be an integer, got {a!r}")
            return a
        if given[0] == "hold":
            held = move["hold"]
            if not isinstance(held, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < 5 for i in held) or len(set(held)) != len(held):
                raise GameError(f"hold must be a list of distinct dice indices from 0 to 4, got {held!r}")
            return sum(1 << i for i in held)
        line = move["write"]
        lines = self.rules.lines
        key = line.strip().lower().replace(" ", "_") if isinstance(line, str) else None
        if key not in lines:
            raise GameError(f"write must name a line of the sheet ({', '.join(lines)}), got {line!r}")
        return NUM_MASKS + lines.index(key)

    def play(self, move: dict) -> None:
        if self.env.game.over:
            raise GameError("the game is over: start a new one", 409)
        a = self.action_of(move)
        try:
            _, _, terminated, _, self.info = self.env.step(a)
        except IllegalActionError as e:
            raise GameError(f"illegal move: {e}") from None
        except RuntimeError as e:  # the env stopped: an opponent failed before
            raise GameError(f"the game cannot go on: {e}", 409) from None
        self._note_moves()

    def _note_moves(self) -> None:
        from generala_env.picture import describe_move

        names = self.names()
        for seat, action, points, roll in self.env.last_moves:
            text = describe_move(self.rules, seat, action, points, roll)
            self.log.append(f"{names[seat]}: {text.split(' ', 1)[1]}")

    # -- what the page shows -----------------------------------------------------------
    def names(self) -> list[str]:
        seat = self.env.seat
        return ["you" if s == seat else (self.opponent or "") for s in range(self.env.num_players)]

    def state(self) -> dict[str, Any]:
        from .moves import points_if_written

        g, info = self.env.game, self.info
        seat = self.env.seat
        mine = not g.over and g.player == seat
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
            "log": list(self.log),
        }

    def hint(self, solvers: dict) -> dict[str, Any]:
        """The best move by the expected final total, and the chance to win where cached."""
        from .diagnose import judged_values
        from .hints import two_player_table
        from .moves import describe

        g, info = self.env.game, self.info
        if g.over or g.player != self.env.seat:
            raise GameError("no hint: it is not your move", 409)
        key = self.rules.fingerprint()
        if key not in solvers:
            from agents.solver import load_or_solve

            solvers[key] = load_or_solve(self.rules)[0]
        vals = judged_values(solvers[key], info)
        best = int(np.argmax(vals))
        total = int(g.totals()[g.player])
        out: dict[str, Any] = {"move": describe(g, best), "action": best, "expected_total": round(total + float(vals[best]), 2)}
        if self.env.num_players == 2:
            two = solvers.get(("2p", key))
            if two is None:
                two = two_player_table(self.rules)
                if not isinstance(two, str):
                    solvers[("2p", key)] = two
            if isinstance(two, str):
                out["win_note"] = f"no chance to win: {two}"
            else:
                w = np.where(np.asarray(info["action_mask"]).astype(bool), two.action_values(info), -np.inf)
                b = int(np.argmax(w))
                out.update(win_move=describe(g, b), win_action=b, win_chance=round(float(w[b]), 4))
        return out


class Games:
    """The games being played, by id; each with its own lock."""

    def __init__(self, rules="classic", max_games: int = MAX_GAMES):
        self.rules, self.max_games = rules, max_games
        self._games: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self.solvers: dict = {}

    def new(self, opponent: str | None, rules=None, seed: int | None = None, seat: int = 0) -> tuple[str, Session]:
        if seed is None:
            seed = secrets.randbelow(2**31)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise GameError(f"seed must be a whole number of 0 or more, got {seed!r}")
        s = Session(opponent, rules or self.rules, seed, seat)
        gid = secrets.token_urlsafe(9)
        with self._lock:
            self._games[gid] = s
            while len(self._games) > self.max_games:
                self._games.popitem(last=False)
        return gid, s

    def get(self, gid: str) -> Session:
        with self._lock:
            s = self._games.get(gid)
        if s is None:
            raise GameError(f"no game {gid!r} (a new server forgets old games): start a new one", 404)
        return s


# long: the routes are closures over this app's games, defined inside it as FastAPI has them
def make_app(rules="classic", max_games: int = MAX_GAMES):
    """The FastAPI app: the page at ``/`` and the JSON API under ``/api``."""
    from fastapi import FastAPI, Request
    from fastapi.responses import HTMLResponse, JSONResponse

    from generala_env.rules import RulesError, load_rules, preset_names

    load_rules(rules)  # a bad default fails at start, not at the first game
    games = Games(rules, max_games)
    app = FastAPI(title="Generala", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.games = games

    @app.exception_handler(GameError)
    async def _game_error(request: Request, exc: GameError):
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)

    @app.exception_handler(RulesError)
    async def _rules_error(request: Request, exc: RulesError):
        return JSONResponse({"detail": str(exc)}, status_code=400)

    page = PAGE.replace("{RULES_OPTIONS}", "".join(f"<option>{name}</option>" for name in preset_names()))  # the presets folder's

    @app.get("/", response_class=HTMLResponse)
    def index():
        return page

    @app.get("/api/agents")
    def agent_names():
        import agents

        return {"agents": agents.names(), "rules": rules}

    async def body_of(request: Request, what: str) -> dict:
        try:
            body = await request.json()
        except Exception:
            body = None
        if not isinstance(body, dict):
            raise GameError(f"{what} is a JSON object: {HOW[what]}")
        return body

    @app.post("/api/games")
    async def new_game(request: Request):
        body = await body_of(request, "a new game")
        unknown = set(body) - {"opponent", "rules", "seed", "seat"}
        if unknown:
            raise GameError(f"a new game takes opponent, rules, seed and seat, not {', '.join(sorted(unknown))}")
        opponent, rules_name = body.get("opponent", "greedy"), body.get("rules")
        for k, v in (("opponent", opponent), ("rules", rules_name)):
            if v is not None and not isinstance(v, str):
                raise GameError(f"{k} must be a name, got {v!r}")
        allowed = [*preset_names(), rules] if isinstance(rules, str) else preset_names()
        if rules_name is not None and rules_name not in allowed:  # the page names presets; no file on the server is read for it
            raise GameError(f"rules must be one of {', '.join(dict.fromkeys(allowed))}, got {rules_name!r}")
        gid, s = games.new(opponent, rules_name, body.get("seed"), body.get("seat", 0))
        with s.lock:
            return {"id": gid, **s.state()}

    @app.get("/api/games/{gid}")
    def get_game(gid: str):
        s = games.get(gid)
        with s.lock:
            return {"id": gid, **s.state()}

    @app.post("/api/games/{gid}/move")
    async def move(gid: str, request: Request):
        s = games.get(gid)
        body = await body_of(request, "a move")
        with s.lock:
            s.play(body)
            return {"id": gid, **s.state()}

    @app.get("/api/games/{gid}/hint")
    def hint(gid: str):
        s = games.get(gid)
        with s.lock:
            return s.hint(games.solvers)

    return app


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="generala serve", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=positive_int, default=8000)
    p.add_argument("--rules", default="classic", help="the rules of a new game unless the page asks for others")
    p.add_argument("--max-games", type=positive_int, default=MAX_GAMES, help=f"games kept at once, the oldest forgotten first (default {MAX_GAMES})")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    require_extra("serve", SERVE_MODULES, "generala serve")
    if args.port > 65535:
        raise ValueError(f"--port must be from 1 to 65535, got {args.port}")
    import uvicorn

    app = make_app(args.rules, args.max_games)
    print(f"Generala at http://{args.host}:{args.port}/ (Ctrl-C stops)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Generala</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; background: #1c5e3e; color: #fafafa; }
.panel { background: #faf7ee; color: #222; padding: .8em 1em; border-radius: 6px; display: inline-block; vertical-align: top; margin: 0 1em 1em 0; }
button { font-size: 1em; margin: 2px; }
.die { font-size: 2.6em; width: 1.3em; height: 1.3em; line-height: 1; border: 3px solid #222; border-radius: 8px; background: #fff; cursor: pointer; padding: 0; }
.die.keep { background: #f2c430; border-color: #c81e1e; }
table { border-collapse: collapse; } td, th { border: 1px solid #bbb; padding: 2px 8px; text-align: right; }
td.l { text-align: left; } .crossed { color: #c81e1e; background: #f6d6d6; }
#log { max-height: 20em; overflow-y: auto; font-size: .9em; }
#error { color: #ffd0d0; min-height: 1.2em; } #status { font-size: 1.2em; font-weight: bold; }
</style></head><body>
<h1>Generala</h1>
<div id="setup">Opponent: <select id="opponent"><option value="">nobody (solo)</option></select>
 Rules: <select id="rules">{RULES_OPTIONS}</select>
 <button id="new-game">New game</button></div>
<p id="status">Choose an opponent and start a new game.</p>
<p id="error"></p>
<div class="panel" id="table-panel" hidden>
 <div id="dice"></div>
 <p>Rolls left: <b id="rolls-left"></b> <button id="reroll">Reroll the dice not kept</button> <button id="hint">Hint</button></p>
 <p id="hint-text"></p>
 <table id="sheet"></table>
</div>
<div class="panel" id="log-panel" hidden><b>Moves</b><ol id="log"></ol></div>
<script>
const PIPS = "\\u2680\\u2681\\u2682\\u2683\\u2684\\u2685";
let game = null, keep = new Set();
const $ = (id) => document.getElementById(id);
const esc = (t) => String(t).replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";");
async function call(method, url, body) {
  const r = await fetch(url, {method, headers: {"Content-Type": "application/json"}, body: body ? JSON.stringify(body) : undefined});
  const data = await r.json();
  if (!r.ok) { $("error").textContent = data.detail || ("error " + r.status); document.body.dataset.errors = (+(document.body.dataset.errors || 0)) + 1; return null; }
  $("error").textContent = ""; return data;
}
function show(g) {
  game = g; keep = new Set();
  document.body.dataset.shown = (+(document.body.dataset.shown || 0)) + 1;  // tests wait on this
  $("table-panel").hidden = false; $("log-panel").hidden = false;
  const dice = $("dice"); dice.innerHTML = "";
  g.dice.forEach((d, i) => {
    const b = document.createElement("button"); b.className = "die"; b.id = "die-" + i; b.textContent = PIPS[d - 1];
    b.title = d + (g.held[i] ? " (kept last roll)" : ""); b.dataset.face = d;
    b.onclick = () => { if (keep.has(i)) keep.delete(i); else keep.add(i); b.classList.toggle("keep"); };
    if (g.held[i] && g.can_reroll) { keep.add(i); b.classList.add("keep"); }
    dice.appendChild(b);
  });
  $("rolls-left").textContent = g.rolls_left;
  $("reroll").disabled = !g.can_reroll; $("hint").disabled = !g.your_move;
  $("hint-text").textContent = "";
  let rows = "<tr><th>line</th>" + g.players.map((p, s) => "<th>" + esc(p) + "</th>").join("") + "</tr>";
  g.lines.forEach((line, l) => {
    rows += "<tr><td class=l>" + line.replace(/_/g, " ") + "</td>";
    g.sheets.forEach((sheet, s) => {
      const v = sheet[l];
      if (v === null && s === g.seat && g.your_move && line in g.open_points) {
        rows += "<td><button class=write id='write-" + line + "' data-line='" + line + "'>" + g.open_points[line] + "</button></td>";
      } else if (v === 0) rows += "<td class=crossed>x</td>";
      else rows += "<td>" + (v === null ? "" : v) + "</td>";
    });
    rows += "</tr>";
  });
  rows += "<tr><th>total</th>" + g.totals.map((t, s) => "<th id='total-" + s + "'>" + t + "</th>").join("") + "</tr>";
  $("sheet").innerHTML = rows;
  document.querySelectorAll("button.write").forEach((b) => b.onclick = () => move({write: b.dataset.line}));
  $("log").innerHTML = g.log.map((m) => "<li>" + esc(m) + "</li>").join("");
  if (g.over) {
    const w = g.winners.map((s) => g.players[s]).join(" and ");
    $("status").textContent = "Game over: " + (g.players.length === 1 ? "you scored " + g.totals[0] : (g.winners.length > 1 ? "a shared win, " : "won by ") + w) + ".";
  } else $("status").textContent = g.your_move ? "Your move: click dice to keep them, then reroll, or click a line's points to write them." : "Waiting.";
}
async function move(m) { const g = await call("POST", "/api/games/" + game.id + "/move", m); if (g) show(g); }
$("new-game").onclick = async () => {
  const g = await call("POST", "/api/games", {opponent: $("opponent").value || null, rules: $("rules").value});
  if (g) show(g);
};
$("reroll").onclick = () => move({hold: [...keep]});
$("hint").onclick = async () => {
  const h = await call("GET", "/api/games/" + game.id + "/hint");
  if (!h) return;
  let t = "The optimal player would " + h.move + ": expected final total " + h.expected_total + ".";
  if (h.win_move) t += " To win: " + h.win_move + " (chance to win " + (100 * h.win_chance).toFixed(1) + "%).";
  if (h.win_note) t += " (" + h.win_note + ")";
  $("hint-text").textContent = t;
  document.body.dataset.hints = (+(document.body.dataset.hints || 0)) + 1;
};
call("GET", "/api/agents").then((a) => {
  if (!a) return;
  a.agents.forEach((n) => { const o = document.createElement("option"); o.value = n; o.textContent = n; $("opponent").appendChild(o); });
  $("opponent").value = a.agents.includes("greedy") ? "greedy" : "";
  $("rules").value = a.rules;
});
</script></body></html>
"""


if __name__ == "__main__":
    sys.exit(main())
