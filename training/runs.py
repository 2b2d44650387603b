"""What a ``generala train`` run and a ``generala benchmark`` run share: the evaluation of a
policy on shared dice (:class:`Evaluator`), the model builder (:func:`build_model`) and the run's
``state.json`` (:func:`read_state`, written through :func:`write_atomic`).

Each side says what differs: ``training.train`` builds MaskablePPO from a YAML config and
reports a run's score, share of the optimum and win rate; ``training.benchmark.run`` builds
the six algorithms of the suite and reports the suite's normalised score.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np


# -- the run's files ------------------------------------------------------------------------
def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file: a cut write leaves the old file whole."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_json(path: Path, data, indent: int = 2) -> Path:
    """Write ``data`` as JSON (and a newline) through a temporary file, as :func:`write_atomic`."""
    path = Path(path)
    write_atomic(path, json.dumps(data, indent=indent) + "\n")
    return path


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# what a state.json may hold, each key checked where it is present: train writes train_seconds,
# best and evaluations; the benchmark steps, checkpoint, evaluations, train_seconds, eval_seconds and done
_STATE_KEYS: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    ("train_seconds", _number, "a number"),
    ("eval_seconds", _number, "a number"),
    ("best", _number, "a number"),
    ("steps", lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    ("checkpoint", lambda v: v is None or isinstance(v, str), "a folder name or null"),
    ("done", lambda v: isinstance(v, bool), "true or false"),
    ("evaluations", lambda v: isinstance(v, list) and all(isinstance(e, dict) for e in v), "a list of mappings"),
)


def read_state(path: Path, error: type[Exception], broken: str, required: bool = True) -> dict | None:
    """A run's ``state.json`` (steps, times, evaluations so far), its known keys checked.

    ``None`` where the file is absent and not ``required``. Anything else that stops it from
    being read is one line of ``error``; ``broken`` ends the line of a file that is not JSON
    (what that means for the run).
    """
    if not required and not path.is_file():
        return None
    try:
        state = json.loads(path.read_text())
    except OSError as e:
        raise error(f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:
        raise error(f"{path} is not valid JSON ({e}); {broken}") from None
    if not isinstance(state, dict):
        got = "null" if state is None else type(state).__name__
        raise error(f"{path} must hold a mapping (the run's steps, time and evaluations), got {got}")
    for key, ok, what in _STATE_KEYS:
        if key in state and not ok(state[key]):
            raise error(f"{path}: {key!r} must be {what}, got {state[key]!r}")
    return state


# -- the model ------------------------------------------------------------------------------
ACTIVATIONS = ("relu", "tanh")


def build_model(cls, venv, policy, policy_kwargs: dict, *, seed: int, device: str, **hyperparams):
    """A fresh model of ``cls`` (an SB3 or sb3-contrib algorithm class) with ``policy`` (a
    policy class or name) on ``venv``, silent (``verbose=0``).

    ``policy_kwargs["activation_fn"]`` names the activation (``relu``, the default, or
    ``tanh``); the other policy keywords and ``hyperparams`` go to the constructor as they are.
    """
    import torch

    kwargs = dict(policy_kwargs)
    kwargs["activation_fn"] = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[kwargs.get("activation_fn", "relu")]
    return cls(policy, venv, policy_kwargs=kwargs, seed=seed, device=device, verbose=0, **hyperparams)


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

    Game ``i`` is played on the dice of ``training.harness.game_seed(seed, i)``; with
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
        from agents.solver import load_or_solve
        from generala_env.rules import load_rules

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
            import agents

            self.opponent = agents.load(opponent, rules=self.rules)

    def _new_games(self):
        """Every evaluation game at its start, the opponents' moves before the policy's first
        played: ``(games, seats, dice, opponents, encoder)``."""
        from generala_env.encoding import Encoder

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
        from generala_env.env import make_info

        while not g.over and g.player != seat:
            who = g.player
            a = int(opponents[who].act(enc.encode(g, who), make_info(g, who)))
            why = g.why_illegal(a)
            if why is not None:
                raise RuntimeError(f"the opponent in seat {who} played illegal action {a}: {why}")
            g.apply(a, dice.faces_for(g, a))

    def _figures(self, games, seats, stopped) -> dict:
        from generala_env.game import outcome_points

        totals = np.array([g.totals()[s] for g, s in zip(games, seats, strict=True)], dtype=float)
        points = None
        if self.players > 1:
            points = np.array([0.0 if stop else outcome_points(g.winners(), s) for g, s, stop in zip(games, seats, stopped, strict=True)], dtype=float)
        elif self.opponent is not None:
            alone = self._opponent_alone()
            points = (totals > alone) + 0.5 * (totals == alone)
        return self.figures(self, Played(totals, points, stopped))

    def _opponent_alone(self) -> np.ndarray:
        """The one-player opponent's totals on the evaluation games (played once, on every core)."""
        if self._alone is None:
            from .harness import play_many

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
        from generala_env.env import make_info

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
