"""How opponents play in the vector env: the protocol (:class:`BatchedOpponent`) and its
two general players, uniform random (:class:`BatchedRandom`) and any single-env agent
called game by game (:class:`PerGameOpponent`). Agents that play many games at once, such
as :class:`generala_agents.batched.BatchedGreedy`, subclass :class:`BatchedOpponent`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from generala_env.compiled import batched as K
from generala_env.compiled.dice_stream import ROW, below, seeded_row
from generala_env.core.game import IllegalActionError
from generala_env.core.info import make_info
from generala_env.envs import opponents as opponents_registry

if TYPE_CHECKING:
    from generala_env.envs.env_core import EnvCore


class BatchedOpponent:
    """An opponent that picks actions for many games at once.

    ``act_batch(venv, games, masks)`` returns one action per game in ``games`` (index
    array), each game with the move; ``masks`` are their legal actions ``(n, A)``. ``venv`` is
    the env core of the games (:class:`generala_env.envs.env_core.EnvCore`: their state as arrays,
    ``seat``, ``num_envs``, ``game_view(i)``...), the vector env's ``core`` or a single env's.
    """

    name = "batched"
    # the single env reseeds this agent at every new game (it has ``act`` and ``reset``): each
    # game's generator then draws a seed for it, as the single env's does
    reseeded = True

    def reset(self, seed: int | None = None) -> None:
        """Called on ``reset(seed=...)`` of the vector env."""

    def seed_games(self, venv: EnvCore, games: np.ndarray, seeds: np.ndarray) -> None:
        """The seeds each of ``games`` (index array), just started, drew for its opponents:
        ``seeds[j, k]`` for the opponent in seat ``k`` after the agent's (in play order), the
        seed the single env hands that opponent's ``reset``; -1 where the seat's opponent is
        not reseeded. Only an opponent with randomness of its own needs them."""

    def games_started(self, venv: EnvCore, games: np.ndarray) -> None:
        """Called whenever ``games`` (index array) start, by ``reset()`` or by autoreset."""

    def act_batch(self, venv: EnvCore, games: np.ndarray, masks: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


def uniform_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """One uniformly drawn legal action per row of ``masks`` (every row must have one)."""
    return K.uniform_legal(masks, rng.random(len(masks)))


@K.cached_njit(error_model="numpy", _nrt=False)
def _seed_seats(games, seeds, pcg, seats):
    """Row ``games[j] * seats + k`` of ``pcg`` := the stream of ``default_rng(seeds[j, k])``
    where that seed was drawn (not -1)."""
    for j in range(len(games)):
        for k in range(seeds.shape[1]):
            if seeds[j, k] >= 0:
                seeded_row(pcg, games[j] * seats + k, seeds[j, k])


@K.cached_njit(error_model="numpy", _nrt=False)
def _random_legal(games, seat_after, masks, pcg, seats, out):
    """``RandomAgent.act``: the legal action ``legal[integers(len(legal))]`` of each game's mask,
    drawn from the stream of that game's seat (row ``games[j] * seats + seat_after[j]``)."""
    for j in range(len(games)):
        n = 0
        for a in range(masks.shape[1]):
            n += masks[j, a]
        pick = below(pcg, games[j] * seats + seat_after[j], n)
        for a in range(masks.shape[1]):
            if masks[j, a]:
                if pick == 0:
                    out[j] = a
                    break
                pick -= 1


class BatchedRandom(BatchedOpponent):
    """Uniform over legal actions, as :class:`generala_agents.baselines.RandomAgent` draws them:
    in each game and seat, from the stream of ``np.random.default_rng`` of the seed that game
    drew for it (:meth:`seed_games`; :mod:`generala_env.compiled.dice_stream`), so a game plays as in
    the single env. Games given their dice by a ``dice_source`` draw from the vector env's
    generator instead."""

    name = "random"

    def __init__(self) -> None:
        self.pcg = np.zeros((0, ROW), dtype=np.uint64)  # row g * (players - 1) + k: game g's seat k after the agent's

    def seed_games(self, venv, games, seeds):
        seats = venv.num_players - 1
        if len(self.pcg) != venv.num_envs * seats:
            self.pcg = np.zeros((venv.num_envs * seats, ROW), dtype=np.uint64)
        _seed_seats(games, seeds, self.pcg, seats)

    def act_batch(self, venv, games, masks):
        seats = venv.num_players - 1
        if len(self.pcg) != venv.num_envs * seats:
            return uniform_legal(venv.np_random, masks)
        out = np.empty(len(games), dtype=np.int64)
        _random_legal(games, (venv.player[games] - venv.seat[games] - 1) % venv.num_players, masks, self.pcg, seats, out)
        return out


class PerGameOpponent(BatchedOpponent):
    """Any ``(observation, info) -> action`` agent, called once per game with the single env's inputs.

    One agent object serves every game. The single env calls its ``reset()`` before each
    game; here it is called (without a seed: its own generator goes on) each time as many
    games have started as the vector env holds, so an agent that changes between games, such
    as a self-play pool picking up new checkpoints, changes here too.
    """

    def __init__(self, act: Callable, owner: Any = None):
        self.act = act
        self.owner = owner
        self.name = getattr(owner, "name", getattr(act, "__name__", type(act).__name__))
        self.started = 0  # games started since the owner's last reset
        self.reseeded = owner is not None and hasattr(owner, "reset")  # as the single env decides it

    def reset(self, seed=None):
        self.started = 0
        if self.owner is not None and hasattr(self.owner, "reset"):
            self.owner.reset(seed=seed)

    def seed_games(self, venv, games, seeds):
        """One game (a single env): the agent is reset with the seed its game drew for it, as the
        single env resets it; with many games its own generator goes on."""
        if venv.num_envs == 1 and self.reseeded:
            for k in range(seeds.shape[1]):
                if seeds[0, k] >= 0 and venv.opponents[venv.opponent_of[0, k]] is self:
                    self.owner.reset(seed=int(seeds[0, k]))

    def games_started(self, venv, games):
        if self.started >= venv.num_envs:
            self.reset()
        self.started += len(games)

    def act_batch(self, venv, games, masks):
        out = np.empty(len(games), dtype=np.int64)
        for j, i in enumerate(games):
            game = venv.game_view(int(i))
            out[j] = int(self.act(venv.encoder.encode(game, game.player), make_info(game, game.player)))
        return out


