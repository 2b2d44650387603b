"""Generala as a `Pgx <https://github.com/sotetsuk/pgx>`_ environment in JAX, with its dice model
(the ``jax`` extra: ``pip install ".[jax]"`` in the project's clone).

::

    import jax
    from generala_env.jax.env import make

    env = make(rules="classic", num_players=2, reward="win")
    init, step = jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(env.step))
    state = init(jax.random.split(jax.random.key(0), 1024))     # 1024 games
    state = step(state, actions, jax.random.split(key, 1024))   # the key is passed in (Pgx v2)

The game is the numba engine's (:mod:`generala_env.core.engine`): the step is bookkeeping over the
same precomputed tables (:mod:`generala_env.jax.rules`), the observation is ``Generala-v0``'s
Box observation for the player to move, and the actions are the env's (``0 … 31`` hold
masks, ``32 + l`` a write on line ``l``). ``tests/test_jax_env.py`` checks every state it
reaches against :class:`generala_env.core.game.Game`.

The dice model (:meth:`Generala.afterstate`, :meth:`Generala.chance_probs`,
:meth:`Generala.land`, :meth:`Generala.throw`) splits a step at its chance node, as
:mod:`generala_env.planning.model` does in NumPy: ``step(s, a, key)`` is
``land(after, throw(after, key))`` with ``after = afterstate(s, a)``.

This module's API (:func:`make`, :class:`State` and its fields, :class:`Afterstate` and
the dice model's methods) is stable: learners and planners build on it. Importing
``generala_env`` never imports JAX; only this module (and :mod:`generala_env.jax.rules`) does.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from generala_env.extras import how_to_install

try:
    import jax
    import jax.numpy as jnp
    import pgx.core as core  # type: ignore[import-untyped]  # pgx ships no type information
    from flax.struct import dataclass, field  # the pytree dataclass Pgx's own State is (pgx vendors this one)
except ImportError as e:  # the jax extra
    raise ImportError(f"generala_env.jax.env needs jax and pgx, which are not installed; {how_to_install('jax')}") from e

from generala_env.core.checks import REWARDS, NotAnActionError, action_number, is_whole, not_an_action
from generala_env.core.dice import ALL_HELD, DICE, EMPTY_KEEP, FACES, KEEPS_LIST, NUM_KEEPS, NUM_MASKS, NUM_ROLLS, ROLL_CONTAINS_KEEP, ROLLS
from generala_env.core.encoding import observation_layout
from generala_env.core.engine import FIRST_ROLL, OPEN
from generala_env.core.game import MAX_PLAYERS
from generala_env.core.game_states import off_sheet
from generala_env.core.rules import RuleSet, load_rules
from generala_env.jax import rules as R

Array = jax.Array
ENV_ID = "generala"


def _game_field(name: str, doc: str) -> property:
    """A read-only property for the game's field ``_name`` of a :class:`State` (Pgx keeps a
    game's own fields private: ``pgx.api_test`` checks that; the documented names read them)."""
    return property(lambda self: getattr(self, f"_{name}"), doc=doc)


