"""A trained policy's network in NumPy: read from a checkpoint's plain tensors, no torch.

:func:`load_policy_net` checks a checkpoint's tensors against the network its metadata
describes (SB3's MlpPolicy layout, or the keep-head policy of
:class:`generala_training.policies.KeepHeadMaskablePolicy`) and gives a :class:`PolicyNet` whose
``logits`` are the policy's; :func:`masked_argmax_actions` is the masked greedy choice that
every player of a policy makes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.core.dice import NUM_MASKS
from generala_env.files.safe_yaml import short_repr

from .base import AgentError

WEIGHTS_FILE = "policy.safetensors"
NETWORK_FORMAT = "sb3-actor-critic-mlp"  # SB3's MlpPolicy layout: Flatten, mlp_extractor, action_net, value_net
KEEP_HEAD_FORMAT = "generala-keep-head"  # generala_training.policies.KeepHeadMaskablePolicy
NETWORK_FORMATS = (NETWORK_FORMAT, KEEP_HEAD_FORMAT)


def masked_argmax_actions(policy, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Greedy actions of a live SB3 actor-critic policy (torch) for a batch, illegal actions excluded."""
    import torch

    with torch.no_grad():
        t = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=policy.device)
        features = policy.extract_features(t, policy.pi_features_extractor)
        latent = policy.mlp_extractor.forward_actor(features)
        logits = policy.action_net(latent).cpu().numpy()
    logits[~np.asarray(masks, dtype=bool)] = -np.inf
    return logits.argmax(axis=1)


_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}


class PolicyNet:
    """The actor of an SB3 actor-critic, read from tensors: hidden layers, then the action logits.

    ``network`` is the checkpoint's ``metadata["network"]``; ``tensors`` maps SB3's state-dict
    names to arrays. Two formats: ``sb3-actor-critic-mlp`` (SB3's MlpPolicy: a linear layer
    on the trunk gives the logits) and ``generala-keep-head`` (``generala_training.policies.KeepHead``:
    one scorer shared by every hold mask, fed the trunk's output and the kept dice). Both may
    have LayerNorm in the trunk. Every shape is checked here, so weights that do not belong to
    the metadata are refused at load time, not at the first move.
    """

    def __init__(self, network: dict, tensors: dict[str, np.ndarray], where: str):
        network_shapes(network, where)  # every field checked: types, ranges, the dice inside the observation
        self.format = network["format"]
        self.activation = _ACTIVATIONS[network["activation"]]
        arch = network["net_arch"]["pi"]
        self.obs_size, self.n_actions = network["obs_size"], network["n_actions"]
        self.layer_norm = bool(network.get("layer_norm", False))
        per_layer = 3 if self.layer_norm else 2  # Linear, [LayerNorm,] activation
        self.layers: list[tuple[np.ndarray, np.ndarray]] = []
        self.norms: list[tuple[np.ndarray, np.ndarray]] = []
        width = self.obs_size
        for i, w in enumerate(arch):
            at = f"mlp_extractor.policy_net.{per_layer * i}"
            self.layers.append(self._linear(tensors, at, w, width, where))
            if self.layer_norm:
                ln = f"mlp_extractor.policy_net.{per_layer * i + 1}"
                self.norms.append((self._tensor(tensors, f"{ln}.weight", (w,), where), self._tensor(tensors, f"{ln}.bias", (w,), where)))
            width = w
        if self.format == NETWORK_FORMAT:
            self.out = self._linear(tensors, "action_net", self.n_actions, width, where)
            return
        k, dice = network["keep_width"], network["dice_slice"]
        self.dice = slice(*dice)
        self.hold_state = self._linear(tensors, "action_net.hold_state", k, width, where)
        self.hold_keep = self._linear(tensors, "action_net.hold_keep", k, KEEP_FEATURES, where)
        self.hold_mid = self._linear(tensors, "action_net.hold_mid", k, k, where)
        self.hold_out = self._linear(tensors, "action_net.hold_out", 1, k, where)
        self.write = self._linear(tensors, "action_net.write", self.n_actions - NUM_MASKS, width, where)

    @staticmethod
    def _tensor(tensors, name: str, shape: tuple, where: str) -> np.ndarray:
        if name not in tensors:
            raise AgentError(f"{where}: the weights lack {name}")
        t = tensors[name]
        if tuple(t.shape) != shape:
            raise AgentError(
                f"{where}: {name} has shape {tuple(t.shape)}, the metadata's network needs {shape}; "
                "the weights were made for another network, number of players or rule set"
            )
        return np.asarray(t, dtype=np.float32)

    def _linear(self, tensors, at: str, out: int, width: int, where: str) -> tuple[np.ndarray, np.ndarray]:
        w = self._tensor(tensors, f"{at}.weight", (out, width), where)
        return np.ascontiguousarray(w.T), self._tensor(tensors, f"{at}.bias", (out,), where)

    def trunk(self, obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float32)
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if self.layer_norm:  # torch.nn.LayerNorm: biased variance, eps 1e-5
                g, beta = self.norms[i]
                mu = x.mean(axis=-1, keepdims=True)
                var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
                x = (x - mu) / np.sqrt(var + 1e-5) * g + beta
            x = self.activation(x)
        return x

    def logits(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float32)
        h = self.trunk(obs)
        if self.format == NETWORK_FORMAT:
            return h @ self.out[0] + self.out[1]
        relu = _ACTIVATIONS["relu"]
        z = relu((h @ self.hold_state[0] + self.hold_state[1])[..., None, :] + keep_features(obs[..., self.dice]) @ self.hold_keep[0] + self.hold_keep[1])
        hold = (relu(z @ self.hold_mid[0] + self.hold_mid[1]) @ self.hold_out[0] + self.hold_out[1])[..., 0]
        keep_all = np.zeros_like(hold[..., :1])  # action 31, never legal
        return np.concatenate([hold, keep_all, h @ self.write[0] + self.write[1]], axis=-1)


