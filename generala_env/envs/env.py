"""The Gymnasium environment ``Generala-v0``: the env core (:mod:`generala_env.envs.env_core`) at one game."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from generala_env.compiled import env_loops as E
from generala_env.core.checks import (  # noqa: F401  (re-exported)
    MAX_ILLEGAL_IN_A_ROW,
    OBS_TYPES,
    REWARDS,
    action_number,
    check_arguments,
    check_finite,
    check_max_illegal,
    check_obs_type,
    check_render_mode,
    check_share,
)
from generala_env.core.dice import NUM_MASKS
from generala_env.core.encoding import LAYOUT_VERSION, observation_layout
from generala_env.core.game import Game, IllegalActionError
from generala_env.core.info import make_info, opponent_move_rows, opponent_moves, win_reward  # noqa: F401  (re-exported)
from generala_env.core.rules import RuleSet, load_rules
from generala_env.envs import opponents as opponents_registry
from generala_env.envs.env_core import NOT_RESET, RESET_FAILED, EnvCore
from generala_env.envs.episode import final_mask
from generala_env.rendering.picture import Picture, check_scale, draw, picture_of

_ENDED_BEFORE_MOVE = "an opponent's served generala ended the game before the agent's first move"


def observation_space(size: int, num_actions: int, obs_type: str) -> spaces.Space:
    """The single env's observation space: the flat ``Box``, or with ``obs_type="dict"`` that
    ``Box`` and the action mask (the PettingZoo env's spaces)."""
    flat = spaces.Box(-1.0, 1.0, shape=(size,), dtype=np.float32)
    if obs_type == "flat":
        return flat
    return spaces.Dict({"observation": flat, "action_mask": spaces.Box(0, 1, shape=(num_actions,), dtype=np.int8)})


class GeneralaEnv(gym.Env):
    """
    ## Description
    Generala, the five-dice game of Latin America, for one agent in a game of 1–6
    players. Each turn the agent rolls five dice up to three times, holding any dice
    between rolls, then writes the dice on one open line of its score sheet. The
    game ends when every sheet is full, or at once on a served generala (five alike on
    a turn's first roll) when the rule set says it wins. Rules: see `generala rules`.

    ## Action Space
    `Discrete(32 + L)`, `L` the number of lines of the rule set:
    - `0 … 31`: hold mask. Bit `i` keeps `info["dice"][i]` (sorted faces); the rest
      are rerolled. Legal only while rolls are left; `31` (hold all) is never legal;
      under `locked_holds` a mask that puts back a die kept earlier this turn is illegal.
    - `32 + l`: write the dice on line `l` (rule-set order); legal iff the line is
      open. Dice that do not qualify write 0 there (crossing it out).
    - When a served generala wins the game, the only legal action is writing it on
      the generala line.
    - An action is a Python or NumPy integer, or a 0-d integer array; any integer
      outside `0 … 31 + L` (`42`, `2**63`) is an illegal action. Anything else (`3.7`,
      `nan`, `"a"`, `None`, and `True`/`False`, which are no action numbers) raises
      `NotAnActionError` (a `TypeError`) naming it, as every env of the package does.

    ## Observation Space
    `Box(-1, 1, (n,), float32)`; the slices are named by
    `generala_env.observation_layout(rules, num_players)` (dice counts, sorted dice,
    rolls left, first roll, locked dice, points each line would take now, the agent's
    sheet, round, and with opponents their sheets and the score lead), all from the
    agent's seat so one policy can sit in any seat.

    With `obs_type="dict"`: `Dict(observation=<that Box>, action_mask=Box(0, 1, (32 + L,),
    int8))`, as the PettingZoo env gives; the mask is `action_masks()` as int8.

    ## Starting State
    Empty sheets; seat 0 rolls first. Opponents seated before the agent play their
    turns inside `reset()`, so the agent always has the move. With `exploring_starts=p`
    (off by default), a share `p` of episodes starts some turns in instead: every player
    has the same number of lines already filled (1 to L - 1, uniform), each holding the
    points of one random roll on it (`generala_env.core.game.prefilled_sheets`), drawn from the
    env's generator. Late-game states then come early in training. The rewards count only
    what is written from then on.

    ## Rewards
    - `reward="score"`: the points the agent writes at that step (0 for a reroll), so
      an episode's return is the agent's final total.
    - `reward="win"`: 0 until the end, then +1 for a win, 0 for a shared win, -1 for
      a loss.
    - An illegal action leaves the game unchanged and gives `illegal_penalty`
      (default -1) with `info["illegal_action"]` set (`env.unwrapped.illegal_reason()` says
      why), or raises `IllegalActionError` with `illegal_action="raise"`.

    ## Episode End
    Terminated when the game ends (all sheets full, or a served generala); a legal
    episode lasts at most `3 L` steps. Truncated when the agent has played
    `max_illegal_in_a_row` illegal actions in a row (default 100; `None`: never), so no
    policy loops forever on an illegal action: an episode lasts at most
    `3 L × max_illegal_in_a_row` steps. After the end, terminated or truncated, `step()`
    raises `RuntimeError` until `reset()`. Once the game is over every action is marked
    legal (`action_masks()`, `info["action_mask"]`), so that a masked policy evaluated on the
    final observation (as vector envs with autoreset do) never sees an all-zero mask; no
    action is applied after the end. In the rare
    case that an opponent's served generala ends the game before the agent's first move,
    `reset()` returns `info["game_over"] = True` with every action marked legal; the next
    step ends the episode as a loss. If an opponent fails inside `reset()` or `step()`
    (raises, or plays an illegal action), its error reaches the caller and the game
    stops in the opponent's turn: `step()` then raises `RuntimeError` naming the
    opponent until `reset()`. `step()` or `render()` before the first `reset()` raise
    `RuntimeError` too.

    ## Information
    Every key at every step (`reset` and `step`), each with a fixed type and shape:
    `action_mask` (`(32 + L,)` int8, same as `action_masks()`), `dice` (`(5,)` sorted
    faces), `rolls_left` (int), `locked` (`(6,)` int8: locked dice of each face 1 … 6),
    `sheets` (`players × L` ints, `-1` marks an open line), `totals` (`(players,)`),
    `turn` (the round, from 0), `player` (whose move), `seat` (the agent's seat),
    `served_generala_pending` (bool), `illegal_action` (bool), `opponent_moves` (`(3 (players - 1), 3)` int64: the
    `(seat, action, points)` moves played since the agent's last move, then `-1` rows;
    `generala_env.envs.env.opponent_moves(info)` lists them), `game_over` (bool), `winners`
    (`(players,)` bool, all false while the game is on), `winner` (the seat of a sole
    winner, else `-1`) and `served_generala_win` (bool). Numbers and arrays only: why the last
    action was illegal, in words, is `env.unwrapped.illegal_reason()` (`""` after a legal one).

    ## Arguments
    ```python
    import gymnasium as gym, generala_env
    env = gym.make("Generala-v0", rules="classic", num_players=2, opponents="greedy",
                   reward="win", agent_seat="random", render_mode="ansi")
    ```
    - `rules`: preset name (`classic`, `double`, `sixty`), YAML path, mapping or `RuleSet`.
    - `num_players`: 1–6 (default 1).
    - `opponents`: for the other seats, one agent or a list of one per seat; an agent
      is a name registered in `generala_env.envs.opponents` (e.g. `"random"`, `"greedy"`,
      `"optimal"`: `generala agents` lists them), an object with `act(observation, info)`,
      or a callable `(observation, info) -> action`. Default `"greedy"`.
    - `opponent_trust`: what an opponent given by name may do
      (`generala_env.envs.opponents.Trust`; default `Trust.PROGRAM`: a module, a Python file or a
      checkpoint folder, but no SB3 zip, bare or in `pool:DIR`, unless the trust allows it).
    - `reward`: `"score"` (default) or `"win"`.
    - `agent_seat`: seat number, or `"random"` (drawn from the env's generator each reset).
    - `illegal_action`: `"penalize"` (default) or `"raise"`; `illegal_penalty`: a finite number.
    - `exploring_starts`: share of episodes (0 to 1, default 0) that start from partly filled
      sheets (see Starting State).
    - `obs_type`: `"flat"` (default, the Box) or `"dict"` (observation and action mask).
    - `max_illegal_in_a_row`: illegal actions in a row that truncate the episode (default
      100), or `None` for no cap.
    - `render_mode`: `"ansi"` (returns text), `"human"` (prints it) or `"rgb_array"` (returns
      a `uint8 (H, W, 3)` picture of the dice, the sheets and the last moves, for
      `gymnasium.wrappers.RecordVideo`; `generala_env.rendering.picture`); another mode gives a warning
      and renders as `None`. `render_scale`: 2 (default) or 1, a picture of half the width
      and height (a quarter of the pixels, cheaper to encode as video).

    ## Seeding
    The env is the env core (`generala_env.envs.env_core.EnvCore`) at one game: `reset(seed=s)`
    seeds the game's own stream, which draws exactly what `gymnasium.utils.seeding.np_random(s)`
    would (`generala_env.core.game_dice`): the seat (`agent_seat="random"`), the dice (1024 faces at
    a time, as a `generala_env.core.dice.DiceCup` draws them), the exploring starts and the opponents'
    seeds, in that order. Same seed, same game, bit for bit; game `i` of a vector env reset with
    `seed=s - i` plays it too. A generator set by hand as `np_random` (a numpy
    `Generator`, drawn 1024 faces at a time; any other object with `integers`, such as a replay
    of recorded dice, asked for each throw as it comes) gives all of those until the next
    `reset(seed=...)`.

    ## Version History
    - v0: initial release (observation layout version 1). After 0.2.0: `obs_type`, the cap
      on illegal actions in a row (truncation), every `info` key at every step with a fixed
      shape, every action marked legal once the game is over, and a warning instead of an
      error for an unknown `render_mode`; `render_mode="rgb_array"`; the reason of an illegal
      action out of `info` (`illegal_reason()`: the info holds numbers and arrays only). Legal
      play gives the same games as before.
    """

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 4}
    # set per env in __init__; the class defaults serve envs pickled before they existed
    obs_type, _dict_obs, _illegal_reason = "flat", False, ""
    render_scale = 2

    # many parameters: the env's keyword arguments, each documented in the class docstring
    def __init__(
        self,
        rules: str | RuleSet | dict | None = "classic",
        num_players: int = 1,
        opponents: Any | Sequence[Any] | None = None,
        reward: str = "score",
        agent_seat: int | str = 0,
        render_mode: str | None = None,
        illegal_action: str = "penalize",
        illegal_penalty: float = -1.0,
        exploring_starts: float = 0.0,
        obs_type: str = "flat",
        max_illegal_in_a_row: int | None = MAX_ILLEGAL_IN_A_ROW,
        render_scale: int = 2,
        opponent_trust: opponents_registry.Trust | None = None,
    ):
        self.rules = load_rules(rules)
        self.game = Game(self.rules, num_players)
        self.render_scale = check_scale(render_scale)
        self.num_players = self.game.num_players
        self.obs_type = check_obs_type(obs_type)
        check_arguments(self.num_players, reward, agent_seat, None, (), illegal_action, illegal_penalty)  # before the opponents are made
        self._opponent_agents = self._resolve_opponents(opponents, opponent_trust or opponents_registry.Trust.PROGRAM)
        # what the env calls for each opponent seat, in play order after the agent
        self.opponents: list[Callable] = [getattr(a, "act", a) for a in self._opponent_agents]
        self.core = core = EnvCore(
            1, self.rules, self.num_players, self._opponent_agents or None, reward, agent_seat, render_mode, illegal_action, illegal_penalty,
            exploring_starts, max_illegal_in_a_row, opponent_trust, game=self.game, record_moves=True, render_modes=self.metadata["render_modes"],
        )  # fmt: skip
        self.render_mode = core.render_mode
        self.reward_mode, self.agent_seat_option, self.illegal_action = reward, agent_seat, illegal_action
        self.illegal_penalty, self.exploring_starts, self.max_illegal_in_a_row = core.illegal_penalty, core.exploring_starts, core.max_illegal_in_a_row
        self.encoder = core.encoder
        self.layout = observation_layout(self.rules, self.num_players)
        self.action_space: spaces.Discrete = spaces.Discrete(NUM_MASKS + self.rules.num_lines)
        self.observation_space = observation_space(self.encoder.size, int(self.action_space.n), self.obs_type)
        self._dict_obs = self.obs_type == "dict"
        self._actions = np.zeros(1, dtype=np.int64)  # the agent's action, as the core takes it
        self._illegal_reason = ""  # why the last action was illegal ("" after a legal one)
        self._num_actions = int(self.action_space.n)

    @property
    def layout_version(self) -> int:
        return LAYOUT_VERSION

    @property
    def seat(self) -> int:
        """The agent's seat in this game."""
        return int(self.core.seat[0])

    @property
    def _halt(self) -> str | None:
        """Why step() cannot go on as usual; None while it can (the core's)."""
        return self.core.halt

    @property
    def _ended_before_move(self) -> bool:
        return bool(self.core.env[E.EARLY_END, 0])

    @property
    def opponent_agents(self) -> tuple[Any, ...]:
        """The opponents as given or built, in play order after the agent: an agent object
        (with ``act``), or a callable ``(observation, info) -> action``."""
        return tuple(self._opponent_agents)

    @property
    def last_moves(self) -> tuple[tuple[int, int, int, int], ...]:
        """The moves since the agent's last decision, its own first, as the ``rgb_array``
        picture lists them: ``(seat, action, points, roll before the move)``
        (:func:`generala_env.rendering.picture.describe_move` puts one in words)."""
        return tuple(self._shown_moves)

    @property
    def _shown_moves(self) -> list[tuple[int, int, int, int]]:
        return self.core.moves(0)

    def _opponent_moves(self) -> list[tuple[int, int, int]]:
        """The opponents' ``(seat, action, points)`` since the agent's last move."""
        return self.core.opponent_moves(0)

    def _resolve_opponents(self, opponents, trust: opponents_registry.Trust) -> list[Any]:
        n = self.num_players - 1
        if n == 0:
            if opponents not in (None, [], ()):
                raise ValueError("opponents were given but num_players is 1")
            return []
        if opponents is None:
            opponents = "greedy"
        if isinstance(opponents, (str, bytes)) or not isinstance(opponents, (list, tuple)):
            opponents = [opponents] * n
        if len(opponents) != n:
            raise ValueError(f"{n} opponent(s) needed for {self.num_players} players, got {len(opponents)}")
        resolved = []
        for opp in opponents:
            if isinstance(opp, str):
                opp = opponents_registry.make(opp, rules=self.rules, trust=trust)
            if hasattr(opp, "act") or callable(opp):
                resolved.append(opp)
            else:
                raise ValueError(f"an opponent must be an agent name, an object with act(), or a callable, got {opp!r}")
        return resolved

    # -- the dice ---------------------------------------------------------------
    @property
    def np_random(self) -> np.random.Generator:
        """The env's generator (gymnasium's). After ``reset(seed=s)`` the game draws from its own
        stream, the same draws as ``seeding.np_random(s)`` (:mod:`generala_env.core.game_dice`); a
        generator set here by hand (a numpy ``Generator``, or a replay of recorded dice asked for
        each throw as it comes) gives the dice, the seat, the exploring starts and the opponents'
        seeds until the next ``reset(seed=...)``."""
        return gym.Env.np_random.fget(self)  # type: ignore[attr-defined]

    @np_random.setter
    def np_random(self, value) -> None:
        gym.Env.np_random.fset(self, value)  # type: ignore[attr-defined]
        self.core.draw_from(value)

    # -- Gymnasium API ----------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        core = self.core
        core.halt = RESET_FAILED  # until this reset completes (an opponent's failure says more)
        super().reset(seed=seed)
        if seed is not None or core.drawing_from is None:
            core.draw_from_streams(self.np_random)
            if seed is not None:
                core.seed(seed)
        obs = np.empty((1, self.encoder.size), dtype=np.float32)
        core.start(core._all, obs)
        core.halt = _ENDED_BEFORE_MOVE if self._ended_before_move else None
        self._illegal_reason = ""
        info = self._info(illegal=False)
        return self._obs(obs[0], info["action_mask"]), info

    def step(self, action):
        core = self.core
        if core.halt is not None:  # one check for every unusual case
            if not self._ended_before_move:
                raise RuntimeError(f"step() cannot go on: {core.halt}")
            core.halt = None  # this step ends the episode (the core's step of a game that ended early)
        elif self.game.over:
            raise RuntimeError("step() called after the episode ended; call reset()")
        if action.__class__ is int and 0 <= action < self._num_actions:
            why = None  # the hot path: the core says whether it is legal
        else:
            action = action_number(action, self._num_actions)  # not an integer: one error naming it; a 0-d array (SB3's predict): its number
            why = self.game.why_illegal(action)  # None: a legal action of another kind of integer; an integer of any size: out of range
            if why is not None and self.illegal_action == "raise":
                raise IllegalActionError(why)
        self._actions[0] = -1 if why is not None else action
        obs = np.empty((1, self.encoder.size), dtype=np.float32)
        reward = float(core.step(self._actions, obs)[0])
        row, env = obs[0], core.env
        if env[E.ILLEGAL, 0]:
            truncated = bool(env[E.TRUNCATED, 0])
            if truncated:
                core.halt = f"the episode was truncated after {int(env[E.STREAK, 0])} illegal actions in a row: call reset()"
            self._illegal_reason = why or self.game.why_illegal(int(action)) or ""
            info = self._info(illegal=True)
            return self._obs(row, info["action_mask"]), reward, False, truncated, info
        # what _info() makes, made here directly: this is the step's hot path
        self._illegal_reason = ""
        info = make_info(self.game, self.seat, False, self._opponent_moves() if self.opponents else None)
        terminated = bool(env[E.TERMINATED, 0])
        if terminated:
            info["action_mask"] = final_mask(self.action_space.n, np.int8)
        if self.render_mode == "human":
            self.render()
        if self._dict_obs:
            return {"observation": row, "action_mask": info["action_mask"].copy()}, reward, terminated, False, info
        return row, reward, terminated, False, info

    def illegal_reason(self) -> str:
        """Why the last action was illegal, in words (``""`` after a legal action or a reset):
        the info holds numbers and arrays only (``info["illegal_action"]`` flags it)."""
        return self._illegal_reason

    def action_masks(self) -> np.ndarray:
        """Boolean mask of legal actions (what sb3-contrib's MaskablePPO asks for); every
        action once the game is over (see Episode End)."""
        if self._ended_before_move or self.game.over:
            return final_mask(self.action_space.n)
        return self.game.legal_mask()

    def render(self):
        if self.render_mode == "rgb_array":
            return draw(self.picture())
        text = self.core.render(0)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def picture(self) -> Picture:
        """What ``render()`` draws in ``rgb_array`` mode, as a small picklable
        :class:`~generala_env.rendering.picture.Picture`; ``picture.draw`` makes the same frame from it
        anywhere (``generala_env.rendering.video.RecordVideo`` draws its videos in another process)."""
        if self._halt in (NOT_RESET, RESET_FAILED):
            raise RuntimeError(f"render() has nothing to show: {self._halt}")
        return picture_of(self.game, seat=self.seat, moves=self._shown_moves, scale=self.render_scale)

    # -- internals --------------------------------------------------------------
    def _obs(self, obs: np.ndarray, mask: np.ndarray):
        """The observation; with ``obs_type="dict"`` together with (a copy of) ``mask``, the
        int8 mask that ``info`` holds."""
        return {"observation": obs, "action_mask": mask.copy()} if self._dict_obs else obs

    def _info(self, illegal: bool) -> dict[str, Any]:
        info = make_info(self.game, self.seat, illegal, self._opponent_moves())
        if self.game.over:  # also when an opponent's served generala ended it before the agent's move
            info["action_mask"] = final_mask(self.action_space.n, np.int8)
        return info

    # -- copies -----------------------------------------------------------------
    def __setstate__(self, state: dict) -> None:
        """Unpickling: the core holds the game's own arrays again (pickling copies each)."""
        self.__dict__.update(state)
        core = self.__dict__.get("core")
        if core is not None:
            core.game = core._template = self.game
            core._views()
