"""A training run's folder: its saves, its state, resuming it, and starts cut short.

What :mod:`generala_training.train` writes and reads back in a run folder (the layout is in
its docstring): model saves through a temporary file, ``state.json`` with ``latest.zip``,
``evaluations.csv`` by whole-line appends, the folder's lock, the config a resume may change,
and the cleanup of a start cut short before its first ``state.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import stat
import time
import zipfile
from pathlib import Path

from generala_env.files import append_line, check_append_target, lock_folder, lstat_or_none, write_atomic

from . import runs
from .config import Config, ConfigError, load_config
from .runs import EVALUATIONS

# the files a run appends to (generala_env.files.append_line), checked when a run resumes
APPENDED = ("command.txt", EVALUATIONS)


def append_evaluation(path: Path, line: dict) -> None:
    """One evaluation as a row of ``evaluations.csv`` (its header first, in a new file): each a
    whole line in one append (:func:`generala_env.files.append_line`), never through a link."""
    st = lstat_or_none(path)
    if st is None or st.st_size == 0:
        append_line(path, ",".join(line))
    append_line(path, ",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in line.values()))


def save_model(model, path: Path, *, optimizer: bool = False) -> None:
    """``model.save`` into ``path`` and its tensors beside it (:func:`generala_training.model_tensors.save_model`):
    each through a fresh hidden temporary file renamed over its name, so a cut save leaves the old
    files whole (or none), never a torn zip; a failed save (a full disk) is one line naming the
    file; a link at either name is refused. ``optimizer``: the tensors hold its state too."""
    from .model_tensors import save_model as save_with_twin

    save_with_twin(model, path, optimizer=optimizer)


def save_latest(model, run: Path, state: dict, t_start: float) -> None:
    save_model(model, run / "latest.zip", optimizer=True)  # resumed from its twin, latest.safetensors
    s = dict(state)
    s["num_timesteps"] = int(model.num_timesteps)
    s["train_seconds"] = state["train_seconds"] + (time.time() - t_start)
    write_atomic(run / "state.json", json.dumps(s, indent=2, default=float))


# -- resuming ---------------------------------------------------------------------------------
# keys that --resume applies (to the loaded model, or to the callback); the others made the
# saved model and its envs, and changing them needs a new run
RESUMABLE = ("total_timesteps", "device", "threads", "checkpoint_every", "algo.", "eval.")


def _changed(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two configs."""
    out = []
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(old.get(k), dict):
            out += _changed(old[k], v, f"{prefix}{k}.")
        elif old.get(k) != v:
            out.append(prefix + k)
    return out


def resume_config(run: Path, overrides: list[str] | None = None, latest: str = "latest.zip") -> Config:
    """The saved config of ``run`` with ``overrides``; a ConfigError names what stops the run from
    resuming. ``latest``: the file the run goes on from (a JAX run's ``latest.safetensors``)."""
    if not run.is_dir():
        raise ConfigError(f"{run} is not a run folder")
    for name in ("config.yaml", latest, "state.json"):
        st = lstat_or_none(run / name)
        if st is None:
            raise ConfigError(f"{run / name} is missing: --resume needs a run folder with config.yaml, {latest} and state.json")
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{run / name} is not a regular file (a link, a folder or a pipe): a run reads only the files it wrote")
    path = run / "config.yaml"
    try:
        saved = load_config(path)
    except ConfigError as e:
        raise ConfigError(str(e) if str(path) in str(e) else f"{path}: {e}") from None
    cfg = load_config(saved, overrides)
    fixed = [k for k in _changed(dataclasses.asdict(saved), dataclasses.asdict(cfg)) if not k.startswith(RESUMABLE)]
    if fixed:
        raise ConfigError(
            f"{', '.join(fixed)} cannot change when resuming {run}: the saved model and its envs were made with "
            f"the values in {path}. On resume only total_timesteps, device, threads, checkpoint_every, algo.* and "
            "eval.* can change; for the others start a new run"
        )
    return cfg


def read_state(run: Path) -> dict:
    """The run's ``state.json`` (:func:`generala_training.runs.read_state`): steps, training time, best result and evaluations so far."""
    state = runs.read_state(run / "state.json", ConfigError, "it is written with latest.zip, so the run cannot resume")
    assert state is not None  # a required state file is read or refused
    return state


