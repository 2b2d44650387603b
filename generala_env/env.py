"""The Gymnasium environment ``Generala-v0``: a thin layer over :mod:`generala_env.game`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import opponents as opponents_registry
from .checks import MAX_ILLEGAL_IN_A_ROW, OBS_TYPES, REWARDS, check_arguments, check_finite, check_max_illegal, check_obs_type, check_render_mode, check_share  # noqa: F401  (re-exported)
from .dice import NUM_MASKS, DiceCup, cup_for
from .encoding import LAYOUT_VERSION, Encoder, observation_layout
from .episode import exploring_start, final_mask, next_streak, truncates
from .game import Game, IllegalActionError
from .info import make_info, opponent_move_rows, opponent_moves, win_reward  # noqa: F401  (re-exported)
from .picture import Picture, check_scale, draw, picture_of
from .render import render_text
from .rules import RuleSet, load_rules

# why step() cannot go on as usual (GeneralaEnv._halt), besides an opponent's failure
NOT_RESET = "reset() has not been called yet: call reset() before step() or render()"
RESET_FAILED = "the last reset() did not complete: call reset() again"
_ENDED_BEFORE_MOVE = "an opponent's served generala ended the game before the agent's first move"


def observation_space(size: int, num_actions: int, obs_type: str) -> spaces.Space:
    """The single env's observation space: the flat ``Box``, or with ``obs_type="dict"`` that
    ``Box`` and the action mask (the PettingZoo env's spaces)."""
    flat = spaces.Box(-1.0, 1.0, shape=(size,), dtype=np.float32)
    if obs_type == "flat":
        return flat
    return spaces.Dict({"observation": flat, "action_mask": spaces.Box(0, 1, shape=(num_actions,), dtype=np.int8)})


def _who(seat: int, agent: Any, act: Callable) -> str:
    """What to call an opponent in a message: its seat and its agent's name, else the name of
    ``act``, the callable the env calls (the agent's ``act``, or the agent itself)."""
    name = (getattr(agent, "name", None) if act is not agent else None) or getattr(act, "__name__", None) or type(act).__name__
    return f"opponent in seat {seat} ({name})"


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
    points of one random roll on it (`generala_env.game.prefilled_sheets`), drawn from the
    env's generator. Late-game states then come early in training. The rewards count only
    what is written from then on.

    ## Rewards
    - `reward="score"`: the points the agent writes at that step (0 for a reroll), so
      an episode's return is the agent's final total.
    - `reward="win"`: 0 until the end, then +1 for a win, 0 for a shared win, -1 for
      a loss.
    - An illegal action leaves the game unchanged and gives `illegal_penalty`
      (default -1) with `info["illegal_action"]` set and `info["illegal_reason"]` saying
      why, or raises `IllegalActionError` with `illegal_action="raise"`.

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
    `served_generala_pending` (bool), `illegal_action` (bool), `illegal_reason` (str, `""`
    after a legal action), `opponent_moves` (`(3 (players - 1), 3)` int64: the
    `(seat, action, points)` moves played since the agent's last move, then `-1` rows;
    `generala_env.env.opponent_moves(info)` lists them), `game_over` (bool), `winners`
    (`(players,)` bool, all false while the game is on), `winner` (the seat of a sole
    winner, else `-1`) and `served_generala_win` (bool).

    ## Arguments
    ```python
    import gymnasium as gym, generala_env
    env = gym.make("Generala-v0", rules="classic", num_players=2, opponents="greedy",
                   reward="win", agent_seat="random", render_mode="ansi")
    ```
    - `rules`: preset name (`classic`, `double`, `sixty`), YAML path, mapping or `RuleSet`.
    - `num_players`: 1–6 (default 1).
    - `opponents`: for the other seats, one agent or a list of one per seat; an agent
      is a name registered in `generala_env.opponents` (e.g. `"random"`, `"greedy"`,
      `"optimal"`: `generala agents` lists them), an object with `act(observation, info)`,
      or a callable `(observation, info) -> action`. Default `"greedy"`.
    - `opponent_trust`: what an opponent given by name may do
      (`generala_env.opponents.Trust`; default `Trust.PROGRAM`: a module, a Python file or a
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
      `gymnasium.wrappers.RecordVideo`; `generala_env.picture`); another mode gives a warning
      and renders as `None`. `render_scale`: 2 (default) or 1, a picture of half the width
      and height (a quarter of the pixels, cheaper to encode as video).

    ## Seeding
    Every die comes from `np_random` (seeded by `reset(seed=...)`), drawn 1024 faces
    at a time by a `generala_env.dice.DiceCup` and handed out in order: same seed,
    same game, bit for bit; a new seed starts a new cup. The seat (`agent_seat="random"`)
    and the opponents' seeds come from the same generator. An object set as `np_random`
    that is not a numpy `Generator` (a replay of recorded dice) is asked for each throw
    as it comes.

    ## Version History
    - v0: initial release (observation layout version 1). After 0.2.0: `obs_type`, the cap
      on illegal actions in a row (truncation), every `info` key at every step with a fixed
      shape, every action marked legal once the game is over, and a warning instead of an
      error for an unknown `render_mode`; `render_mode="rgb_array"`. Legal play gives the same
      games as before.
    """

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 4}
    # set per env in __init__; the class defaults serve envs pickled before they existed
    _halt: str | None = None
    obs_type, _dict_obs = "flat", False
    max_illegal_in_a_row: int | None = MAX_ILLEGAL_IN_A_ROW
    _illegal_streak = 0
    render_scale = 2
    _shown_moves: list[tuple[int, int, int, int]] = []  # noqa: RUF012  # made anew by __init__ and reset(); read-only here

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
        self.max_illegal_in_a_row = check_max_illegal(max_illegal_in_a_row)
        self.render_mode = check_arguments(self.num_players, reward, agent_seat, render_mode, self.metadata["render_modes"], illegal_action, illegal_penalty)
        self.reward_mode = reward
        self.agent_seat_option = agent_seat
        self.illegal_action = illegal_action
        self.illegal_penalty = check_finite("illegal_penalty", illegal_penalty)
        self.exploring_starts = check_share("exploring_starts", exploring_starts)
        self._opponent_agents = self._resolve_opponents(opponents, opponent_trust or opponents_registry.Trust.PROGRAM)
        # what the env calls for each opponent seat, in play order after the agent
        self.opponents: list[Callable] = [getattr(a, "act", a) for a in self._opponent_agents]

        self.encoder = Encoder(self.rules, self.num_players)
        self.layout = observation_layout(self.rules, self.num_players)
        self.action_space: spaces.Discrete = spaces.Discrete(NUM_MASKS + self.rules.num_lines)
        self.observation_space = observation_space(self.encoder.size, int(self.action_space.n), self.obs_type)
        self._dict_obs = self.obs_type == "dict"
        self.seat = 0 if agent_seat == "random" else int(agent_seat)
        self._ended_before_move = False
        self._illegal_streak = 0  # illegal actions in a row
        self._halt: str | None = NOT_RESET  # why step() cannot go on as usual; None while it can
        self._last_opponent_moves: list[tuple[int, int, int]] = []
        self._shown_moves = []  # (seat, action, points, roll before) since the agent's last move, its own first
        self._cup: DiceCup | None = None

    @property
    def layout_version(self) -> int:
        return LAYOUT_VERSION

    @property
    def opponent_agents(self) -> tuple[Any, ...]:
        """The opponents as given or built, in play order after the agent: an agent object
        (with ``act``), or a callable ``(observation, info) -> action``."""
        return tuple(self._opponent_agents)

    @property
    def last_moves(self) -> tuple[tuple[int, int, int, int], ...]:
        """The moves since the agent's last decision, its own first, as the ``rgb_array``
        picture lists them: ``(seat, action, points, roll before the move)``
        (:func:`generala_env.picture.describe_move` puts one in words)."""
        return tuple(self._shown_moves)

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

    # -- Gymnasium API ----------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._halt = RESET_FAILED  # until this reset completes (an opponent's failure says more)
        super().reset(seed=seed)
        if self.agent_seat_option == "random":
            self.seat = int(self.np_random.integers(self.num_players))
        self.game.reset(self._dice())
        sheets = exploring_start(self.rules, self.num_players, self.exploring_starts, self.np_random)
        if sheets is not None:
            self.game.set_state(sheets=sheets)
        for opp in self._opponent_agents:  # opponents' own randomness is seeded from the env's generator
            if hasattr(opp, "act") and hasattr(opp, "reset"):
                opp.reset(seed=int(self.np_random.integers(2**63)))
        self._last_opponent_moves = []
        self._shown_moves = []
        self._illegal_streak = 0
        self._play_opponents()
        self._ended_before_move = self.game.over
        self._halt = _ENDED_BEFORE_MOVE if self._ended_before_move else None
        info = self._info(illegal=False)
        return self._obs(info["action_mask"]), info

    def step(self, action):
        if self._halt is not None:  # one check for every unusual case
            if not self._ended_before_move:
                raise RuntimeError(f"step() cannot go on: {self._halt}")
            self._ended_before_move, self._halt = False, None
            info = self._info(illegal=False)
            return self._obs(info["action_mask"]), self._final_reward(), True, False, info
        game = self.game
        if game.over:
            raise RuntimeError("step() called after the episode ended; call reset()")
        if action.__class__ is not int and isinstance(action, np.ndarray) and action.shape == ():
            action = action[()]  # SB3's predict() gives one observation's action as a 0-d array
        roll_before = game.roll
        observe = None
        if not self.opponents:  # the state after the agent's move is the one observed: one compiled call makes both
            obs = np.empty(self.encoder.size, dtype=np.float32)
            observe = (*self.encoder.observe_tables, self.seat, obs)
        try:
            outcome = game.step(action, self._dice(), observe)
        except IllegalActionError as err:  # the game changed nothing and says why
            if self.illegal_action == "raise":
                raise
            self._illegal_streak = next_streak(self._illegal_streak, True)
            truncated = truncates(self._illegal_streak, self.max_illegal_in_a_row)
            if truncated:
                self._halt = f"the episode was truncated after {self._illegal_streak} illegal actions in a row: call reset()"
            info = self._info(illegal=True, reason=str(err))
            return self._obs(info["action_mask"]), self.illegal_penalty, False, truncated, info
        self._illegal_streak = 0
        self._shown_moves = [(outcome.player, outcome.action, outcome.points, roll_before)]
        reward = float(outcome.points) if self.reward_mode == "score" else 0.0
        if self.opponents:
            self._last_opponent_moves = []
            self._play_opponents()
        # what _obs() and _info() make, made here directly: this is the step's hot path
        info = make_info(game, self.seat, False, self._last_opponent_moves)
        terminated = info["game_over"]
        if terminated and self.reward_mode == "win":
            reward = self._final_reward()
        if self.render_mode == "human":
            self.render()
        if observe is None:
            obs = self.encoder.encode(game, self.seat, info["served_generala_pending"])
        if terminated:
            info["action_mask"] = final_mask(self.action_space.n, np.int8)
        if self._dict_obs:
            obs = {"observation": obs, "action_mask": info["action_mask"].copy()}
        return obs, reward, terminated, False, info

    def action_masks(self) -> np.ndarray:
        """Boolean mask of legal actions (what sb3-contrib's MaskablePPO asks for); every
        action once the game is over (see Episode End)."""
        if self._ended_before_move or self.game.over:
            return final_mask(self.action_space.n)
        return self.game.legal_mask()

    def render(self):
        if self.render_mode == "rgb_array":
            return draw(self.picture())
        if self._halt in (NOT_RESET, RESET_FAILED):
            raise RuntimeError(f"render() has nothing to show: {self._halt}")
        text = render_text(self.game, seat=self.seat)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def picture(self) -> Picture:
        """What ``render()`` draws in ``rgb_array`` mode, as a small picklable
        :class:`~generala_env.picture.Picture`; ``picture.draw`` makes the same frame from it
        anywhere (``generala_env.video.RecordVideo`` draws its videos in another process)."""
        if self._halt in (NOT_RESET, RESET_FAILED):
            raise RuntimeError(f"render() has nothing to show: {self._halt}")
        return picture_of(self.game, seat=self.seat, moves=self._shown_moves, scale=self.render_scale)

    # -- internals --------------------------------------------------------------
    def _dice(self) -> DiceCup:
        """The cup the game's dice come from: the env's generator, drawn in blocks. A new
        generator (``reset(seed=...)``, or ``np_random`` set by hand) gets a new cup."""
        self._cup = cup_for(self._cup, self.np_random)
        return self._cup

    def _play_opponents(self) -> None:
        """Opponents move until the agent has the move or the game is over. If one fails
        (raises, or plays an illegal action), the error goes to the caller and the env
        refuses to step until ``reset()``: the game stopped in the opponent's turn."""
        g = self.game
        while not g.over and g.player != self.seat:
            seat = g.player
            k = (seat - self.seat - 1) % self.num_players
            opp, act = self._opponent_agents[k], self.opponents[k]
            try:
                action = act(self.encoder.encode(g, seat), make_info(g, seat))
            except BaseException as err:
                self._halt = f"{_who(seat, opp, act)} raised {type(err).__name__}: {err}; the game stopped in its turn: call reset()"
                raise
            roll_before = g.roll
            try:
                out = g.step(action, self._dice())
            except IllegalActionError as err:
                why = f"{_who(seat, opp, act)} played illegal action {action!r}: {err}"
                self._halt = f"{why}; the game stopped in its turn: call reset()"
                raise IllegalActionError(why) from None
            except BaseException as err:  # the dice failed (a scripted generator ran out), or an interrupt
                self._halt = f"{_who(seat, opp, act)}'s move failed with {type(err).__name__}: {err}; the game stopped in its turn: call reset()"
                raise
            self._last_opponent_moves.append((seat, out.action, out.points))
            self._shown_moves.append((seat, out.action, out.points, roll_before))

    def _final_reward(self) -> float:
        return win_reward(self.game.winners(), self.seat) if self.reward_mode == "win" else 0.0

    def _obs(self, mask: np.ndarray):
        """The observation; with ``obs_type="dict"`` together with (a copy of) ``mask``, the
        int8 mask that ``info`` holds."""
        obs = self.encoder.encode(self.game, self.seat)
        return {"observation": obs, "action_mask": mask.copy()} if self._dict_obs else obs

    def _info(self, illegal: bool, reason: str = "") -> dict[str, Any]:
        info = make_info(self.game, self.seat, illegal, self._last_opponent_moves, reason)
        if self.game.over:  # also when an opponent's served generala ended it before the agent's move
            info["action_mask"] = final_mask(self.action_space.n, np.int8)
        return info
