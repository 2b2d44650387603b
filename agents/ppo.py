"""Trained PPO policies, shipped as checkpoints and loaded by name, without unpickling anything.

A checkpoint is a folder ``NAME/`` with two files:

- ``policy.safetensors``: the actor-critic's weights as plain tensors (safetensors holds no
  code, so loading a checkpoint from someone else cannot run theirs);
- ``metadata.json``: rules, players, observation layout version and size, the network that
  the weights belong to (``network``), training steps and time, the config, and the
  evaluation figures it reached.

The shipped checkpoints live in the repository's ``checkpoints/`` folder, which a wheel
carries as ``generala_agents/checkpoints/``; :data:`SHIPPED_CHECKPOINTS` names them (a stray
folder there is no shipped agent). ``generala export`` writes a user's checkpoints elsewhere
(``./exports/NAME`` by default), and a checkpoint folder plays by its path. A checkpoint made for other rules, another number of
players or another observation layout, or whose weights do not fit its metadata, is refused
with an :class:`AgentError` when it is loaded. The policy plays its most likely legal action,
computed in NumPy (no torch needed to play).

SB3's own ``model.zip`` files are pickles: loading one runs whatever code it holds. They are
used only for what needs the optimizer state (``generala train --resume``, ``init_from``, the
self-play pool of a run's own ``step_N.zip`` files), never by :func:`agents.load` on a
checkpoint folder; a pool opens them only where it is trusted to (``trust_zip``).
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from generala_env.dice import NUM_MASKS
from generala_env.encoding import LAYOUT_VERSION, observation_size
from generala_env.rules import load_rules
from generala_env.safe_yaml import short_repr

from .base import Agent, AgentError, recorded_rules
from .loader import load

WEIGHTS_FILE = "policy.safetensors"
METADATA_FILE = "metadata.json"
NETWORK_FORMAT = "sb3-actor-critic-mlp"  # SB3's MlpPolicy layout: Flatten, mlp_extractor, action_net, value_net
KEEP_HEAD_FORMAT = "generala-keep-head"  # generala_training.policies.KeepHeadMaskablePolicy
NETWORK_FORMATS = (NETWORK_FORMAT, KEEP_HEAD_FORMAT)


def _shipped_dir() -> Path:
    here = Path(__file__).resolve().parent
    installed = here / "checkpoints"  # a wheel: package data
    return installed if installed.is_dir() else here.parent / "checkpoints"  # a checkout


SHIPPED = _shipped_dir()

# the PPO checkpoints the project ships, by name: only these are registered agents. Any other
# folder in SHIPPED (a user's export into the checkout's checkpoints/, carried into a wheel by a
# later `pip install .`) is not listed, and plays only when named by its path
SHIPPED_CHECKPOINTS = ("ppo-classic", "ppo-classic-2p", "ppo-classic-2p-scratch", "ppo-classic-2p-win", "ppo-classic-scratch")


def checkpoint_names() -> list[str]:
    """Names of the shipped checkpoints: those of :data:`SHIPPED_CHECKPOINTS` present in :data:`SHIPPED`."""
    return sorted(name for name in SHIPPED_CHECKPOINTS if (SHIPPED / name / METADATA_FILE).is_file())


def read_metadata(path: Path) -> dict:
    """A checkpoint's ``metadata.json`` as a mapping; an :class:`AgentError` names what is wrong."""
    file = Path(path) / METADATA_FILE
    try:
        with open(file, "rb") as f:
            raw = f.read(MAX_METADATA_BYTES + 1)
        if len(raw) > MAX_METADATA_BYTES:
            raise AgentError(f"checkpoint {path}: {METADATA_FILE} is larger than {MAX_METADATA_BYTES // 2**20} MiB; refused")
        text = raw.decode("utf-8")
        if _json_depth(text) > MAX_METADATA_DEPTH:
            raise AgentError(f"checkpoint {path}: {METADATA_FILE} is nested more than {MAX_METADATA_DEPTH} levels deep; refused")
        meta = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise AgentError(f"checkpoint {path} has no readable {METADATA_FILE}: {short_repr(str(e), 200)}") from None
    if not isinstance(meta, dict):
        raise AgentError(f"{file} must hold a JSON object, got {type(meta).__name__}")
    return meta


