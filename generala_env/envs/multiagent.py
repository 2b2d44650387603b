"""Generala for 2–6 agents as a PettingZoo AEC environment (``generala_v0``).

PettingZoo is an optional dependency (``pip install ".[multiagent]"`` in the project's clone)::

    from generala_env.envs.multiagent import env, raw_env
    e = env(rules="classic", num_players=3, reward="win")
    e.reset(seed=0)
    for agent in e.agent_iter():
        obs, reward, termination, truncation, info = e.last()
        action = None if termination or truncation else policy(obs)
        e.step(action)

It drives the env core at N = 1 (:class:`generala_env.envs.env_core.EnvCore`, as ``Generala-v0``
does) with every seat an agent: the game is the core's :class:`generala_env.core.game.Game`, its dice
the core's (the same draws as ``Generala-v0`` seeded alike), the observation the same
:class:`generala_env.core.encoding.Encoder` vector and the ``info`` the same
:func:`generala_env.envs.env.make_info` dict (its action mask in the observation;
``seat_info(agent)`` gives the whole dict), so one policy plays in either environment.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import AECEnv
from pettingzoo.utils import BaseWrapper, wrappers

from generala_env.core.checks import action_number, check_finite, check_render_mode, check_reward, is_whole
from generala_env.core.dice import NUM_MASKS
from generala_env.core.encoding import LAYOUT_VERSION, observation_layout
from generala_env.core.game import MAX_PLAYERS, Game, IllegalActionError
from generala_env.core.info import make_info, win_reward
from generala_env.core.rules import RuleSet, load_rules
from generala_env.envs.env import observation_space
from generala_env.envs.env_core import NOT_RESET, EnvCore
from generala_env.rendering.picture import MOVES_SHOWN

MIN_PLAYERS = 2
_NO_MOVE = (-1, -1, -1)  # last_move after reset


def agent_name(seat: int) -> str:
    return f"player_{seat}"


def env(illegal_reward: float = -1.0, **kwargs) -> AECEnv:
    """The environment with PettingZoo's usual wrappers.

    An illegal action ends the game for everyone, the offender getting ``illegal_reward``
    (``TerminateIllegalWrapper``); an action outside the action space is an assertion
    error; calling things out of order (``step`` before ``reset``) is an error.
    """
    illegal_reward = check_finite("illegal_reward", illegal_reward)
    e = raw_env(**kwargs)
    e = wrappers.TerminateIllegalWrapper(e, illegal_reward=illegal_reward)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    e = ActionChecked(e)
    e = wrappers.OrderEnforcingWrapper(e)
    return e


class ActionChecked(BaseWrapper):
    """The check of an action (:func:`generala_env.core.checks.action_number`) before PettingZoo's
    wrappers read it, which cannot take what is not an integer: ``AssertOutOfBoundsWrapper``
    asserts on it and ``TerminateIllegalWrapper`` indexes the mask with it (``True`` picks a row
    of the mask, not an action). A dead agent's step passes on unread."""

    def step(self, action) -> None:
        agent = self.agent_selection
        if not (self.terminations[agent] or self.truncations[agent]):
            action = action_number(action, int(self.action_space(agent).n))
        super().step(action)


