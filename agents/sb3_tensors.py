"""An SB3 model's tensors, as a training run saves them beside each zip: read with no pickle.

Every SB3 save of a ``generala train`` run (``latest.zip``, ``best_model.zip``,
``final_model.zip``, ``pretrained.zip``, ``checkpoints/step_N.zip``) and of a benchmark run's
checkpoint has a twin, ``NAME.safetensors``: the policy's state dict under ``policy.``, for a
save a run resumes from the optimizer's tensors under ``optimizer.`` (and a replay buffer in
``replay_buffer.safetensors``), and in the safetensors header, as text, the format, the step
counts, the network (``network``: the checkpoint metadata's description, where the policy is an
MLP on the plain observation) and what else a resume needs.

The zip is for SB3 users (``MaskablePPO.load``): loading a zip unpickles it, which runs whatever
code the file holds. The twin is tensors and text, so the project's programs read the twin
(:func:`read_twin`) and open a zip only with ``--trust-zip``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from generala_env.files.file_io import FileProblem, read_regular

from .base import AgentError

FORMAT = "generala-sb3-tensors/1"
SUFFIX = ".safetensors"
MAX_BYTES = 1 << 30  # far above what a config may build (a 4096-wide MLP with Adam's moments is about 0.3 GiB)


class TensorsError(AgentError):
    """A twin that cannot be read: one line naming the file."""


def twin(zip_path: str | os.PathLike) -> Path:
    """The twin of the SB3 zip ``zip_path``: the same name with ``.safetensors``."""
    return Path(zip_path).with_suffix(SUFFIX)


def read_twin(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The arrays and header of the twin ``path``: a regular file (never a link, FIFO or device)
    of at most :data:`MAX_BYTES`, of this format, every float finite, its counts whole numbers of
    0 or more; anything else is a :class:`TensorsError` of one line."""
    from safetensors import SafetensorError
    from safetensors.numpy import load

    path = Path(path)
    try:
        raw = read_regular(path, MAX_BYTES, "model tensors")
    except FileProblem as e:
        raise TensorsError(str(e)) from None
    try:
        arrays = load(raw)
        size = int.from_bytes(raw[:8], "little")  # the format: the header's length in 8 bytes, then the header as JSON
        header = json.loads(raw[8 : 8 + size]).get("__metadata__") or {}
    except (SafetensorError, ValueError, AttributeError) as e:
        raise TensorsError(f"{path} is not a safetensors file: {e}") from None
    if not isinstance(header, dict) or not all(isinstance(v, str) for v in header.values()):
        raise TensorsError(f"{path} is not a model's tensors: its header's metadata is not text")
    if header.get("format") != FORMAT:
        raise TensorsError(f"{path} is not a model's tensors written by this project (format {header.get('format')!r}, expected {FORMAT!r})")
    for name, a in arrays.items():
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise TensorsError(f"{path}: tensor {name} holds NaN or infinite values: nothing is loaded from it")
    counts = json.loads(header.get("counts", "{}")) if header.get("counts", "").startswith("{") else None
    if not isinstance(counts, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        raise TensorsError(f"{path}: header field 'counts' must map names to whole numbers of 0 or more, got {header.get('counts')!r}")
    if not isinstance(counts.get("num_timesteps"), int):
        raise TensorsError(f"{path}: header field 'counts' holds no num_timesteps")
    return arrays, header


def counts_of(header: dict[str, str]) -> dict[str, int]:
    """The step and update counts of a twin's header (checked by :func:`read_twin`)."""
    return json.loads(header["counts"])


def policy_arrays(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The policy's state dict out of a twin's arrays."""
    return {k[len("policy.") :]: v for k, v in arrays.items() if k.startswith("policy.")}


def network_of_twin(header: dict[str, str], path: Path) -> dict:
    """The network a twin's policy is (a checkpoint metadata's ``network``), or a
    :class:`TensorsError` where the twin names none (a policy that is not an MLP on the plain observation)."""
    try:
        network = json.loads(header["network"])
    except (KeyError, ValueError):
        raise TensorsError(f"{path} names no network this project plays in NumPy (its policy reads the observation through a feature extractor)") from None
    if not isinstance(network, dict):
        raise TensorsError(f"{path}: header field 'network' is not a network's description")
    return network
