"""Search agents whose values come from their own play: ``td-search`` and ``td-search-2p``.

Each decision is an expectimax over the rest of the current turn: the dice model's chance
outcomes (the 252 rolls, every keep's distribution over them) and every hold and write,
exactly, down to the turn's end. The turn's end is valued by a learned function of the
sheet it leaves; that function is all that is learned, by temporal-difference learning
from the agent's own games. No solver values and no cloning: the within-turn array code is
:class:`generala_agents.solver.Solver`'s (``write_values`` and ``turn``, fed the learned values),
which is the same expectimax a search through :mod:`generala_env.planning.model` would compute,
in arrays.

* ``td-search`` (one player): a table ``V[filled lines, generala scored]`` of the points
  still to come. Learning: every turn of its own games, the value of the sheet it starts
  from is set to the turn's expectimax under the current table (a TD(0) update with the
  model's expected target, step size 1), starting from an optimistic table (each open
  line at the most it can hold), so the greedy player tries what it has not yet learned
  is worse (real-time dynamic programming).
* ``td-search-2p`` (two players, the win objective): the writer's chance to win after a
  write, ``sigmoid((a[k] - c . n) * margin + b[k])``, where ``margin`` is the score
  difference plus the one-player table's points to come for each sheet (both sheets),
  ``k`` the lines still open in the game and ``n[l]`` how many of the two sheets still have
  line ``l`` open (open lines widen the final margin's spread by ``c[l]``); ``a``, ``b`` and
  ``c`` are learned by TD(0) from self-play (the target: one minus the opponent's
  expectimax chance to win at its next turn).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from generala_env.core.dice import FIVE_ALIKE, FULL_ROLL_PROB, NUM_MASKS, NUM_ROLLS
from generala_env.core.game import OPEN, Game
from generala_env.core.rules import RuleSet, load_rules
from generala_env.core.scoring import blocked_line, generala_scored, points_table
from generala_env.files.safe_yaml import short_repr
from generala_env.planning import planner
from generala_env.planning.planner import sheet_id

from .base import Agent, AgentError, best_legal, recorded_rules
from .ppo import SHIPPED
from .solver import NEG, Solver

CHECKPOINTS = SHIPPED  # checkpoints/ in a checkout, agents/checkpoints/ in a wheel
VALUES_FILE = "td_search.json"
FORMAT = "td-search-v1"


# -- one turn: the expectimax given the values of its end ----------------------------------------
def turn_action_values(W: np.ndarray, t: dict, roll: int, rolls_left: int) -> np.ndarray:
    """Values of every action (holds 0..31, writes 32+l) at a decision of a turn whose
    writes are worth ``W[l, r, served]`` and whose within-turn arrays are ``t`` (the one-player
    solver's, for one sheet): :func:`generala_env.planning.planner.turn_action_values`."""
    return planner.turn_action_values(W, t["K1"][0], t["K2"][0], roll, rolls_left, NEG)


def optimistic_values(rules: RuleSet) -> np.ndarray:
    """The starting table: each open line at the most points it can hold (never below the truth)."""
    L = rules.num_lines
    most = points_table(rules).max(axis=(1, 2)).astype(np.float64)
    masks = np.arange(1 << L)
    open_most = ((masks[:, None] >> np.arange(L)) & 1 == 0) @ most
    return np.repeat(open_most, 2)  # index filled_mask * 2 + generala flag, as the solver's


def sheet_state(rules: RuleSet, sheet) -> tuple[int, int]:
    """(filled mask, generala-scored flag) of one seat's sheet, as the solver indexes them
    (:func:`generala_env.planning.planner.sheet_id`)."""
    return divmod(sheet_id(rules, sheet), 2)


class OnePlayerLearner:
    """TD learning of the one-player table from the learner's own games (see the module)."""

    def __init__(self, rules="classic", values: np.ndarray | None = None):
        self.rules = load_rules(rules)
        self.solver = Solver(self.rules)  # its array code only; its values are never solved
        self.V = optimistic_values(self.rules) if values is None else np.array(values, dtype=np.float64)
        full = (1 << self.rules.num_lines) - 1
        self.V[full * 2 :] = 0.0
        self.games = 0
        self.updates = 0
        self.steps = 0  # decisions of its training games (environment steps)

    def plan(self, mask: int, flag: int):
        W = self.solver.write_values(np.array([mask]), np.array([flag]), self.V)
        return W[0], self.solver.turn(W)

    def play_game(self, rng, learn: bool = True) -> int:
        """One game with the current table; with ``learn``, each turn's start is backed up."""
        game = Game(self.rules, 1)
        game.reset(rng)
        while not game.over:
            mask, flag = sheet_state(self.rules, game.sheets[0])
            W, t = self.plan(mask, flag)
            if learn:
                self.V[mask * 2 + flag] = float(t["value"][0])
                self.updates += 1
            while True:
                a = best_legal(turn_action_values(W, t, game.roll, game.rolls_left), game.legal_view)
                game.step(a, rng)
                self.steps += learn
                if a >= NUM_MASKS:
                    break
        self.games += learn
        return int(game.totals_view[0])


class TwoPlayerValue:
    """The writer's chance to win after a write: ``sigmoid((a[k] - c . n) * margin + b[k])`` (see the module)."""

    def __init__(self, rules: RuleSet, V1: np.ndarray, a: np.ndarray | None = None, b: np.ndarray | None = None, c: np.ndarray | None = None):
        self.rules = rules
        self.L = rules.num_lines
        self.V1 = np.asarray(V1, dtype=np.float64)
        n = 2 * self.L + 1
        self.a = np.full(n, 0.1) if a is None else np.array(a, dtype=np.float64)
        self.b = np.zeros(n) if b is None else np.array(b, dtype=np.float64)
        # c[l]: how much each sheet with line l still open widens the spread of the final margin
        # (the scale on the margin is a[k] - c . open counts); zero to start
        self.c = np.zeros(self.L) if c is None else np.array(c, dtype=np.float64)
        self.points = points_table(rules).astype(np.float64)  # (L, 252, 2)
        self.gen, self.dbl = rules.generala_line, rules.double_generala_line
        self.served_win = rules.served_generala_wins(2)
        self.five = FIVE_ALIKE

    def write_values(self, me: np.ndarray, opp: np.ndarray, diff: int, last_seat: bool):
        """``W[l, r, served]``: the writer's chance to win after writing line ``l`` on roll
        ``r``, and the (margin, k) of each write for learning. ``me``/``opp``: the two sheets;
        ``diff``: the writer's total minus the opponent's; ``last_seat``: the writer is seat 1
        (its last write ends the game)."""
        L = self.L
        mask, flag = sheet_state(self.rules, me)
        omask, oflag = sheet_state(self.rules, opp)
        opp_rest = self.V1[omask * 2 + oflag]
        blocked = blocked_line(self.rules, bool(generala_scored(self.rules, np.asarray(me))))
        W = np.full((L, NUM_ROLLS, 2), NEG)
        k_after = int(np.sum(np.asarray(me) == OPEN) + np.sum(np.asarray(opp) == OPEN)) - 1
        spread_now = float(self.c @ self.open_counts(me, opp))
        for line in range(L):
            if me[line] != OPEN:
                continue
            pts = self.points[line].copy()
            if line == blocked:
                pts[:] = 0.0
            nmask = mask | (1 << line)
            scores_generala = line == self.gen and self.dbl >= 0  # the write decides the flag of the sheet after it
            rest = np.where(pts > 0, self.V1[nmask * 2 + 1], self.V1[nmask * 2]) if scores_generala else self.V1[nmask * 2 + flag]
            margin = diff + pts + rest - opp_rest
            if k_after == 0 or (last_seat and nmask == (1 << L) - 1):
                final = diff + pts
                W[line] = np.where(final > 0, 1.0, np.where(final == 0, 0.5, 0.0))
            else:
                scale = self.a[k_after] - (spread_now - self.c[line])  # line is no longer open on the writer's sheet
                W[line] = 1.0 / (1.0 + np.exp(-(scale * margin + self.b[k_after])))
            if line == self.gen and self.served_win:
                W[line, self.five, 1] = 1.0  # a served generala wins on the spot
        return W, k_after

    @staticmethod
    def open_counts(me, opp) -> np.ndarray:
        """Per line, how many of the two sheets have it open (0, 1 or 2)."""
        return (np.asarray(me) == OPEN).astype(np.float64) + (np.asarray(opp) == OPEN)

    def margin(self, me, opp, diff: int) -> float:
        mask, flag = sheet_state(self.rules, me)
        omask, oflag = sheet_state(self.rules, opp)
        return float(diff + self.V1[mask * 2 + flag] - self.V1[omask * 2 + oflag])


class TwoPlayerLearner:
    """TD(0) self-play learning of :class:`TwoPlayerValue`'s ``a``, ``b`` and ``c`` (win objective)."""

    def __init__(self, rules, V1: np.ndarray, lr: float = 0.02, value: TwoPlayerValue | None = None, spread: bool = True):
        self.rules = load_rules(rules)
        self.solver = Solver(self.rules)
        self.value = value or TwoPlayerValue(self.rules, V1)
        self.lr = lr
        self.spread = spread  # learn c (else it stays as given)
        self.games = 0

    def plan(self, game: Game):
        p = game.player
        me, opp = game.sheets[p], game.sheets[1 - p]
        t = game.totals_view
        W, _ = self.value.write_values(me, opp, int(t[p] - t[1 - p]), p == 1)
        return W, self.solver.turn(W[None])

    def play_game(self, rng, learn: bool = True) -> int:
        """One self-play game; returns the winner seat (-1 for a draw)."""
        game = Game(self.rules, 2)
        game.reset(rng)
        pending = None  # (margin, k) of the last write, from its writer's view
        while not game.over:
            W, t = self.plan(game)
            if learn and pending is not None:
                self._update(*pending, 1.0 - float(t["value"][0]))
            p = game.player
            me, opp = game.sheets[p].copy(), game.sheets[1 - p].copy()
            tot = game.totals_view
            diff = int(tot[p] - tot[1 - p])
            while True:
                a = best_legal(turn_action_values(W, t, game.roll, game.rolls_left), game.legal_view)
                out = game.step(a, rng)
                if a >= NUM_MASKS:
                    break
            me2 = me.copy()
            me2[a - NUM_MASKS] = out.points
            k = int(np.sum(me2 == OPEN) + np.sum(opp == OPEN))
            pending = None if game.over else (self.value.margin(me2, opp, diff + out.points), k, self.value.open_counts(me2, opp))
        self.games += learn
        w = game.winners()
        return w[0] if len(w) == 1 else -1

    def _update(self, margin: float, k: int, counts: np.ndarray, target: float) -> None:
        v = self.value
        z = (v.a[k] - v.c @ counts) * margin + v.b[k]
        p = 1.0 / (1.0 + math.exp(-z))
        g = target - p  # the cross-entropy gradient with respect to z
        v.a[k] += self.lr * g * margin / 1000.0  # margins run to tens of points: a smaller step for a
        v.b[k] += self.lr * g
        if self.spread:
            v.c -= self.lr * g * margin * counts / 1000.0


# -- checkpoints -----------------------------------------------------------------------------
MAX_VALUES_BYTES = 256 << 20  # a td_search.json: tens of MB for rules with many lines


def read_values_file(file: Path, what: str = "td-search values") -> dict:
    """A ``td_search.json`` (shipped, or written by ``python -m generala_training.td_search``), read bounded
    (a regular file, not a link or a FIFO) and its shape checked: a mapping of format
    ``td-search-v1`` whose ``players`` is 1 or 2 and whose ``values`` (and two players' ``a``,
    ``b``, ``c``) are lists of finite numbers. Anything else is one :class:`AgentError` line
    naming the file; the lengths are checked against a rule set by :func:`check_sizes`."""
    from generala_env.files import FileProblem, read_json

    file = Path(file)
    try:
        data = read_json(file, MAX_VALUES_BYTES, what)
    except FileProblem as e:
        raise AgentError(str(e)) from None
    if not isinstance(data, dict):
        raise AgentError(f"{what} {file} must hold a mapping (format, players, rules, values), got {_kind_of(data)}")
    if data.get("format") != FORMAT:
        raise AgentError(f"{what} {file} is not a {FORMAT} checkpoint (its format is {short_repr(data.get('format'))})")
    players = data.get("players")
    if players not in (1, 2) or isinstance(players, bool):
        raise AgentError(f"{what} {file}: 'players' must be 1 or 2, got {short_repr(players)}")
    for key in ("values", *(("a", "b", "c") if players == 2 else ())):
        if key == "c" and data.get(key) is None:
            continue
        v = data.get(key)
        if not isinstance(v, list) or not v or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
            raise AgentError(f"{what} {file}: {key!r} must be a non-empty list of finite numbers, got {short_repr(v)}")
    for key in ("rules_name", "rules_fingerprint"):
        if key in data and not isinstance(data[key], str):
            raise AgentError(f"{what} {file}: {key!r} must be text, got {short_repr(data[key])}")
    if "rules" in data and not isinstance(data["rules"], dict):
        raise AgentError(f"{what} {file}: 'rules' must be a mapping of settings, got {short_repr(data['rules'])}")
    return data


def _kind_of(v) -> str:
    return "null" if v is None else {list: "a list", str: "text", bool: "true or false"}.get(type(v), type(v).__name__)


def check_sizes(data: dict, rules: RuleSet, where) -> None:
    """Refuse values whose lengths are not those of ``rules`` (2 x 2**lines values; two players'
    ``a`` and ``b`` 2 x lines + 1, ``c`` one a line): one :class:`AgentError` line naming ``where``."""
    L = rules.num_lines
    sizes = {"values": 2 << L, "a": 2 * L + 1, "b": 2 * L + 1, "c": L}
    for key, n in sizes.items():
        if isinstance(data.get(key), list) and len(data[key]) != n:
            raise AgentError(f"{where}: {key!r} holds {len(data[key]):,} numbers; rules {rules.name!r} need {n:,}")


def read_checkpoint(name: str, folder: Path | None = None) -> dict:
    """The values of the shipped checkpoint ``name``, or of a folder made by ``python -m
    training.td_search --out FOLDER`` (:func:`read_values_file`)."""
    file = (CHECKPOINTS / name if folder is None else Path(folder)) / VALUES_FILE
    return read_values_file(file, f"{name}: its values")


def read_values(spec: str) -> dict:
    """The values file of a td-search spec: a shipped name (``td-search``, ``td-search-2p``) or
    a folder made by ``python -m generala_training.td_search --out``."""
    shipped = spec in (TDSearchAgent.name, TDSearchTwoPlayerAgent.name)
    return read_checkpoint(spec) if shipped else read_checkpoint(spec, Path(spec))


def folder_agent(folder) -> type[TDSearchAgent] | type[TDSearchTwoPlayerAgent] | None:
    """The td-search class that plays the values in ``folder`` (a ``python -m generala_training.td_search
    --out`` folder), or ``None`` where it holds no such values. Anything at ``td_search.json``
    is read (:func:`read_values_file`): a FIFO or a device there is one line naming it."""
    if not str(folder) or not Path(folder).is_dir() or not os.path.lexists(Path(folder) / VALUES_FILE):
        return None
    players = read_checkpoint(str(folder), Path(folder)).get("players")
    return {1: TDSearchAgent, 2: TDSearchTwoPlayerAgent}.get(players) if isinstance(players, int) else None


def trained_fingerprint(data: dict) -> str:
    """The fingerprint of the rules a td-search file learned under, from the settings it
    recorded (``rules``, by :func:`~generala_agents.base.recorded_rules`, as a PPO checkpoint's are
    read). A file without settings has the fingerprint it recorded."""
    settings = data.get("rules")
    if isinstance(settings, dict):
        return recorded_rules(settings, "td-search values").fingerprint()
    return str(data.get("rules_fingerprint"))


def _checked(name: str, rules: RuleSet, folder: Path | None = None, players: int = 1) -> dict:
    data = read_checkpoint(name, folder)
    if data.get("players") != players:
        raise AgentError(f"{data.get('players')}-player values in {folder or name}; {name} plays {players}-player games")
    if trained_fingerprint(data) != rules.fingerprint():
        raise AgentError(
            f"{name} learned its values under rules {data.get('rules_name')!r}; it cannot play {rules.name!r} (train it with training/td_search.py)"
        )
    check_sizes(data, rules, f"{name}: its values in {folder or name}")
    return data


class TDSearchAgent(Agent):
    """Expectimax over the turn with learned end-of-turn values (TD from its own games, one player)."""

    name = "td-search"

    def __init__(self, rules="classic", seed: int | None = None, values=None, folder: Path | None = None):
        super().__init__(rules, seed)
        if values is None:  # the shipped values, or those of a training folder
            data = _checked(self.name, self.rules, folder)
            self.metadata = {k: v for k, v in data.items() if k != "values"}
            values = data["values"]
        else:  # a table just learned (benchmarks/dice_model_track.py)
            self.metadata = {"solver_in_training": []}
        self.solver = Solver(self.rules, np.array(values, dtype=np.float64))  # learned values, not solved ones

    def act(self, observation, info) -> int:
        v = self.view(info)
        values = self.solver.action_values(v.filled_mask, generala_scored(self.rules, v.sheet), v.roll, v.rolls_left, v.locked)
        return best_legal(values, v.mask)


class TDSearchTwoPlayerAgent(Agent):
    """Expectimax over the turn with a learned chance to win at its end (TD self-play, two players)."""

    name = "td-search-2p"

    def __init__(self, rules="classic", seed: int | None = None, folder: Path | None = None):
        super().__init__(rules, seed)
        data = _checked(self.name, self.rules, folder, players=2)
        self.metadata = {k: v for k, v in data.items() if k not in ("values", "a", "b")}
        self.value = TwoPlayerValue(self.rules, data["values"], data["a"], data["b"], data.get("c"))
        self.solver = Solver(self.rules)
        self._key: tuple | None = None  # the state the plan was made for
        self._plan: tuple = ()  # (write values, within-turn arrays) of the turn under way

    def act(self, observation, info) -> int:
        v = self.view(info)
        if v.sheets.shape[0] != 2:
            raise AgentError(f"{self.name} plays two-player games only; this game has {v.sheets.shape[0]} seat(s)")
        opp = 1 - v.seat
        totals = v.totals
        key = (v.sheets.tobytes(), v.seat)  # the turn's plan holds for all of its decisions
        if key != self._key:
            W, _ = self.value.write_values(v.sheet, v.sheets[opp], int(totals[v.seat] - totals[opp]), v.seat == 1)
            self._key, self._plan = key, (W, self.solver.turn(W[None]))
        W, t = self._plan
        return best_legal(turn_action_values(W, t, v.roll, v.rolls_left), v.mask)


__all__ = ["TDSearchAgent", "TDSearchTwoPlayerAgent", "OnePlayerLearner", "TwoPlayerLearner", "FULL_ROLL_PROB"]
