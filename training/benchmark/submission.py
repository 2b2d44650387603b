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

``final.normalized_score`` is what :func:`training.benchmark.score_policy` returns for the
final policy on the suite's ``final_games`` evaluation games; the curve's points are scores
on the evaluation games along the way. :func:`check` refuses a file with a missing or wrong
field, or one whose scores are not comparable with this suite's (another suite, a newer version, or
a version older than its task's ``since``), with one line that names the file and field.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from ..runs import write_json
from .suite import BenchmarkError, Suite

SCHEMA = "generala-benchmark-submission"
SCHEMA_VERSION = 1
NAMED_BUDGETS = (250_000, 1_000_000, 10_000_000)
MAX_FILE_BYTES = 4 * 2**20
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
REQUIRED = ("schema", "schema_version", "suite", "task", "algorithm", "library", "seed", "budget", "steps", "wall_clock_seconds", "hardware", "curve", "final")
OPTIONAL = ("uses_dice_model", "url", "notes")


def _whole(value, where: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise BenchmarkError(f"{where} must be a whole number of at least {low}, got {_short(value)}")
    return value


def _number(value, where: str, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < low:
        raise BenchmarkError(f"{where} must be a finite number of at least {low:g}, got {_short(value)}")
    return float(value)


def _text(value, where: str, limit: int = 200) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise BenchmarkError(f"{where} must be a non-empty text of at most {limit} characters, got {_short(value)}")
    return value


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# long: one check a field, each with its own message, before anything is read
def check(data, suite: Suite, where: str = "submission") -> dict:
    """The submission ``data``, checked against the schema and ``suite``; a :class:`BenchmarkError` names what is wrong."""
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
    s = data["suite"]
    if not isinstance(s, dict) or set(s) != {"name", "version"}:
        raise BenchmarkError(f"{where}: suite must be {{'name': ..., 'version': ...}}, got {_short(s)}")
    if data["task"] not in suite.tasks:
        raise BenchmarkError(f"{where}: task {_short(data['task'])} is not in the suite; known: {', '.join(suite.tasks)}")
    why = suite.incomparable(s["name"], s["version"], data["task"])
    if why:
        raise BenchmarkError(f"{where}: {why}")
    if not isinstance(data["algorithm"], str) or not _ID.match(data["algorithm"]):
        raise BenchmarkError(f"{where}: algorithm must be an id of letters, digits, '.', '_', '+', '-' (at most 64), got {_short(data['algorithm'])}")
    lib = data["library"]
    if not isinstance(lib, dict) or set(lib) != {"name", "version"}:
        raise BenchmarkError(f"{where}: library must be {{'name': ..., 'version': ...}}, got {_short(lib)}")
    _text(lib["name"], f"{where}: library.name", 100)
    _text(lib["version"], f"{where}: library.version", 100)
    _whole(data["seed"], f"{where}: seed")
    budget = _whole(data["budget"], f"{where}: budget", 1)
    if budget not in NAMED_BUDGETS:
        raise BenchmarkError(f"{where}: budget {budget:,} is not a named budget ({', '.join(f'{b:,}' for b in NAMED_BUDGETS)})")
    steps = _whole(data["steps"], f"{where}: steps", 1)
    if steps > budget * 1.01:  # a rollout may end just past the budget
        raise BenchmarkError(f"{where}: steps {steps:,} is over the budget {budget:,}")
    _number(data["wall_clock_seconds"], f"{where}: wall_clock_seconds")
    _text(data["hardware"], f"{where}: hardware")
    if not isinstance(data.get("uses_dice_model", False), bool):
        raise BenchmarkError(f"{where}: uses_dice_model must be true or false")
    for k in ("url", "notes"):
        if k in data:
            _text(data[k], f"{where}: {k}", 2000)
    curve = data["curve"]
    if not isinstance(curve, list) or not curve or len(curve) > 10_000:
        raise BenchmarkError(f"{where}: curve must be a non-empty list of [step, normalised score] pairs (at most 10,000)")
    last = -1
    for i, point in enumerate(curve):
        if not isinstance(point, list) or len(point) != 2:
            raise BenchmarkError(f"{where}: curve[{i}] must be [step, normalised score], got {_short(point)}")
        step = _whole(point[0], f"{where}: curve[{i}] step")
        _number(point[1], f"{where}: curve[{i}] score")
        if step <= last:
            raise BenchmarkError(f"{where}: curve steps must increase, but curve[{i}] is at step {step:,} after {last:,}")
        if step > steps:
            raise BenchmarkError(f"{where}: curve[{i}] is at step {step:,}, past the {steps:,} steps trained")
        last = step
    final = data["final"]
    if not isinstance(final, dict) or not {"normalized_score", "games"} <= set(final) or not set(final) <= {"normalized_score", "games", "illegal_stops"}:
        raise BenchmarkError(f"{where}: final must be {{'normalized_score': ..., 'games': ..., 'illegal_stops': ...}}, got {_short(final)}")
    _number(final["normalized_score"], f"{where}: final.normalized_score")
    games = _whole(final["games"], f"{where}: final.games", 1)
    if games != suite.evaluation.final_games:
        raise BenchmarkError(f"{where}: final.games is {games}, but the suite scores a run on its {suite.evaluation.final_games} final games")
    if "illegal_stops" in final:
        _number(final["illegal_stops"], f"{where}: final.illegal_stops")
    return data


def read(path: Path, suite: Suite) -> dict:
    """One submission file, checked."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise BenchmarkError(f"{path}: over {MAX_FILE_BYTES // 2**20} MiB, too large for a submission")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise BenchmarkError(f"{path}: cannot read it: {e.strerror or e}") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise BenchmarkError(f"{path}: not valid JSON: {str(e)[:200]}") from None
    return check(data, suite, str(path))


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
    """Write a submission through a temporary file (a cut write leaves no torn file)."""
    return write_json(path, data, indent=1)


def hardware() -> str:
    """This machine in a few words: processor count and architecture."""
    import os
    import platform

    return f"{os.cpu_count()}-core {platform.machine()} CPU ({platform.system()})"


def from_results(results: dict, where: str, suite: Suite) -> list[dict]:
    """The runs of a built-in grid's ``results.json`` as submissions."""
    s = results.get("suite") or {}
    runs = results.get("runs") or []
    for task in dict.fromkeys([r.get("task") for r in runs] or [None]):  # each task's version-1 results may still count
        why = suite.incomparable(s.get("name"), s.get("version"), task)
        if why:
            raise BenchmarkError(f"{where}: {why}")
    if any("curve" not in r for r in runs):
        raise BenchmarkError(
            f"{where} keeps no per-run learning curves (it was written by an earlier version): run its command again "
            "(`generala benchmark ...` with the same --out) to rewrite it from the run folders"
        )
    lib = results.get("library") or {"name": "stable-baselines3", "version": "unknown"}
    budget = int(results["steps"])
    out = []
    for r in runs:
        out.append(
            {
                "schema": SCHEMA,
                "schema_version": SCHEMA_VERSION,
                "suite": dict(s),
                "task": r["task"],
                "algorithm": r["algo"],
                "library": {"name": lib["name"], "version": lib["version"]},
                "seed": r["seed"],
                "budget": budget,
                "steps": r["steps"],
                "wall_clock_seconds": r["train_seconds"] + r["eval_seconds"],
                "hardware": results.get("hardware", "unknown"),
                "uses_dice_model": False,
                "curve": r["curve"],
                "final": {"normalized_score": r["normalized_score"], "games": results["evaluation"]["final_games"], "illegal_stops": r["illegal_stops"]},
            }
        )
    return out


def collect(paths: list[Path], suite: Suite) -> list[dict]:
    """Every run in ``paths``: submission files, built-in ``results.json`` files, and folders of either."""
    runs: list[dict] = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(f for f in p.rglob("*.json") if f.name != "spec.json" and f.name != "state.json" and "runs" not in f.relative_to(p).parts)
            if not files:
                raise BenchmarkError(f"--runs {p}: the folder holds no submission or results.json file")
        elif p.is_file():
            files = [p]
        else:
            raise BenchmarkError(f"--runs {p}: there is no such file or folder")
        for f in files:
            try:
                head = json.loads(f.read_text(encoding="utf-8")) if f.stat().st_size <= MAX_FILE_BYTES * 4 else None
            except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
                raise BenchmarkError(f"{f}: not valid JSON: {str(e)[:200]}") from None
            if isinstance(head, dict) and head.get("kind") == "report":  # a report's own file: the runs it ranked
                runs.extend(check(x, suite, f"{f}: submissions[{i}]") for i, x in enumerate(head.get("submissions") or []))
            elif isinstance(head, dict) and head.get("schema") == SCHEMA:
                runs.append(check(head, suite, str(f)))
            elif isinstance(head, dict) and "runs" in head and "aggregates" in head:
                runs.extend(from_results(head, str(f), suite))
            elif p.is_file():
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