KEEP_FEATURES = 7  # face counts of the kept dice / 5, and how many are kept / 5
# (31, 5): bit i of hold mask m keeps die i (masks 0..30; 31, keep all, is never legal)
HOLD_BITS = np.array([[(m >> i) & 1 for i in range(5)] for m in range(NUM_MASKS - 1)], dtype=np.float32)


def keep_features(dice_obs: np.ndarray) -> np.ndarray:
    """``(..., 31, 7)``: for each hold mask but keep-all, the kept dice's face counts and size, / 5."""
    faces = np.clip(np.rint(dice_obs * 6.0), 1, 6).astype(np.int64) - 1
    onehot = np.eye(6, dtype=np.float32)[faces]  # (..., 5, 6)
    kept = np.einsum("mi,...if->...mf", HOLD_BITS, onehot)
    return np.concatenate([kept, kept.sum(-1, keepdims=True)], axis=-1) / 5.0


MAX_WIDTH = 4096  # of a hidden layer, keep_width included
MAX_LAYERS = 16
MAX_HEADER_BYTES = 2**20  # of policy.safetensors: its JSON list of tensor names, types and shapes


def _whole(v, lo: int, hi: int) -> bool:
    return bool(is_whole(v) and lo <= v <= hi)


def network_shapes(network, where: str) -> tuple[dict[str, tuple], dict[str, tuple]]:
    """The tensors (name -> shape) of the actor and of the critic that ``metadata["network"]``
    describes, every field of it checked for its type and range here, at load time."""
    if not isinstance(network, dict) or network.get("format") not in NETWORK_FORMATS:
        fmt = network.get("format") if isinstance(network, dict) else network
        raise AgentError(f"{where}: metadata 'network' must describe a network of format {' or '.join(NETWORK_FORMATS)}, got {short_repr(fmt)}")
    act = network.get("activation")
    if not isinstance(act, str) or act not in _ACTIVATIONS:
        raise AgentError(f"{where}: unknown activation {short_repr(act)}; known: {', '.join(_ACTIVATIONS)}")
    arch = network.get("net_arch")
    pi: Any = arch.get("pi") if isinstance(arch, dict) else None  # checked below
    vf: Any = arch.get("vf", []) if isinstance(arch, dict) else None
    for key, widths in (("pi", pi), ("vf", vf)):
        if not isinstance(widths, list) or len(widths) > MAX_LAYERS or not all(_whole(w, 1, MAX_WIDTH) for w in widths) or (key == "pi" and not widths):
            raise AgentError(
                f"{where}: metadata 'network.net_arch.{key}' must be a list of at most {MAX_LAYERS} layer widths from 1 to {MAX_WIDTH}, got {short_repr(widths)}"
            )
    obs_size: Any = network.get("obs_size")  # checked below
    n_actions: Any = network.get("n_actions")
    if not _whole(obs_size, 1, 100_000) or not _whole(n_actions, NUM_MASKS + 1, NUM_MASKS + 100):
        raise AgentError(f"{where}: metadata 'network' needs whole numbers 'obs_size' and 'n_actions', got {short_repr(obs_size)} and {short_repr(n_actions)}")
    layer_norm = network.get("layer_norm", False)
    if not isinstance(layer_norm, bool):
        raise AgentError(f"{where}: metadata 'network.layer_norm' must be true or false, got {short_repr(layer_norm)}")

    def mlp(prefix: str, widths: list[int]) -> dict[str, tuple]:
        out: dict[str, tuple] = {}
        width, per_layer = obs_size, 3 if layer_norm else 2
        for i, w in enumerate(widths):
            out[f"{prefix}.{per_layer * i}.weight"], out[f"{prefix}.{per_layer * i}.bias"] = (w, width), (w,)
            if layer_norm:
                out[f"{prefix}.{per_layer * i + 1}.weight"] = out[f"{prefix}.{per_layer * i + 1}.bias"] = (w,)
            width = w
        return out

    actor = mlp("mlp_extractor.policy_net", pi)
    last = pi[-1]
    if network["format"] == NETWORK_FORMAT:
        actor.update({"action_net.weight": (n_actions, last), "action_net.bias": (n_actions,)})
    else:
        k: Any = network.get("keep_width")  # checked below
        dice: Any = network.get("dice_slice")
        if not _whole(k, 1, MAX_WIDTH) or not (
            isinstance(dice, list) and len(dice) == 2 and all(_whole(d, 0, obs_size) for d in dice) and dice[1] - dice[0] == 5
        ):
            raise AgentError(
                f"{where}: a keep-head network needs a 'keep_width' from 1 to {MAX_WIDTH} and a 'dice_slice' [start, start + 5] "
                f"inside the {obs_size} observation values, got {short_repr(k)} and {short_repr(dice)}"
            )
        for at, out, width in (
            ("hold_state", k, last),
            ("hold_keep", k, KEEP_FEATURES),
            ("hold_mid", k, k),
            ("hold_out", 1, k),
            ("write", n_actions - NUM_MASKS, last),
        ):
            actor.update({f"action_net.{at}.weight": (out, width), f"action_net.{at}.bias": (out,)})
    critic = mlp("mlp_extractor.value_net", vf)
    critic.update({"value_net.weight": (1, vf[-1] if vf else obs_size), "value_net.bias": (1,)})
    return actor, critic


