"""The games ``generala serve`` keeps: a new table from a request (its seats validated here, at
the boundary), the games by id with the least recently played forgotten first, and what the
games share: the agents offered for each rule set and number of players, and the agents'
tables, the process's (:mod:`generala_agents.shared`): the one-player solver, win-max's
distributions and the two-player table, each read or built once per rule set, read-only, by
one request while the others go on (the two-player table never solved in a request). A game
holds its own state and its agents' few scratch arrays only, and lets its agents go when it ends.

A new game is ``{"seats": [{"person": "Ana"}, {"agent": "win-max"}, ...], "rules": R, "seed":
S}`` (a table of 2 to 6 seats, or one person alone), or the older one-person form ``{"opponent":
"greedy", "seat": 0}`` (``opponent: null``: a solo game).
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from typing import Any

from generala_env.core.checks import is_whole

from .web_guard import ECHO, bounded, shown
from .web_table import GameError, Seat, WebTable

MAX_GAMES = 256  # games kept at once; the least recently played goes first
MAX_SEED = 2**63 - 1
MAX_SEATS = 6
MAX_NAME = 24  # characters of a person's name
HOW_NEW = (
    '{"seats": [{"person": "Ana"}, {"agent": "optimal"}], "rules": "classic", "seed": 0}, '
    'or {"opponent": "greedy", "rules": "classic", "seed": 0, "seat": 0}, each optional'
)
PREFERRED = ("win-max", "optimal")  # the default agent of a table's agent seats, the first offered


def person_name(value: Any, seat: int) -> str:
    """A person's name from a request: 1 to :data:`MAX_NAME` printable characters (spaces inside only)."""
    if not isinstance(value, str) or not value.strip() or len(value.strip()) > MAX_NAME or not value.strip().isprintable():
        raise GameError(f"seat {seat}: a person's name is 1 to {MAX_NAME} printable characters, got {shown(value)}")
    return value.strip()


