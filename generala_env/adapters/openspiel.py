"""Generala as an OpenSpiel game: ``python_generala`` (the ``[openspiel]`` extra).

Importing this module registers the game with ``pyspiel``::

    import pyspiel
    import generala_env.adapters.openspiel  # registers python_generala
    game = pyspiel.load_game("python_generala", {"players": 2, "rules": "double", "reward": "win"})

Parameters: ``players`` (1–6), ``rules`` (a preset name or a YAML file's path), ``reward``
(``"score"``: each write's points as the step's reward, the returns the totals so far, as the
env's ``reward="score"``; ``"total"``: the totals as rewards at the end only; ``"win"``: at
the end, +1 for a sole win, 0 for a shared one, -1 for a loss, as the env's
``reward="win"``). OpenSpiel's MCTS wants rewards at the end: ``"total"`` or ``"win"``. Chance is explicit and stochastic: a chance node's outcomes are the
distinct rolls its throw can end on (action = index into ``generala_env.core.dice.ROLLS``),
with their exact probabilities (:mod:`generala_env.planning.model`). Decision actions are the
env's: hold masks 0..31, then ``32 + line``. Observation tensors are the env's
(:class:`generala_env.core.encoding.Encoder`), from the observing player's seat; at a chance
node the dice slices are zero. Every transition is :class:`generala_env.planning.model.Model`'s,
which runs the env's own rule code.
"""

from __future__ import annotations

import numpy as np

from generala_env.extras import how_to_install

try:
    import pyspiel
except ImportError as e:  # pragma: no cover - depends on the extra
    raise ImportError(f"generala_env.adapters.openspiel needs OpenSpiel, which is not installed; {how_to_install('openspiel')}") from e

from generala_env.core.dice import DICE, KEEP_COUNTS, NUM_MASKS, NUM_ROLLS, ROLLS
from generala_env.core.encoding import Encoder, observation_layout, observation_size
from generala_env.core.game import MAX_PLAYERS, OPEN, ROLLS_PER_TURN, Game
from generala_env.core.info import win_reward
from generala_env.core.rules import RulesError, load_rules
from generala_env.core.scoring import points_table
from generala_env.planning.model import Model, ModelState

SHORT_NAME = "python_generala"
REWARDS = ("score", "total", "win")
_DEFAULT_PARAMS = {"players": 1, "rules": "classic", "reward": "score"}


def _game_type(reward_model) -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=SHORT_NAME,
        long_name="Python Generala",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=reward_model,
        max_num_players=MAX_PLAYERS,
        min_num_players=1,
        provides_information_state_string=False,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=_DEFAULT_PARAMS,
    )


# registered with per-write rewards; a game with reward "total" or "win" says its rewards come at the end
_GAME_TYPE = _game_type(pyspiel.GameType.RewardModel.REWARDS)
_TERMINAL_TYPE = _game_type(pyspiel.GameType.RewardModel.TERMINAL)

# the dice slices of an observation: zero at a chance node (the dice are in the cup)
_DICE_SLICES = ("dice_counts", "dice_sorted", "rolls_left", "first_roll", "locked_counts", "served_generala", "points_now")


_MODELS: dict[tuple, Model] = {}


def _model(rules, players: int) -> Model:
    """One model per rule set and player count, shared by every game and state of them."""
    key = (rules, players)
    if key not in _MODELS:
        _MODELS[key] = Model(rules, players)
    return _MODELS[key]


class GeneralaGame(pyspiel.Game):
    """Generala under one rule set for 1–6 players (see the module)."""

    def __init__(self, params=None):
        params = {**_DEFAULT_PARAMS, **(params or {})}
        players, reward = params["players"], params["reward"]
        if not isinstance(players, int) or not 1 <= players <= MAX_PLAYERS:
            raise ValueError(f"python_generala: players must be 1 to {MAX_PLAYERS}, got {players!r}")
        if reward not in REWARDS:
            raise ValueError(f"python_generala: reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        try:
            rules = load_rules(params["rules"])
        except RulesError as e:
            raise ValueError(f"python_generala: rules: {e}") from None
        self.rules, self.players, self.reward = rules, players, reward
        most = float(points_table(rules).max(axis=(1, 2)).sum())
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_MASKS + rules.num_lines,
            max_chance_outcomes=NUM_ROLLS,
            num_players=players,
            min_utility=-1.0 if reward == "win" else 0.0,
            max_utility=1.0 if reward == "win" else most,
            utility_sum=None,
            max_game_length=ROLLS_PER_TURN * players * rules.num_lines,
        )
        super().__init__(_GAME_TYPE if reward == "score" else _TERMINAL_TYPE, info, params)
        self.model = _model(rules, players)

    def new_initial_state(self):
        return GeneralaState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        return GeneralaObserver(self, params)


