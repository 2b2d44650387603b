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

SB3's own ``.zip`` files are pickles: loading one runs whatever code it holds. A training run
saves each beside a twin of tensors and text (:mod:`generala_agents.sb3_tensors`), which is
what the project reads back (a resume, an export, the self-play pool); a zip is opened only
with ``trust_zip`` (``--trust-zip``), never by :func:`agents.load` on a checkpoint folder.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.core.dice import NUM_MASKS
from generala_env.core.encoding import LAYOUT_VERSION, observation_size
from generala_env.core.rules import load_rules
from generala_env.files.safe_yaml import short_repr

from .base import Agent, AgentError, recorded_rules
from .loader import load
from .policy_net import (
    REQUIRED_METADATA,
    PolicyNet,
    load_policy_net,
    masked_argmax_actions,
)

METADATA_FILE = "metadata.json"


def _shipped_dir() -> Path:
    here = Path(__file__).resolve().parent
    installed = here / "checkpoints"  # a wheel: package data
    return installed if installed.is_dir() else here.parent / "checkpoints"  # a checkout


SHIPPED = _shipped_dir()

# the PPO checkpoints the project ships, by name: only these are registered agents. Any other
# folder in SHIPPED (a user's export into the checkout's checkpoints/, carried into a wheel by a
# later `pip install .`) is not listed, and plays only when named by its path
SHIPPED_CHECKPOINTS = ("jax-ppo-classic", "ppo-classic", "ppo-classic-2p", "ppo-classic-2p-scratch", "ppo-classic-2p-win", "ppo-classic-scratch")


def checkpoint_names() -> list[str]:
    """Names of the shipped checkpoints: those of :data:`SHIPPED_CHECKPOINTS` present in :data:`SHIPPED`."""
    return sorted(name for name in SHIPPED_CHECKPOINTS if (SHIPPED / name / METADATA_FILE).is_file())


def read_metadata(path: Path) -> dict:
    """A checkpoint's ``metadata.json`` as a mapping; an :class:`AgentError` names what is wrong."""
    from generala_env.files import FileProblem, read_regular

    file = Path(path) / METADATA_FILE
    try:
        try:
            raw = read_regular(file, MAX_METADATA_BYTES, f"checkpoint {path}: {METADATA_FILE}", links=True)  # a FIFO or device refused, never read
        except FileProblem as e:
            raise AgentError(str(e)) from None
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
        return greedy_action(self.net, obs, self.legal_mask(info), self.name)


def greedy_action(net: PolicyNet, obs: np.ndarray, mask: np.ndarray, name: str) -> int:
    """The legal action of ``mask`` with the highest logit of ``net`` on ``obs``."""
    if not mask.any():
        raise AgentError(f"{name}: the action mask is all zeros: no legal action to play")
    logits = np.where(mask, net.logits(obs), -np.inf)
    logits[~np.isfinite(logits)] = -np.inf
    if not np.isfinite(logits).any():
        raise AgentError(f"{name}: no legal action has a finite logit (the weights give -inf or NaN); the checkpoint is broken")
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
        if not is_whole(players) or not 1 <= players <= 6:
            raise AgentError(f"checkpoint {name}: 'num_players' must be a whole number from 1 to 6, got {players!r}")
        players = int(players)
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


_STEP_FILE = re.compile(r"step_(\d+)\.(zip|safetensors)")