def play_opponents(venv: EnvCore, games: np.ndarray) -> None:
    """Opponents move in ``games`` until the agent has the move or the game is over.

    If an opponent fails (raises, or plays an illegal action), the error goes to the
    caller and the env refuses to step until ``reset()`` (``venv.halt`` says why): games
    stopped in an opponent's turn.
    """
    g = games[(venv.over[games] == 0) & (venv.player[games] != venv.seat[games])]
    who, illegal = "an opponent", None
    one = venv.num_envs == 1
    stopped = "the game stopped in its turn: call reset()" if one else "the games stopped in the opponents' turn: call reset()"
    try:
        while g.size:
            masks = venv._legal_masks(g)
            opp = venv.opponent_of[g, (venv.player[g] - venv.seat[g] - 1) % venv.num_players]
            actions = np.empty(len(g), dtype=np.int64)
            for j in np.unique(opp).tolist():
                sel = opp == j if len(venv.opponents) > 1 else slice(None)
                first = int(g[sel][0])
                who = f"opponent in seat {int(venv.player[first])} ({venv.opponents[j].name})" + ("" if one else f" of game {first}")
                actions[sel] = venv.opponents[j].act_batch(venv, g[sel], masks[sel])
            ok = (actions >= 0) & (actions < venv.num_actions)
            ok[ok] = masks[np.flatnonzero(ok), actions[ok]]
            if not ok.all():
                j = int(np.flatnonzero(~ok)[0])
                view = venv.game_view(int(g[j]))
                why = view.why_illegal(int(actions[j]))
                where = "" if one else f" of game {int(g[j])}"
                illegal = IllegalActionError(f"opponent in seat {view.player}{where} played illegal action {int(actions[j])}: {why}")
                raise illegal
            who = f"the dice of {who}'s move" if one else "the dice of the opponents' moves"
            venv._apply(g, actions)
            g = g[(venv.over[g] == 0) & (venv.player[g] != venv.seat[g])]
    except BaseException as err:
        venv.halt = f"{err}; {stopped}" if err is illegal else f"{who} raised {type(err).__name__}: {err}; {stopped}"
        raise


def seat_opponents(rules, num_players: int, num_games: int, opponents, mix, trust) -> tuple[list[BatchedOpponent], np.ndarray]:
    """The vector env's opponents, each once, and ``[game, k]``: the index of the one in seat ``k``
    after the agent's of each game, from ``opponents`` (one entry for every game) or ``mix``
    (game ``i`` plays entry ``i % len(mix)``); an entry is what the single env's ``opponents`` takes."""
    n = num_players - 1
    if mix is not None:
        if opponents is not None:
            raise ValueError("give opponents or opponent_mix, not both")
        if isinstance(mix, (str, bytes)) or not isinstance(mix, (list, tuple)) or not mix:
            raise ValueError(f"opponent_mix must be a non-empty list, got {mix!r}")
    if n == 0:
        if opponents not in (None, [], ()) or mix is not None:
            raise ValueError("opponents were given but num_players is 1")
        return [], np.zeros((num_games, 0), dtype=np.int64)
    entries = list(mix) if mix is not None else [opponents]
    agents: list[BatchedOpponent] = []
    known: dict[Any, int] = {}

    def index_of(spec) -> int:
        key = spec if isinstance(spec, str) else id(spec)
        if key not in known:
            known[key] = len(agents)
            agents.append(batched_opponent(spec, rules, trust))
        return known[key]

    rows = []
    for entry in entries:
        if entry is None:
            entry = "greedy"
        seats = [entry] * n if isinstance(entry, (str, bytes)) or not isinstance(entry, (list, tuple)) else list(entry)
        if len(seats) != n:
            raise ValueError(f"{n} opponent(s) needed for {num_players} players, got {len(seats)}")
        rows.append([index_of(s) for s in seats])
    table = np.array(rows, dtype=np.int64)
    return agents, table[np.arange(num_games) % len(table)]


def batched_opponent(spec, rules, trust) -> BatchedOpponent:
    """What plays ``spec`` (a name, an agent, a callable) for many games: its batched version if
    it has one, else the agent called game by game."""
    if isinstance(spec, BatchedOpponent):
        return spec
    if isinstance(spec, str):  # a name: its batched version if it has one, else the agent
        batched = opponents_registry.make_batched(spec, rules=rules, trust=trust)
        if batched is not None:
            return batched
        spec = opponents_registry.make(spec, rules=rules, trust=trust)
    batched = opponents_registry.batched_version(spec)
    if batched is not None:
        return batched
    if hasattr(spec, "act"):
        return PerGameOpponent(spec.act, owner=spec)
    if callable(spec):
        return PerGameOpponent(spec)
    raise ValueError(f"an opponent must be an agent name, an object with act(), or a callable, got {spec!r}")


__all__ = ["BatchedOpponent", "BatchedRandom", "PerGameOpponent", "batched_opponent", "play_opponents", "seat_opponents", "uniform_legal"]
