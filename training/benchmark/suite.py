"""What a benchmark grid is made of: the algorithms, the task suite, their YAML files, one run's spec.

The YAML files live in the repository's ``configs/benchmark/`` folder, which a wheel carries
as ``training/benchmark/configs/`` (package data), so an installed ``generala benchmark``
finds them as a checkout does. They are read as every config file is
(:func:`generala_training.config.read_config_file`); an algorithm file is the
:class:`generala_training.algos.AlgoConfig` that ``generala train`` builds its algorithm from too.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

from generala_env.core.checks import is_whole
from generala_env.files.safe_yaml import short_repr

from ..algos import ALGOS, MAX_EVAL_GAMES, Algo, AlgoConfig, algo_class
from ..config import read_config_file
from ..envs import TRAINING_REWARDS


class BenchmarkError(ValueError):
    """A benchmark that cannot run as asked (bad ids, files or numbers); nothing was trained."""


TASKS_FILE = "tasks.yaml"
# what a task's env may set: Generala-v0's arguments that define the game and its reward
TASK_ENV_KEYS = ("rules", "num_players", "opponents", "reward", "agent_seat")


def default_config_dir() -> Path:
    """The shipped ``configs/benchmark`` folder: package data in a wheel, else the checkout's."""
    here = Path(__file__).resolve().parent
    installed = here / "configs"
    return installed if installed.is_dir() else here.parent.parent / "configs" / "benchmark"


def _keys(data: dict, allowed: tuple[str, ...], where: str, required: tuple[str, ...] = ()) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise BenchmarkError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}; known: {', '.join(allowed)}")
    missing = [k for k in required if k not in data]
    if missing:
        raise BenchmarkError(f"{where}: missing key(s) {', '.join(missing)}")


# evaluations of one run (each also saves a checkpoint): a learning curve of 1,000 points; the suite uses 10
MAX_EVAL_POINTS = 1000


def _positive_int(value, where: str, most: tuple[int, str] | None = None) -> int:
    """A whole number of at least 1 (and at most ``most``: the bound and what it bounds)."""
    if most is not None and (not is_whole(value) or not 1 <= value <= most[0]):
        raise BenchmarkError(f"{where} must be a whole number from 1 to {most[0]:,} ({most[1]}), got {short_repr(value)}")
    if not is_whole(value) or value < 1:
        raise BenchmarkError(f"{where} must be a whole number of at least 1, got {short_repr(value)}")
    return int(value)


