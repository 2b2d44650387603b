"""A training run's folder as an agent spec.

``generala evaluate --agents runs/NAME``: with the zip opt-in (``--trust-zip``, ``trust_zip=True``)
the run's best model, else its final, else its latest (an SB3 zip: loading one unpickles it);
without it, the one checkpoint of plain tensors exported into the run (``generala export RUN
--name N --dest RUN``); else one line naming both ways. The agent says which model it plays.
Registered as a resolver of the registry where a caller's trust allows paths.
"""

from __future__ import annotations

import os
from pathlib import Path

from generala_env.core.checks import is_whole
from generala_env.envs.opponents import Trust

from .base import AgentError
from .policy_net import WEIGHTS_FILE
from .ppo import METADATA_FILE, PPOAgent

RUN_MODELS = ("best_model.zip", "final_model.zip", "latest.zip")  # the model a run folder plays: the first it holds


def is_run_folder(path) -> bool:
    """Whether ``path`` is the folder of a ``generala train`` run: its ``config.yaml`` and its
    ``state.json`` or one of its model files (:data:`RUN_MODELS`)."""
    folder = Path(path)
    return folder.is_dir() and (folder / "config.yaml").is_file() and any(os.path.lexists(folder / f) for f in ("state.json", *RUN_MODELS))


def zip_steps(path) -> int | None:
    """The step count an SB3 model zip records (its ``data`` entry is JSON), read without unpickling anything."""
    import json
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            steps = json.loads(z.read("data")).get("num_timesteps")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, AttributeError):
        return None
    return int(steps) if is_whole(steps) else None


def _run_exports(run: Path, spec: str) -> list[Path]:
    """The checkpoint folders of plain tensors that ``run`` holds (``generala export RUN --name N
    --dest RUN``): real folders directly in it, each holding a regular ``metadata.json`` and
    ``policy.safetensors``; a link among them is refused."""
    found = []
    for p in sorted(run.iterdir()):
        if p.name in ("checkpoints", "tb") or not os.path.lexists(p / METADATA_FILE):
            continue
        if p.is_symlink() or any(os.path.islink(p / f) or not os.path.isfile(p / f) for f in (METADATA_FILE, WEIGHTS_FILE)):
            raise AgentError(f"agent {spec!r}: {p.name} in the run folder is a link or holds one: a run folder plays only the files it holds")
        found.append(p)
    return found


def run_folder_agent(spec: str, trust: Trust):
    """A factory for the run folder ``spec``: with the zip opt-in (``trust`` trusts the zips of
    the folder), its best model (:data:`RUN_MODELS`, the first it holds), a regular file of the
    folder, never a link; without it, the one checkpoint folder exported into it. Refused in one
    line naming the ways that work when neither is possible."""
    run = Path(spec)
    if trust.trusts_zips_in(run):
        for model in RUN_MODELS:
            file = run / model
            if not os.path.lexists(file):
                continue
            if file.is_symlink() or not file.is_file():
                raise AgentError(f"agent {spec!r}: {file} is a link or not a regular file: a run folder plays only the model files the run wrote")
            return _run_zip_factory(spec, file)
        raise AgentError(f"agent {spec!r}: the run folder holds no model yet ({', '.join(RUN_MODELS)})")
    exports = _run_exports(run, spec)
    if len(exports) == 1:
        return _run_export_factory(spec, exports[0])
    if exports:
        names = ", ".join(str(p) for p in exports)
        raise AgentError(f"agent {spec!r}: the run folder holds several exports ({names}): pass one of them")
    model = next((m for m in RUN_MODELS if os.path.lexists(run / m)), RUN_MODELS[0])
    raise AgentError(
        f"agent {spec!r} is a training run whose model ({model}) is an SB3 zip, and loading one unpickles it, which runs any code inside it: "
        f"pass --trust-zip (Python: trust_zip=True) if you trust the run, or make a checkpoint of plain tensors with "
        f"`generala export {spec} --name NAME` and pass --agents exports/NAME"
    )


def _run_zip_factory(spec: str, file: Path):
    def open_run(rules="classic", seed: int | None = None, **kwargs):
        from .sb3_zip import SB3ZipAgent

        agent = SB3ZipAgent(file, rules=rules, seed=seed, **kwargs)
        steps = zip_steps(file)
        agent.name = spec
        played = file.name + (f" (step {steps:,})" if steps is not None else "")
        vars(agent).update(played=played, metadata={"run": spec, "model": file.name, "training_steps": steps})
        return agent

    return open_run


def _run_export_factory(spec: str, folder: Path):
    def open_export(rules="classic", seed: int | None = None, **kwargs):
        agent = PPOAgent(folder, rules=rules, seed=seed, **kwargs)
        agent.name = spec
        m = agent.metadata
        steps = m.get("training_steps")
        of = f" of {m['source_model']}" if isinstance(m.get("source_model"), str) else ""
        vars(agent)["played"] = f"its export {folder.name}{of}" + (f" (step {steps:,})" if isinstance(steps, int) else "")
        return agent

    return open_export


def resolver(spec: str, trust: Trust = Trust.PROGRAM):
    """The registry's resolver for a training run's folder, where ``trust`` allows paths; else ``None``."""
    if trust.paths and is_run_folder(spec):
        return run_folder_agent(spec, trust)
    return None
