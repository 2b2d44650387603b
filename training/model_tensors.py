"""Writing an SB3 model's twin beside its zip, and building a model back from one.

The twin's format and its reader are :mod:`generala_agents.sb3_tensors`. :func:`save_model`
writes a zip (for SB3 users) and its twin; :func:`load_twin` puts a twin into a model built from
the run's config (the weights, with ``optimizer=True`` the optimizer's state, the counts), so a
resume, an export or a benchmark run reads tensors and text, never a pickle.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from generala_agents.sb3_tensors import FORMAT, TensorsError, counts_of, policy_arrays, read_twin, twin
from generala_env.files.file_io import write_atomic

# what a model counts beside its tensors, where its algorithm has it: the steps and updates
# made, and (off-policy) the calls that time the target network's updates and the episodes seen
COUNTS = ("num_timesteps", "_n_updates", "_n_calls", "_episode_num")
REPLAY_FILE = "replay_buffer.safetensors"
_REPLAY_ARRAYS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


def _network(model) -> dict | None:
    """The checkpoint metadata's ``network`` of ``model``, or ``None`` where it has none (a
    policy that reads the observation through a feature extractor, an algorithm that is not an
    actor-critic)."""
    from .export_metadata import ExportError, network_of

    if not hasattr(model.policy, "mlp_extractor") or not hasattr(model, "policy_kwargs"):
        return None
    try:
        return network_of(model)
    except (ExportError, AttributeError, TypeError):
        return None


def _header(model, optimizer: bool) -> tuple[dict, dict[str, str]]:
    """The tensors and header of ``model``'s twin."""
    tensors = {f"policy.{k}": v.detach().cpu().contiguous() for k, v in model.policy.state_dict().items()}
    counts = {k: int(getattr(model, k)) for k in COUNTS if hasattr(model, k)}
    header = {
        "format": FORMAT,
        "algorithm": type(model).__name__,
        "counts": json.dumps(counts),
        "ep_info": json.dumps([{k: float(v) for k, v in e.items()} for e in (getattr(model, "ep_info_buffer", None) or [])]),
    }
    if hasattr(model, "exploration_rate"):
        header["exploration_rate"] = repr(float(model.exploration_rate))
    network = _network(model)
    if network is not None:
        header["network"] = json.dumps(network)
    if optimizer:
        opt = model.policy.optimizer.state_dict()
        numbers: dict[str, dict[str, float]] = {}
        for i, entry in opt["state"].items():
            for name, value in entry.items():
                if hasattr(value, "detach"):
                    tensors[f"optimizer.state.{i}.{name}"] = value.detach().cpu().contiguous()
                else:
                    numbers.setdefault(str(i), {})[name] = float(value)
        header["optimizer"] = json.dumps({"param_groups": opt["param_groups"], "numbers": numbers})
    return tensors, header


def save_model(model, path: str | os.PathLike, *, optimizer: bool = False) -> None:
    """``model.save`` into ``path`` (an SB3 zip, for SB3 users), then its twin
    (:func:`generala_agents.sb3_tensors.twin`), each atomically and never through a link: a cut
    save leaves the old file whole. ``optimizer``: the twin holds the optimizer's state too (a
    save a run resumes from). The twin is written last, so it is never newer than the zip."""
    from safetensors.torch import save

    write_atomic(path, model.save)  # SB3 writes a zip to a binary file it is given and leaves it open
    tensors, header = _header(model, optimizer)
    write_atomic(twin(path), save(tensors, metadata=header))


def _match(want: dict, got: dict, path: Path, what: str) -> None:
    wrong = sorted(set(want) ^ set(got)) or sorted(k for k in want if tuple(want[k].shape) != tuple(got[k].shape))
    if wrong:
        raise TensorsError(f"{path} holds another {what} than the run's config makes (first difference: {wrong[0]})")


def load_twin(model, path: str | os.PathLike, *, optimizer: bool) -> dict[str, str]:
    """Put the twin ``path`` into ``model``, built from the run's config: the policy's weights,
    with ``optimizer`` its optimizer's state, and the counts. Every tensor of the model must be
    there with its shape, else a :class:`~generala_agents.sb3_tensors.TensorsError` of one line.
    The twin's header is returned."""
    import torch

    path = Path(path)
    arrays, header = read_twin(path)
    weights = {k: torch.from_numpy(np.array(v)) for k, v in policy_arrays(arrays).items()}
    _match(model.policy.state_dict(), weights, path, "network")
    model.policy.load_state_dict(weights)
    if optimizer:
        model.policy.optimizer.load_state_dict(_optimizer_state(model, arrays, header, path))
    for k, v in counts_of(header).items():
        if k in COUNTS and hasattr(model, k):
            setattr(model, k, v)
    if "exploration_rate" in header and hasattr(model, "exploration_rate"):
        rate = _float(header["exploration_rate"], path, "exploration_rate")
        model.exploration_rate = rate
    buffer = getattr(model, "ep_info_buffer", None)
    if buffer is not None:
        try:
            episodes = json.loads(header.get("ep_info", "[]"))
        except ValueError:
            raise TensorsError(f"{path}: header field 'ep_info' is not JSON") from None
        buffer.clear()
        if isinstance(episodes, list):
            buffer.extend(e for e in episodes if isinstance(e, dict) and all(isinstance(v, float) and math.isfinite(v) for v in e.values()))
    return header


