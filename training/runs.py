"""What a ``generala train`` run and a ``generala benchmark`` run share at their end: the
evaluation of a policy on shared dice (:class:`Evaluator`) and the run's ``state.json``
(:func:`read_state`; written by :func:`generala_env.files.write_atomic`) and
``evaluations.csv`` (:func:`read_evaluations`). Their algorithm (:mod:`generala_training.algos`)
and their games (:mod:`generala_training.envs`) are made by one builder each too.

Each side says what differs: ``generala_training.train`` reports a run's score, share of the
optimum and win rate; ``generala_training.benchmark.run`` reports the suite's normalised score.
"""

from __future__ import annotations

import copy
import json
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from generala_env import files
from generala_env.core.checks import is_whole
from generala_env.files.safe_yaml import short_repr

if TYPE_CHECKING:
    from generala_env.core.rules import RuleSet

    from .config import Config


# -- the run's files ------------------------------------------------------------------------
def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _whole(v) -> bool:
    return is_whole(v)


def _evaluation(e) -> bool:
    """An entry of ``evaluations``: a mapping whose ``step`` (where present) is a whole number and whose other figures are numbers."""
    return isinstance(e, dict) and all(_whole(v) if k == "step" else _number(v) for k, v in e.items() if k in ("step", "wall_seconds", *FIGURES))


FIGURES = ("mean_score", "share_of_optimal", "win_rate")

# what a state.json may hold, each key checked where it is present: train writes train_seconds,
# best, best_step, num_timesteps, pretrain and evaluations; the benchmark steps, checkpoint,
# evaluations, train_seconds, eval_seconds and done
_STATE_KEYS: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    ("train_seconds", _number, "a number"),
    ("eval_seconds", _number, "a number"),
    ("best", _number, "a number"),
    ("best_step", _whole, "a whole number"),
    ("num_timesteps", _whole, "a whole number"),
    ("steps", _whole, "a whole number"),
    ("checkpoint", lambda v: v is None or isinstance(v, str), "a folder name or null"),
    ("done", lambda v: isinstance(v, bool), "true or false"),
    ("pretrain", lambda v: v is None or isinstance(v, dict), "a mapping or null"),
    (
        "evaluations",
        lambda v: isinstance(v, list) and all(_evaluation(e) for e in v),
        "a list of mappings (step a whole number; wall_seconds, mean_score, share_of_optimal and win_rate numbers)",
    ),
)

MAX_STATE_BYTES = 64 << 20


def read_state(path: Path, error: type[Exception], broken: str, required: bool = True) -> dict | None:
    """A run's ``state.json`` (steps, times, evaluations so far), its known keys checked.

    ``None`` where the file is absent and not ``required``. Anything else that stops it from
    being read (a link, a FIFO, a file too large or nested too deeply, a value of the wrong
    type) is one line of ``error`` naming the file; ``broken`` ends the line of a file that is
    not JSON (what that means for the run).
    """
    if not required and files.lstat_or_none(path) is None:
        return None
    try:
        raw = files.read_regular(path, MAX_STATE_BYTES, "state file")
    except files.FileProblem as e:
        raise error(str(e)) from None
    try:
        state = json.loads(raw)
    except RecursionError:
        raise error(f"{path} is nested too deeply to be read; {broken}") from None
    except ValueError as e:
        raise error(f"{path} is not valid JSON ({e}); {broken}") from None
    if not isinstance(state, dict):
        got = "null" if state is None else type(state).__name__
        raise error(f"{path} must hold a mapping (the run's steps, time and evaluations), got {got}")
    for key, ok, what in _STATE_KEYS:
        if key in state and not ok(state[key]):
            raise error(f"{path}: {key!r} must be {what}, got {short_repr(state[key])}")
    return state


EVALUATIONS = "evaluations.csv"


