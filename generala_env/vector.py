"""``GeneralaVectorEnv``: N games of ``Generala-v0`` stepped at once with array operations.

The game state of every game lives in a few NumPy arrays (``roll``, ``rolls_left``,
``locked``, ``player``, ``sheets``...), and one step is a fixed number of table look-ups
over all games, whatever N is. It is the same game as :class:`generala_env.env.GeneralaEnv`
(the same tables from :mod:`generala_env.dice` and :mod:`generala_env.scoring`, the same
observation layout as :class:`generala_env.encoding.Encoder`, rewards, masks and
illegal-action policy); ``tests/test_vector.py`` checks it observation for observation
against N single envs fed the same dice.

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
``info["final_obs"]`` (object array, ``None`` for games that did not end) and
``info["final_info"]``, flagged by ``info["_final_obs"]``. ``reset(options={"reset_mask":
m})`` resets only the games where ``m`` is true.

## Information
Arrays over the N games: ``action_mask`` (int8, as ``action_masks()``), ``illegal_action``,
``seat``, ``dice`` (sorted faces), ``rolls_left``, ``turn``, ``totals`` (``N x players``),
and ``game_over`` (an opponent's served generala ended the game before the agent's first
move; the next step ends the episode, as in the single env). ``final_info`` holds
``totals``, ``winner`` (seat, ``-1`` on a shared win) and ``served_generala_win``. The
single env's ``opponent_moves`` and ``illegal_reason`` are not produced.

## Opponents
``"random"`` and ``"greedy"`` (names, or ``RandomAgent`` / ``GreedyAgent`` objects) are
played batched: greedy picks exactly what :class:`agents.baselines.GreedyAgent` picks;
random picks uniformly among legal actions from the env's own generator. Any other agent
or callable is called game by game with the single env's ``(observation, info)``; one
object serves every game, so it must not keep per-game state.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .dice import (
    ALL_HELD,
    DICE,
    EMPTY_KEEP,
    FACES,
    HOLD_KEEP,
    KEEP_CONTAINS,
    KEEP_COUNTS,
    KEEP_OF_KEY,
    KEEP_SIZE,
    KEY_WEIGHTS,
    MASK_FOR_KEEP,
    NUM_MASKS,
    ROLL_COUNTS,
    ROLL_OF_KEY,
    ROLLS,
)
from .encoding import Encoder
from .env import REWARDS, make_info
from .game import OPEN, ROLLS_PER_TURN, Game, IllegalActionError
from .rules import COMBINATION_LINES, RuleSet, load_rules
from .scoring import points_table

# -- tables over the finite dice world, as index arrays ---------------------------------
_HOLD_KEEP = HOLD_KEEP.astype(np.intp)  # (252, 32)
_KEEP_SIZE = KEEP_SIZE.astype(np.intp)
_KEEP_KEY = KEEP_COUNTS.astype(np.int64) @ KEY_WEIGHTS  # base-6 key of each keep's counts
_ROLL_OF_KEY = ROLL_OF_KEY.astype(np.intp)
_FACE_KEY = np.array([0] + [6 ** (f - 1) for f in range(1, FACES + 1)], dtype=np.int64)  # key of one die
_FIVE_ALIKE = ROLL_COUNTS.max(axis=1) == DICE
_DIE_SLOT = np.arange(DICE)
FIRST_ROLL = ROLLS_PER_TURN - 1  # rolls_left right after a turn's first roll
# observation pieces that depend on one index only (float64 → float32 exactly as Encoder does)
_DICE_OBS = np.concatenate([ROLL_COUNTS / 5.0, ROLLS / 6.0], axis=1).astype(np.float32)  # (252, 11)
_LOCKED_OBS = (KEEP_COUNTS / 5.0).astype(np.float32)  # (462, 6)
# greedy's reroll: every die of the most common face (the higher face on ties)
_TOP_FACE = np.array([max(range(FACES), key=lambda f: (c[f], f)) for c in ROLL_COUNTS])
_TOP_KEEP = KEEP_OF_KEY[ROLL_COUNTS[np.arange(len(ROLLS)), _TOP_FACE].astype(np.int64) * KEY_WEIGHTS[_TOP_FACE]].astype(np.intp)


# -- opponents ----------------------------------------------------------------------------
class BatchedOpponent:
    """An opponent that picks actions for many games at once.

    ``act_batch(venv, games, masks)`` returns one action per game in ``games`` (index
    array), each game with the move; ``masks`` are their legal actions ``(n, A)``.
    """

    name = "batched"

    def reset(self, seed: int | None = None) -> None:
        """Called on ``reset(seed=...)`` of the vector env."""

    def act_batch(self, venv: "GeneralaVectorEnv", games: np.ndarray, masks: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


def uniform_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """One uniformly drawn legal action per row of ``masks`` (every row has one)."""
    k = (rng.random(len(masks)) * masks.sum(axis=1)).astype(np.intp)
    return np.argmax(np.cumsum(masks, axis=1) > k[:, None], axis=1)


class BatchedRandom(BatchedOpponent):
    """Uniform over legal actions, drawn from the vector env's generator."""

    name = "random"

    def act_batch(self, venv, games, masks):
        return uniform_legal(venv.np_random, masks)