# -- runs cut short -------------------------------------------------------------------------
# what a run writes before its first state.json; a folder holding only these (and the
# temporary files of their saves) and no state.json is a start that was cut short, and starts again
_MODELS = ("latest", "best_model", "final_model", "pretrained")  # a run's SB3 saves, each a .zip with its .safetensors twin
_START_FILES = {"config.yaml", "command.txt", "evaluations.csv", ".lock"} | {
    f"{m}.{x}" for m in ("pretrained", "latest", "best_model") for x in ("zip", "safetensors")
}
_RUN_FILES = ("config.yaml", "state.json", "evaluations.csv", *(f"{m}.{x}" for m in _MODELS for x in ("zip", "safetensors")))
# a save's temporary file: files.write_atomic's ".NAME.XXXXXXXX.tmp", or an older version's ".NAME.tmp" / "NAME.tmp"
_TEMPORARY = re.compile(r"\.?(?P<name>[A-Za-z0-9_.]+?)(\.[a-z0-9_]{8})?\.tmp")


def _temporary_of(name: str, files: tuple[str, ...] | re.Pattern) -> bool:
    """Whether ``name`` is the temporary file of a save of one of ``files`` (names, or a pattern of names)."""
    m = _TEMPORARY.fullmatch(name)
    if m is None:
        return False
    return m.group("name") in files if isinstance(files, tuple) else bool(files.fullmatch(m.group("name")))


_STEP = re.compile(r"step_\d+\.(zip|safetensors)")


def sweep_temporaries(run: Path) -> list[str]:
    """Remove the temporary files of saves cut short (a kill during a save) from ``run`` and its
    ``checkpoints/``; called with the run folder locked, when no save of the run is under way.
    Only regular files with a save's temporary name are removed."""
    gone = []
    for folder, names in ((run, _RUN_FILES), (run / "checkpoints", _STEP)):
        if not folder.is_dir() or folder.is_symlink():
            continue
        for p in folder.iterdir():
            if p.name.endswith(".tmp") and _temporary_of(p.name, names) and stat.S_ISREG(p.lstat().st_mode):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
                    gone.append(p.name)
    return gone


def _own_tree(folder: Path, ok) -> bool:
    """Whether ``folder`` is a real folder whose every file (links refused) passes ``ok(name)``."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    return not any(p.is_symlink() or (p.is_file() and not ok(p.name)) or not (p.is_file() or p.is_dir()) for p in folder.rglob("*"))


def unfinished_start(run: Path) -> bool:
    """Whether ``run`` is a run folder cut short before it first saved ``state.json``, holding
    nothing but files a run writes (so starting it again loses nothing anyone else made)."""
    if run.is_symlink() or not run.is_dir() or os.path.lexists(run / "state.json") or not any(p.name != ".lock" for p in run.iterdir()):
        return False
    for p in run.iterdir():
        if p.name == "checkpoints":
            ok = _own_tree(p, lambda n: bool(_STEP.fullmatch(n)) or _temporary_of(n, _STEP))
        elif p.name == "tb":
            ok = _own_tree(p, lambda n: n.startswith("events.out.tfevents."))
        else:
            ok = (p.name in _START_FILES or _temporary_of(p.name, _RUN_FILES)) and p.is_file() and not p.is_symlink()
        if not ok:
            return False
    return True


def clear_unfinished(run: Path) -> None:
    """Remove what a cut-short start wrote (see :func:`unfinished_start`), keeping the folder
    and its ``.lock`` (held by the run that clears it)."""
    import shutil

    for p in run.iterdir():
        if p.name == ".lock":
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def _model_steps(path: Path) -> int | None:
    """The step count saved with an SB3 model zip: its twin's (``NAME.safetensors``), else the
    zip's ``data`` entry read as JSON (nothing in it unpickled), without loading the model."""
    from generala_agents.sb3_tensors import TensorsError, counts_of, read_twin, twin

    if twin(path).is_file():
        try:
            return counts_of(read_twin(twin(path))[1])["num_timesteps"]
        except TensorsError:
            return None
    try:
        with zipfile.ZipFile(path) as z:
            steps = json.loads(z.read("data")).get("num_timesteps")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, AttributeError):
        return None
    return steps if isinstance(steps, int) else None