class GeneralaState(pyspiel.State):
    """A state of :class:`GeneralaGame`: a :class:`~generala_env.planning.model.ModelState` and the last rewards."""

    def __init__(self, game: GeneralaGame):
        super().__init__(game)
        self._key = (game.rules, game.players)  # the model is found by this key: a clone (deepcopy) copies tuples only
        self._win = game.reward == "win"
        self._per_write = game.reward == "score"
        self.model_state: ModelState = game.model.initial_state()
        self._rewards = [0.0] * game.players

    @property
    def _model(self) -> Model:
        return _MODELS[self._key]

    # -- the OpenSpiel API --------------------------------------------------------
    def current_player(self):
        s = self.model_state
        if s.over:
            return pyspiel.PlayerId.TERMINAL
        return pyspiel.PlayerId.CHANCE if s.is_chance else s.player

    def _legal_actions(self, player):
        return self._model.legal_actions(self.model_state)

    def chance_outcomes(self):
        return self._model.chance_indices(self.model_state)  # the outcome's action is its roll's index

    def _apply_action(self, action):
        s = self.model_state
        if s.is_chance:  # a write's reward stays until the next decision (OpenSpiel sums rewards at decision nodes)
            self.model_state = self._model.land(s, int(action))
            return
        self._rewards = [0.0] * len(self._rewards)
        self.model_state, out = self._model.decide(s, int(action))
        if self._win:
            if self.model_state.over:
                winners = self._model.winners(self.model_state)
                self._rewards = _win_points(winners, len(self._rewards))
        elif self._per_write:
            self._rewards[out.player] = float(out.points)
        elif self.model_state.over:
            self._rewards = [float(t) for t in self.model_state.totals()]

    def _action_to_string(self, player, action):
        if player == pyspiel.PlayerId.CHANCE:
            return "roll " + "-".join(map(str, ROLLS[action].tolist()))
        if action >= NUM_MASKS:
            return f"write {self._model.rules.lines[action - NUM_MASKS]}"
        return f"hold mask {action}"

    def is_terminal(self):
        return self.model_state.over

    def rewards(self):
        return list(self._rewards)

    def returns(self):
        s = self.model_state
        if self._win:
            return _win_points(self._model.winners(s), len(self._rewards)) if s.over else [0.0] * len(self._rewards)
        if not self._per_write and not s.over:
            return [0.0] * len(self._rewards)
        return [float(t) for t in s.totals()]

    def __str__(self):
        s = self.model_state
        lines = [f"player {s.player}" + (" (over)" if s.over else "")]
        if s.is_chance:
            kept = "-".join(str(f + 1) for f, c in enumerate(KEEP_COUNTS[s.throw_keep].tolist()) for _ in range(c))
            thrown = DICE - len(kept.split("-")) if kept else DICE
            lines.append(f"throwing {thrown} dice, kept [{kept}], " + ("the turn's first roll" if s.starts_turn else f"rolls left after it {s.rolls_left}"))
        if not s.over and not s.is_chance:
            lines.append(f"dice {'-'.join(map(str, s.dice))}, rolls left {s.rolls_left}")
        if self._model.rules.locked_holds:
            lines.append(f"locked keep {s.locked}")
        for p, sheet in enumerate(s.sheets):
            lines.append(f"sheet {p}: " + " ".join("." if v == OPEN else str(v) for v in sheet))
        if s.served_generala_winner >= 0:
            lines.append(f"served generala: seat {s.served_generala_winner} wins")
        return "\n".join(lines)


def _win_points(winners: tuple[int, ...], players: int) -> list[float]:
    """The env's ``reward="win"`` of every seat (:func:`generala_env.core.info.win_reward`)."""
    return [win_reward(winners, p) for p in range(players)]


class GeneralaObserver:
    """The env's observation vector (:class:`~generala_env.core.encoding.Encoder`) from a player's seat."""

    def __init__(self, game: GeneralaGame, params=None):
        if params:
            raise ValueError(f"python_generala: observation parameters are not supported, got {params}")
        self._game = Game(game.rules, game.players)
        self._model = game.model
        self._encoder = Encoder(game.rules, game.players)
        self.tensor = np.zeros(observation_size(game.rules, game.players), np.float32)
        layout = observation_layout(game.rules, game.players)
        self.dict = {name: self.tensor[sl] for name, sl in layout.items()}
        self._dice = [layout[n] for n in _DICE_SLICES]

    def set_from(self, state: GeneralaState, player: int):
        s = state.model_state
        self._model.load(self._game, s._replace(throw_keep=-1))  # encode the sheets; the dice are zeroed below at a chance node
        self.tensor[:] = self._encoder.encode(self._game, player)
        if s.is_chance:
            for sl in self._dice:
                self.tensor[sl] = 0.0

    def string_from(self, state: GeneralaState, player: int):
        return f"seat {player}\n{state}"


pyspiel.register_game(_GAME_TYPE, GeneralaGame)

__all__ = ["GeneralaGame", "GeneralaState", "GeneralaObserver", "SHORT_NAME"]