def _finite(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BenchmarkError(f"{where} must be a finite number, got {value!r}")
    return float(value)


# -- the task suite -------------------------------------------------------------------------
@dataclass(frozen=True)
class Task:
    """A task of the suite: the game (Generala-v0 keyword arguments) and its training reward scale."""

    name: str
    env: dict
    reward_scale: float
    illegal_penalty: float
    max_illegal_in_a_row: int
    summary: str = ""
    training_reward: str = "env"  # "env": the env's own reward; "margin": the score margin (generala_training.benchmark.rewards)
    win_bonus: float = 0.0  # with "margin": raw points added at a game's end, times +1 / 0 / -1 for win / shared / loss
    since: int = 1  # the suite version from which the task is as written: results made since then are comparable

    @property
    def num_players(self) -> int:
        return int(self.env.get("num_players", 1))

    @property
    def fair_share(self) -> float | None:
        """With opponents, the share of the points each seat takes when all play alike: every
        game hands out one point (a win 1, a win shared by k players 1/k), so 1/players;
        ``None`` for one player, whose score is the mean total."""
        return 1.0 / self.num_players if self.num_players > 1 else None

    def game(self, rules=None) -> dict:
        """Generala-v0's keyword arguments of the task's training games: its ``env``, an illegal
        action penalized (and capped) as the task says; ``rules``: the rule set loaded from it."""
        game = {**self.env, "illegal_action": "penalize", "illegal_penalty": self.illegal_penalty, "max_illegal_in_a_row": self.max_illegal_in_a_row}
        if rules is not None:
            game["rules"] = rules
        return game

    def to_dict(self) -> dict:
        """What decides the task's runs (``since`` does not); the training-reward keys only where
        they are not the defaults, so a task of version 1 keeps its definition."""
        d = {
            "env": copy.deepcopy(self.env),
            "reward_scale": self.reward_scale,
            "illegal_penalty": self.illegal_penalty,
            "max_illegal_in_a_row": self.max_illegal_in_a_row,
            "summary": self.summary,
        }
        if self.training_reward != "env":
            d["training_reward"] = self.training_reward
        if self.win_bonus:
            d["win_bonus"] = self.win_bonus
        return d


@dataclass(frozen=True)
class Evaluation:
    """The suite's evaluation protocol (``evaluation:`` of tasks.yaml)."""

    seed: int
    games: int
    final_games: int
    points: int


@dataclass(frozen=True)
class Suite:
    name: str
    version: int
    evaluation: Evaluation
    tasks: dict[str, Task]

    def incomparable(self, name: object, version: object, task: str | None) -> str | None:
        """Why a result made on task ``task`` of suite ``name`` version ``version`` cannot be
        ranked with this suite's results; ``None`` if it can: the same suite, the task still in
        it, and the version neither newer than this one nor older than the task's ``since``
        (a task left as it was keeps its results comparable across versions). With ``task``
        ``None``, only the suite and version are checked."""
        made = f"made for suite {name!r} version {version!r}; this is {self.name} version {self.version}"
        if name != self.name or not is_whole(version) or not 1 <= version <= self.version:
            return f"{made}: scores of another suite version are not comparable"
        if task is None:
            return None
        if task not in self.tasks:
            return f"task {task!r} is not in the suite; known: {', '.join(self.tasks)}"
        since = self.tasks[task].since
        if version < since:
            return f"{made}, whose task {task!r} is as written since version {since}: scores of another suite version are not comparable"
        return None


def _training_reward(t: dict, where: str) -> tuple[str, float]:
    """A task's ``training_reward`` and ``win_bonus``, checked: the margin needs opponents and
    the env's points reward (which it replaces), the bonus needs the margin."""
    reward = t.get("training_reward", "env")
    if reward not in TRAINING_REWARDS:
        raise BenchmarkError(f"{where}: training_reward must be one of {', '.join(TRAINING_REWARDS)}, got {reward!r}")
    bonus = _finite(t.get("win_bonus", 0.0), f"{where}: win_bonus")
    if reward == "margin":
        env = t["env"]
        if int(env.get("num_players", 1)) < 2:
            raise BenchmarkError(f"{where}: training_reward margin needs opponents (num_players of 2 or more)")
        if env.get("reward", "score") != "score":
            raise BenchmarkError(
                f"{where}: training_reward margin is computed from the points written: the env's reward must be score, got {env.get('reward')!r}"
            )
    elif bonus:
        raise BenchmarkError(f"{where}: win_bonus is added to the margin: it needs training_reward margin")
    return str(reward), bonus


def load_suite(config_dir: Path | None = None) -> Suite:
    """The task suite of ``config_dir/tasks.yaml`` (default: the shipped one), checked."""
    path = Path(config_dir or default_config_dir()) / TASKS_FILE
    data = read_config_file(path, "task suite file", BenchmarkError)
    _keys(data, ("name", "version", "evaluation", "tasks"), str(path), required=("name", "version", "evaluation", "tasks"))
    version = _positive_int(data["version"], f"{path}: version")
    ev = data["evaluation"]
    if not isinstance(ev, dict):
        raise BenchmarkError(f"{path}: evaluation must be a mapping")
    _keys(ev, ("seed", "games", "final_games", "points"), f"{path}: evaluation", required=("seed", "games", "final_games", "points"))
    if isinstance(ev["seed"], bool) or not isinstance(ev["seed"], int) or ev["seed"] < 0:
        raise BenchmarkError(f"{path}: evaluation.seed must be a whole number of 0 or more, got {ev['seed']!r}")
    bounds = {"games": (MAX_EVAL_GAMES, "the bound of an evaluation's games"), "final_games": (MAX_EVAL_GAMES, "the bound of an evaluation's games")}
    bounds["points"] = (MAX_EVAL_POINTS, "the bound of a run's evaluations")
    evaluation = Evaluation(ev["seed"], *(_positive_int(ev[k], f"{path}: evaluation.{k}", bounds[k]) for k in ("games", "final_games", "points")))
    if not isinstance(data["tasks"], dict) or not data["tasks"]:
        raise BenchmarkError(f"{path}: tasks must be a non-empty mapping of task names")
    tasks = {}
    for name, t in data["tasks"].items():
        where = f"{path}: task {name!r}"
        if not isinstance(t, dict):
            raise BenchmarkError(f"{where} must be a mapping")
        _keys(
            t,
            ("env", "reward_scale", "illegal_penalty", "max_illegal_in_a_row", "summary", "training_reward", "win_bonus", "since"),
            where,
            required=("env", "reward_scale", "illegal_penalty", "max_illegal_in_a_row"),
        )
        if not isinstance(t["env"], dict):
            raise BenchmarkError(f"{where}: env must be a mapping of Generala-v0 arguments")
        _keys(t["env"], TASK_ENV_KEYS, f"{where}: env")
        if "opponents" in t["env"] and not isinstance(t["env"]["opponents"], str):
            raise BenchmarkError(
                f"{where}: env.opponents must be one agent name (the evaluation seats it in every other seat), got {short_repr(t['env']['opponents'])}"
            )
        scale = _finite(t["reward_scale"], f"{where}: reward_scale")
        if scale <= 0:
            raise BenchmarkError(f"{where}: reward_scale must be above 0, got {scale}")
        penalty = _finite(t["illegal_penalty"], f"{where}: illegal_penalty")
        cap = _positive_int(t["max_illegal_in_a_row"], f"{where}: max_illegal_in_a_row")
        training_reward, win_bonus = _training_reward(t, where)
        since = _positive_int(t.get("since", 1), f"{where}: since")
        if since > version:
            raise BenchmarkError(f"{where}: since {since} is past the suite's version {version}")
        tasks[str(name)] = Task(str(name), dict(t["env"]), scale, penalty, cap, str(t.get("summary", "")), training_reward, win_bonus, since)
    return Suite(str(data["name"]), version, evaluation, tasks)


def task_rules(task: Task):
    """The task's rule set, loaded once for what uses it (its games, its evaluation); bad rules
    are a :class:`BenchmarkError` naming the task."""
    from generala_env.core.rules import RulesError, load_rules

    try:
        return load_rules(task.env.get("rules", "classic"))
    except RulesError as e:
        raise BenchmarkError(f"task {task.name!r}: its env cannot be made: {e}") from None


def check_task(task: Task, rules=None) -> None:
    """Build the task's game once (one batched game) so that bad rules or opponents fail now.
    ``rules``: the task's rule set (:func:`task_rules`; ``None``: loaded here)."""
    from generala_env.envs.vector import GeneralaVectorEnv

    game = task.game(task_rules(task) if rules is None else rules)
    try:
        GeneralaVectorEnv(1, **game).close()
    except (ValueError, TypeError) as e:  # a RulesError is a ValueError
        raise BenchmarkError(f"task {task.name!r}: its env cannot be made: {e}") from None


# -- algorithm files ------------------------------------------------------------------------
def load_algo(algo: str, config_dir: Path | None = None) -> AlgoConfig:
    """The checked algorithm of ``config_dir/ALGO.yaml`` (default: the shipped ones)
    (:meth:`generala_training.algos.AlgoConfig.from_mapping`: its hyperparameters must be keywords of
    the algorithm's constructor, so SB3 and sb3-contrib must be installed)."""
    path = Path(config_dir or default_config_dir()) / f"{algo}.yaml"
    return AlgoConfig.from_mapping(algo, read_config_file(path, "algorithm file", BenchmarkError), str(path), BenchmarkError)


# -- one run ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunSpec:
    """Everything that decides one run's result: a run folder holds one spec and refuses any other."""

    algo: str
    task: str
    seed: int
    steps: int
    suite: str
    suite_version: int
    task_def: dict
    algo_config: dict
    evaluation: dict
    folder: str

    def identity(self) -> dict:
        """The spec without where it lives (what ``spec.json`` must match)."""
        d = dataclasses.asdict(self)
        del d["folder"]
        return json.loads(json.dumps(d))  # tuples as lists, as read back from JSON

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> RunSpec:
        return cls(**d)


def run_folder(out: Path, algo: str, task: str, seed: int) -> Path:
    return out / "runs" / task / algo / f"seed{seed}"


__all__ = [
    "ALGOS",
    "Algo",
    "AlgoConfig",
    "BenchmarkError",
    "Evaluation",
    "RunSpec",
    "Suite",
    "Task",
    "algo_class",
    "check_task",
    "task_rules",
    "default_config_dir",
    "load_algo",
    "load_suite",
    "run_folder",
]