@dataclass
class State(core.State):
    """One game (a leading axis for a batch under :func:`jax.vmap`): Pgx's fields, then the
    numba engine's :class:`~generala_env.core.engine.GameState` field by field, then the dice.

    Pgx's: ``current_player`` (int32, the seat to move: ``player``), ``observation``
    (float32 ``(n,)``: ``Generala-v0``'s observation from ``current_player``),
    ``rewards`` (float32 ``(players,)``: what this step gave each seat), ``terminated``,
    ``truncated`` (never set by the game), ``legal_action_mask`` (bool ``(32 + L,)``; every
    action once terminated, as Pgx does), ``_step_count``.

    The game's, private as Pgx's own games keep theirs (``_roll`` …), each read by a read-only
    property of the public name (int32 unless said): ``roll`` (index into
    :data:`~generala_env.core.dice.ROLLS`), ``rolls_left`` (2 after a turn's first roll, 0 after its
    third), ``locked`` (keep index of the dice held this turn, which may not go back under
    ``locked_holds``), ``player`` (whose move), ``writes`` (lines filled, all players together),
    ``over`` (bool: the game ended; ``terminated`` is also set by an illegal action), ``winner``
    (the seat whose served generala ended the game, -1: none), ``sheets`` (``(players, L)``, -1
    for an open line, as ``Game.sheets``) and ``dice`` (``(5,)``: the faces of ``roll``, sorted
    as the hold bits read them). ``_rules``, the rule set, is static (not an array): what the
    picture names the lines by.

    A state draws itself as the game's one picture (:mod:`generala_env.rendering.picture`, the frame of
    ``render_mode="rgb_array"``): :meth:`to_svg`, :meth:`save_svg`, and in a notebook; a batch
    as its games side by side.
    """

    _roll: Array
    _rolls_left: Array
    _locked: Array
    _player: Array
    _writes: Array
    _over: Array
    _winner: Array
    _sheets: Array
    _dice: Array
    _rules: RuleSet = field(pytree_node=False)

    @property
    def rules(self) -> RuleSet:
        """The rule set the game is played under (static: not an array)."""
        return self._rules

    roll = _game_field("roll", "Index into ``ROLLS`` of the dice (sorted).")
    rolls_left = _game_field("rolls_left", "2 after a turn's first roll, 0 after its third.")
    locked = _game_field("locked", "Keep index of the dice held this turn (they may not go back under ``locked_holds``).")
    player = _game_field("player", "Whose move (``current_player`` is the same).")
    writes = _game_field("writes", "Lines filled, all players together.")
    over = _game_field("over", "The game ended (``terminated`` is also set by an illegal action).")
    winner = _game_field("winner", "The seat whose served generala ended the game, -1: none.")
    sheets = _game_field("sheets", "``(players, L)``, -1 for an open line, as ``Game.sheets``.")
    dice = _game_field("dice", "The five faces of ``roll``, sorted (the order hold bits read).")

    @property
    def env_id(self) -> Any:  # Any: Pgx's EnvId lists its own games
        return ENV_ID

    def to_svg(self, *, color_theme: str | None = None, scale: float | None = None) -> str:
        """The state as an SVG picture: the frame :mod:`generala_env.rendering.picture` draws of its game
        (a batch: its games side by side). ``color_theme`` is Pgx's and not read (the picture has
        one look); ``scale`` the picture's size, 1 as drawn."""
        from generala_env.jax.picture import state_svg

        return state_svg(self, scale)

    def save_svg(self, filename, *, color_theme: str | None = None, scale: float | None = None) -> None:
        """:meth:`to_svg` written to ``filename`` (ending ``.svg``, as Pgx asks), atomically."""
        from generala_env.jax.picture import save_state_svg

        save_state_svg(self, filename, scale)

    def _repr_html_(self) -> str:  # a notebook shows the picture
        return self.to_svg()


class Afterstate(NamedTuple):
    """A decision applied before its dice are thrown (a chance node): ``state`` with the sheet
    written, the rolls counted, the turn passed and the decision's ``rewards`` (its dice,
    legal mask and observation are still those before the decision); ``keep``: the keep index of
    the dice staying on the table while the others are thrown, -1 when nothing is thrown (the
    game ended, the state was terminated, or the action was illegal); ``starts_turn``: the
    throw is the next player's first roll."""

    state: State
    keep: Array
    starts_turn: Array


def _where(condition, a, b):
    """``a`` where ``condition`` holds, else ``b``, field by field of two pytrees alike."""
    return jax.tree_util.tree_map(lambda x, y: jnp.where(condition, x, y), a, b)