class BatchedGreedy(BatchedOpponent):
    """:class:`agents.baselines.GreedyAgent`, for many games at once (same choices, bit for bit)."""

    name = "greedy"

    def __init__(self, rules: RuleSet):
        self.rules = rules
        lines = rules.lines
        self.points = np.ascontiguousarray(points_table(rules).transpose(1, 2, 0)).astype(np.float64)  # (252, 2, L)
        self.tiebreak = Encoder(rules, 1).line_max / 1000.0  # float32, as GreedyAgent
        self.combo = np.array([l in COMBINATION_LINES for l in lines])
        self.gen = lines.index("generala") if "generala" in lines else -1
        self.dbl = lines.index("double_generala") if "double_generala" in lines else -1

    def act_batch(self, venv, games, masks):
        n = len(games)
        roll, rolls_left = venv.roll[games], venv.rolls_left[games]
        sheet = venv.sheets[games, venv.player[games]]
        pts = self.points[roll, (rolls_left == FIRST_ROLL).astype(np.intp)]
        if self.dbl >= 0:
            pts[:, self.dbl] *= sheet[:, self.gen] > 0
        open_ = sheet == OPEN
        combo_scores = (open_ & (pts > 0) & self.combo).any(axis=1)
        keep = _TOP_KEEP[roll]
        if self.rules.locked_holds:  # keep the locked dice too
            both = np.maximum(KEEP_COUNTS[keep], KEEP_COUNTS[venv.locked[games]]).astype(np.int64)
            keep = KEEP_OF_KEY[both @ KEY_WEIGHTS].astype(np.intp)
        hold = MASK_FOR_KEEP[roll, keep].astype(np.intp)
        rows = np.arange(n)
        reroll = (rolls_left > 0) & ~combo_scores & masks[rows, hold]
        values = np.where(masks[:, NUM_MASKS:], pts - self.tiebreak, -np.inf)
        return np.where(reroll, hold, NUM_MASKS + np.argmax(values, axis=1))


class PerGameOpponent(BatchedOpponent):
    """Any ``(observation, info) -> action`` agent, called once per game with the single env's inputs."""

    def __init__(self, act: Callable, owner: Any = None):
        self.act = act
        self.owner = owner
        self.name = getattr(owner, "name", getattr(act, "__name__", "agent"))

    def reset(self, seed=None):
        if self.owner is not None and hasattr(self.owner, "reset"):
            self.owner.reset(seed=seed)

    def act_batch(self, venv, games, masks):
        out = np.empty(len(games), dtype=np.intp)
        for j, i in enumerate(games):
            game = venv.game_view(int(i))
            out[j] = int(self.act(venv.encoder.encode(game, game.player), make_info(game, game.player)))
        return out