def load_policy_net(path: Path, meta: dict) -> PolicyNet:
    """The :class:`PolicyNet` of the checkpoint folder ``path``; tensors only, nothing unpickled.

    Reading is bounded by the metadata: the file is read by the one reader of files (a regular
    file: a FIFO or a device is one line) and may hold only the tensors of the network it
    describes (actor and critic), in float32 and of their shapes, and be no larger than they
    are; only the actor's tensors are kept.
    """
    from safetensors import SafetensorError
    from safetensors.numpy import load as load_tensors

    from generala_env.files import FileProblem, read_regular

    file = Path(path) / WEIGHTS_FILE
    if not os.path.lexists(file):
        extra = (
            " (it holds an SB3 model.zip, which runs code when loaded: re-export it from a run you trust with generala export)"
            if (Path(path) / "model.zip").is_file()
            else ""
        )
        raise AgentError(f"checkpoint {path} has no {WEIGHTS_FILE}{extra}")
    where = f"checkpoint {path}"
    actor, critic = network_shapes(meta.get("network"), where)
    allowed = {**critic, **actor}
    weights = 4 * sum(int(np.prod(s)) for s in allowed.values())
    try:
        # the one reader of files: a regular file (a FIFO or a device is one line), never more
        # than the largest header and the network's own float32 weights
        raw = read_regular(file, 8 + MAX_HEADER_BYTES + weights, f"{where}: the weights", links=True)
    except FileProblem as problem:
        raise AgentError(str(problem)) from None
    try:
        header = int.from_bytes(raw[:8], "little") if len(raw) >= 8 else -1
        if not 0 < header <= MAX_HEADER_BYTES:
            raise AgentError(f"{where}: {WEIGHTS_FILE} is not a safetensors file of at most {MAX_HEADER_BYTES:,} header bytes")
        entries = json.loads(raw[8 : 8 + header])
        if not isinstance(entries, dict):
            raise ValueError("its header is not a JSON object")
        entries.pop("__metadata__", None)
        unused = sorted(set(entries) - set(allowed))
        if unused:
            raise AgentError(f"{where}: {WEIGHTS_FILE} holds tensors its network does not use: {short_repr(unused, 200)}; refused")
        for n, e in entries.items():
            shape, dtype = (tuple(e.get("shape") or ()), e.get("dtype")) if isinstance(e, dict) else ((), None)
            if dtype != "F32":
                raise AgentError(f"{where}: {n} holds {short_repr(dtype)} values; a checkpoint's weights are F32 (float32)")
            if shape != allowed[n]:
                raise AgentError(
                    f"{where}: {n} has shape {short_repr(shape)}, the metadata's network needs {allowed[n]}; "
                    "the weights were made for another network, number of players or rule set"
                )
        limit = 8 + header + weights
        if len(raw) > limit:
            raise AgentError(f"{where}: {WEIGHTS_FILE} is {len(raw):,} bytes, more than the {limit:,} its metadata's network needs; refused")
        tensors = {n: t for n, t in load_tensors(raw).items() if n in actor}  # checks offsets and coverage
    except (SafetensorError, OSError, ValueError, TypeError, RecursionError) as e:
        if isinstance(e, AgentError):
            raise
        raise AgentError(f"{where}: {WEIGHTS_FILE} cannot be read: {short_repr(str(e), 200)}") from None
    return PolicyNet(meta["network"], tensors, where)  # network_shapes checked it is a mapping


REQUIRED_METADATA = ("rules", "num_players", "layout_version", "obs_size", "n_actions", "network")
