"""``GeneralaVectorEnv``: N games of ``Generala-v0`` stepped at once with array operations.

It is the env core (:class:`generala_env.envs.env_core.EnvCore`) at N games, with Gymnasium's
vector API and autoreset around it; :class:`generala_env.envs.env.GeneralaEnv` is the same core at
N = 1. The state of every game lives in a few NumPy arrays indexed by game (``roll``,
``rolls_left``, ``locked``, ``player``, ``sheets``...; read them, don't write them), and a
step is one compiled pass over the games (:func:`generala_env.compiled.env_loops.env_step`), with the
opponents' turns and the games that ended after it. ``tests/test_vector.py`` checks it
observation for observation against N single envs fed the same dice.

## Seeding
Each game draws from its own generator (:mod:`generala_env.core.game_dice`), as Gymnasium's
``SyncVectorEnv`` seeds its envs: after ``reset(seed=s)`` game ``i`` plays exactly what
``gym.make("Generala-v0", ...)`` plays after ``reset(seed=s + i)``, episode after episode
(its seat, dice, exploring starts and its ``"random"`` opponents' choices;
``tests/test_same_games.py``). ``reset(seed=[s0, s1, ...])`` seeds game by game.

::

    import gymnasium as gym, generala_env
    envs = gym.make_vec("Generala-v0", num_envs=1024, vectorization_mode="vector_entry_point",
                        rules="classic", num_players=2, opponents="greedy")  # autoreset_mode=... too
    obs, info = envs.reset(seed=0)
    masks = envs.action_masks()                      # (N, 32 + L) bool
    obs, reward, terminated, truncated, info = envs.step(actions)

For stable-baselines3 / sb3-contrib use :func:`make_sb3_vec_env` (:mod:`generala_env.adapters.sb3`).

## Autoreset
Gymnasium 1.x's three modes (:class:`gymnasium.vector.AutoresetMode`), chosen with
``autoreset_mode`` and shown in ``metadata["autoreset_mode"]``; in each, game ``i`` plays
what the ``i``-th env of a ``SyncVectorEnv`` of single envs plays in that mode
(``tests/test_autoreset.py``):

* ``NEXT_STEP`` (the default, as Gymnasium's): the step that ends a game returns its ending
  observation, every action marked in its mask (as the single env's final mask); the next
  step starts it anew and returns the new game's first observation, reward 0, neither
  terminated nor truncated, the game's action ignored (the core's step passes over it as
  over a game that ended before the agent's move, then starts it).
* ``SAME_STEP`` (what SB3's ``VecEnv`` does): a game that ends is reset inside the same
  ``step``; the returned row is the new game's first observation, and the ending observation
  and info are in ``info["final_obs"]`` (an object array of rows, ``None`` for games that go
  on, as Gymnasium's ``SyncVectorEnv`` gives) and ``info["final_info"]``, flagged by
  ``info["_final_obs"]``.
* ``DISABLED``: an ended game is shown as in ``NEXT_STEP`` and waits for
  ``reset(options={"reset_mask": m})``; a step before that raises ``RuntimeError`` naming it.

``reset(options={"reset_mask": m})`` resets only the games where ``m`` is true, in any mode.
A game whose agent played ``max_illegal_in_a_row`` illegal actions in a row (default 100,
as in the single env; ``None``: no cap) is truncated: ``truncated[i]`` is true and the game
ends the same way, its winner ``-1``.

## Observations
``obs_type="flat"`` (default): ``(N, n)`` float32. ``obs_type="dict"``: ``{"observation":
(N, n) float32, "action_mask": (N, 32 + L) int8}``, the single env's dict batched; each
``final_obs`` row is then a dict too, whose mask marks every action if the game ended (as
the single env's final mask does).

## Information
Arrays over the N games, the same keys at reset and at every step (each with its ``_key``
flags, as Gymnasium's vector envs give): ``illegal_action``, ``seat``, and ``game_over``,
true where a game is over: it ended at this step (not with ``SAME_STEP``, which has started
it anew), or an opponent's served generala ended it before the agent's first move (its next
step ends the episode, as in the single env). Without ``SAME_STEP`` also ``winner`` (seat,
``-1`` on a shared win, a truncated game or a game that did not end at this step) and
``served_generala_win`` of the games that ended at this step. With ``full_info=True`` also
the single env's ``action_mask`` (int8), ``dice`` (sorted faces), ``rolls_left``, ``turn``
and ``totals`` (``N x players``); they cost time at every step, so they are off by default.
With ``SAME_STEP``, ``final_info`` holds ``totals``, ``winner`` and
``served_generala_win``. The single env's ``opponent_moves`` are not produced.

## Opponents
Names are looked up in :mod:`generala_env.envs.opponents`. A name registered with a batched
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

from generala_env.compiled import env_loops as E
from generala_env.core.checks import MAX_ILLEGAL_IN_A_ROW, action_numbers, check_obs_type
from generala_env.core.dice import ROLLS
from generala_env.core.engine import OPEN
from generala_env.core.game import Game
from generala_env.core.rules import RuleSet, load_rules
from generala_env.core.scoring import sheet_totals
from generala_env.envs import opponents as opponents_registry
from generala_env.envs.env import observation_space
from generala_env.envs.env_core import NOT_RESET, RESET_FAILED, EnvCore
from generala_env.envs.episode import final_mask
from generala_env.envs.vector_opponents import BatchedOpponent, BatchedRandom, PerGameOpponent, uniform_legal  # noqa: F401  (re-exported)

_NONE = np.zeros(0, dtype=np.int64)  # no game
_NONE.setflags(write=False)


def check_autoreset_mode(mode) -> AutoresetMode:
    """``mode`` as a :class:`gymnasium.vector.AutoresetMode` (the member, or its value:
    ``"NextStep"``, ``"SameStep"``, ``"Disabled"``), or ``ValueError`` naming them."""
    if isinstance(mode, AutoresetMode):
        return mode
    try:
        return AutoresetMode(mode)
    except (ValueError, TypeError):
        names = ", ".join(repr(m.value) for m in AutoresetMode)
        raise ValueError(f"autoreset_mode must be a gymnasium.vector.AutoresetMode or one of {names}, got {mode!r}") from None


# -- the vector env -------------------------------------------------------------------------
class GeneralaVectorEnv(VectorEnv):
    """
    ## Description
    ``num_envs`` games of ``Generala-v0`` stepped together; every argument but
    ``num_envs``, ``opponent_mix``, ``full_info``, ``dice_source`` and ``autoreset_mode`` means what it means for
    :class:`generala_env.envs.env.GeneralaEnv`, and each game behaves exactly like one
    ``GeneralaEnv`` (see the module docstring for autoreset, info and opponents).

    ## Spaces
    ``single_action_space = Discrete(32 + L)``, ``action_space = MultiDiscrete([32 + L] * N)``;
    ``single_observation_space`` is the single env's (the ``Box``, or the ``Dict`` with
    ``obs_type="dict"``), batched over the N games.
    ``action_masks()`` gives the legal actions of every game, ``(N, 32 + L)`` bool.
    ``step(actions)`` takes one action a game (an array or a list), each as ``Generala-v0``
    takes one: any integer outside ``0 … 31 + L`` is an illegal action; anything else (a
    float, a bool, a string, ``None``) raises ``NotAnActionError`` naming the game and it.

    ## Arguments
    ```python
    GeneralaVectorEnv(num_envs=256, rules="double", num_players=2, opponents="greedy",
                      reward="win", agent_seat="random")
    ```
    - ``opponent_mix``: instead of ``opponents``, a list whose entries are each what
      ``opponents`` takes; game ``i`` plays entry ``i % len(opponent_mix)``.
    - ``opponent_trust``: what an opponent given by name may do, as for ``GeneralaEnv``.
    - ``full_info``: add the per-step info arrays listed in the module docstring.
    - ``autoreset_mode``: a :class:`gymnasium.vector.AutoresetMode` or its value (``"NextStep"``,
      the default, ``"SameStep"``, ``"Disabled"``); through ``gym.make_vec`` a keyword like the
      others (Gymnasium refuses ``vector_kwargs`` for a vector entry point).
    - ``exploring_starts``: as for ``GeneralaEnv``, drawn from each game's generator.
    - ``dice_source``: ``(games, need) -> faces`` with ``faces`` of shape ``(len(games), 5)``;
      game ``games[j]`` uses the first ``need[j]`` faces. A write always needs 5 (the next
      player's first roll, drawn even when the game ends, as the single env does). The
      default draws from each game's generator; tests replay given dice through it (the
      seats, exploring starts and opponents' seeds then come from ``np_random``).
    """

    # the class's default; each env's own metadata holds the mode it was made with
    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    # many parameters: the single env's keyword arguments plus the vector env's own five
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
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ):
        self.autoreset_mode = check_autoreset_mode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.rules = load_rules(rules)
        self.core = core = EnvCore(
            num_envs, self.rules, num_players, opponents, reward, agent_seat, render_mode, illegal_action, illegal_penalty,
            exploring_starts, max_illegal_in_a_row, opponent_trust, opponent_mix, dice_source,
            record_moves=render_mode == "rgb_array", render_modes=self.metadata["render_modes"],
        )  # fmt: skip
        self.num_envs = N = core.num_envs
        self.num_players, self.num_lines, self.num_actions = core.num_players, core.num_lines, core.num_actions
        self.obs_type = check_obs_type(obs_type)
        self.max_illegal_in_a_row = core.max_illegal_in_a_row
        self.render_mode = core.render_mode
        from generala_env.rendering.picture import check_scale

        self.render_scale = check_scale(render_scale)
        self.reward_mode, self.agent_seat_option, self.illegal_action = core.reward_mode, core.agent_seat_option, core.illegal_action
        self.illegal_penalty, self.exploring_starts = core.illegal_penalty, core.exploring_starts
        self.full_info = bool(full_info)
        self.encoder = core.encoder
        self.single_observation_space = observation_space(self.encoder.size, self.num_actions, self.obs_type)
        self._dict_obs = self.obs_type == "dict"
        self.single_action_space = spaces.Discrete(self.num_actions)
        self.observation_space = batch_space(self.single_observation_space, N)
        self.action_space = batch_space(self.single_action_space, N)
        self._link()
        self._every = np.ones(N, dtype=bool)
        self._every.setflags(write=False)
        self._masks = np.zeros((N, self.num_actions), dtype=bool)  # what the agent may play in each game
        self._ended = _NONE  # the games that ended at the last step and wait to start anew (NEXT_STEP, DISABLED)

    def _link(self) -> None:
        """The state of every game as attributes: the core's own arrays (read them, don't write them)."""
        core = self.core
        self.state = core.state
        self.roll, self.rolls_left, self.locked, self.player = core.roll, core.rolls_left, core.locked, core.player
        self.writes, self.over, self.sheets = core.writes, core.over, core.sheets
        self.served_generala_winner, self.seat, self.illegal_streak = core.served_generala_winner, core.seat, core.illegal_streak
        self._all = core._all

    def __setstate__(self, state: dict) -> None:
        """Unpickling and ``copy.deepcopy``: the attributes above are the copy's core's arrays again
        (pickled, each was a copy of its own, and a reset read stale games from them)."""
        self.__dict__.update(state)
        self._link()
        self._every.flags.writeable = False

    @property
    def ended_before_move(self) -> np.ndarray:
        """Where an opponent's served generala ended a game before the agent's first move (bool)."""
        return self.core.ended_before_move

    # -- opponents ----------------------------------------------------------------------
    @property
    def batched_opponents(self) -> tuple[BatchedOpponent, ...]:
        """The opponents that play in these games, each once (a name or agent given for several
        seats or games is one opponent)."""
        return tuple(self.core.opponents)

    @property
    def opponent_of(self) -> np.ndarray:
        """``opponent_of[i, k]``: the index in :attr:`batched_opponents` of the opponent in seat
        ``k`` after the agent's (in play order) of game ``i``, ``(N, players - 1)``, read-only."""
        view = self.core.opponent_of.view()
        view.flags.writeable = False
        return view

    # -- observations -------------------------------------------------------------------
    def _observation(self, obs: np.ndarray):
        """What the agent observes of every game, with the masks for ``obs_type="dict"``."""
        return {"observation": obs, "action_mask": self._masks.astype(np.int8)} if self._dict_obs else obs

    def _agent_masks(self) -> np.ndarray:
        """The legal masks (the core's, which its next step overwrites: handed out as copies),
        every action marked where a game ended before the agent's move."""
        early = self.core.env[E.EARLY_END]
        if not early.any():
            return self.core.masks
        m = self.core.masks.copy()
        m[early != 0] = True
        return m

    def _info(self, illegal: np.ndarray, ends: np.ndarray | None = None) -> dict[str, Any]:
        """The step's (or with ``ends`` None the reset's) info: the same keys at both. Without
        SAME_STEP autoreset an ended game is seen at its end, so the info also says who won it
        (``ends``: what the core's step wrote of the games that ended, zero rows elsewhere)."""
        info: dict[str, Any] = {"illegal_action": illegal, "seat": self.seat.copy()}
        if self.full_info:
            info.update(
                action_mask=self._masks.astype(np.int8),
                dice=ROLLS[self.roll],
                rolls_left=self.rolls_left.copy(),
                turn=(self.sheets[self._all, self.player] != OPEN).sum(axis=1),
                totals=sheet_totals(self.sheets),
            )
        info["game_over"] = self.over != 0
        if self.autoreset_mode != AutoresetMode.SAME_STEP:
            P = self.num_players
            if ends is None:
                info["winner"], info["served_generala_win"] = np.full(self.num_envs, -1), np.zeros(self.num_envs, dtype=bool)
            else:
                info["winner"], info["served_generala_win"] = ends[:, P] - 1, ends[:, P + 1] != 0
        for k in list(info):
            info["_" + k] = self._every
        return info

    # -- Gymnasium VectorEnv API ----------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        core, games = self.core, self._all
        if options and options.get("reset_mask") is not None:
            mask = np.asarray(options["reset_mask"], dtype=bool)
            if mask.shape != (self.num_envs,):
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},)")
            games = np.flatnonzero(mask)
        previous, core.halt = core.halt, RESET_FAILED  # until this reset completes (an opponent's failure says more)
        super().reset(seed=None if seed is None or isinstance(seed, (int, np.integer)) else int(np.asarray(seed).reshape(-1)[0]))
        core.np_random = self.np_random
        if seed is not None:
            core.seed(seed)
        obs = np.empty((self.num_envs, self.encoder.size), dtype=np.float32)
        core.start(games, obs)
        self._ended = self._ended[~np.isin(self._ended, games)] if len(games) < self.num_envs else _NONE
        if len(games) < self.num_envs:  # the other games are seen as they are
            rest = np.flatnonzero(~np.isin(self._all, games))
            core._look(rest, obs, E.LOOK)
        # a partial reset leaves the other games as they were: still unstarted, or stopped by a
        # failure (games that ended at the last step wait for their reset: they are not stuck)
        over = self.over != 0
        stuck = (over & ~self.ended_before_move) | (~over & (self.player != self.seat))
        stuck[self._ended] = False
        core.halt = (previous or RESET_FAILED) if stuck.any() else None
        self._masks = self._agent_masks()
        return self._observation(obs), self._info(np.zeros(self.num_envs, dtype=bool))

    def step(self, actions):
        core = self.core
        if core.halt is not None:
            raise RuntimeError(f"step() cannot go on: {core.halt}")
        a, given = action_numbers(actions, self.num_envs, self.num_actions)  # int64; one line for a non-integer
        same_step, waiting = self.autoreset_mode == AutoresetMode.SAME_STEP, self._ended
        if len(waiting) and self.autoreset_mode == AutoresetMode.DISABLED:
            raise RuntimeError(
                f"games {waiting.tolist()} ended at the last step and autoreset_mode is DISABLED: reset them first, reset(options={{'reset_mask': mask}})"
            )
        obs = np.empty((self.num_envs, self.encoder.size), dtype=np.float32)
        ends = np.zeros((self.num_envs, self.num_players + 2), dtype=np.int64)  # the ended games' totals, winner + 1, served win
        env = core.env
        rewards = self._step_core(a, obs, ends, waiting, given) if len(waiting) else core.step(a, obs, ends, given)
        terminated, truncated = env[E.TERMINATED] != 0, env[E.TRUNCATED] != 0
        illegal = env[E.ILLEGAL] != 0
        if same_step:
            final = None
            if core.found[E.N_ENDED]:
                done = terminated | truncated
                final = self._final(terminated, done, obs, ends)
            self._masks = self._agent_masks()
            info = self._info(illegal)
            if final is not None:
                info["final_obs"], info["final_info"] = final
                info["_final_obs"] = info["_final_info"] = done
            return self._observation(obs), rewards, terminated, truncated, info
        # NEXT_STEP, DISABLED: an ended game is seen at its end, every action marked once it is over
        self._ended = np.flatnonzero(terminated | truncated)
        self._masks = self._agent_masks()
        if len(self._ended) and terminated.any():
            if self._masks is self.core.masks:
                self._masks = self._masks.copy()
            self._masks[terminated] = True
        return self._observation(obs), rewards, terminated, truncated, self._info(illegal, ends)

    def _step_core(self, actions: np.ndarray, obs: np.ndarray, ends: np.ndarray, waiting: np.ndarray, given: list[int] | None = None) -> np.ndarray:
        """The core's step, where the games ``waiting`` (NEXT_STEP: they ended at the last step)
        start anew instead: the step passes over them as over games whose episode has ended
        (``early_end``: no move, their actions ignored), then they start, reward 0, neither
        terminated nor truncated."""
        core, env = self.core, self.core.env
        was = env[E.EARLY_END, waiting]
        env[E.EARLY_END, waiting] = 1
        try:
            rewards = core.step(actions, obs, ends, given)
        except BaseException:
            env[E.EARLY_END, waiting] = was
            raise
        rewards[waiting] = 0.0
        env[E.ILLEGAL : E.TRUNCATED + 1, waiting] = 0  # rows illegal, terminated, truncated: none of these
        ends[waiting] = 0
        core.start(waiting, obs)
        return rewards

    def _final(self, terminated: np.ndarray, done: np.ndarray, obs: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, dict]:
        """The ending observations and info of the games that ended (``done``), which start anew
        (SAME_STEP autoreset); ``ends``: what the core's step wrote of them."""
        ended = self.core.ended()
        final_obs = np.empty(self.num_envs, dtype=object)  # None where the game goes on
        for i, row in zip(ended.tolist(), obs[ended], strict=True):  # rows of one copy
            if self._dict_obs:  # a game that is over marks every action, as the single env's does
                mask = final_mask(self.num_actions, np.int8) if terminated[i] else self.core.masks[i].astype(np.int8)
                row = {"observation": row, "action_mask": mask}
            final_obs[i] = row
        P = self.num_players
        final_info = {"totals": ends[:, :P], "winner": ends[:, P] - 1, "served_generala_win": ends[:, P + 1] != 0}
        for k in list(final_info):
            final_info["_" + k] = done
        self.core.start(ended, obs)
        return final_obs, final_info

    def action_masks(self) -> np.ndarray:
        """Legal actions of every game, ``(N, 32 + L)`` bool (all true where a game ended before the agent's move)."""
        return self._masks.copy()

    def render(self, games=None) -> tuple | None:
        """Each game as text (``render_mode="ansi"``) or as an ``uint8 (H, W, 3)`` picture
        (``"rgb_array"``: :func:`~generala_env.rendering.picture.render_rgb`, with the moves since the
        agent's last decision of a game not reset since); ``games``: the indices of the games to
        show (default all of them)."""
        if self.render_mode is None:
            return None
        if self.core.halt in (NOT_RESET, RESET_FAILED):
            raise RuntimeError(f"render() has nothing to show: {self.core.halt}")
        idx = range(self.num_envs) if games is None else [int(i) for i in np.asarray(games, dtype=np.int64).reshape(-1)]
        bad = [i for i in idx if not 0 <= i < self.num_envs]
        if bad:
            raise ValueError(f"games must be indices from 0 to {self.num_envs - 1}, got {bad}")
        return tuple(self.core.render(i, scale=getattr(self, "render_scale", 2)) for i in idx)

    def _shown_move(self, i: int) -> list[tuple[int, int, int, int]]:
        """The moves the picture of game ``i`` lists: those since the agent's last decision."""
        return self.core.moves(i)

    # -- one game as a Game object --------------------------------------------------------
    def game_view(self, i: int) -> Game:
        """A copy of game ``i`` as a :class:`Game` (for per-game agents, rendering and messages)."""
        return self.core.game_view(i)


__all__ = ["GeneralaVectorEnv", "BatchedOpponent", "BatchedRandom", "PerGameOpponent", "uniform_legal"]