# -- the vector env -------------------------------------------------------------------------
class GeneralaVectorEnv(VectorEnv):
    """
    ## Description
    ``num_envs`` games of ``Generala-v0`` stepped together; every argument but
    ``num_envs``, ``opponent_mix`` and ``dice_source`` means what it means for
    :class:`generala_env.env.GeneralaEnv`, and each game behaves exactly like one
    ``GeneralaEnv`` (see the module docstring for autoreset, info and opponents).

    ## Spaces
    ``single_action_space = Discrete(32 + L)``, ``action_space = MultiDiscrete([32 + L] * N)``;
    ``single_observation_space`` is the single env's ``Box``, batched to ``(N, n)``.
    ``action_masks()`` gives the legal actions of every game, ``(N, 32 + L)`` bool.

    ## Arguments
    ```python
    GeneralaVectorEnv(num_envs=256, rules="double", num_players=2, opponents="greedy",
                      reward="win", agent_seat="random")
    ```
    - ``opponent_mix``: instead of ``opponents``, a list whose entries are each what
      ``opponents`` takes; game ``i`` plays entry ``i % len(opponent_mix)``.
    - ``dice_source``: ``(games, need) -> faces`` with ``faces`` of shape ``(len(games), 5)``;
      game ``games[j]`` uses the first ``need[j]`` faces. A write always needs 5 (the next
      player's first roll, drawn even when the game ends, as the single env does). The
      default draws from ``np_random``; tests replay given dice through it.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": ["ansi"]}

    def __init__(
        self,
        num_envs: int = 1,
        rules: "str | RuleSet | dict | None" = "classic",
        num_players: int = 1,
        opponents: "Any | Sequence[Any] | None" = None,
        reward: str = "score",
        agent_seat: "int | str" = 0,
        render_mode: str | None = None,
        illegal_action: str = "penalize",
        illegal_penalty: float = -1.0,
        opponent_mix: Sequence[Any] | None = None,
        dice_source: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.num_envs = N = int(num_envs)
        self.rules = load_rules(rules)
        self._template = Game(self.rules, num_players)  # validates num_players; a blank for game_view()
        self.num_players = P = self._template.num_players
        self.num_lines = L = self.rules.num_lines
        self.num_actions = A = NUM_MASKS + L
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        self.reward_mode = reward
        if agent_seat != "random" and not (isinstance(agent_seat, (int, np.integer)) and 0 <= agent_seat < P):
            raise ValueError(f"agent_seat must be 'random' or a seat from 0 to {P - 1}, got {agent_seat!r}")
        self.agent_seat_option = agent_seat
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        if illegal_action not in ("penalize", "raise"):
            raise ValueError(f"illegal_action must be 'penalize' or 'raise', got {illegal_action!r}")
        self.illegal_action = illegal_action
        self.illegal_penalty = float(illegal_penalty)
        self._dice_source = dice_source

        self.encoder = Encoder(self.rules, P)
        self.single_observation_space = spaces.Box(-1.0, 1.0, shape=(self.encoder.size,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(A)
        self.observation_space = batch_space(self.single_observation_space, N)
        self.action_space = batch_space(self.single_action_space, N)

        # rule-set tables
        self._gen, self._dbl = self._template._generala, self._template._double  # -1 where the sheet lacks the line
        self._served_win = self._template._served_win
        self._points = points_table(self.rules)  # (L, 252, 2) int32
        line_max = self.encoder.line_max
        self._points_now = np.ascontiguousarray((self._points.astype(np.float32) / line_max[:, None, None]).transpose(1, 2, 0))
        self._line_max = line_max
        self._total_max = self.encoder.total_max

        # the state of every game
        self.roll = np.zeros(N, dtype=np.intp)
        self.rolls_left = np.zeros(N, dtype=np.intp)
        self.locked = np.full(N, EMPTY_KEEP, dtype=np.intp)
        self.player = np.zeros(N, dtype=np.intp)
        self.seat = np.full(N, 0 if agent_seat == "random" else int(agent_seat), dtype=np.intp)
        self.sheets = np.full((N, P, L), OPEN, dtype=np.int32)
        self.writes = np.zeros(N, dtype=np.intp)
        self.over = np.ones(N, dtype=bool)
        self.served_generala_winner = np.full(N, -1, dtype=np.intp)  # seat, or -1
        self.ended_before_move = np.zeros(N, dtype=bool)  # an opponent's served generala ended it
        self._all = np.arange(N)
        self._masks = np.zeros((N, A), dtype=bool)
        self._every = np.ones(N, dtype=bool)
        self._every.setflags(write=False)

        self._opponents, self._opponent_of = self._resolve_opponents(opponents, opponent_mix)

    # -- opponents ----------------------------------------------------------------------
    def _resolve_opponents(self, opponents, mix):
        n = self.num_players - 1
        if mix is not None:
            if opponents is not None:
                raise ValueError("give opponents or opponent_mix, not both")
            if isinstance(mix, (str, bytes)) or not isinstance(mix, (list, tuple)) or not mix:
                raise ValueError(f"opponent_mix must be a non-empty list, got {mix!r}")
        if n == 0:
            if opponents not in (None, [], ()) or mix is not None:
                raise ValueError("opponents were given but num_players is 1")
            return [], np.zeros((self.num_envs, 0), dtype=np.intp)
        entries = list(mix) if mix is not None else [opponents]
        agents: list[BatchedOpponent] = []
        known: dict[Any, int] = {}

        def index_of(spec) -> int:
            key = spec if isinstance(spec, str) else id(spec)
            if key not in known:
                known[key] = len(agents)
                agents.append(self._batched(spec))
            return known[key]

        table = []
        for entry in entries:
            if entry is None:
                entry = "greedy"
            seats = [entry] * n if isinstance(entry, (str, bytes)) or not isinstance(entry, (list, tuple)) else list(entry)
            if len(seats) != n:
                raise ValueError(f"{n} opponent(s) needed for {self.num_players} players, got {len(seats)}")
            table.append([index_of(s) for s in seats])
        table = np.array(table, dtype=np.intp)
        return agents, table[np.arange(self.num_envs) % len(table)]

    def _batched(self, spec) -> BatchedOpponent:
        if isinstance(spec, BatchedOpponent):
            return spec
        if spec == "random":
            return BatchedRandom()
        if spec == "greedy":
            return BatchedGreedy(self.rules)
        from agents import load as load_agent  # agents sit on top; load lazily
        from agents.baselines import GreedyAgent, RandomAgent

        if isinstance(spec, str):
            spec = load_agent(spec, rules=self.rules)
        if type(spec) is RandomAgent:
            return BatchedRandom()
        if type(spec) is GreedyAgent:
            return BatchedGreedy(spec.rules)
        if hasattr(spec, "act"):
            return PerGameOpponent(spec.act, owner=spec)
        if callable(spec):
            return PerGameOpponent(spec)
        raise ValueError(f"an opponent must be an agent name, an object with act(), or a callable, got {spec!r}")

    def _play_opponents(self, games: np.ndarray) -> None:
        """Opponents move in ``games`` until the agent has the move or the game is over."""
        g = games[~self.over[games] & (self.player[games] != self.seat[games])]
        while g.size:
            who = self.player[g]
            masks = self._legal_masks(g, who)
            opp = self._opponent_of[g, (who - self.seat[g] - 1) % self.num_players]
            if len(self._opponents) == 1:
                actions = np.asarray(self._opponents[0].act_batch(self, g, masks), dtype=np.intp)
            else:
                actions = np.empty(len(g), dtype=np.intp)
                for j in np.unique(opp):
                    sel = opp == j
                    actions[sel] = self._opponents[j].act_batch(self, g[sel], masks[sel])
            ok = (actions >= 0) & (actions < self.num_actions)
            ok[ok] = masks[np.flatnonzero(ok), actions[ok]]
            if not ok.all():
                j = int(np.flatnonzero(~ok)[0])
                view = self.game_view(int(g[j]))
                why = view.why_illegal(int(actions[j]))
                raise IllegalActionError(f"opponent in seat {view.player} of game {int(g[j])} played illegal action {int(actions[j])}: {why}")
            self._apply(g, actions)
            g = g[~self.over[g] & (self.player[g] != self.seat[g])]

    # -- the game, for many games at once ------------------------------------------------
    def _dice(self, games: np.ndarray, need: np.ndarray) -> np.ndarray:
        if self._dice_source is None:
            return self.np_random.integers(1, FACES + 1, size=(len(games), DICE), dtype=np.int8)
        faces = np.asarray(self._dice_source(games, need))
        used = _DIE_SLOT < need[:, None]
        if faces.shape != (len(games), DICE) or ((faces < 1) | (faces > FACES))[used].any():
            raise ValueError(f"dice_source must return ({len(games)}, {DICE}) faces from 1 to {FACES}")
        return faces

    def _served_pending(self, games: np.ndarray) -> np.ndarray:
        if not self._served_win:
            return np.zeros(len(games), dtype=bool)
        return (
            (self.rolls_left[games] == FIRST_ROLL)
            & _FIVE_ALIKE[self.roll[games]]
            & (self.sheets[games, self.player[games], self._gen] == OPEN)
        )

    def _legal_masks(self, games: np.ndarray, who: np.ndarray) -> np.ndarray:
        """``Game.legal_mask`` of each game, ``(n, A)`` (the mover's sheet is ``who``'s)."""
        m = np.zeros((len(games), self.num_actions), dtype=bool)
        m[:, NUM_MASKS:] = self.sheets[games, who] == OPEN
        can_roll = self.rolls_left[games] > 0
        if self.rules.locked_holds:
            keeps = _HOLD_KEEP[self.roll[games], :ALL_HELD]
            m[:, :ALL_HELD] = KEEP_CONTAINS[keeps, self.locked[games][:, None]] & can_roll[:, None]
        else:
            m[:, :ALL_HELD] = can_roll[:, None]
        pending = self._served_pending(games)
        if pending.any():
            m[pending] = False
            m[pending, NUM_MASKS + self._gen] = True
        m[self.over[games]] = False
        return m

    def _start_turn(self, games: np.ndarray, faces: np.ndarray) -> None:
        self.roll[games] = _ROLL_OF_KEY[_FACE_KEY[faces].sum(axis=1)]
        self.rolls_left[games] = FIRST_ROLL
        self.locked[games] = EMPTY_KEEP

    def _apply(self, games: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Apply one legal action in each of ``games``; the points written (0 for rerolls)."""
        hold = actions < NUM_MASKS
        keep = _HOLD_KEEP[self.roll[games], np.where(hold, actions, 0)]
        need = np.where(hold, DICE - _KEEP_SIZE[keep], DICE)
        faces = self._dice(games, need)
        fresh = np.where(_DIE_SLOT < need[:, None], _FACE_KEY[faces], 0).sum(axis=1)
        pts = np.zeros(len(games), dtype=np.int64)

        h = games[hold]
        if h.size:
            self.roll[h] = _ROLL_OF_KEY[_KEEP_KEY[keep[hold]] + fresh[hold]]
            self.rolls_left[h] -= 1
            self.locked[h] = keep[hold]

        w = games[~hold]
        if w.size:
            line = actions[~hold] - NUM_MASKS
            me = self.player[w]
            served = self.rolls_left[w] == FIRST_ROLL
            p = self._points[line, self.roll[w], served.astype(np.intp)]
            if self._dbl >= 0:
                scored = self.sheets[w, me, self._gen] > 0 if self._gen >= 0 else np.zeros(len(w), dtype=bool)
                p = np.where((line == self._dbl) & ~scored, 0, p)
            won = self._served_pending(w)
            self.sheets[w, me, line] = p
            self.writes[w] += 1
            pts[~hold] = p
            full = self.writes[w] == self.num_players * self.num_lines
            self.served_generala_winner[w[won]] = me[won]
            self.over[w[won | full]] = True
            go_on = ~(won | full)
            nxt = w[go_on]
            self.player[nxt] = (me[go_on] + 1) % self.num_players
            self.roll[nxt] = _ROLL_OF_KEY[fresh[~hold][go_on]]
            self.rolls_left[nxt] = FIRST_ROLL
            self.locked[nxt] = EMPTY_KEEP
        return pts

    def _reset_games(self, games: np.ndarray) -> None:
        if self.agent_seat_option == "random":
            self.seat[games] = self.np_random.integers(self.num_players, size=len(games))
        self.sheets[games] = OPEN
        self.player[games] = 0
        self.writes[games] = 0
        self.over[games] = False
        self.served_generala_winner[games] = -1
        self._start_turn(games, self._dice(games, np.full(len(games), DICE)))
        self._play_opponents(games)
        self.ended_before_move[games] = self.over[games]

    def _final_reward(self, games: np.ndarray) -> np.ndarray:
        if self.reward_mode != "win":
            return np.zeros(len(games))
        totals = np.where(self.sheets[games] == OPEN, 0, self.sheets[games]).sum(axis=2)
        best = totals.max(axis=1)
        seat = self.seat[games]
        mine = totals[np.arange(len(games)), seat]
        shared = (totals == best[:, None]).sum(axis=1) > 1
        r = np.where(mine == best, np.where(shared, 0.0, 1.0), -1.0)
        sgw = self.served_generala_winner[games]
        return np.where(sgw >= 0, np.where(sgw == seat, 1.0, -1.0), r)

    # -- observations -------------------------------------------------------------------
    def _encode(self, games: np.ndarray) -> np.ndarray:
        """``Encoder.encode(game, seat)`` for each game, from the agent's seat, ``(n, size)``."""
        s = self.encoder.layout
        n = len(games)
        obs = np.zeros((n, self.encoder.size), dtype=np.float32)
        r, rl = self.roll[games], self.rolls_left[games]
        first = rl == FIRST_ROLL
        obs[:, s["dice_counts"].start : s["dice_sorted"].stop] = _DICE_OBS[r]
        obs[np.arange(n), s["rolls_left"].start + rl] = 1.0
        obs[:, s["first_roll"].start] = first
        obs[:, s["locked_counts"]] = _LOCKED_OBS[self.locked[games]]
        obs[:, s["served_generala"].start] = self._served_pending(games)

        seat = self.seat[games]
        sheet = self.sheets[games, seat]
        open_ = sheet == OPEN
        now = self._points_now[r, first.astype(np.intp)]
        if self._dbl >= 0:
            now[:, self._dbl] *= sheet[:, self._gen] > 0
        obs[:, s["points_now"]] = now * open_
        obs[:, s["own_open"]] = open_
        written = np.where(open_, 0, sheet)
        obs[:, s["own_points"]] = written / self._line_max
        own_total = written.sum(axis=1).astype(np.float64)
        obs[:, s["own_total"].start] = own_total / self._total_max
        obs[:, s["round"].start] = (~open_).sum(axis=1) / self.num_lines
        if self.num_players > 1:
            best = np.full(n, -np.inf)
            for k in range(1, self.num_players):
                other = self.sheets[games, (seat + k) % self.num_players]
                o_open = other == OPEN
                o_written = np.where(o_open, 0, other)
                obs[:, s[f"opponent_{k}_open"]] = o_open
                obs[:, s[f"opponent_{k}_points"]] = o_written / self._line_max
                t = o_written.sum(axis=1).astype(np.float64)
                obs[:, s[f"opponent_{k}_total"].start] = t / self._total_max
                best = np.maximum(best, t)
            obs[:, s["score_lead"].start] = np.clip((own_total - best) / self._total_max, -1.0, 1.0)
        return obs

    def _agent_masks(self) -> np.ndarray:
        m = self._legal_masks(self._all, self.seat)
        m[self.ended_before_move] = True
        return m

    def _info(self, illegal: np.ndarray) -> dict[str, Any]:
        every = self._every
        totals = np.where(self.sheets == OPEN, 0, self.sheets).sum(axis=2)
        info = {
            "action_mask": self._masks.astype(np.int8),
            "illegal_action": illegal,
            "seat": self.seat.copy(),
            "dice": ROLLS[self.roll],
            "rolls_left": self.rolls_left.copy(),
            "turn": (self.sheets[self._all, self.player] != OPEN).sum(axis=1),
            "totals": totals,
        }
        for k in list(info):
            info["_" + k] = every
        if self.ended_before_move.any():
            info["game_over"] = self.ended_before_move.copy()
            info["_game_over"] = self.ended_before_move.copy()
        return info

    def _final_info(self, games: np.ndarray, ended: np.ndarray) -> dict[str, Any]:
        N, P = self.num_envs, self.num_players
        totals = np.zeros((N, P), dtype=np.int64)
        totals[games] = np.where(self.sheets[games] == OPEN, 0, self.sheets[games]).sum(axis=2)
        winner = np.full(N, -1, dtype=np.intp)
        best = totals[games].max(axis=1)
        sole = (totals[games] == best[:, None]).sum(axis=1) == 1
        winner[games] = np.where(sole, np.argmax(totals[games], axis=1), -1)
        sgw = self.served_generala_winner[games]
        winner[games] = np.where(sgw >= 0, sgw, winner[games])
        served = np.zeros(N, dtype=bool)
        served[games] = sgw >= 0
        return {"totals": totals, "_totals": ended, "winner": winner, "_winner": ended, "served_generala_win": served, "_served_generala_win": ended}

    # -- Gymnasium VectorEnv API ----------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            for opp in self._opponents:
                opp.reset(seed=int(self.np_random.integers(2**63)))
        games = self._all
        if options and options.get("reset_mask") is not None:
            mask = np.asarray(options["reset_mask"], dtype=bool)
            if mask.shape != (self.num_envs,):
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},)")
            games = np.flatnonzero(mask)
        self._reset_games(games)
        self._masks = self._agent_masks()
        return self._encode(self._all), self._info(np.zeros(self.num_envs, dtype=bool))

    def step(self, actions):
        a = np.asarray(actions)
        if a.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {a.shape}")
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be integers from 0 to {self.num_actions - 1}, got dtype {a.dtype}")
        if (self.over & ~self.ended_before_move).any():
            raise RuntimeError("step() called before reset()")
        a = a.astype(np.intp, copy=False)
        ebm = self.ended_before_move
        in_range = (a >= 0) & (a < self.num_actions)
        legal = in_range & self._masks[self._all, np.where(in_range, a, 0)]
        illegal = ~legal & ~ebm
        if self.illegal_action == "raise" and illegal.any():
            j = int(np.flatnonzero(illegal)[0])
            why = self.game_view(j).why_illegal(int(a[j]))
            raise IllegalActionError(f"game {j}: {why}")

        rewards = np.zeros(self.num_envs)
        rewards[illegal] = self.illegal_penalty
        acting = np.flatnonzero(legal & ~ebm)
        if acting.size:
            pts = self._apply(acting, a[acting])
            if self.reward_mode == "score":
                rewards[acting] = pts
            self._play_opponents(acting)
        terminated = self.over.copy()  # games that ended now, and those that ended before the agent moved
        obs = self._encode(self._all)
        ended = np.flatnonzero(terminated)
        final = None
        if ended.size:
            if self.reward_mode == "win":
                rewards[ended] = self._final_reward(ended)
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in ended:
                final_obs[i] = obs[i].copy()
            final = (final_obs, self._final_info(ended, terminated))
            self._reset_games(ended)
            obs[ended] = self._encode(ended)
        self._masks = self._agent_masks()
        info = self._info(illegal)
        if final is not None:
            info["final_obs"], info["final_info"] = final
            info["_final_obs"] = info["_final_info"] = terminated
        return obs, rewards, terminated, np.zeros(self.num_envs, dtype=bool), info

    def action_masks(self) -> np.ndarray:
        """Legal actions of every game, ``(N, 32 + L)`` bool (all true where a game ended before the agent's move)."""
        return self._masks.copy()

    def render(self) -> tuple[str, ...] | None:
        if self.render_mode is None:
            return None
        from .render import render_text

        return tuple(render_text(self.game_view(i), seat=int(self.seat[i])) for i in range(self.num_envs))

    # -- one game as a Game object --------------------------------------------------------
    def game_view(self, i: int) -> Game:
        """A copy of game ``i`` as a :class:`Game` (for per-game agents, rendering and messages)."""
        g = self._template.clone()
        g.sheets = self.sheets[i].copy()
        g.roll = int(self.roll[i])
        g.rolls_left = int(self.rolls_left[i])
        g.player = int(self.player[i])
        g.locked = int(self.locked[i])
        g.over = bool(self.over[i])
        w = int(self.served_generala_winner[i])
        g.served_generala_winner = None if w < 0 else w
        g.writes = int(self.writes[i])
        return g


def make_sb3_vec_env(n_envs: int, seed: int | None = None, **kwargs):
    """A stable-baselines3 ``VecEnv`` over one :class:`GeneralaVectorEnv` (see :mod:`generala_env.sb3`)."""
    from .sb3 import make_sb3_vec_env as make

    return make(n_envs, seed=seed, **kwargs)


__all__ = ["GeneralaVectorEnv", "BatchedOpponent", "BatchedRandom", "BatchedGreedy", "PerGameOpponent", "make_sb3_vec_env", "uniform_legal"]