def reconcile_best(run: Path, state: dict, key: str, best_steps=None) -> None:
    """Make a resumed run's state agree with the files beside it after a kill.

    ``best_model.zip`` may be newer than ``state.json`` (which is saved with ``latest.zip``): its
    step's row of ``evaluations.csv`` becomes the best, so a later, worse model cannot replace it.
    Rows of ``evaluations.csv`` after ``latest.zip``'s step are dropped: those steps are trained again.
    ``best_steps``: the step of the run's best model, read from its files (``None``: a train
    run's ``best_model.zip``).
    """
    csv = run / EVALUATIONS
    header, rows = runs.read_evaluations(csv, ConfigError)  # a torn last row is skipped with a warning
    if best_steps is None:  # a train run's best_model.zip
        best_steps = lambda run: _model_steps(run / "best_model.zip") if (run / "best_model.zip").is_file() else None  # noqa: E731
    best_step = best_steps(run)
    if best_step is not None and best_step != state.get("best_step"):
        row = next((r for r in rows if r.get("step") == best_step and key in r), None)
        if row is not None:
            state["best"], state["best_step"] = row[key], best_step
            print(f"the best model is the model of step {best_step:,} ({key} {row[key]:.4g}), saved after state.json: it stays the best")
    saved = state.get("num_timesteps")
    cut = any(r.get("step", 0) > saved for r in rows) if isinstance(saved, int) else False
    if header and (cut or _torn(csv)):
        kept = [r for r in rows if not isinstance(saved, int) or r.get("step", 0) <= saved]
        lines = [",".join(header)] + [",".join(f"{r[h]:.6g}" if h != "step" else str(int(r[h])) for h in header) for r in kept]
        write_atomic(csv, "\n".join(lines) + "\n")


def _torn(path: Path) -> bool:
    """Whether ``path`` ends without a newline (its last append was cut short)."""
    try:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:
        return False


def check_run_name(name: str) -> str:
    """``--run-name``: one folder name under ``run_dir``, never a path out of it."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name or len(name) > 200:
        raise ConfigError(f"--run-name must be a folder name of at most 200 characters, without path separators and not '..', got {name[:80]!r}")
    return name


def lock_run(run: Path):
    """Hold the run folder's lock (:func:`generala_env.files.lock_folder`) while a run uses it: a
    second ``generala train`` or ``--resume`` on the folder is refused with one line."""
    return lock_folder(run, "another generala train (or --resume)")


def check_fresh(run: Path) -> None:
    """Refuse a folder a fresh run may not use: a link, a file, or a folder that holds anything
    but a start cut short (:func:`unfinished_start`) or the lock."""
    if run.is_symlink():
        raise ConfigError(f"run folder {run} is a symbolic link: a run writes only into a real folder; pick another --run-name")
    if unfinished_start(run):
        return
    if os.path.lexists(run) and (not run.is_dir() or any(p.name != ".lock" for p in run.iterdir())):
        raise ConfigError(f"run folder {run} already exists and is not empty; continue it with --resume {run} or pick another --run-name")


def open_run(held: contextlib.ExitStack, run: Path, resume: bool, state: dict) -> None:
    """Take a run's folder for this process: resuming, lock it (held by ``held``), remove the
    temporary files of saves cut short and read its ``state.json`` into ``state``; starting,
        refuse a folder a fresh run may not use (:func:`check_fresh`). A file the run appends to
    (:data:`APPENDED`) that is a link, not a regular file or has another name (a hard link) is
    refused with one line before anything is written."""
    if not resume:
        check_fresh(run)
        return
    held.enter_context(lock_run(run))
    for name in APPENDED:  # before anything is written: the first evaluation's row comes long after
        check_append_target(run / name)
    gone = sweep_temporaries(run)
    if gone:
        print(f"removed the temporary files of saves cut short in {run}: {', '.join(gone)}")
    state.update(read_state(run))


@contextlib.contextmanager
def fresh_run(run: Path):
    """Make and lock the folder of a fresh run, checked again under the lock (another run may
    have taken it since the first check); a start cut short there is cleared."""
    run.mkdir(parents=True, exist_ok=True)
    with lock_run(run):
        check_fresh(run)
        if unfinished_start(run):
            clear_unfinished(run)
        yield