class Generala(core.Env):
    """Generala under one rule set for ``num_players`` seats, as a Pgx v2 environment: build it
    with :func:`make`.

    ``init(key)``, ``step(state, action, key)`` (the dice are drawn from ``key``) and
    ``observe(state)`` are Pgx's; they :func:`jax.jit` and :func:`jax.vmap`. An illegal action
    is handled as Pgx handles one: the game stays as it was and the episode terminates, the
    mover's reward ``-1`` and every other seat's ``num_players - 1``. An action outside
    ``0 … num_actions - 1`` is illegal too. A step after the end changes nothing and gives
    zero rewards.

    Rewards (``state.rewards``, one per seat): ``reward="score"``, the points the mover wrote at
    this step (0 for a hold), so a seat's return is its total; ``reward="win"``, 0 until the
    game ends, then +1 for a sole win, 0 for a shared win, -1 for a loss, for every seat.
    """

    def __init__(self, rules: RuleSet, num_players: int, reward: str):
        super().__init__()
        self.rules = rules
        self.reward = reward
        self.tables = R.jax_tables(rules, num_players)
        self.layout = observation_layout(rules, num_players)  # name -> slice of the observation
        self._players = num_players
        self._first_turn: State | None = None
        self._make: Any = None  # _made's compiled call

    # -- Pgx's API ------------------------------------------------------------------------------
    @property
    def id(self) -> Any:  # Any: Pgx's EnvId lists its own games
        return ENV_ID

    @property
    def version(self) -> str:
        return "v0"

    @property
    def num_players(self) -> int:
        return self._players

    @property
    def num_actions(self) -> int:
        return NUM_MASKS + self.rules.num_lines

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (self.tables.size,)

    def step(self, state: core.State, action: Array, key: Array | None = None) -> core.State:
        """Pgx's step, the dice drawn from ``key`` (required, as in Pgx v2)."""
        if key is None:
            raise ValueError("step needs a key for the dice: step(state, action, key), as in Pgx v2")
        return super().step(state, self.checked_action(action), key)

    def init(self, key: Array) -> core.State:
        """A new game (:func:`generala_env.compiled.batched.new_games`): empty sheets, seat 0's first roll
        thrown from ``key``. Its legal mask and observation are read from :attr:`first_turn`, made
        from each first roll once (a new game is made at every step of Pgx's ``auto_reset``)."""
        roll = R.landed_roll(self.tables, EMPTY_KEEP, R.throw_code(key))
        first = self.first_turn
        return self._new_game(roll).replace(legal_action_mask=first.legal_action_mask[roll], observation=first.observation[roll], _dice=first.dice[roll])

    def _init(self, key: Array) -> State:
        """Pgx's hook for a new game (:meth:`init` is Pgx's ``init`` with the mask and the
        observation read from :attr:`first_turn` instead)."""
        roll = R.landed_roll(self.tables, EMPTY_KEEP, R.throw_code(key))
        return self._derived(self._new_game(roll))

    @property
    def first_turn(self) -> State:
        """The new games, one for each first roll (a leading axis of 252, by roll): what
        :meth:`init` reads."""
        if self._first_turn is None:

            def fresh(roll):
                state = self._derived(self._new_game(roll))
                return state.replace(observation=self.observe(state))

            with jax.ensure_compile_time_eval():  # computed now, also when first asked for inside a trace
                self._first_turn = jax.jit(jax.vmap(fresh))(np.arange(NUM_ROLLS, dtype=np.int32))
        return self._first_turn

    def _new_game(self, roll: Array) -> State:
        """The numbers of a new game whose first roll is ``roll`` (mask, dice and observation not made)."""
        P, L = self._players, self.rules.num_lines
        i32 = jnp.int32
        return State(
            current_player=i32(0),
            observation=jnp.zeros(self.tables.size, dtype=jnp.float32),
            rewards=jnp.zeros(P, dtype=jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            legal_action_mask=jnp.zeros(self.num_actions, dtype=bool),
            _step_count=i32(0),
            _roll=roll.astype(i32),
            _rolls_left=i32(FIRST_ROLL),
            _locked=i32(EMPTY_KEEP),
            _player=i32(0),
            _writes=i32(0),
            _over=jnp.bool_(False),
            _winner=i32(-1),
            _sheets=jnp.full((P, L), OPEN, dtype=i32),
            _dice=jnp.zeros(DICE, dtype=i32),
            _rules=self.rules,
        )

    def _step(self, state: core.State, action: Array, key: Array | None) -> State:
        assert isinstance(state, State) and key is not None
        after = self._decide(state, action)
        return self._land(after, self.throw(after, key))

    def _observe(self, state: core.State, player_id: Array) -> Array:
        assert isinstance(state, State)
        return R.observe(self.tables, state.roll, state.rolls_left, state.locked, state.player, state.sheets, player_id)

    # -- the dice model -----------------------------------------------------------------------
    def afterstate(self, state: State, action: Array) -> Afterstate:
        """The decision ``action`` applied without throwing: what :meth:`step` does before its
        dice, a finished or illegal step included (:class:`Afterstate`)."""
        action = self.checked_action(action)
        illegal = ~state.legal_action_mask[action]
        decided = self._decide(state.replace(_step_count=state._step_count + 1), action)
        stay = Afterstate(state.replace(rewards=jnp.zeros_like(state.rewards)), jnp.int32(-1), jnp.bool_(False))
        after = _where(state.terminated | state.truncated, stay, decided)
        penalized = self._step_with_illegal_action(after.state, state.current_player)
        return Afterstate(_where(illegal, penalized, after.state), jnp.where(illegal, -1, after.keep), after.starts_turn & ~illegal)

    def chance_probs(self, after: Afterstate) -> Array:
        """float32 ``(252,)``: the probability of each roll of :data:`~generala_env.core.dice.ROLLS`
        after the throw, exact multinomials (a row of
        :data:`~generala_env.core.dice.KEEP_ROLL_PROB`, rounded to float32); 0 for a roll that does
        not hold the kept dice. With nothing thrown, 1 on the roll as it is."""
        return R.chance_probs(self.tables, after.keep, after.state.roll)

    def land(self, after: Afterstate, roll: Array) -> State:
        """The throw of ``after`` ending on ``roll`` (an index into
        :data:`~generala_env.core.dice.ROLLS`): what :meth:`step` does after its decision. ``roll``
        must hold the kept dice (``chance_probs(after)[roll] > 0``); compiled code cannot
        refuse another one, and the state it gives is one the game cannot reach. With nothing
        thrown ``roll`` is not read."""
        state = self._land(after, roll)
        state = state.replace(legal_action_mask=jnp.where(state.terminated, True, state.legal_action_mask))
        return state.replace(observation=self.observe(state))

    def throw(self, after: Afterstate, key: Array) -> Array:
        """The roll (index into :data:`~generala_env.core.dice.ROLLS`) the throw of ``after`` makes
        with dice drawn from ``key``: one throw of five fair dice coded as a number below
        ``6 ** 5`` (as the numba vector env draws them), of which the dice in the cup are read."""
        return jnp.where(after.keep >= 0, R.landed_roll(self.tables, after.keep, R.throw_code(key)), after.state.roll).astype(jnp.int32)

    # -- a state read back ----------------------------------------------------------------------
    # long: one check a field of the state, in the order they depend on one another, each its own message
    def state_problem(self, state: State) -> str | None:
        """The first thing wrong with ``state`` (one game, or games along leading axes) in words
        naming the field (and the game), or ``None``. Read on the host, for a state read back from
        a file (a resumed run's games): compiled code cannot refuse one, and plays a state the game
        cannot reach as if it could. Each number in its range (roll, rolls left, locked keep,
        seats, writes, winner, step count), each sheet value :data:`OPEN` or points its line can
        hold, the dice the faces of the roll (1 to 6) with the locked dice among them, ``writes``
        the lines filled, the floats finite, and the legal mask, the dice and the observation
        those the game's numbers make."""
        s = jax.tree_util.tree_map(np.asarray, jax.device_get(state))
        batch = np.shape(s.roll)
        n, P, L = int(np.prod(batch, dtype=np.int64)), self._players, self.rules.num_lines
        g = jax.tree_util.tree_map(lambda x: x.reshape(n, *x.shape[len(batch) :]), s)

        def first(bad) -> tuple[str, int]:
            j = int(np.flatnonzero(bad)[0])
            return ("" if batch == () else f"game {j}: "), j

        for name, lo, hi in (
            ("roll", 0, NUM_ROLLS - 1),
            ("rolls_left", 0, FIRST_ROLL),
            ("locked", 0, NUM_KEEPS - 1),
            ("player", 0, P - 1),
            ("current_player", 0, P - 1),
            ("winner", -1, P - 1),
            ("writes", 0, P * L),
            ("_step_count", 0, np.iinfo(np.int32).max),
        ):
            a = getattr(g, name)
            bad = (a < lo) | (a > hi)
            if bad.any():
                at, j = first(bad)
                return f"{at}{name} is {a[j]}, outside {lo} to {hi}"
        for name in ("observation", "rewards"):
            a = getattr(g, name).reshape(n, -1)
            bad = ~np.isfinite(a).all(axis=1)
            if bad.any():
                at, j = first(bad)
                return f"{at}{name} holds {a[j][~np.isfinite(a[j])][0]}: not a finite number"
        bad = ((g.dice < 1) | (g.dice > FACES)).any(axis=1)
        if bad.any():
            at, j = first(bad)
            return f"{at}dice {g.dice[j].tolist()}: a die shows 1 to {FACES}"
        bad = (g.dice != ROLLS[g.roll]).any(axis=1)
        if bad.any():
            at, j = first(bad)
            return f"{at}dice {g.dice[j].tolist()} are not the faces of roll {g.roll[j]} ({ROLLS[g.roll[j]].tolist()})"
        bad = ~ROLL_CONTAINS_KEEP[g.roll, g.locked]
        if bad.any():
            at, j = first(bad)
            return f"{at}the locked dice {list(KEEPS_LIST[g.locked[j]])} are not among the dice {ROLLS[g.roll[j]].tolist()}"
        off = off_sheet(self.rules, g.sheets.reshape(n * P, L))
        if off is not None:
            row, line, value = off
            at = "" if batch == () else f"game {row // P}: "
            return f"{at}sheets: seat {row % P}'s {self.rules.lines[line]} holds {value}, which is neither {OPEN} (open) nor points the line can hold"
        filled = (g.sheets != OPEN).sum(axis=(1, 2))
        bad = filled != g.writes
        if bad.any():
            at, j = first(bad)
            return f"{at}writes is {g.writes[j]}, but the sheets have {filled[j]} lines filled"
        derived = jax.device_get(self._made(g))
        mask = np.where(g.terminated[:, None], True, derived.legal_action_mask)
        for name, ok in (
            ("current_player", derived.current_player == g.current_player),
            ("legal_action_mask", (mask == g.legal_action_mask).all(axis=1)),
            ("observation", np.isclose(derived.observation, g.observation, rtol=0, atol=1e-6).all(axis=1)),
        ):
            if not ok.all():
                at, _ = first(~ok)
                return f"{at}{name} is not the one the game's numbers make"
        return None

    def _made(self, games: State) -> State:
        """The legal mask, dice, player to move and observation of each of ``games`` (one axis),
        made from its numbers (compiled once per env)."""
        if self._make is None:
            self._make = jax.jit(jax.vmap(lambda s: (lambda d: d.replace(observation=self.observe(d)))(self._derived(s))))
        return self._make(games)

    # -- the bookkeeping ------------------------------------------------------------------------
    def checked_action(self, action) -> Array:
        """``action`` as :meth:`step` plays it: itself, or an action never legal (hold all five)
        for an integer outside the action space, so that any integer is an illegal action as
        ``42`` is. On the host (the values known: ``step`` called without :func:`jax.jit`) it is
        :func:`generala_env.core.checks.action_number`'s check, that of every env: any Python or NumPy
        integer (or 0-d array), however large (``2**63``, an int64 beyond int32), is illegal, and
        anything else (``3.7``, ``nan``, ``"a"``, ``None``, ``True``, ``[3]``) raises
        :class:`~generala_env.core.checks.NotAnActionError` naming it. Traced (under ``jit`` or
        ``vmap``) only the type is known: an action that is not of an integer type (a float, a
        bool) is refused when the step is traced, and the values go through ``where``. Call it on
        the host before a jitted step to get the host's answer (see ``docs/jax.md``)."""
        n = self.num_actions
        if isinstance(action, jax.core.Tracer):
            if not jnp.issubdtype(action.dtype, jnp.integer):
                raise NotAnActionError(not_an_action(None, n, described=f"a traced {action.dtype} value"))
            return jnp.where((action >= 0) & (action < n), action, ALL_HELD)
        number = action_number(np.asarray(action) if isinstance(action, jax.Array) else action, n)
        return jnp.int32(number if 0 <= number < n else ALL_HELD)

    def _decide(self, state: State, action: Array) -> Afterstate:
        """:func:`generala_env.jax.rules.decide` of a legal action, with its rewards; an illegal one
        changes nothing and throws nothing."""
        t = self.tables.rules
        d = R.decide(t, state.roll, state.rolls_left, state.locked, state.player, state.writes, state.over, state.winner, state.sheets, action)
        decided = state.replace(
            _rolls_left=d.rolls_left,
            _locked=d.locked,
            _player=d.player,
            _writes=d.writes,
            _over=d.over,
            _winner=d.winner,
            _sheets=d.sheets,
            rewards=self._rewards(d, state.player),
            terminated=d.over,
        )
        ok = jnp.any(state.legal_action_mask & (jnp.arange(self.num_actions) == action))  # mask[action], without a gather
        return Afterstate(_where(ok, decided, state), jnp.where(ok, d.keep, -1), d.starts_turn & ok)

    def _rewards(self, d: R.Decision, mover: Array) -> Array:
        seats = jnp.arange(self._players)
        if self.reward == "score":
            return jnp.where(seats == mover, d.points, 0).astype(jnp.float32)
        totals = jnp.sum(jnp.where(d.sheets != OPEN, d.sheets, 0), axis=1)
        won = R.is_winner(d.winner, seats, totals, jnp.max(totals))
        return jnp.where(d.over, 2.0 * R.outcome_points(won, jnp.sum(won)) - 1.0, 0.0).astype(jnp.float32)

    def _land(self, after: Afterstate, roll: Array) -> State:
        """:func:`generala_env.compiled.batched.land_game` with the roll given: it lands beside the keep, or
        is the next player's first roll (:func:`generala_env.core.engine.start_turn`: two rolls left,
        nothing locked)."""
        s, thrown = after.state, after.keep >= 0
        turn = thrown & after.starts_turn
        s = s.replace(
            _roll=jnp.where(thrown, roll, s.roll).astype(jnp.int32),
            _rolls_left=jnp.where(turn, FIRST_ROLL, s.rolls_left),
            _locked=jnp.where(turn, EMPTY_KEEP, s.locked),
        )
        return self._derived(s)

    def _derived(self, s: State) -> State:
        """The state's legal mask, dice and player to move, from its game's numbers."""
        mask = R.legal_mask(self.tables.rules, s.over, s.rolls_left, s.roll, s.locked, s.player, s.sheets)
        return s.replace(legal_action_mask=mask, _dice=self.tables.rolls[s.roll], current_player=s.player)


def make(rules: str | RuleSet | dict | None = "classic", num_players: int = 1, reward: str = "score") -> Generala:
    """Generala as a Pgx environment: ``rules`` a preset name (``classic``, ``double``,
    ``sixty``), a YAML path, a mapping or a :class:`~generala_env.core.rules.RuleSet`;
    ``num_players`` 1–6; ``reward`` ``"score"`` or ``"win"`` (:class:`Generala`)."""
    rule_set = load_rules(rules)
    if not is_whole(num_players) or not 1 <= num_players <= MAX_PLAYERS:
        raise ValueError(f"num_players must be an integer from 1 to {MAX_PLAYERS}, got {num_players!r}")
    if not isinstance(reward, str) or reward not in REWARDS:
        raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
    return Generala(rule_set, int(num_players), reward)


__all__ = ["Afterstate", "Generala", "State", "make"]