def _float(text: str, path: Path, key: str) -> float:
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not math.isfinite(x):
        raise TensorsError(f"{path}: header field {key!r} must be a finite number, got {text[:40]!r}")
    return x


def _optimizer_state(model, arrays: dict, header: dict[str, str], path: Path) -> dict[str, Any]:
    """The optimizer's ``state_dict`` rebuilt from a twin, checked against the model's optimizer."""
    import torch

    if "optimizer" not in header:
        raise TensorsError(f"{path} holds no optimizer state (a run resumes from the twin of its latest save)")
    try:
        saved = json.loads(header["optimizer"])
        groups, numbers = saved["param_groups"], saved["numbers"]
    except (ValueError, KeyError, TypeError):
        raise TensorsError(f"{path}: header field 'optimizer' is not the optimizer's settings") from None
    optimizer = model.policy.optimizer
    want = optimizer.state_dict()
    if not isinstance(groups, list) or len(groups) != len(want["param_groups"]):
        raise TensorsError(f"{path}: the optimizer's parameter groups are not the run's model's")
    for g, w in zip(groups, want["param_groups"], strict=True):
        if not isinstance(g, dict) or g.get("params") != w["params"] or set(g) != set(w):
            raise TensorsError(f"{path}: the optimizer's parameter groups are not the run's model's")
    shapes = {
        i: tuple(p.shape) for w, g in zip(want["param_groups"], optimizer.param_groups, strict=True) for i, p in zip(w["params"], g["params"], strict=True)
    }
    state: dict[int, dict[str, Any]] = {}
    for name, a in arrays.items():
        if not name.startswith("optimizer.state."):
            continue
        index, _, field = name[len("optimizer.state.") :].partition(".")
        if not index.isdigit() or int(index) not in shapes or not field:
            raise TensorsError(f"{path}: tensor {name} is the state of no parameter of the run's model")
        if a.ndim > 0 and tuple(a.shape) != shapes[int(index)]:
            raise TensorsError(f"{path}: optimizer state {name} has shape {tuple(a.shape)}, its parameter {shapes[int(index)]}")
        state.setdefault(int(index), {})[field] = torch.from_numpy(np.array(a))
    if not isinstance(numbers, dict):
        raise TensorsError(f"{path}: header field 'optimizer' is not the optimizer's settings")
    for index, fields in numbers.items():
        if not index.isdigit() or int(index) not in shapes or not isinstance(fields, dict):
            raise TensorsError(f"{path}: header field 'optimizer' is not the optimizer's settings")
        state.setdefault(int(index), {}).update({k: _float(repr(v), path, f"optimizer {index}.{k}") for k, v in fields.items()})
    return {"state": state, "param_groups": groups}


# -- an off-policy model's replay buffer ------------------------------------------------------
def save_replay(model, path: str | os.PathLike) -> None:
    """``model``'s replay buffer as plain arrays (``REPLAY_FILE``), written atomically."""
    from safetensors.numpy import save

    rb = model.replay_buffer
    arrays = {k: np.ascontiguousarray(getattr(rb, k)) for k in _REPLAY_ARRAYS if getattr(rb, k, None) is not None}
    header = {"format": FORMAT, "counts": json.dumps({"num_timesteps": int(model.num_timesteps), "pos": int(rb.pos), "full": int(bool(rb.full))})}
    write_atomic(path, save(arrays, metadata=header))


def load_replay(model, path: str | os.PathLike) -> None:
    """Fill ``model``'s replay buffer (made by its config) from ``path``: every array of the
    buffer there with its shape and dtype, its position inside the buffer."""
    path = Path(path)
    arrays, header = read_twin(path)
    rb, counts = model.replay_buffer, counts_of(header)
    want = {k for k in _REPLAY_ARRAYS if getattr(rb, k, None) is not None}
    if set(arrays) != want:
        raise TensorsError(f"{path} holds another replay buffer than the run's config makes (arrays {sorted(arrays)}, expected {sorted(want)})")
    for k in want:
        have = getattr(rb, k)
        if arrays[k].shape != have.shape or arrays[k].dtype != have.dtype:
            raise TensorsError(f"{path}: array {k} is {arrays[k].dtype}{list(arrays[k].shape)}, the run's buffer {have.dtype}{list(have.shape)}")
    if not 0 <= counts.get("pos", -1) < rb.buffer_size or counts.get("full") not in (0, 1):
        raise TensorsError(f"{path}: header field 'counts' places the buffer's position outside it")
    for k in want:
        getattr(rb, k)[...] = arrays[k]
    rb.pos, rb.full = counts["pos"], bool(counts["full"])