def read_evaluations(path: Path, error: type[Exception] = files.FileProblem) -> tuple[list[str], list[dict[str, float]]]:
    """The header and rows of a run's ``evaluations.csv`` (each row its numbers by column).

    A torn last line (a write cut short: no newline at its end, or too few fields) is skipped
    with a warning naming the file and line; any other line that is not numbers, one for each
    column, is one line of ``error`` naming the file and line. An absent file has no rows.
    """
    if files.lstat_or_none(path) is None:
        return [], []
    try:
        raw = files.read_regular(path, MAX_STATE_BYTES, "evaluations file")
        text = raw.decode("utf-8")
    except files.FileProblem as e:
        raise error(str(e)) from None
    except UnicodeDecodeError as e:
        raise error(f"{path} is not UTF-8 text (byte {e.start})") from None
    lines = text.split("\n")
    last = len(lines) if text.endswith("\n") else len(lines) - 1  # lines before this one ended with a newline
    header = lines[0].split(",") if lines and lines[0] else []
    if header and (len(set(header)) != len(header) or "step" not in header or not all(h.replace("_", "").isalnum() for h in header)):
        if last == 0:
            warnings.warn(f"{path}, line 1: a torn header (a write cut short) is skipped", stacklevel=2)
            return [], []
        raise error(f"{path}, line 1: not the header of a run's evaluations (step, wall_seconds, ...): {short_repr(lines[0])}")
    rows = []
    for number, line in enumerate(lines[1:], 2):
        if not line:
            continue
        fields = line.split(",")
        try:
            if len(fields) != len(header):
                raise ValueError(f"{len(fields)} fields for {len(header)} columns")
            row = dict(zip(header, map(float, fields), strict=True))
            if not all(math.isfinite(v) for v in row.values()):
                raise ValueError("a number that is not finite")
        except ValueError as e:
            if number - 1 >= last:  # the last line, without its newline: cut short
                warnings.warn(f"{path}, line {number}: a torn last line (a write cut short) is skipped", stacklevel=2)
                continue
            raise error(f"{path}, line {number}: not a row of numbers ({e}): {short_repr(line)}; fix or remove that line") from None
        rows.append(row)
    return header, rows


# -- evaluation -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Played:
    """The evaluation games as they ended, one entry per game (and seat)."""

    totals: np.ndarray
    """the evaluated player's final total"""
    points: np.ndarray | None
    """1 for a win, 1/2 shared, 0 a loss (a game an illegal action ended is lost); ``None``
    for one player with nobody to compare with"""
    stopped: np.ndarray
    """whether an illegal action ended the game"""


