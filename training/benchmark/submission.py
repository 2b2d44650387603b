"""Runs made elsewhere: the submission file, its checks, and the runs of built-in grids in the same form.

A submission is one JSON file for one run (one algorithm, task and seed)::

    {
      "schema": "generala-benchmark-submission", "schema_version": 1,
      "suite": {"name": "generala-suite", "version": 2},
      "task": "classic",
      "algorithm": "cleanrl-masked-ppo",
      "library": {"name": "torch", "version": "2.13.0"},
      "seed": 0,
      "budget": 1000000,                    # the named budget it competes at
      "steps": 1000000,                     # environment steps it trained (at most the budget)
      "wall_clock_seconds": 812.5,
      "hardware": "2-core x86-64 CPU, no GPU",
      "uses_dice_model": false,             # planners that use the model API: a track of their own
      "curve": [[0, 0.11], [100000, 0.52]], # (step, normalised score) on the suite's evaluation games
      "final": {"normalized_score": 0.871, "games": 1000, "illegal_stops": 0.0},
      "url": "https://...", "notes": "..."  # optional
    }

``final.normalized_score`` is what :func:`generala_training.benchmark.score_policy` returns for the
final policy on the suite's ``final_games`` evaluation games; the curve's points are scores
on the evaluation games along the way. :func:`check` refuses a file with a missing or wrong
field, or one whose scores are not comparable with this suite's (another suite, a newer version, or
a version older than its task's ``since``), with one line that names the file and field.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from generala_env.core.checks import is_whole
from generala_env.files import FileProblem, read_json, write_json

from .suite import BenchmarkError, Suite

SCHEMA = "generala-benchmark-submission"
SCHEMA_VERSION = 1
NAMED_BUDGETS = (250_000, 1_000_000, 10_000_000)
MAX_FILE_BYTES = 4 * 2**20
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
REQUIRED = ("schema", "schema_version", "suite", "task", "algorithm", "library", "seed", "budget", "steps", "wall_clock_seconds", "hardware", "curve", "final")
OPTIONAL = ("uses_dice_model", "url", "notes")

# The ranges every run is held to, a submission's or a built-in grid's. Each is far wider than
# any real run and narrow enough that sums and means of many runs stay finite.
MAX_STEPS = 10**12  # environment steps: a million steps a second for eleven days; the largest named budget is 10^7
MAX_SECONDS = 1e9  # a run's seconds: about 32 years
MAX_SEED = 2**63 - 1  # a seed fits a signed 64-bit integer, as NumPy and torch take it
# The normalised score: one player, the mean final total over the optimum's expected total
# (totals are never negative, and a policy's mean over the suite's games does not reach ten
# times the best expected total); with opponents, the points per game (0 to 1).
SCORE_RANGE = (0.0, 10.0)
MAX_POINTS = 1e6  # a run's score before normalising: a mean final total (a sheet's points) or a win rate


def whole_field(value, where: str, low: int = 0, high: int = MAX_SEED) -> int:
    if not is_whole(value) or not low <= value <= high:
        raise BenchmarkError(f"{where} must be a whole number from {low:,} to {high:,}, got {_short(value)}")
    return int(value)


def number_field(value, where: str, low: float = 0.0, high: float = MAX_SECONDS) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not low <= value <= high:
        raise BenchmarkError(f"{where} must be a finite number from {low:g} to {high:g}, got {_short(value)}")
    return float(value)


def score_field(value, where: str) -> float:
    """A normalised score, in :data:`SCORE_RANGE`."""
    return number_field(value, where, *SCORE_RANGE)


def share_field(value, where: str) -> float:
    """A share of games, from 0 to 1."""
    return number_field(value, where, 0.0, 1.0)


def text_field(value, where: str, limit: int = 200) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise BenchmarkError(f"{where} must be a non-empty text of at most {limit} characters, got {_short(value)}")
    return value


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pair(value, where: str) -> dict:
    """A ``{"name": ..., "version": ...}`` mapping (a suite's or a library's)."""
    if not isinstance(value, dict) or set(value) != {"name", "version"}:
        raise BenchmarkError(f"{where} must be {{'name': ..., 'version': ...}}, got {_short(value)}")
    return value


# long: one check a field, each with its own message, before anything is read
def check(data, suite: Suite, where: str = "submission", *, built_in: bool = False) -> dict:
    """The submission ``data``, checked against the schema and ``suite``; a :class:`BenchmarkError` names what is wrong.

    ``built_in``: a run of a built-in grid (:func:`from_results`), held to the same checks but
    two: its budget is the grid's ``--steps`` (not only a named budget), and its steps may
    pass the budget by a whole rollout of the algorithm's games.
    """
    if not isinstance(data, dict):
        raise BenchmarkError(f"{where}: a submission is a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise BenchmarkError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}; known: {', '.join(REQUIRED + OPTIONAL)}")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise BenchmarkError(f"{where}: missing field(s) {', '.join(missing)}")
    if data["schema"] != SCHEMA:
        raise BenchmarkError(f"{where}: schema must be {SCHEMA!r}, got {_short(data['schema'])}")
    if data["schema_version"] != SCHEMA_VERSION:
        raise BenchmarkError(f"{where}: schema_version {_short(data['schema_version'])} is not {SCHEMA_VERSION}, the one this version reads")
    s = _pair(data["suite"], f"{where}: suite")
    if not isinstance(data["task"], str) or data["task"] not in suite.tasks:
        raise BenchmarkError(f"{where}: task {_short(data['task'])} is not in the suite; known: {', '.join(suite.tasks)}")
    why = suite.incomparable(s["name"], s["version"], data["task"])
    if why:
        raise BenchmarkError(f"{where}: {why}")
    if not isinstance(data["algorithm"], str) or not _ID.match(data["algorithm"]):
        raise BenchmarkError(f"{where}: algorithm must be an id of letters, digits, '.', '_', '+', '-' (at most 64), got {_short(data['algorithm'])}")
    lib = _pair(data["library"], f"{where}: library")
    text_field(lib["name"], f"{where}: library.name", 100)
    text_field(lib["version"], f"{where}: library.version", 100)
    whole_field(data["seed"], f"{where}: seed")
    budget = whole_field(data["budget"], f"{where}: budget", 1, MAX_STEPS)
    if budget not in NAMED_BUDGETS and not built_in:
        raise BenchmarkError(f"{where}: budget {budget:,} is not a named budget ({', '.join(f'{b:,}' for b in NAMED_BUDGETS)})")
    steps = whole_field(data["steps"], f"{where}: steps", 1, MAX_STEPS)
    if steps > budget * 1.01 and not built_in:  # a rollout may end just past the budget
        raise BenchmarkError(f"{where}: steps {steps:,} is over the budget {budget:,}")
    number_field(data["wall_clock_seconds"], f"{where}: wall_clock_seconds")
    text_field(data["hardware"], f"{where}: hardware")
    if not isinstance(data.get("uses_dice_model", False), bool):
        raise BenchmarkError(f"{where}: uses_dice_model must be true or false")
    for k in ("url", "notes"):
        if k in data:
            text_field(data[k], f"{where}: {k}", 2000)
    curve = data["curve"]
    if not isinstance(curve, list) or not curve or len(curve) > 10_000:
        raise BenchmarkError(f"{where}: curve must be a non-empty list of [step, normalised score] pairs (at most 10,000)")
    last = -1
    for i, point in enumerate(curve):
        if not isinstance(point, list) or len(point) != 2:
            raise BenchmarkError(f"{where}: curve[{i}] must be [step, normalised score], got {_short(point)}")
        step = whole_field(point[0], f"{where}: curve[{i}] step", 0, MAX_STEPS)
        score_field(point[1], f"{where}: curve[{i}] score")
        if step <= last:
            raise BenchmarkError(f"{where}: curve steps must increase, but curve[{i}] is at step {step:,} after {last:,}")
        if step > steps:
            raise BenchmarkError(f"{where}: curve[{i}] is at step {step:,}, past the {steps:,} steps trained")
        last = step
    final = data["final"]
    if not isinstance(final, dict) or not {"normalized_score", "games"} <= set(final) or not set(final) <= {"normalized_score", "games", "illegal_stops"}:
        raise BenchmarkError(f"{where}: final must be {{'normalized_score': ..., 'games': ..., 'illegal_stops': ...}}, got {_short(final)}")
    score_field(final["normalized_score"], f"{where}: final.normalized_score")
    games = whole_field(final["games"], f"{where}: final.games", 1)
    if games != suite.evaluation.final_games:
        raise BenchmarkError(f"{where}: final.games is {games}, but the suite scores a run on its {suite.evaluation.final_games} final games")
    if "illegal_stops" in final:
        share_field(final["illegal_stops"], f"{where}: final.illegal_stops")
    return data


def read_file(path: Path, limit: int = MAX_FILE_BYTES, what: str = "file"):
    """The JSON of ``path``: a regular file (never a link, a FIFO or a device) of at most ``limit`` bytes."""
    try:
        return read_json(path, limit, what)
    except FileProblem as e:
        raise BenchmarkError(str(e)) from None


def read(path: Path, suite: Suite) -> dict:
    """One submission file, checked."""
    return check(read_file(Path(path)), suite, str(path))


# many arguments: keyword-only, one per field of a submission
def make(
    *, task: str, algorithm: str, library: tuple[str, str], seed: int, budget: int, steps: int, wall_clock_seconds: float, hardware: str,
    curve: list, final: dict, suite: Suite, uses_dice_model: bool = False, url: str | None = None, notes: str | None = None,
) -> dict:  # fmt: skip
    """A checked submission from its parts (``final``: what ``score_policy`` returned, or its fields)."""
    data = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "suite": {"name": suite.name, "version": suite.version},
        "task": task,
        "algorithm": algorithm,
        "library": {"name": library[0], "version": library[1]},
        "seed": seed,
        "budget": budget,
        "steps": steps,
        "wall_clock_seconds": round(float(wall_clock_seconds), 1),
        "hardware": hardware,
        "uses_dice_model": uses_dice_model,
        "curve": [[int(s), float(v)] for s, v in curve],
        "final": {k: final[k] for k in ("normalized_score", "games", "illegal_stops") if k in final},
    }
    if url:
        data["url"] = url
    if notes:
        data["notes"] = notes
    return check(data, suite)


def write(path: Path, data: dict) -> Path:
    """Write a submission atomically (a cut write leaves no torn file), never through a link; its numbers finite."""
    return write_json(path, data, indent=1)


def hardware() -> str:
    """This machine in a few words: processor count and architecture."""
    import os
    import platform

    return f"{os.cpu_count()}-core {platform.machine()} CPU ({platform.system()})"


# the fields of a run in a built-in grid's results.json that its submission is made of
RESULTS_RUN_FIELDS = ("algo", "task", "seed", "steps", "normalized_score", "illegal_stops", "train_seconds", "eval_seconds", "curve")


def _results_run(r, i: int, results: dict, budget: int, where: str, suite: Suite) -> dict:
    """Run ``i`` of a built-in grid's results.json as a submission, held to :func:`check`."""
    at = f"{where}: runs[{i}]"
    missing = [k for k in RESULTS_RUN_FIELDS if k not in r]
    if missing:
        raise BenchmarkError(f"{at}: missing field(s) {', '.join(missing)}")
    # the fields whose names differ in a submission are checked under their own names here
    if not isinstance(r["algo"], str) or not _ID.match(r["algo"]):
        raise BenchmarkError(f"{at}: algo must be an id of letters, digits, '.', '_', '+', '-' (at most 64), got {_short(r['algo'])}")
    seconds = number_field(r["train_seconds"], f"{at}: train_seconds") + number_field(r["eval_seconds"], f"{at}: eval_seconds")
    number_field(seconds, f"{at}: train_seconds + eval_seconds")
    score_field(r["normalized_score"], f"{at}: normalized_score")
    share_field(r["illegal_stops"], f"{at}: illegal_stops")
    lib = _pair(results.get("library", {"name": "stable-baselines3", "version": "unknown"}), f"{where}: library")
    sub = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "suite": dict(results["suite"]),
        "task": r["task"],
        "algorithm": r["algo"],
        "library": {"name": lib["name"], "version": lib["version"]},
        "seed": r["seed"],
        "budget": budget,
        "steps": r["steps"],
        "wall_clock_seconds": seconds,
        "hardware": results.get("hardware", "unknown"),
        "uses_dice_model": False,
        "curve": r["curve"],
        "final": {"normalized_score": r["normalized_score"], "games": results["evaluation"]["final_games"], "illegal_stops": r["illegal_stops"]},
    }
    return check(sub, suite, at, built_in=True)