MAX_METADATA_BYTES = 4 * 2**20
MAX_METADATA_DEPTH = 32
_JSON_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def _json_depth(text: str) -> int:
    """How deep the lists and objects of a JSON text nest (strings skipped), without parsing it."""
    depth = deepest = 0
    for m in re.finditer(r"[\[\]{}]", _JSON_STRING.sub("", text)):
        depth += 1 if m.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def checkpoint_line(name: str) -> str:
    """One line about a shipped checkpoint, from its metadata."""
    m = read_metadata(SHIPPED / name)
    how = "from scratch" if m.get("from_scratch") else ("solver in training" if m.get("solver_in_training") else "")
    return (
        f"{m.get('algorithm', 'PPO')}, {m.get('num_players', '?')} player(s), rules {m.get('rules_name', '?')}, reward {m.get('reward', '?')}, "
        f"{m.get('training_steps', 0):,} steps" + (f"; {how}" if how else "")
    )


def checkpoint_fits(path, rules, num_players: int) -> str | None:
    """Why the checkpoint folder ``path`` cannot play ``num_players``-player games of ``rules``
    (one line, read from its metadata alone), or ``None``."""
    path = Path(path)
    try:
        m = read_metadata(path)
        missing = [k for k in REQUIRED_METADATA if k not in m]
        if missing:
            return f"checkpoint {path.name}: {METADATA_FILE} lacks {', '.join(map(repr, missing))}"
        players, trained = m["num_players"], recorded_rules(m["rules"], f"checkpoint {path.name}")
    except AgentError as e:
        return str(e)
    if players != num_players:
        return f"checkpoint {path.name} plays {short_repr(players, 20)}-player games, not {num_players}-player ones"
    if trained.fingerprint() != load_rules(rules).fingerprint():
        return f"checkpoint {path.name} was trained for rules {short_repr(m.get('rules_name'), 40)}, not for {load_rules(rules).name!r}"
    if m.get("layout_version") != LAYOUT_VERSION:
        return f"checkpoint {path.name} uses observation layout version {short_repr(m.get('layout_version'), 20)}, this code encodes version {LAYOUT_VERSION}"
    return None


def find_checkpoint(name: str) -> Path | None:
    """The folder of a shipped checkpoint called ``name``, or ``name`` itself as a folder path."""
    if not isinstance(name, (str, Path)):
        return None
    if isinstance(name, str) and name in SHIPPED_CHECKPOINTS and (SHIPPED / name / METADATA_FILE).is_file():
        return SHIPPED / name
    if (Path(name) / METADATA_FILE).is_file():
        return Path(name)
    return None