class raw_env(AECEnv, EzPickle):
    """
    ## Description
    Generala, the five-dice game of Latin America, for 2–6 agents taking turns. On its
    turn an agent rolls five dice up to three times, holding any dice between rolls,
    then writes the dice on one open line of its score sheet. The game ends when every
    sheet is full, or at once on a served generala (five alike on a turn's first roll)
    when the rule set says it wins. Rules: see `generala rules`.

    Agents are `player_0 … player_{n-1}`, in play order; `player_0` starts. The same
    agent stays selected for its whole turn (one to three actions), then the next seat.

    ## Action Space
    `Discrete(32 + L)` for every agent, `L` the number of lines of the rule set:
    - `0 … 31`: hold mask. Bit `i` keeps `info["dice"][i]` (sorted faces); the rest
      are rerolled. Legal only while rolls are left; `31` (hold all) is never legal;
      under `locked_holds` a mask that puts back a die kept earlier this turn is illegal.
    - `32 + l`: write the dice on line `l` (rule-set order); legal iff the line is
      open. Dice that do not qualify write 0 there (crossing it out).
    - When a served generala wins the game, the only legal action is writing it on
      the generala line.
    - An action is a Python int, a NumPy integer or a 0-d integer array (what a
      policy's `predict` gives for one observation), as in `Generala-v0`: any integer
      outside `0 … 31 + L` is an illegal action (`IllegalActionError` from `raw_env`, the
      wrappers' handling from `env()`); anything else (`3.7`, `"a"`, `None` while the
      agent is alive, `True`) raises `NotAnActionError` naming it, from both.

    ## Observation Space
    `Dict(observation=Box(-1, 1, (n,), float32), action_mask=Box(0, 1, (32 + L,), int8))`.
    `observation` is the `Generala-v0` vector from the observing agent's seat (its own
    sheet first, then the opponents in play order after it), so one policy can sit in
    any seat; `generala_env.observation_layout(rules, num_players)` names its slices.
    `action_mask` marks the legal actions of the agent to move and is all zeros for the
    others (and for everyone once the game is over).

    ## Starting State
    Empty sheets; `player_0` has rolled all five dice. `raw_env` raises `RuntimeError`
    for `step()` or `render()` before the first `reset()`.

    ## Rewards
    - `reward="score"` (default): the points an agent writes, given at that step (0 for
      a reroll), so each agent's return is its final total. A served generala that wins
      earns only its points in this mode; use `"win"` to reward winning.
    - `reward="win"`: 0 until the end, then +1 to a sole winner, 0 to each player of a
      shared win, -1 to every other player (also on a served generala).
    - With `env()`, an illegal action ends the game: the offender gets `illegal_reward`
      (default -1), the others 0. `raw_env` raises `IllegalActionError` instead.

    ## Episode End
    All agents terminate together when the game ends: the last line of the last sheet is
    written, or a served generala is written (the other sheets stay as they are). Never
    truncated; a game lasts at most `3 L n` actions. Terminated agents then step `None`.

    ## Information
    `infos[agent]` is `make_info(game, seat)` of `Generala-v0` but its `action_mask`, which is
    in the observation (PettingZoo's place for it; TorchRL's `PettingZooWrapper` reads it
    there): `dice`, `rolls_left`, `locked`, `sheets` (`players × L` ints, `-1` marks an open
    line), `totals`, `turn` (the seat's round, from 0), `player` (seat to move), `seat`,
    `served_generala_pending`, `illegal_action`, `opponent_moves` (all `-1` rows here),
    `game_over`, `winners` (`(players,)` bool), `winner` (seat of a sole winner, else `-1`),
    `served_generala_win`, plus `last_move` (`(3,)` int64: `(seat, action, points)` of the
    move just played, `-1`s after reset). Every key is there at every step, each a number, a
    bool or an array with a fixed type and shape. `seat_info(agent)` is the whole `make_info`
    dict, the mask with it: what an agent's `act(observation, info)` reads.

    ## Arguments
    ```python
    from generala_env.envs.multiagent import env
    e = env(rules="classic", num_players=2, reward="score", render_mode="ansi")
    ```
    - `rules`: preset name (`classic`, `double`, `sixty`), YAML path, mapping or `RuleSet`.
    - `num_players`: 2–6 (default 2); for one player use `Generala-v0`.
    - `reward`: `"score"` or `"win"`.
    - `render_mode`: `"ansi"` (returns text), `"human"` (prints it after every step) or
      `"rgb_array"` (returns a `uint8 (H, W, 3)` picture: `generala_env.rendering.picture`);
      another mode gives a warning and renders as `None`.
    - `env(illegal_reward=-1.0, ...)`: reward of an illegal action under the wrappers.

    There is no parallel version: PettingZoo's `aec_to_parallel` needs every agent to
    act exactly once per cycle, but a Generala turn is one to three actions by the same
    agent (`metadata["is_parallelizable"]` is `False`, as for PettingZoo's classic games).

    ## Copies
    `copy.deepcopy` and `pickle` copy the game as it stands (state, generator and its
    dice, rewards, agent selection): a copy stepped with the same actions plays the same
    game. A pickle made by an older version, which held only the constructor
    arguments, loads as a fresh env.

    ## Version History
    - v0: initial release (observation layout version 1).
    """

    metadata = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "generala_v0",
        "is_parallelizable": False,
        "render_fps": 4,
    }

    def __init__(
        self,
        rules: str | RuleSet | dict | None = "classic",
        num_players: int = 2,
        reward: str = "score",
        render_mode: str | None = None,
    ):
        EzPickle.__init__(self, rules=rules, num_players=num_players, reward=reward, render_mode=render_mode)
        super().__init__()
        self.rules = load_rules(rules)
        if not is_whole(num_players) or not MIN_PLAYERS <= num_players <= MAX_PLAYERS:
            raise ValueError(f"num_players must be an integer from {MIN_PLAYERS} to {MAX_PLAYERS} (one player: use Generala-v0), got {num_players!r}")
        check_reward(reward)
        self.reward_mode = reward
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.game = Game(self.rules, int(num_players))
        self.num_players = self.game.num_players
        # the core at N = 1 with every seat an agent: the agents' actions are checked here (an
        # illegal one raises, or ends the game under env()'s wrapper), the rewards given here
        self.core = EnvCore(
            1, self.rules, self.num_players, every_seat=True, illegal_action="raise", game=self.game, record_moves=True,
            render_mode=self.render_mode, render_modes=cast(list, self.metadata["render_modes"]),
        )  # fmt: skip
        self.encoder = self.core.encoder
        self._actions = np.zeros(1, dtype=np.int64)
        self.layout = observation_layout(self.rules, self.num_players)

        self.possible_agents = [agent_name(s) for s in range(self.num_players)]
        self.agents = self.possible_agents[:]
        self._seat = {a: s for s, a in enumerate(self.possible_agents)}
        n_actions = NUM_MASKS + self.rules.num_lines
        self.action_spaces = {a: spaces.Discrete(n_actions) for a in self.possible_agents}
        self.observation_spaces = {a: observation_space(self.encoder.size, n_actions, "dict") for a in self.possible_agents}
        self._np_random: np.random.Generator | None = None
        self._np_random_seed: int | None = None
        self._last_move: tuple[int, int, int] = _NO_MOVE
        self._shown_moves: list[tuple[int, int, int, int]] = []  # the last moves, as the picture lists them
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[0]
        self._started = False  # reset() was called

    # EzPickle rebuilds an object from its constructor arguments: a fresh game. A copy
    # (pickle, copy.deepcopy) must be the same game, so it carries the whole state.
    def __getstate__(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "game" not in state:  # a pickle of the constructor arguments only
            EzPickle.__setstate__(self, state)
            return
        self.__dict__.update(state)
        core = state.get("core")
        if core is not None:  # the core holds the game's own arrays again (pickling copies each)
            core.game = core._template = self.game
            core._views()
        else:  # a pickle from before the core: one made now, the game as it stood and its generator going on
            self.core = EnvCore(
                1, self.rules, self.num_players, every_seat=True, illegal_action="raise", game=self.game, record_moves=True,
                render_mode=self.render_mode, render_modes=cast(list, self.metadata["render_modes"]),
            )  # fmt: skip
            self._actions = np.zeros(1, dtype=np.int64)
            self.core.draw_from(self.np_random)
        if self._last_move is None:  # a pickle from before last_move had a fixed shape
            self._last_move = _NO_MOVE
        if "_shown_moves" not in state:  # a pickle from before the pictures
            self._shown_moves = []

    @property
    def layout_version(self) -> int:
        return LAYOUT_VERSION

    @property
    def np_random(self) -> np.random.Generator:
        """The env's generator, seeded by ``reset(seed=s)``; the game then draws from its own
        stream the same dice as ``seeding.np_random(s)`` would (as ``Generala-v0``), so a
        generator set here by hand is what gives the dice."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random

    @np_random.setter
    def np_random(self, value) -> None:
        """Set the generator (anything with ``integers(low, high, size=..., dtype=...)``);
        the next ``reset()`` without a seed keeps it. Tests use it to script the dice."""
        self._np_random = value
        self._np_random_seed = -1
        self.core.draw_from(value)

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    # -- PettingZoo API ---------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        core = self.core
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
            core.draw_from_streams(self._np_random)
            core.seed(seed)
        core.start(core._all, np.empty((1, self.encoder.size), dtype=np.float32))
        core.halt = None
        self._started = True
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._last_move = _NO_MOVE
        self._shown_moves = []
        self._update_infos()
        self.agent_selection = self.possible_agents[self.game.player]

    def observe(self, agent) -> dict[str, np.ndarray]:
        seat = self._seat[agent]
        g = self.game
        mask = g.legal_mask() if (g.player == seat and not g.over) else np.zeros(g.num_actions, dtype=bool)
        return {"observation": self.encoder.encode(g, seat), "action_mask": mask.astype(np.int8)}

    def step(self, action) -> None:
        if not self._started:
            raise RuntimeError(f"step() cannot go on: {NOT_RESET}")
        if not self.agents:
            raise RuntimeError("step() after the game has ended: every agent is done; call reset() to play again")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = action_number(action, self.game.num_actions)  # not an integer: one error naming it; a 0-d array: its number
        g = self.game
        why = g.why_illegal(action)
        if why is not None:
            raise IllegalActionError(f"{agent}: {why}")
        self._cumulative_rewards[agent] = 0.0  # the agent has seen its reward: start afresh
        self._clear_rewards()
        self._actions[0] = int(action)
        points = self.core.step(self._actions, np.empty((1, self.encoder.size), dtype=np.float32))[0]
        move = self.core.moves(0)[0]  # (seat, action, points, roll before)
        self._last_move = move[:3]
        self._shown_moves = (self._shown_moves + [move])[-MOVES_SHOWN:]
        if self.reward_mode == "score":
            self.rewards[agent] = float(points)
        if g.over:
            if self.reward_mode == "win":
                winners = g.winners()
                for a, s in self._seat.items():
                    self.rewards[a] = win_reward(winners, s)
            self.terminations = dict.fromkeys(self.agents, True)
        self._accumulate_rewards()
        self._update_infos()
        # during the game the seat to move; at the end the next seat, so all step None in turn
        self.agent_selection = self.possible_agents[(move[0] + 1) % self.num_players if g.over else g.player]
        if self.render_mode == "human":
            self.render()

    def render(self):
        if self.render_mode is None:
            from gymnasium import logger

            logger.warn("render() called without a render_mode; pass render_mode='ansi', 'human' or 'rgb_array'")
            return None
        if not self._started:
            raise RuntimeError(f"render() has nothing to show: {NOT_RESET}")
        text = self.core.render(0, moves=self._shown_moves)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    def seat_info(self, agent) -> dict[str, Any]:
        """``agent``'s :func:`~generala_env.envs.env.make_info` dict with its action mask (all zeros
        unless it has the move), what an agent's ``act(observation, info)`` reads;
        ``infos[agent]`` is the same less the mask, which the observation holds."""
        if not self._started:
            raise RuntimeError(f"seat_info() has nothing to tell: {NOT_RESET}")
        info = make_info(self.game, self._seat[agent])
        info["last_move"] = np.array(self._last_move, dtype=np.int64)
        return info

    # -- internals --------------------------------------------------------------
    def _update_infos(self) -> None:
        self.infos = {}
        for a in self.agents:
            info = self.seat_info(a)
            del info["action_mask"]  # the observation holds it: one place, as PettingZoo keeps it
            self.infos[a] = info