def from_results(results, where: str, suite: Suite) -> list[dict]:
    """The runs of a built-in grid's ``results.json`` as submissions, each held to the checks of a
    submission (:func:`check`): a field that is missing, of the wrong type or out of range is one
    line naming ``where`` and the field."""
    if not isinstance(results, dict):
        raise BenchmarkError(f"{where}: a results.json holds a JSON object, got {type(results).__name__}")
    s = _pair(results.get("suite"), f"{where}: suite")
    runs = results.get("runs")
    if not isinstance(runs, list) or not runs:
        raise BenchmarkError(f"{where}: runs must be a non-empty list of the grid's runs, got {_short(runs)}")
    for i, r in enumerate(runs):  # each task's version-1 results may still count
        if not isinstance(r, dict):
            raise BenchmarkError(f"{where}: runs[{i}] must be a mapping of the run's fields, got {_short(r)}")
        task = r.get("task")
        if not isinstance(task, str):
            raise BenchmarkError(f"{where}: runs[{i}]: task must be a task id of the suite, got {_short(task)}")
        why = suite.incomparable(s["name"], s["version"], task)
        if why:
            raise BenchmarkError(f"{where}: {why}")
    if any("curve" not in r for r in runs):
        raise BenchmarkError(
            f"{where} keeps no per-run learning curves (it was written by an earlier version): run its command again "
            "(`generala benchmark ...` with the same --out) to rewrite it from the run folders"
        )
    budget = whole_field(results.get("steps"), f"{where}: steps", 1, MAX_STEPS)
    evaluation = results.get("evaluation")
    if not isinstance(evaluation, dict) or "final_games" not in evaluation:
        raise BenchmarkError(f"{where}: evaluation must be a mapping with the final_games each run was scored on, got {_short(evaluation)}")
    return [_results_run(r, i, results, budget, where, suite) for i, r in enumerate(runs)]