_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def is_plain_name(name: str) -> bool:
    """A checkpoint name: letters, digits, ``.``, ``_``, ``-``; no path separators, not ``..``."""
    return bool(_PLAIN_NAME.fullmatch(name)) and ".." not in name


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
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


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

    Reading is bounded by the metadata: the file may hold only the tensors of the network it
    describes (actor and critic), in float32 and of their shapes, and be no larger than they
    are; only the actor's tensors are read.
    """
    from safetensors import SafetensorError, safe_open

    file = Path(path) / WEIGHTS_FILE
    if not file.is_file():
        extra = (
            " (it holds an SB3 model.zip, which runs code when loaded: re-export it from a run you trust with generala export)"
            if (Path(path) / "model.zip").is_file()
            else ""
        )
        raise AgentError(f"checkpoint {path} has no {WEIGHTS_FILE}{extra}")
    where = f"checkpoint {path}"
    actor, critic = network_shapes(meta.get("network"), where)
    allowed = {**critic, **actor}
    try:
        with open(file, "rb") as f:
            head = f.read(8)
            header = int.from_bytes(head, "little") if len(head) == 8 else -1
            if not 0 < header <= MAX_HEADER_BYTES:
                raise AgentError(f"{where}: {WEIGHTS_FILE} is not a safetensors file of at most {MAX_HEADER_BYTES:,} header bytes")
            entries = json.loads(f.read(header))
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
        limit = 8 + header + 4 * sum(int(np.prod(s)) for s in allowed.values())
        size = file.stat().st_size
        if size > limit:
            raise AgentError(f"{where}: {WEIGHTS_FILE} is {size:,} bytes, more than the {limit:,} its metadata's network needs; refused")
        with safe_open(str(file), framework="numpy") as st:  # checks offsets and coverage; reads only the actor
            tensors = {n: st.get_tensor(n) for n in st.keys() if n in actor}  # noqa: SIM118  # safe_open is not iterable
    except (SafetensorError, OSError, ValueError, TypeError, RecursionError) as e:
        if isinstance(e, AgentError):
            raise
        raise AgentError(f"{where}: {WEIGHTS_FILE} cannot be read: {short_repr(str(e), 200)}") from None
    return PolicyNet(meta["network"], tensors, where)  # network_shapes checked it is a mapping


REQUIRED_METADATA = ("rules", "num_players", "layout_version", "obs_size", "n_actions", "network")


class PolicyAgent(Agent):
    """Plays the most likely legal action of a :class:`PolicyNet` (no torch needed)."""

    def __init__(self, net: PolicyNet, rules="classic", num_players: int = 1, name: str = "policy", seed: int | None = None):
        super().__init__(rules, seed)
        self.net, self.name, self.num_players = net, name, num_players
        self.obs_size = observation_size(self.rules, num_players)
        self.n_actions = NUM_MASKS + self.rules.num_lines
        if (net.obs_size, net.n_actions) != (self.obs_size, self.n_actions):
            raise AgentError(
                f"{name}: the network takes {net.obs_size} inputs and gives {net.n_actions} actions; "
                f"{num_players}-player {self.rules.name!r} games have {self.obs_size} and {self.n_actions}"
            )

    def act(self, observation, info) -> int:
        obs = np.asarray(observation, dtype=np.float32)
        if obs.shape != (self.obs_size,):
            raise AgentError(
                f"{self.name} plays {self.num_players}-player {self.rules.name!r} games (observation size "
                f"{self.obs_size}); got an observation of shape {obs.shape}"
            )
        mask = self.legal_mask(info)
        if not mask.any():
            raise AgentError(f"{self.name}: the action mask is all zeros: no legal action to play")
        logits = np.where(mask, self.net.logits(obs), -np.inf)
        logits[~np.isfinite(logits)] = -np.inf
        if not np.isfinite(logits).any():
            raise AgentError(f"{self.name}: no legal action has a finite logit (the weights give -inf or NaN); the checkpoint is broken")
        return int(np.argmax(logits))


class PPOAgent(PolicyAgent):
    """A trained PPO policy from a checkpoint folder, playing its most likely legal action."""

    def __init__(self, path, rules="classic", seed: int | None = None, num_players: int | None = None):
        path = Path(path)
        m = read_metadata(path)
        name = path.name
        missing = [k for k in REQUIRED_METADATA if k not in m]
        if missing:
            raise AgentError(f"checkpoint {name}: {METADATA_FILE} lacks {', '.join(map(repr, missing))}")
        rules = load_rules(rules)
        trained = recorded_rules(m["rules"], f"checkpoint {name}")
        if trained.fingerprint() != rules.fingerprint():
            raise AgentError(
                f"checkpoint {name} was trained for rules {m.get('rules_name')!r} "
                f"(fingerprint {trained.fingerprint()}), not for {rules.name!r} ({rules.fingerprint()})"
            )
        if m["layout_version"] != LAYOUT_VERSION:
            raise AgentError(f"checkpoint {name} uses observation layout version {m['layout_version']}, this code encodes version {LAYOUT_VERSION}: retrain it")
        players = m["num_players"]
        if isinstance(players, bool) or not isinstance(players, int) or not 1 <= players <= 6:
            raise AgentError(f"checkpoint {name}: 'num_players' must be a whole number from 1 to 6, got {players!r}")
        if num_players is not None and int(num_players) != players:
            raise AgentError(f"checkpoint {name} plays {players}-player games, not {num_players}-player ones")
        obs_size, n_actions = observation_size(rules, players), NUM_MASKS + rules.num_lines
        if m["obs_size"] != obs_size or m["n_actions"] != n_actions:
            raise AgentError(
                f"checkpoint {name}: metadata says observations of size {m['obs_size']} and {m['n_actions']} actions; "
                f"{players}-player {rules.name!r} games have {obs_size} and {n_actions}"
            )
        net = m["network"]
        if not isinstance(net, dict) or net.get("obs_size") != obs_size or net.get("n_actions") != n_actions:
            raise AgentError(f"checkpoint {name}: its network's sizes do not match obs_size {obs_size} and n_actions {n_actions}")
        super().__init__(load_policy_net(path, m), rules, players, name, seed)
        self.path, self.metadata = path, m


_STEP_FILE = re.compile(r"step_(\d+)\.zip")


class PoolAgent(Agent):
    """Self-play opponent: each game, one of the newest saved policies of this training run.

    Built from ``"pool:DIR"`` (a run's ``checkpoints/`` folder of ``step_N.zip`` files; other
    files there are ignored). At each reset it picks one of the ``newest`` checkpoints at
    random (its own generator, seeded by ``reset(seed=...)``); while the folder holds none it
    plays ``fallback``, and says so with a warning when the folder does not exist yet. The
    ``step_N.zip`` files are SB3 pickles, and unpickling one runs any code it holds: a pool is
    built only with ``trust_zip=True`` (``--trust-zip``; ``generala train`` trusts its own
    run's folder), else refused in one line.
    """

    name = "pool"

    def __init__(self, pool_dir, rules="classic", seed: int | None = None, newest: int = 5, fallback: str = "rules-of-thumb", *, trust_zip: bool = False):
        super().__init__(rules, seed)
        if not trust_zip:
            raise AgentError(
                f"pool {pool_dir} plays the step_N.zip files of a training run, and loading one unpickles it, which runs any code inside it: "
                "pass --trust-zip (Python: trust_zip=True) if you trust the run that wrote them"
            )
        self.pool_dir = Path(pool_dir)
        if self.pool_dir.exists() and not self.pool_dir.is_dir():
            raise AgentError(f"pool {self.pool_dir} is not a folder")
        if not self.pool_dir.exists():
            warnings.warn(f"self-play pool {self.pool_dir} does not exist yet: playing {fallback!r} until it holds step_N.zip files", stacklevel=2)
        if isinstance(newest, bool) or not isinstance(newest, int) or newest < 1:
            raise AgentError(f"pool: 'newest' must be a whole number of at least 1, got {newest!r}")
        self.newest = newest
        self.rng = np.random.default_rng(seed)
        self.fallback = load(fallback, rules=self.rules)
        self._models: dict[Path, object] = {}
        self.current: Any = None  # an SB3 policy (torch), or None: the fallback plays

    def pool_files(self) -> list[Path]:
        """The ``newest`` ``step_N.zip`` files of the pool, oldest first."""
        found = [(int(m.group(1)), p) for p in self.pool_dir.glob("step_*.zip") if (m := _STEP_FILE.fullmatch(p.name))]
        return [p for _, p in sorted(found)][-self.newest :]

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        files = self.pool_files()
        if not files:
            self.current = None
            return
        pick = files[int(self.rng.integers(len(files)))]
        if pick not in self._models:
            try:
                from sb3_contrib import MaskablePPO
            except ImportError as e:
                raise AgentError(
                    f"pool {self.pool_dir}: its step_N.zip files are SB3 models, which need the training extra: pip install 'generala-rl[train]' ({e})"
                ) from None

            self._models = {k: v for k, v in self._models.items() if k in files}
            try:
                self._models[pick] = MaskablePPO.load(pick, device="cpu").policy
            except Exception as e:  # a cut or foreign zip fails in many ways inside SB3
                raise AgentError(
                    f"pool {self.pool_dir}: {pick.name} cannot be loaded ({type(e).__name__}: {short_repr(str(e), 200)}); delete it to go on"
                ) from None
        self.current = self._models[pick]

    def act(self, observation, info) -> int:
        if self.current is None:
            return self.fallback.act(observation, info)
        mask = self.legal_mask(info)
        obs = np.asarray(observation, np.float32)
        size = self.current.observation_space.shape
        if obs.shape != size:
            raise AgentError(f"pool {self.pool_dir}: its checkpoints take observations of shape {size}, this game gives {obs.shape}")
        return int(masked_argmax_actions(self.current, obs[None], mask[None])[0])