class PoolAgent(Agent):
    """Self-play opponent: each game, one of the newest saved policies of this training run.

    Built from ``"pool:DIR"`` (a run's ``checkpoints/`` folder of ``step_N.zip`` files and their
    twins ``step_N.safetensors``; other files there are ignored). At each reset it picks one of
    the ``newest`` saved steps at random (its own generator, seeded by ``reset(seed=...)``); while
    the folder holds none it plays ``fallback``, and says so with a warning when the folder does
    not exist yet. A step plays from its twin (tensors and text, in NumPy: nothing unpickled,
    :mod:`generala_agents.sb3_tensors`). A step saved with a zip alone (a run from before twins)
    counts only with ``trust_zip=True`` (``--trust-zip``): unpickling a zip runs any code it holds.
    """

    name = "pool"

    def __init__(self, pool_dir, rules="classic", seed: int | None = None, newest: int = 5, fallback: str = "rules-of-thumb", *, trust_zip: bool = False):
        super().__init__(rules, seed)
        self.pool_dir = Path(pool_dir)
        self.trust_zip = bool(trust_zip)
        if self.pool_dir.exists() and not self.pool_dir.is_dir():
            raise AgentError(f"pool {self.pool_dir} is not a folder")
        if not self.pool_dir.exists():
            warnings.warn(f"self-play pool {self.pool_dir} does not exist yet: playing {fallback!r} until it holds saved steps", stacklevel=2)
        if not is_whole(newest) or newest < 1:
            raise AgentError(f"pool: 'newest' must be a whole number of at least 1, got {newest!r}")
        self.newest = newest
        self.rng = np.random.default_rng(seed)
        self.fallback = load(fallback, rules=self.rules)
        self._models: dict[Path, Any] = {}
        self.current: Any = None  # a PolicyNet (a twin), an SB3 policy (a trusted zip), or None: the fallback plays
        if self.pool_dir.is_dir():
            self.pool_files()  # a step saved as a zip alone, untrusted, is refused now, not at the first game

    def pool_files(self) -> list[Path]:
        """The ``newest`` saved steps of the pool, oldest first: each step's twin, else (with
        ``trust_zip``) its zip. A step with only a zip, untrusted, is refused in one line."""
        steps: dict[int, dict[str, Path]] = {}
        for p in self.pool_dir.glob("step_*"):
            if m := _STEP_FILE.fullmatch(p.name):
                steps.setdefault(int(m.group(1)), {})[m.group(2)] = p
        files = []
        for n in sorted(steps)[-self.newest :]:
            kinds = steps[n]
            if "safetensors" in kinds:
                files.append(kinds["safetensors"])
            elif self.trust_zip:
                files.append(kinds["zip"])
            else:
                raise AgentError(
                    f"pool {self.pool_dir}: step_{n}.zip has no step_{n}.safetensors beside it (a run saved before twins were written), "
                    "and loading a zip unpickles it, which runs any code inside it: pass --trust-zip (Python: trust_zip=True) if you trust the run"
                )
        return files

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        files = self.pool_files()
        if not files:
            self.current = None
            return
        pick = files[int(self.rng.integers(len(files)))]
        if pick not in self._models:
            self._models = {k: v for k, v in self._models.items() if k in files}
            self._models[pick] = self._twin_net(pick) if pick.suffix == ".safetensors" else self._zip_policy(pick)
        self.current = self._models[pick]

    def _twin_net(self, path: Path) -> PolicyNet:
        from .sb3_tensors import network_of_twin, policy_arrays, read_twin

        try:
            arrays, header = read_twin(path)
            return PolicyNet(network_of_twin(header, path), policy_arrays(arrays), f"pool {self.pool_dir}: {path.name}")
        except AgentError as e:  # a torn or foreign twin
            raise AgentError(f"pool {self.pool_dir}: {path.name} cannot be loaded ({short_repr(str(e), 300)}); delete it to go on") from None

    def _zip_policy(self, path: Path):
        try:
            from sb3_contrib import MaskablePPO
        except ImportError as e:
            from generala_env.extras import how_to_install

            raise AgentError(
                f"pool {self.pool_dir}: its step_N.zip files are SB3 models, which need the train extra ({e}): {how_to_install('train')}"
            ) from None
        try:
            return MaskablePPO.load(path, device="cpu").policy
        except Exception as e:  # a cut or foreign zip fails in many ways inside SB3
            raise AgentError(
                f"pool {self.pool_dir}: {path.name} cannot be loaded ({type(e).__name__}: {short_repr(str(e), 200)}); delete it to go on"
            ) from None

    def act(self, observation, info) -> int:
        if self.current is None:
            return self.fallback.act(observation, info)
        mask = self.legal_mask(info)
        obs = np.asarray(observation, np.float32)
        if isinstance(self.current, PolicyNet):
            if obs.shape != (self.current.obs_size,):
                raise AgentError(f"pool {self.pool_dir}: its checkpoints take observations of size {self.current.obs_size}, this game gives {obs.shape}")
            return greedy_action(self.current, obs, mask, f"pool {self.pool_dir}")
        size = self.current.observation_space.shape
        if obs.shape != size:
            raise AgentError(f"pool {self.pool_dir}: its checkpoints take observations of shape {size}, this game gives {obs.shape}")
        return int(masked_argmax_actions(self.current, obs[None], mask[None])[0])