class Games:
    """The games being played, by id (each with its own lock), the least recently played
    forgotten first beyond ``max_games``; and what the games share: the agents offered and
    the one-player solvers, one per rule set."""

    def __init__(self, rules="classic", max_games: int = MAX_GAMES):
        from generala_env.core.rules import load_rules, preset_names

        self.default = load_rules(rules)
        # the rule sets a request may name: the presets, and the server's own by the name it was given
        self.rule_names = [*preset_names(), *([rules] if isinstance(rules, str) and rules not in preset_names() else [])]
        self.max_games = max_games
        self._games: OrderedDict[str, WebTable] = OrderedDict()
        self._lock = threading.Lock()
        self._offered: dict[tuple[str, int], list[str]] = {}
        self._shared_lock = threading.Lock()

    def rules_of(self, name: Any):
        """The rule set a request names (``None``: the server's), from the list it serves only."""
        from generala_env.core.rules import load_rules

        if name is None:
            return self.default
        if not isinstance(name, str) or name not in self.rule_names:  # no file on the server is read for a request
            raise GameError(f"rules must be one of {', '.join(self.rule_names)}, got {shown(name)}")
        return load_rules(name)

    def offered(self, rules, players: int = 2) -> list[str]:
        """The agents offered for ``players``-player games of ``rules``: every registered agent
        that fits them (as far as its package says)."""
        import generala_agents as agents
        from generala_env.envs import opponents

        key = (rules.fingerprint(), players)
        with self._shared_lock:
            if key in self._offered:
                return self._offered[key]
        names = [n for n in agents.names() if opponents.cannot_play(n, rules, players) is None]  # reads files: not under the lock
        with self._shared_lock:
            return self._offered.setdefault(key, names)

    def default_agent(self, rules, players: int = 2) -> str | None:
        """The agent a table's agent seat gets unless one is chosen: ``win-max`` where it is
        registered, else ``optimal``."""
        offered = self.offered(rules, players)
        return next((n for n in PREFERRED if n in offered), offered[0] if offered else None)

    def solver(self, rules):
        """The one-player solver of ``rules`` (seconds to solve where it is not cached), the
        process's one (:func:`generala_agents.solver.shared_solver`): a solve of one rule set
        holds up only the requests that need it."""
        from generala_agents.solver import shared_solver

        return shared_solver(rules)[0]

    def agent(self, name: str, rules, players: int):
        """The agent ``name`` for a seat: offered for ``rules`` and ``players``, loaded as the web may (registered names only)."""
        import generala_agents as agents

        from .hints import two_player_table

        offered = self.offered(rules, players)
        if name not in offered:
            raise GameError(f"opponent {shown(name)} is not offered for {players}-player {rules.name!r} games; choose one of {', '.join(offered)}")
        if name == "optimal-2p":
            table = two_player_table(rules)  # never solves
            if isinstance(table, str):
                raise GameError(f"optimal-2p cannot play now: {table}", 409)
            return table
        try:
            return agents.load(name, rules=rules, trust=agents.Trust.WEB)
        except agents.AgentError as e:
            raise GameError(bounded(f"opponent {name} cannot play {rules.name!r}: {e}"), 409) from None

    def seats_of(self, body: dict, rules) -> list[Seat]:
        """The seats a new game's request asks for, each checked: people's names, agents from the list offered."""
        if "seats" not in body:  # one person, "you", against one agent or alone
            opponent, seat = body.get("opponent", "greedy"), body.get("seat", 0)
            if opponent is not None and (not isinstance(opponent, str) or not opponent):
                raise GameError(f"opponent must be an agent's name or null (a solo game), got {shown(opponent)}")
            if not is_whole(seat) or seat not in (0, 1) or (opponent is None and seat != 0):
                raise GameError(f"seat must be 0 or 1 (0 in a solo game), got {shown(seat)}")
            if opponent is None:
                return [Seat("you")]
            them = Seat(opponent, opponent, self.agent(opponent, rules, 2))
            return [Seat("you"), them] if seat == 0 else [them, Seat("you")]
        if "opponent" in body or "seat" in body:
            raise GameError("a new game takes seats, or opponent and seat, not both")
        given = body["seats"]
        if not isinstance(given, list) or not 1 <= len(given) <= MAX_SEATS:
            n = len(given) if isinstance(given, list) else shown(given)
            raise GameError(f"seats is a list of 2 to {MAX_SEATS} seats (or one person alone), got {n}")
        n = len(given)
        kinds = []
        for s, item in enumerate(given):
            if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in ("person", "agent"):
                raise GameError(f'seat {s} is {{"person": "a name"}} or {{"agent": "a listed agent"}}, got {shown(item)}')
            ((kind, value),) = item.items()
            if kind == "agent" and (not isinstance(value, str) or not value):
                raise GameError(f"seat {s}: an agent is a name from the list offered, got {shown(value)}")
            kinds.append((kind, person_name(value, s) if kind == "person" else value))
        people = [v for k, v in kinds if k == "person"]
        if not people:
            raise GameError("a table needs at least one person (a game of agents alone is 'generala evaluate' or 'generala replay')")
        if len({p.casefold() for p in people}) != len(people):
            raise GameError(f"each person at the table has a name of their own, got {bounded(', '.join(people), ECHO)}")
        seats: list[Seat] = []
        used: set[str] = set()
        for kind, value in kinds:
            label, k = value, 2
            while label.casefold() in used or (kind == "agent" and label.casefold() in {p.casefold() for p in people}):
                label, k = f"{value} {k}", k + 1
            used.add(label.casefold())
            seats.append(Seat(label) if kind == "person" else Seat(label, value, None))
        for chair in seats:  # loaded once every seat is checked
            if chair.agent_name is not None:
                chair.agent = self.agent(chair.agent_name, rules, n)
        return seats

    def start(self, body: dict) -> dict[str, Any]:
        """A new game from a request's body: its id and state."""
        unknown = set(body) - {"seats", "opponent", "rules", "seed", "seat"}
        if unknown:
            raise GameError(f"a new game takes seats, rules and seed (or opponent and seat), not {bounded(', '.join(sorted(unknown)), ECHO)}")
        rules = self.rules_of(body.get("rules"))
        seed = body.get("seed")
        if seed is None:
            seed = secrets.randbelow(2**31)
        if not is_whole(seed) or not 0 <= seed <= MAX_SEED:
            raise GameError(f"seed must be a whole number from 0 to 2**63 - 1, got {shown(seed)}")
        t = WebTable(rules, self.seats_of(body, rules), int(seed))
        gid = secrets.token_urlsafe(9)
        with self._lock:
            self._games[gid] = t
            while len(self._games) > self.max_games:
                self._games.popitem(last=False)
        with t.lock:
            return {"id": gid, **t.state()}

    def get(self, gid: str) -> WebTable:
        """The game ``gid``, now the most recently played."""
        with self._lock:
            t = self._games.get(gid)
            if t is not None:
                self._games.move_to_end(gid)
        if t is None:
            raise GameError(f"no game {shown(gid)} (a new server forgets old games, and one keeps the {self.max_games} last played): start a new one", 404)
        return t

    def state(self, gid: str) -> dict[str, Any]:
        t = self.get(gid)
        with t.lock:
            return {"id": gid, **t.state()}

    def move(self, gid: str, body: dict) -> dict[str, Any]:
        t = self.get(gid)
        with t.lock:
            t.play(body)
            return {"id": gid, **t.state()}

    def hint(self, gid: str) -> dict[str, Any]:
        t = self.get(gid)
        solver = self.solver(t.rules)
        with t.lock:
            return t.hint(solver)

    def replay(self, gid: str) -> str:
        """The finished game's replay page (HTML, self-contained)."""
        t = self.get(gid)
        with t.lock:
            if not t.game.over:
                raise GameError("the replay is ready once the game is over", 409)
        solver = self.solver(t.rules)
        with t.lock:
            return t.replay(solver)