class Evaluator:
    """Seeded evaluation games on shared dice: the same games for every policy measured.

    Game ``i`` is played on the dice of ``generala_training.harness.game_seed(seed, i)``; with
    opponents (``num_players`` above 1), from every seat, each opponent seat its own copy of
    ``opponent`` reset to that seat's seed. With one player and an ``opponent``, the opponent
    plays the same games alone and ``points`` compare the totals. An illegal action ends its
    game where it stands (the game would not change, and a deterministic policy would repeat
    the action for ever): its points so far count, and with opponents it is a loss.

    Both ways to play return ``figures(self, played)``: what the caller reports.

    :param rules: a rule set or its name
    :param num_players: players at the table
    :param opponent: an agent spec (see :func:`agents.load`) or ``None``
    :param seed: the evaluation's seed
    :param games: games (each played from every seat)
    :param figures: ``(evaluator, Played) -> dict`` of the figures to report
    """

    def __init__(self, rules, num_players: int, opponent, seed: int, games: int, figures: Callable[[Evaluator, Played], dict]):
        from generala_agents.solver import load_or_solve
        from generala_env.core.rules import load_rules

        from .harness import game_seed

        self.rules = load_rules(rules)
        self.players = num_players
        self.seeds = [game_seed(seed, i) for i in range(games)]
        self.optimum = float(load_or_solve(self.rules)[0].expected_score)
        self.figures = figures
        self.opponent_spec = opponent
        self.opponent = None
        self._alone: np.ndarray | None = None  # the one-player opponent's totals, played once
        if opponent is not None:
            import generala_agents as agents

            self.opponent = agents.load(opponent, rules=self.rules)

    def _new_games(self):
        """Every evaluation game at its start, the opponents' moves before the policy's first
        played: ``(games, seats, dice, opponents, encoder)``."""
        from generala_env.core.encoding import Encoder

        from .harness import game_seed, start_game

        P = self.players
        enc = Encoder(self.rules, P)
        games, seats, dice, opponents = [], [], [], []
        for s in self.seeds:
            for seat in range(P):
                g, d = start_game(self.rules, P, s)
                opp = []
                for other in range(P):  # each game its own copy: what reset() sets is the copy's
                    o = copy.copy(self.opponent) if other != seat else None
                    if o is not None and hasattr(o, "reset"):
                        o.reset(seed=game_seed(s, other))
                    opp.append(o)
                games.append(g)
                seats.append(seat)
                dice.append(d)
                opponents.append(opp)
        for i in range(len(games)):
            self._opponents_move(games[i], seats[i], dice[i], opponents[i], enc)
        return games, seats, dice, opponents, enc

    @staticmethod
    def _opponents_move(g, seat: int, dice, opponents: list, enc) -> None:
        from generala_env.envs.env import make_info

        while not g.over and g.player != seat:
            who = g.player
            a = int(opponents[who].act(enc.encode(g, who), make_info(g, who)))
            why = g.why_illegal(a)
            if why is not None:
                raise RuntimeError(f"the opponent in seat {who} played illegal action {a}: {why}")
            g.apply(a, dice.faces_for(g, a))

    def _figures(self, games, seats, stopped) -> dict:
        from generala_env.core.game import outcome_points

        totals = np.array([g.totals()[s] for g, s in zip(games, seats, strict=True)], dtype=float)
        points = None
        if self.players > 1:
            points = np.array([0.0 if stop else outcome_points(g.winners(), s) for g, s, stop in zip(games, seats, stopped, strict=True)], dtype=float)
        elif self.opponent is not None:
            alone = self._opponent_alone()
            points = (totals > alone) + 0.5 * (totals == alone)
        return self.figures(self, Played(totals, points, stopped))

    def prepare(self) -> None:
        """Play what every evaluation compares with now (the one-player opponent's games, in
        forked workers): before a program starts a multithreaded library (JAX), which a fork
        must not copy."""
        if self.players == 1 and self.opponent is not None:
            self._opponent_alone()

    def _opponent_alone(self) -> np.ndarray:
        """The one-player opponent's totals on the evaluation games (played once, on every core)."""
        if self._alone is None:
            from generala_env.files.cache import notice

            from .harness import play_many

            notice(
                f"opponent alone {self.opponent_spec}",
                f"playing the evaluation's opponent ({self.opponent_spec}) alone on the {len(self.seeds):,} evaluation games, once, on every core",
            )

            recs = play_many([(self.opponent_spec,)] * len(self.seeds), self.seeds, self.rules, progress=False)
            self._alone = np.array([r.totals[0] for r in recs], dtype=float)
        return self._alone

    def __call__(self, act_batch: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> dict:
        """Play every game with ``act_batch(observations, masks) -> actions``, which decides
        for all unfinished games at once."""
        games, seats, dice, opponents, enc = self._new_games()
        stopped = np.zeros(len(games), dtype=bool)
        active = [i for i in range(len(games)) if not games[i].over]
        while active:
            obs = np.stack([enc.encode(games[i], seats[i]) for i in active])
            masks = np.stack([games[i].legal_mask() for i in active])
            actions = np.asarray(act_batch(obs, masks)).reshape(len(active))
            still = []
            for i, a, m in zip(active, actions, masks, strict=True):
                a = int(a)
                if not (0 <= a < len(m) and m[a]):
                    stopped[i] = True
                    continue
                games[i].apply(a, dice[i].faces_for(games[i], a))
                self._opponents_move(games[i], seats[i], dice[i], opponents[i], enc)
                if not games[i].over:
                    still.append(i)
            active = still
        return self._figures(games, seats, stopped)

    def play_agent(self, agent) -> dict:
        """The same games and figures for an agent with ``act(observation, info)``, one game at
        a time: ``reset(seed)`` before each, with the seed an opponent in that seat gets."""
        from generala_env.envs.env import make_info

        from .harness import game_seed

        games, seats, dice, opponents, enc = self._new_games()
        stopped = np.zeros(len(games), dtype=bool)
        for i, g in enumerate(games):
            if hasattr(agent, "reset"):
                agent.reset(seed=game_seed(self.seeds[i // self.players], seats[i]))
            while not g.over:
                a = agent.act(enc.encode(g, seats[i]), make_info(g, seats[i]))
                if g.why_illegal(a) is not None:
                    stopped[i] = True
                    break
                g.apply(int(a), dice[i].faces_for(g, int(a)))
                self._opponents_move(g, seats[i], dice[i], opponents[i], enc)
        return self._figures(games, seats, stopped)


# -- a training run's evaluation ------------------------------------------------------------
EVAL_SEED_BASE = 20_261_129  # evaluation games use fixed dice, the same for every run


def run_figures(evaluator: Evaluator, played: Played) -> dict:
    """A run's figures: its mean score, as a share of the optimum, and its win rate against
    ``eval.opponent`` (in the other seats, or alone on the same dice)."""
    assert played.points is not None  # a run always has an eval.opponent
    mean = float(played.totals.mean())
    return {"mean_score": mean, "share_of_optimal": mean / evaluator.optimum, "win_rate": float(np.mean(played.points))}


def make_evaluator(cfg: Config, rules: RuleSet | None = None) -> Evaluator:
    """The evaluation of a ``generala train`` or ``generala jax-train`` run: ``eval.games`` seeded
    games, the same dice for every run; with several players half as many, each played from
    every seat. ``rules``: the run's rule set (``None``: ``env.rules``)."""
    from generala_env.core.rules import load_rules

    from .config import ConfigError

    rules = load_rules(cfg.env.rules if rules is None else rules)
    players = cfg.env.num_players
    games = cfg.eval.games if players == 1 else max(1, cfg.eval.games // 2)
    try:  # an unknown opponent fails now, not at the first evaluation
        return Evaluator(rules, players, cfg.eval.opponent, EVAL_SEED_BASE, games, run_figures)
    except ValueError as e:
        raise ConfigError(f"config key 'eval.opponent': {e}") from None
