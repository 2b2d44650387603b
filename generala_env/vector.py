"""``GeneralaVectorEnv``: N games of ``Generala-v0`` stepped at once with array operations.

The state of every game lives in a few NumPy arrays indexed by game (``roll``,
``rolls_left``, ``locked``, ``player``, ``sheets``...; read them, don't write them), and a
step is a handful of compiled loops over the games (:mod:`generala_env.batched`). It is the
same game as :class:`generala_env.env.GeneralaEnv` (the same tables from
:mod:`generala_env.dice` and :mod:`generala_env.scoring`, the same observation layout as
:class:`generala_env.encoding.Encoder`, rewards, masks and illegal-action policy);
``tests/test_vector.py`` checks it observation for observation against N single envs fed the
same dice.

## Seeding
Each game draws from its own generator (:mod:`generala_env.game_dice`), as Gymnasium's
``SyncVectorEnv`` seeds its envs: after ``reset(seed=s)`` game ``i`` plays exactly what
``gym.make("Generala-v0", ...)`` plays after ``reset(seed=s + i)``, episode after episode
(its seat, dice, exploring starts and its ``"random"`` opponents' choices;
``tests/test_same_games.py``). ``reset(seed=[s0, s1, ...])`` seeds game by game.

::

    import gymnasium as gym, generala_env
    envs = gym.make_vec("Generala-v0", num_envs=1024, vectorization_mode="vector_entry_point",
                        rules="classic", num_players=2, opponents="greedy")
    obs, info = envs.reset(seed=0)
    masks = envs.action_masks()                      # (N, 32 + L) bool
    obs, reward, terminated, truncated, info = envs.step(actions)

For stable-baselines3 / sb3-contrib use :func:`make_sb3_vec_env` (:mod:`generala_env.sb3`).

## Autoreset
``metadata["autoreset_mode"]`` is :attr:`gymnasium.vector.AutoresetMode.SAME_STEP` (what
SB3 expects): a game that ends is reset inside the same ``step``; the returned row is the
new game's first observation, and the ending observation and info are in
``info["final_obs"]`` (an object array of rows, ``None`` for games that go on, as
Gymnasium's ``SyncVectorEnv`` gives) and ``info["final_info"]``, flagged by
``info["_final_obs"]``. ``reset(options={"reset_mask": m})`` resets only the games where
``m`` is true.

A game whose agent played ``max_illegal_in_a_row`` illegal actions in a row (default 100,
as in the single env; ``None``: no cap) is truncated: ``truncated[i]`` is true and the game
is reset the same way, its ``final_info`` winner ``-1``.

## Observations
``obs_type="flat"`` (default): ``(N, n)`` float32. ``obs_type="dict"``: ``{"observation":
(N, n) float32, "action_mask": (N, 32 + L) int8}``, the single env's dict batched; each
``final_obs`` row is then a dict too, whose mask marks every action if the game ended (as
the single env's final mask does).

## Information
Arrays over the N games, present at every step (each with its ``_key`` flags, as
Gymnasium's vector envs give): ``illegal_action``, ``seat``, and ``game_over``, true where
an opponent's served generala ended a game before the agent's first move (its next step
ends the episode, as in the single env). With ``full_info=True`` also the single env's
``action_mask`` (int8), ``dice`` (sorted faces), ``rolls_left``, ``turn`` and ``totals``
(``N x players``); they cost time at every step, so they are off by default.
``final_info`` holds ``totals``, ``winner`` (seat, ``-1`` on a shared win or a truncated
game) and ``served_generala_win``. The single env's ``opponent_moves`` and
``illegal_reason`` are not produced.

## Opponents
Names are looked up in :mod:`generala_env.opponents`. A name registered with a batched
version (the project's ``"greedy"`` and ``"random"``), or an agent object of such a name's
exact class, is played batched: a :class:`BatchedOpponent` picks for every game at once
what the agent would pick (``"random"`` is :class:`BatchedRandom`, a uniform choice among
legal actions from each game's seed for it, as the single env seeds it). Any other agent or
callable is called game by game with the single env's ``(observation, info)``; one object
serves every game, so it must not keep per-game state, and a game with an opponent that
draws from its own generator plays the single env's game only while it draws the same. If an opponent raises (or
plays an illegal action) inside ``step()`` or ``reset()``, the error reaches the caller
and the games stop in the opponents' turn: ``step()`` then raises ``RuntimeError``
naming the opponent until ``reset()``. ``step()`` and ``render()`` before the first
``reset()`` raise ``RuntimeError`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import batched as K
from . import opponents as opponents_registry
from .checks import MAX_ILLEGAL_IN_A_ROW, check_arguments, check_finite, check_max_illegal, check_obs_type, check_share, is_whole
from .dice import DICE, NUM_MASKS, ROLLS
from .dice_stream import CUP
from .encoding import Encoder
from .engine import OPEN, new_state, numbers_of, tables
from .env import NOT_RESET, RESET_FAILED, observation_space
from .episode import exploring_start, final_mask, next_streak, truncates
from .game import Game, IllegalActionError
from .game_dice import GameDice, given_cups
from .rules import RuleSet, load_rules
from .scoring import sheet_totals
from .vector_opponents import BatchedOpponent, BatchedRandom, PerGameOpponent, play_opponents, seat_opponents, uniform_legal  # noqa: F401  (re-exported)

_NO_STREAMS, _NO_CUPS = np.zeros((0, 6), dtype=np.uint64), np.zeros((0, CUP), dtype=np.uint64)  # given dice: no stream, no cup
_NO_FACES, _NO_AT = np.zeros((0, 5), dtype=np.int8), np.zeros((0, 2), dtype=np.int64)  # dice from the streams: none given


# -- the vector env -------------------------------------------------------------------------
class GeneralaVectorEnv(VectorEnv):
    """
    ## Description
    ``num_envs`` games of ``Generala-v0`` stepped together; every argument but
    ``num_envs``, ``opponent_mix``, ``full_info`` and ``dice_source`` means what it means for
    :class:`generala_env.env.GeneralaEnv`, and each game behaves exactly like one
    ``GeneralaEnv`` (see the module docstring for autoreset, info and opponents).

    ## Spaces
    ``single_action_space = Discrete(32 + L)``, ``action_space = MultiDiscrete([32 + L] * N)``;
    ``single_observation_space`` is the single env's (the ``Box``, or the ``Dict`` with
    ``obs_type="dict"``), batched over the N games.
    ``action_masks()`` gives the legal actions of every game, ``(N, 32 + L)`` bool.

    ## Arguments
    ```python
    GeneralaVectorEnv(num_envs=256, rules="double", num_players=2, opponents="greedy",
                      reward="win", agent_seat="random")
    ```
    - ``opponent_mix``: instead of ``opponents``, a list whose entries are each what
      ``opponents`` takes; game ``i`` plays entry ``i % len(opponent_mix)``.
    - ``opponent_trust``: what an opponent given by name may do, as for ``GeneralaEnv``.
    - ``full_info``: add the per-step info arrays listed in the module docstring.
    - ``exploring_starts``: as for ``GeneralaEnv``, drawn from each game's generator.
    - ``dice_source``: ``(games, need) -> faces`` with ``faces`` of shape ``(len(games), 5)``;
      game ``games[j]`` uses the first ``need[j]`` faces. A write always needs 5 (the next
      player's first roll, drawn even when the game ends, as the single env does). The
      default draws from each game's generator; tests replay given dice through it (the
      seats and exploring starts then come from ``np_random``).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    _halt: str | None = None  # set per env in __init__; the class default serves envs pickled before it existed

    # many parameters: the single env's keyword arguments plus the vector env's own four
    def __init__(
        self,
        num_envs: int = 1,
        rules: str | RuleSet | dict | None = "classic",
        num_players: int = 1,
        opponents: Any | Sequence[Any] | None = None,
        reward: str = "score",
        agent_seat: int | str = 0,
        render_mode: str | None = None,
        illegal_action: str = "penalize",
        illegal_penalty: float = -1.0,
        opponent_mix: Sequence[Any] | None = None,
        dice_source: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
        full_info: bool = False,
        exploring_starts: float = 0.0,
        obs_type: str = "flat",
        max_illegal_in_a_row: int | None = MAX_ILLEGAL_IN_A_ROW,
        render_scale: int = 2,
        opponent_trust: opponents_registry.Trust | None = None,
    ):
        if not is_whole(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.num_envs = N = int(num_envs)
        self.rules = load_rules(rules)
        self._template = Game(self.rules, num_players)  # validates num_players; a blank for game_view()
        self.num_players = P = self._template.num_players
        self.num_lines = L = self.rules.num_lines
        self.num_actions = A = NUM_MASKS + L
        self.obs_type = check_obs_type(obs_type)
        self.max_illegal_in_a_row = check_max_illegal(max_illegal_in_a_row)
        self.render_mode = check_arguments(P, reward, agent_seat, render_mode, self.metadata["render_modes"], illegal_action, illegal_penalty)
        from .picture import check_scale

        self.render_scale = check_scale(render_scale)
        self.reward_mode = reward
        self.agent_seat_option = agent_seat
        self.illegal_action = illegal_action
        self.illegal_penalty = check_finite("illegal_penalty", illegal_penalty)
        self.exploring_starts = check_share("exploring_starts", exploring_starts)
        self._dice_source = dice_source
        self.full_info = bool(full_info)

        self.encoder = Encoder(self.rules, P)
        self.single_observation_space = observation_space(self.encoder.size, A, self.obs_type)
        self._dict_obs = self.obs_type == "dict"
        self.single_action_space = spaces.Discrete(A)
        self.observation_space = batch_space(self.single_observation_space, N)
        self.action_space = batch_space(self.single_action_space, N)

        # the state of every game (its fields are also attributes: roll, rolls_left, ..., sheets)
        self.state = new_state(N, P, L)
        self._numbers = numbers_of(self.state)  # the state's numbers: one row per field
        self.roll, self.rolls_left, self.locked, self.player = self.state.roll, self.state.rolls_left, self.state.locked, self.state.player
        self.writes, self.over, self.sheets = self.state.writes, self.state.over, self.state.sheets
        self.served_generala_winner = self.state.winner  # seat, or -1
        self.seat = np.full(N, 0 if agent_seat == "random" else int(agent_seat), dtype=np.int64)
        # what the loops take: plain tuples of the state, the rules' and the encoding's tables
        self._state, self._tables, self._enc = tuple(self.state), tuple(tables(self.rules, P)), tuple(self.encoder.tables)
        self.ended_before_move = np.zeros(N, dtype=bool)  # an opponent's served generala ended it
        self.illegal_streak = np.zeros(N, dtype=np.int64)  # the agent's illegal actions in a row
        self._halt: str | None = NOT_RESET  # why step() cannot go on; None while it can
        # each game's observation slices that only the sheets decide, as of writes == _sheets_seen
        self._sheet_obs = np.zeros((N, self.encoder.size), dtype=np.float32)
        self._sheets_seen = np.full(N, -1, dtype=np.int64)
        self._all = np.arange(N)
        self._masks = np.zeros((N, A), dtype=bool)
        self._game_dice = GameDice(N)  # each game's generator and cup
        self._every = np.ones(N, dtype=bool)
        self._every.setflags(write=False)

        self._opponents, self._opponent_of = seat_opponents(self.rules, P, N, opponents, opponent_mix, opponent_trust or opponents_registry.Trust.PROGRAM)
        # [g, k]: the opponent in seat k after the agent's in game g is reseeded at a new game
        self._reseeded = np.array([opp.reseeded for opp in self._opponents], dtype=bool)[self._opponent_of] if self._opponents else np.zeros((N, 0), dtype=bool)

    # -- opponents ----------------------------------------------------------------------
    @property
    def batched_opponents(self) -> tuple[BatchedOpponent, ...]:
        """The opponents that play in these games, each once (a name or agent given for several
        seats or games is one opponent)."""
        return tuple(self._opponents)

    @property
    def opponent_of(self) -> np.ndarray:
        """``opponent_of[i, k]``: the index in :attr:`batched_opponents` of the opponent in seat
        ``k`` after the agent's (in play order) of game ``i``, ``(N, players - 1)``, read-only."""
        view = self._opponent_of.view()
        view.flags.writeable = False
        return view

    def _play_opponents(self, games: np.ndarray) -> None:
        """Opponents move in ``games`` until the agent has the move (:func:`~generala_env.vector_opponents.play_opponents`)."""
        if self._opponents:
            play_opponents(self, games)

    # -- the game, for many games at once ------------------------------------------------
    def _given_dice(self, games: np.ndarray, actions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Cups holding the throw ``dice_source`` gives each of ``games`` (:func:`~generala_env.game_dice.given_cups`)."""
        need = np.full(len(games), DICE)
        if actions is not None:
            K.dice_needed(games, actions, self.roll, self._tables, need)
        return given_cups(np.asarray(self._dice_source(games, need)), games, need, self.num_envs)  # type: ignore[misc]

    def _legal_masks(self, games: np.ndarray) -> np.ndarray:
        """``Game.legal_mask`` of each game (for whoever has the move), ``(n, A)``."""
        m = np.empty((len(games), self.num_actions), dtype=bool)
        K.legal_masks(games, m, self._state, self._tables)
        return m

    def _apply(self, games: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Apply one legal action in each of ``games``; the points written (0 for rerolls)."""
        n = len(games)
        pts, short = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        if self._dice_source is not None:
            faces, at = self._given_dice(games, actions)
            K.apply_actions(games, actions, faces, at, _NO_STREAMS, _NO_CUPS, self._state, self._tables, pts, short)
            return pts
        d = self._game_dice
        K.apply_actions(games, actions, _NO_FACES, _NO_AT, d.pcg, d.cups, self._state, self._tables, pts, short)
        return pts

    def _reset_games(self, games: np.ndarray) -> None:
        shown = getattr(self, "_shown", None)
        if shown is not None:  # a new game has no last move to show
            shown[2][games] = False
        try:
            prefilled = self._draw_new_games(games)
        except BaseException as err:  # the ended games are left as they were: over
            self._halt = f"the dice of new games raised {type(err).__name__}: {err}; call reset()"
            raise
        self._sheets_seen[games] = -1  # the encoder's sheet slices are those of the old games
        for g, sheets in prefilled:  # exploring starts: some turns in
            self.sheets[g] = sheets
            self.writes[g] = int((sheets != OPEN).sum())
        self.illegal_streak[games] = 0
        for opp in self._opponents:
            opp.games_started(self, games)
        self._play_opponents(games)
        self.ended_before_move[games] = self.over[games] != 0

    def _draw_new_games(self, games: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """New games in ``games``, each drawing from its own generator what a single env's
        ``reset()`` draws, in its order (:mod:`generala_env.game_dice`): the seat, the first
        roll, the exploring start, the opponents' seeds. Returns the exploring starts' sheets,
        to be set once the games have started."""
        random_seat, p = self.agent_seat_option == "random", self.exploring_starts
        prefilled: list[tuple[int, np.ndarray]] = []
        if self._dice_source is not None:  # given dice: the rest from the env's generator
            if random_seat:
                self.seat[games] = self.np_random.integers(self.num_players, size=len(games))
            faces, at = self._given_dice(games)
            K.new_games(games, faces, at, _NO_CUPS, self._state, self._tables)
            for g in games.tolist():
                sheets = exploring_start(self.rules, self.num_players, p, self.np_random)
                if sheets is not None:
                    prefilled.append((g, sheets))
            return prefilled
        seeds, prefilled = self._game_dice.draw_new_games(games, self.seat, random_seat, self.rules, self.num_players, p, self._reseeded)
        d = self._game_dice
        K.new_games(games, _NO_FACES, _NO_AT, d.cups, self._state, self._tables)
        if self._reseeded.any():
            for opp in self._opponents:
                opp.seed_games(self, games, seeds)
        return prefilled

    def _results(self, games: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Totals ``(n, players)``, winner (``-1`` on a shared win) and the agent's win reward of ended games."""
        totals = np.empty((len(games), self.num_players), dtype=np.int64)
        winner = np.empty(len(games), dtype=np.int64)
        win_reward = np.empty(len(games))
        K.results(games, self.seat, self._state, self._tables, totals, winner, win_reward)
        return totals, winner, win_reward

    # -- observations -------------------------------------------------------------------
    def _encode(self, games: np.ndarray) -> np.ndarray:
        """The observations of ``games`` from the agent's seat, ``(n, size)``."""
        out = np.empty((len(games), self.encoder.size), dtype=np.float32)
        K.encode(games, self.seat, out, self._sheet_obs, self._sheets_seen, self._state, self._tables, self._enc)
        return out

    def _observation(self, encoded: np.ndarray):
        """What the agent observes of every game, from ``_encode`` of all games and ``_masks``."""
        return {"observation": encoded, "action_mask": self._masks.astype(np.int8)} if self._dict_obs else encoded

    def _agent_masks(self) -> np.ndarray:
        m = self._legal_masks(self._all)
        if self.ended_before_move.any():
            m[self.ended_before_move] = True
        return m

    def _info(self, illegal: np.ndarray) -> dict[str, Any]:
        info: dict[str, Any] = {"illegal_action": illegal, "seat": self.seat.copy()}
        if self.full_info:
            info.update(
                action_mask=self._masks.astype(np.int8),
                dice=ROLLS[self.roll],
                rolls_left=self.rolls_left.copy(),
                turn=(self.sheets[self._all, self.player] != OPEN).sum(axis=1),
                totals=sheet_totals(self.sheets),
            )
        info["game_over"] = self.ended_before_move.copy()
        for k in list(info):
            info["_" + k] = self._every
        return info

    # -- Gymnasium VectorEnv API ----------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        games = self._all
        if options and options.get("reset_mask") is not None:
            mask = np.asarray(options["reset_mask"], dtype=bool)
            if mask.shape != (self.num_envs,):
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},)")
            games = np.flatnonzero(mask)
        previous, self._halt = self._halt, RESET_FAILED  # until this reset completes (an opponent's failure says more)
        super().reset(seed=None if seed is None or isinstance(seed, (int, np.integer)) else int(np.asarray(seed).reshape(-1)[0]))
        if seed is not None:
            self._game_dice.seed(seed)
            for opp in self._opponents:
                opp.reset(seed=int(self.np_random.integers(2**63)))
        self._reset_games(games)
        # a partial reset leaves the other games as they were: still unstarted, or stopped by a failure
        over = self.over != 0
        stuck = (over & ~self.ended_before_move) | (~over & (self.player != self.seat))
        self._halt = (previous or RESET_FAILED) if stuck.any() else None
        self._masks = self._agent_masks()
        return self._observation(self._encode(self._all)), self._info(np.zeros(self.num_envs, dtype=bool))

    # long: the checks, the agent's moves, the opponents' and the autoreset of ended games, in order
    def step(self, actions):
        if self._halt is not None:
            raise RuntimeError(f"step() cannot go on: {self._halt}")
        a = np.asarray(actions)
        if a.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {a.shape}")
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be integers from 0 to {self.num_actions - 1}, got dtype {a.dtype}")
        a = a.astype(np.int64, copy=False)
        ebm = self.ended_before_move
        legal = K.accepted(a, self._masks)
        illegal = ~legal & ~ebm
        if self.illegal_action == "raise" and illegal.any():
            j = int(np.flatnonzero(illegal)[0])
            why = self.game_view(j).why_illegal(int(a[j]))
            raise IllegalActionError(f"game {j}: {why}")

        rewards = np.zeros(self.num_envs)
        self.illegal_streak[:] = next_streak(self.illegal_streak, illegal)
        truncated = truncates(self.illegal_streak, self.max_illegal_in_a_row)
        if self.render_mode == "rgb_array":  # what the pictures show as each game's last move
            self._shown = (a.copy(), self.roll.copy(), legal & ~ebm, self.seat.copy())
        if legal.all() and not ebm.any():  # the usual case: every game takes its action
            pts = self._apply(self._all, a)
            if self.reward_mode == "score":
                rewards = pts.astype(np.float64)
            self._play_opponents(self._all)
        else:
            rewards[illegal] = self.illegal_penalty
            acting = np.flatnonzero(legal & ~ebm)
            if acting.size:
                pts = self._apply(acting, a[acting])
                if self.reward_mode == "score":
                    rewards[acting] = pts
                self._play_opponents(acting)
        terminated = self.over != 0  # games that ended now, and those that ended before the agent moved
        truncated &= ~terminated
        done = terminated | truncated
        ended = np.flatnonzero(done)
        final = None
        if ended.size:
            over = terminated[ended]
            totals, winner, win_reward = self._results(ended)
            if self.reward_mode == "win":
                rewards[ended[over]] = win_reward[over]
            final_obs = np.empty(self.num_envs, dtype=object)  # None where the game goes on
            for i, row, ended_now in zip(ended.tolist(), self._encode(ended), over.tolist(), strict=True):
                if self._dict_obs:  # a game that is over marks every action, as the single env's does
                    mask = final_mask(self.num_actions, np.int8) if ended_now else self._masks[i].astype(np.int8)
                    row = {"observation": row, "action_mask": mask}
                final_obs[i] = row
            final_info = {"totals": np.zeros((self.num_envs, self.num_players), dtype=np.int64), "winner": np.full(self.num_envs, -1)}
            final_info["totals"][ended], final_info["winner"][ended] = totals, np.where(over, winner, -1)
            final_info["served_generala_win"] = terminated & (self.served_generala_winner >= 0)
            for k in list(final_info):
                final_info["_" + k] = done
            final = (final_obs, final_info)
            self._reset_games(ended)
        encoded = self._encode(self._all)
        self._masks = self._agent_masks()
        info = self._info(illegal)
        if final is not None:
            info["final_obs"], info["final_info"] = final
            info["_final_obs"] = info["_final_info"] = done
        return self._observation(encoded), rewards, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Legal actions of every game, ``(N, 32 + L)`` bool (all true where a game ended before the agent's move)."""
        return self._masks.copy()

    def render(self, games=None) -> tuple | None:
        """Each game as text (``render_mode="ansi"``) or as an ``uint8 (H, W, 3)`` picture
        (``"rgb_array"``: :func:`~generala_env.picture.render_rgb`, with the agent's last
        action of a game not reset since); ``games``: the indices of the games to show
        (default all of them)."""
        if self.render_mode is None:
            return None
        if self._halt in (NOT_RESET, RESET_FAILED):
            raise RuntimeError(f"render() has nothing to show: {self._halt}")
        idx = range(self.num_envs) if games is None else [int(i) for i in np.asarray(games, dtype=np.int64).reshape(-1)]
        bad = [i for i in idx if not 0 <= i < self.num_envs]
        if bad:
            raise ValueError(f"games must be indices from 0 to {self.num_envs - 1}, got {bad}")
        if self.render_mode == "rgb_array":
            from .picture import render_rgb

            scale = getattr(self, "render_scale", 2)
            return tuple(render_rgb(self.game_view(i), seat=int(self.seat[i]), moves=self._shown_move(i), scale=scale) for i in idx)
        from .render import render_text

        return tuple(render_text(self.game_view(i), seat=int(self.seat[i])) for i in idx)

    def _shown_move(self, i: int) -> list[tuple[int, int, int, int]]:
        """The agent's last move in game ``i`` as the picture lists it; none if the game
        was reset since (autoreset) or the action was not played."""
        shown = getattr(self, "_shown", None)
        if shown is None:
            return []
        actions, rolls, played, seats = shown
        if not played[i]:
            return []
        a = int(actions[i])
        points = int(self.sheets[i, int(seats[i]), a - NUM_MASKS]) if a >= NUM_MASKS else 0
        return [(int(seats[i]), a, max(points, 0), int(rolls[i]))]

    # -- one game as a Game object --------------------------------------------------------
    def game_view(self, i: int) -> Game:
        """A copy of game ``i`` as a :class:`Game` (for per-game agents, rendering and messages)."""
        g = self._template.clone()
        g._numbers[:, 0] = self._numbers[:, i]
        g._board[0] = self.sheets[i]
        g._look()
        return g


__all__ = ["GeneralaVectorEnv", "BatchedOpponent", "BatchedRandom", "PerGameOpponent", "uniform_legal"]
