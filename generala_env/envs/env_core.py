"""The env core: N games of Generala and what an env does around the rules, once.

:class:`EnvCore` owns the games' state (a batched :class:`~generala_env.core.engine.GameState`), each
game's dice (its own stream, :mod:`generala_env.core.game_dice`, or dice given by a source), the
agent's seat, its streak of illegal actions, the opponents, and the observation, legal mask and
facts of every game. Its calls are what an env does:

* :meth:`EnvCore.seed` and :meth:`EnvCore.start`: new games, each drawing what a single env's
  ``reset()`` draws (the seat, the first roll, an exploring start, its opponents' seeds), then the
  opponents seated before the agent move;
* :meth:`EnvCore.step`: the agent's actions (an illegal one changes nothing, gives the penalty and
  counts toward the streak that truncates), the opponents' turns, the end of a game and its
  reward, and what the agent sees then (:func:`generala_env.compiled.env_loops.env_step`, one compiled
  call);
* :meth:`EnvCore.ended`, :meth:`EnvCore.moves`, :meth:`EnvCore.game_view`, :meth:`EnvCore.render`:
  the games that ended, the moves shown, one game as a :class:`~generala_env.core.game.Game`, and its
  picture or text.

:class:`generala_env.envs.vector.GeneralaVectorEnv` is the core at N games with autoreset;
:class:`generala_env.envs.env.GeneralaEnv` is the core at N = 1, whose one game is the env's
:class:`~generala_env.core.game.Game` (the core holds that game's own arrays); the PettingZoo env
(:mod:`generala_env.envs.multiagent`) drives it with every seat an agent (``every_seat=True``: the
agent is whoever has the move, and no opponents).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from generala_env.compiled import batched as K
from generala_env.compiled import env_loops as E
from generala_env.compiled.compiling import mark_read_only, restore_read_only
from generala_env.core.checks import MAX_ILLEGAL_IN_A_ROW, check_arguments, check_finite, check_max_illegal, check_share, is_whole
from generala_env.core.dice import DICE, DiceCup
from generala_env.core.encoding import Encoder
from generala_env.core.engine import MOVER, OPEN, POINTS, facts_size, new_state, numbers_of, state_of, tables
from generala_env.core.game import Game, IllegalActionError, _lookups
from generala_env.core.game_dice import GameDice, given_cups
from generala_env.core.rules import RuleSet
from generala_env.envs import opponents as opponents_registry
from generala_env.envs.episode import exploring_start
from generala_env.envs.vector_opponents import BatchedOpponent, play_opponents, seat_opponents

NOT_RESET = "reset() has not been called yet: call reset() before step() or render()"
RESET_FAILED = "the last reset() did not complete: call reset() again"

_NO_STREAMS = np.zeros((0, 6), dtype=np.uint64)  # given dice: no stream

Move = tuple[int, int, int, int]  # (seat, action, points, roll before the move), as the pictures list them


class EnvCore:
    """``num_games`` games and what an env does around them (see the module docstring).

    The arguments are the single env's (:class:`generala_env.envs.env.GeneralaEnv`), checked here, plus
    ``opponent_mix`` and ``dice_source`` (:class:`generala_env.envs.vector.GeneralaVectorEnv`'s),
    ``game`` (N = 1: the :class:`Game` whose arrays the core holds), ``every_seat`` (every seat an
    agent, the one with the move: the PettingZoo env; no opponents), ``record_moves`` (keep each
    game's moves since the agent's last decision: :meth:`moves`) and ``render_modes`` (those the
    driver offers). ``np_random`` is the driver's generator: games given their dice by a source
    draw their seats, exploring starts and opponents' seeds from it.
    """

    # many parameters: the envs' keyword arguments, each documented by the envs
    def __init__(
        self,
        num_games: int,
        rules: RuleSet,
        num_players: int = 1,
        opponents: Any | Sequence[Any] | None = None,
        reward: str = "score",
        agent_seat: int | str = 0,
        render_mode: str | None = None,
        illegal_action: str = "penalize",
        illegal_penalty: float = -1.0,
        exploring_starts: float = 0.0,
        max_illegal_in_a_row: int | None = MAX_ILLEGAL_IN_A_ROW,
        opponent_trust: opponents_registry.Trust | None = None,
        opponent_mix: Sequence[Any] | None = None,
        dice_source: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
        game: Game | None = None,
        every_seat: bool = False,
        record_moves: bool = False,
        render_modes: Sequence[str] = (),
    ):
        if not is_whole(num_games) or num_games < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_games!r}")
        self.num_envs = N = int(num_games)
        self.rules = rules
        if game is None:
            game = Game(rules, num_players)  # checks num_players
        elif N != 1:
            raise ValueError("a core holds a Game's arrays only for one game")
        self.game = game if N == 1 else None  # the one game, whose arrays are the core's
        self._template = game  # a blank for game_view()
        self.num_players = P = game.num_players
        self.num_lines = L = rules.num_lines
        self.num_actions = game.num_actions
        self.mover_is_agent = bool(every_seat)
        self.render_mode = check_arguments(P, reward, agent_seat, render_mode, render_modes, illegal_action, illegal_penalty)
        self.reward_mode, self.agent_seat_option, self.illegal_action = reward, agent_seat, illegal_action
        self.illegal_penalty = check_finite("illegal_penalty", illegal_penalty)
        self.exploring_starts = check_share("exploring_starts", exploring_starts)
        self.max_illegal_in_a_row = check_max_illegal(max_illegal_in_a_row)
        self.encoder = Encoder(rules, P)
        self._ints, self._floats = self.encoder.observe_tables
        self._rules = _lookups(rules, P).arrays  # packed, as the one-game calls take them
        self._tables, self._enc = tuple(tables(rules, P)), tuple(self.encoder.tables)

        # the state: N = 1 holds the game's own arrays, so the game is the core's one game (_views)
        if N != 1:
            state = new_state(N, P, L)
            self.numbers, self.sheets = numbers_of(state), state.sheets
            self.masks, self.facts = np.zeros((N, self.num_actions), dtype=bool), np.zeros((N, facts_size(P)), dtype=np.int64)
        self.env = np.zeros((len(E.ENV_ROWS), N), dtype=np.int64)  # the env's own numbers, rows of E.ENV_ROWS
        self._views()
        self.seat[:] = 0 if agent_seat == "random" else int(agent_seat)
        cap = -1 if self.max_illegal_in_a_row is None else self.max_illegal_in_a_row
        self.settings = np.array(
            [self.illegal_penalty, reward == "score", reward == "win", cap, illegal_action == "raise", N == 1, self.mover_is_agent, N == 1 or record_moves],
            dtype=np.float64,
        )
        self.found = np.zeros(E.ENDED_AT + N, dtype=np.int64)  # what the last step found (E.FOUND), then the games that ended
        self._final = np.zeros((N, P + 2), dtype=np.int64)  # where a driver that keeps no ends has them written
        self._sheet_obs = np.zeros((N, self.encoder.size), dtype=np.float32)  # each game's sheet slices, as of writes == _sheets_seen
        self._sheets_seen = np.full(N, -1, dtype=np.int64)
        self._no_rewards = np.zeros(N)  # where a look that ends no step writes no reward
        self._all = np.arange(N)
        self.dice = GameDice(N)  # each game's stream and cup
        self.dice_source = dice_source
        self.np_random: Any = None  # set by the driver
        self._drawing_from: Any = None  # a generator set by hand that the games draw from (draw_from)
        self.halt: str | None = NOT_RESET  # why step() cannot go on; None while it can
        # each game's opponents' moves since the agent's last move, when moves are recorded (moves())
        self._opponent_moves: list[list[Move]] | None = [[] for _ in range(N)] if record_moves else None
        self.env[E.ACTION] = -1
        if self.mover_is_agent and (opponents not in (None, [], ()) or opponent_mix is not None):
            raise ValueError("every seat is an agent: no opponents")
        self.opponents: list[BatchedOpponent]
        if self.mover_is_agent:
            self.opponents, self.opponent_of = [], np.zeros((N, 0), dtype=np.int64)
        else:
            trust = opponent_trust or opponents_registry.Trust.PROGRAM
            self.opponents, self.opponent_of = seat_opponents(rules, P, N, opponents, opponent_mix, trust)
        # [g, k]: the opponent in seat k after the agent's in game g is reseeded at a new game
        self._reseeded = np.array([o.reseeded for o in self.opponents], dtype=bool)[self.opponent_of] if self.opponents else np.zeros((N, 0), dtype=bool)

    # -- views of the arrays -------------------------------------------------------------
    def _views(self) -> None:
        """The state's fields and the env's rows as attributes (views of the arrays); N = 1: the
        game's own arrays."""
        if self.game is not None:
            g = self.game
            self.numbers, self.sheets, self.masks, self.facts = g._numbers, g._board, g._mask, g._facts.reshape(1, -1)
        self.state = state_of(self.numbers, self.sheets)
        self._state = tuple(self.state)
        self.roll, self.rolls_left, self.locked, self.player = self.state.roll, self.state.rolls_left, self.state.locked, self.state.player
        self.writes, self.over = self.state.writes, self.state.over
        self.served_generala_winner = self.state.winner  # seat, or -1
        self.seat, self.illegal_streak = self.env[E.SEAT], self.env[E.STREAK]

    _VIEWS = ("state", "_state", "roll", "rolls_left", "locked", "player", "writes", "over", "served_generala_winner", "seat", "illegal_streak")

    def __getstate__(self) -> dict:
        """Pickling: the arrays, not their views (a copy's views are made anew of its own arrays)."""
        state = {k: v for k, v in self.__dict__.items() if k not in self._VIEWS}
        if self.game is not None:  # the game carries them
            for k in ("numbers", "sheets", "masks", "facts"):
                state.pop(k, None)
        return mark_read_only(state)  # the tables stay read-only: one compiled version of each loop

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(restore_read_only(state))
        if self.game is None or "_numbers" in self.game.__dict__:  # else the env that holds the game links them (GeneralaEnv.__setstate__)
            self._views()

    @property
    def ended_before_move(self) -> np.ndarray:
        """Where an opponent's served generala ended a game before the agent's first move (bool, a new array)."""
        return self.env[E.EARLY_END] != 0

    # -- the games -----------------------------------------------------------------------
    def seed(self, seed) -> None:
        """Every game's stream anew (game ``i``: ``seed + i``, or ``seed[i]``), and each opponent
        reseeded from the driver's generator."""
        self.dice.seed(seed)
        for opp in self.opponents:
            opp.reset(seed=int(self.np_random.integers(2**63)))

    def start(self, games: np.ndarray, obs: np.ndarray) -> None:
        """New games in ``games``: each draws what a single env's ``reset()`` draws, in its order;
        the opponents seated before the agent move; what the agent sees into ``obs`` and the masks.
        If the dice or an opponent fail, the error goes to the caller and :attr:`halt` says why."""
        try:
            prefilled = self._draw_new_games(games)
        except BaseException as err:  # the ended games are left as they were: over
            self.halt = f"the dice of new games raised {type(err).__name__}: {err}; call reset()"
            raise
        for g, sheets in prefilled:  # exploring starts: some turns in
            self.sheets[g] = sheets
            self.writes[g] = int((sheets != OPEN).sum())
        if self._opponent_moves is not None:
            for g in games.tolist():
                self._opponent_moves[g] = []
        if self.opponents:
            self.env[E.ACTION, games] = -1  # no move of the agent yet (the opponents' moves are recorded after it)
            for opp in self.opponents:
                opp.games_started(self, games)
            play_opponents(self, games)
        self._look(games, obs, E.STARTED)  # the agent's streak and move cleared, its first look

    def _draw_new_games(self, games: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """New games in ``games``, each drawing from its own stream what a single env's ``reset()``
        draws, in its order (:mod:`generala_env.core.game_dice`): the seat, the first roll, the exploring
        start, the opponents' seeds; given dice: the rest from the driver's generator, in the same
        order. Returns the exploring starts' sheets, to be set once the games have started."""
        random_seat, p, P = self.agent_seat_option == "random", self.exploring_starts, self.num_players
        if self.dice_source is None:
            seeds, prefilled = self.dice.draw_new_games(games, self.seat, random_seat, self.rules, P, p, self._reseeded)
            K.new_games(games, self.dice.faces, self.dice.at, self._state, self._tables)
        else:
            rng = self.np_random
            if random_seat:  # one draw a game, as a single env draws its seat
                self.seat[games] = [int(rng.integers(P)) for _ in range(len(games))]
            faces, at = self._given_dice(games)
            K.new_games(games, faces, at, self._state, self._tables)
            prefilled, seeds = [], np.full((len(games), P - 1), -1, dtype=np.int64)
            for j, g in enumerate(games.tolist()):
                sheets = exploring_start(self.rules, P, p, rng)
                if sheets is not None:
                    prefilled.append((g, sheets))
                for k in np.flatnonzero(self._reseeded[g]).tolist():
                    seeds[j, k] = int(rng.integers(2**63))
        if self._reseeded.any():
            for opp in self.opponents:
                opp.seed_games(self, games, seeds)
        return prefilled

    def draw_from(self, rng) -> None:
        """The games' draws from ``rng`` (a generator set by hand on a single env: a numpy
        ``Generator`` drawn in blocks as a :class:`~generala_env.core.dice.DiceCup` draws, or a replay of
        recorded dice asked for each throw as it comes) until :meth:`draw_from_streams`."""
        cup = DiceCup(rng)

        def throws(games: np.ndarray, need: np.ndarray) -> np.ndarray:
            faces = np.ones((len(games), DICE), dtype=np.int64)
            for j, n in enumerate(need.tolist()):
                faces[j, :n] = cup.throw(n)
            return faces

        self.dice_source, self.np_random, self._drawing_from = throws, rng, rng

    def draw_from_streams(self, np_random) -> None:
        """The games' dice from their own streams again (the driver's generator, ``np_random``,
        seeds the opponents at :meth:`seed`)."""
        self.dice_source, self.np_random, self._drawing_from = None, np_random, None

    @property
    def drawing_from(self):
        """The generator set by hand that the games draw from (:meth:`draw_from`), or ``None``."""
        return self._drawing_from

    def _given_dice(self, games: np.ndarray, actions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Cups holding the throw ``dice_source`` gives each of ``games`` (:func:`~generala_env.core.game_dice.given_cups`)."""
        need = np.full(len(games), DICE)
        if actions is not None:
            K.dice_needed(games, actions, self.roll, self._tables, need)
        return given_cups(np.asarray(self.dice_source(games, need)), games, need, self.num_envs)  # type: ignore[misc]

    def _look(self, games: np.ndarray, obs: np.ndarray, mode: int, rewards: np.ndarray | None = None, final: np.ndarray | None = None) -> None:
        """:func:`~generala_env.compiled.env_loops.observe_games` of ``games`` into ``obs`` (``mode``: what
        it does besides looking at them)."""
        E.observe_games(
            games, mode, self.numbers, self.sheets, self._rules, self.env, self.settings, self.masks, self.facts,
            obs, self._sheet_obs, self._sheets_seen, self._ints, self._floats, rewards if rewards is not None else self._no_rewards, self.found,
            final if final is not None else self._final,
        )  # fmt: skip
        if self.game is not None:
            self.game._made = None

    def step(self, actions: np.ndarray, obs: np.ndarray, final: np.ndarray | None = None, given: list[int] | None = None) -> np.ndarray:
        """The agent's ``actions`` (int64, one a game) in every game, the opponents' turns after
        them, and what the agent sees then, into ``obs`` and the masks; the rewards. :attr:`found`
        and the rows of :attr:`env` say what happened (illegal, terminated, truncated), and
        :meth:`ended` which games ended, whose ends go into ``final`` ``(N, players + 2)``: each
        seat's total, the sole winner + 1 (0: none) and whether a served generala won
        (:func:`~generala_env.compiled.env_loops.end_of_game`; rows of other games are left as they
        were). With ``illegal_action="raise"`` an illegal action raises
        :class:`IllegalActionError` and changes nothing. ``given``: the actions as the env was
        given them, where one did not fit ``actions`` (:func:`~generala_env.core.checks.action_numbers`),
        to name it."""
        if final is None:
            final = self._final
        N = self.num_envs
        rewards = np.empty(N)
        faces, at, pcg = self.dice.faces, self.dice.at, self.dice.pcg
        if self.dice_source is not None:
            legal, playing = K.accepted(actions, self.masks), self.env[E.EARLY_END] == 0
            if self.illegal_action == "raise" and (playing & ~legal).any():
                self._raise_illegal(actions, given)
            acting = np.flatnonzero(legal & playing)
            faces, at = self._given_dice(acting, actions[acting])
            pcg = _NO_STREAMS
        if N == 1:  # one game: the tables packed (numba reads them faster)
            E.env_step(
                actions, self.numbers, self.sheets, self._rules, faces, at, pcg, self.env, self.settings, self.masks, self.facts,
                obs, self._sheet_obs, self._sheets_seen, self._ints, self._floats, rewards, self.found, final,
            )  # fmt: skip
        else:  # many: the tables in their own types (lighter on the cache)
            E.env_step_many(
                actions, self._state, self._tables, self._enc, faces, at, pcg, self.env, self.settings, self.masks, self.facts,
                obs, self._sheet_obs, self._sheets_seen, rewards, self.found, final,
            )  # fmt: skip
        found = self.found
        if self.game is not None:
            self.game._made = None
        if found[E.N_ILLEGAL] and self.illegal_action == "raise":
            self._raise_illegal(actions, given)
        if self._opponent_moves is not None and self.opponents:  # where the agent moved, the opponents' moves are those after it
            for g in np.flatnonzero((self.env[E.ILLEGAL] == 0) & (self.env[E.EARLY_END] == 0)).tolist():
                self._opponent_moves[g] = []
        if found[E.N_WAITING]:
            waiting = np.flatnonzero(self.env[E.WAITING])
            play_opponents(self, waiting)
            self._look(waiting, obs, E.FINISH, rewards=rewards, final=final)
        return rewards

    def _raise_illegal(self, actions: np.ndarray, given: list[int] | None = None) -> None:
        bad = ~K.accepted(actions, self.masks) & (self.env[E.EARLY_END] == 0)
        j = int(np.flatnonzero(bad)[0])
        why = self.game_view(j).why_illegal(int(actions[j]) if given is None else given[j])
        raise IllegalActionError(why if self.num_envs == 1 and why else f"game {j}: {why}")

    def moves(self, g: int) -> list[Move]:
        """Game ``g``'s moves since the agent's last decision, its own first, as the pictures list
        them: ``(seat, action, points, roll before the move)`` (kept when moves are recorded)."""
        if self._opponent_moves is None:
            return []
        own = []
        a = int(self.env[E.ACTION, g])
        if a >= 0:
            f = self.facts[g]
            own = [(int(f[MOVER]), a, int(f[POINTS]), int(self.env[E.ROLL_BEFORE, g]))]
        return own + self._opponent_moves[g]

    def opponent_moves(self, g: int) -> list[tuple[int, int, int]]:
        """Game ``g``'s opponents' ``(seat, action, points)`` since the agent's last move."""
        return [m[:3] for m in self._opponent_moves[g]] if self._opponent_moves is not None else []

    # -- what the opponents' turns use ---------------------------------------------------
    def _legal_masks(self, games: np.ndarray) -> np.ndarray:
        """The legal mask of each of ``games`` (for whoever has the move), ``(n, A)``."""
        m = np.empty((len(games), self.num_actions), dtype=bool)
        K.legal_masks(games, m, self._state, self._tables)
        return m

    def _apply(self, games: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """One legal action in each of ``games``; the points written (0 for rerolls)."""
        n = len(games)
        pts, short = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        before = (self.player[games].tolist(), self.roll[games].tolist()) if self._opponent_moves is not None else None
        if self.dice_source is not None:
            faces, at = self._given_dice(games, actions)
            K.apply_actions(games, actions, faces, at, _NO_STREAMS, self._state, self._tables, pts, short)
        else:
            K.apply_actions(games, actions, self.dice.faces, self.dice.at, self.dice.pcg, self._state, self._tables, pts, short)
        if before is not None and self._opponent_moves is not None:
            for j, g in enumerate(games.tolist()):
                self._opponent_moves[g].append((before[0][j], int(actions[j]), int(pts[j]), before[1][j]))
        return pts

    # -- reading -------------------------------------------------------------------------
    def ended(self) -> np.ndarray:
        """The games that ended at the last step (terminated or truncated), in the order found (a new array)."""
        return self.found[E.ENDED_AT : E.ENDED_AT + self.found[E.N_ENDED]].copy()

    def game_view(self, i: int) -> Game:
        """A copy of game ``i`` as a :class:`Game` (for per-game agents, rendering and messages)."""
        g = self._template.clone()
        g._numbers[:, 0] = self.numbers[:, i]
        g._board[0] = self.sheets[i]
        g._look()
        return g

    def render(self, i: int, scale: int = 2, moves: Sequence[Move] | None = None):
        """Game ``i`` from the agent's seat: text (``render_mode`` ``"ansi"`` or ``"human"``) or an
        ``uint8 (H, W, 3)`` picture (``"rgb_array"``, with ``moves``, by default the game's
        recorded moves); ``None`` without a render mode."""
        if self.render_mode is None:
            return None
        if self.halt in (NOT_RESET, RESET_FAILED):
            raise RuntimeError(f"render() has nothing to show: {self.halt}")
        game = self.game if self.game is not None else self.game_view(i)
        seat = None if self.mover_is_agent else int(self.seat[i])
        if self.render_mode == "rgb_array":  # the picture (the human mode's text is printed by the driver)
            from generala_env.rendering.picture import render_rgb

            shown = moves if moves is not None else self.moves(i)
            return render_rgb(game, seat=seat, moves=shown, scale=scale)
        from generala_env.rendering.render import render_text

        return render_text(game, seat=seat)


__all__ = ["NOT_RESET", "RESET_FAILED", "BatchedOpponent", "EnvCore"]