def _files(p: Path) -> list[Path]:
    """The files that ``--runs p`` names: ``p`` itself, or the JSON files in the folder ``p`` and
    the folders in it (not those behind links; a grid's run folders, spec.json and state.json
    files left out). Whatever a file turns out to be, :func:`read_file` reads only regular files."""
    if p.is_dir():
        try:
            return sorted(f for f in p.rglob("*.json") if f.name != "spec.json" and f.name != "state.json" and "runs" not in f.relative_to(p).parts)
        except OSError as e:
            raise BenchmarkError(f"--runs {p}: the folder cannot be listed: {e.strerror or e}") from None
    if not p.exists() and not p.is_symlink():
        raise BenchmarkError(f"--runs {p}: there is no such file or folder")
    return [p]


def collect(paths: list[Path], suite: Suite) -> list[dict]:
    """Every run in ``paths``: submission files, built-in ``results.json`` files, and folders of either.
    Only regular files are read (a link, a FIFO or a device is refused at once), each of at most
    four times :data:`MAX_FILE_BYTES`."""
    runs: list[dict] = []
    for p in map(Path, paths):
        files = _files(p)
        if not files:
            raise BenchmarkError(f"--runs {p}: the folder holds no submission or results.json file")
        for f in files:
            head = read_file(f, MAX_FILE_BYTES * 4, "--runs file")
            if isinstance(head, dict) and head.get("kind") == "report":  # a report's own file: the runs it ranked
                subs = head.get("submissions")
                if not isinstance(subs, list):
                    raise BenchmarkError(f"{f}: submissions must be the list of runs the report ranked, got {_short(subs)}")
                runs.extend(check(x, suite, f"{f}: submissions[{i}]") for i, x in enumerate(subs))
            elif isinstance(head, dict) and head.get("schema") == SCHEMA:
                runs.append(check(head, suite, str(f)))
            elif isinstance(head, dict) and "runs" in head and "aggregates" in head:
                runs.extend(from_results(head, str(f), suite))
            elif f == p:
                raise BenchmarkError(f"{f}: neither a submission (schema {SCHEMA!r}) nor a benchmark results.json")
    if not runs:
        raise BenchmarkError("--runs names no runs")
    seen = {}
    for r in runs:
        key = (r["algorithm"], r["task"], r["seed"])
        if key in seen:
            raise BenchmarkError(f"two runs of {r['algorithm']} on {r['task']} with seed {r['seed']}: each run may be given once")
        seen[key] = r
    budgets = {r["budget"] for r in runs}
    if len(budgets) > 1:
        raise BenchmarkError(f"the runs are at different budgets ({', '.join(f'{b:,}' for b in sorted(budgets))}): a table ranks one budget")
    if len({r.get("uses_dice_model", False) for r in runs}) > 1:
        raise BenchmarkError("the runs mix model-free ones and ones that use the dice model: they are ranked in separate tables")
    return runs
