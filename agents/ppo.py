"""Trained MaskablePPO policies, shipped as checkpoints and loaded by name.

A checkpoint is a folder ``checkpoints/NAME/`` with ``model.zip`` (sb3-contrib's
MaskablePPO) and ``metadata.json`` (rules, players, observation layout version, training
steps and time, the config, and the evaluation figures it reached). A checkpoint made
for other rules, another number of players or another observation layout is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from generala_env.encoding import LAYOUT_VERSION, observation_size
from generala_env.rules import load_rules

from .base import Agent, AgentError

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


def checkpoint_names() -> list[str]:
    return sorted(p.name for p in CHECKPOINTS.glob("*") if (p / "metadata.json").is_file())


def read_metadata(path: Path) -> dict:
    try:
        return json.loads((Path(path) / "metadata.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise AgentError(f"checkpoint {path} has no readable metadata.json: {e}") from None


def checkpoint_summary() -> dict[str, str]:
    out = {}
    for n in checkpoint_names():
        m = read_metadata(CHECKPOINTS / n)
        out[n] = f"MaskablePPO, {m.get('num_players', '?')} player(s), rules {m.get('rules_name', '?')}, reward {m.get('reward', '?')}, {m.get('training_steps', 0):,} steps"
    return out


def find_checkpoint(name: str) -> Path | None:
    for cand in (CHECKPOINTS / name, Path(name)):
        if (cand / "metadata.json").is_file():
            return cand
    return None


def masked_argmax_actions(policy, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Greedy actions of an SB3 actor-critic policy for a batch, illegal actions excluded."""
    import torch

    with torch.no_grad():
        t = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=policy.device)
        features = policy.extract_features(t, policy.pi_features_extractor)
        latent = policy.mlp_extractor.forward_actor(features)
        logits = policy.action_net(latent).cpu().numpy()
    logits[~np.asarray(masks, dtype=bool)] = -np.inf
    return logits.argmax(axis=1)


class PPOAgent(Agent):
    """A trained MaskablePPO policy, playing its most likely legal action."""

    def __init__(self, path, rules="classic", seed: int | None = None, num_players: int | None = None):
        super().__init__(rules, seed)
        self.path = Path(path)
        self.metadata = read_metadata(self.path)
        self.name = self.path.name
        m = self.metadata
        trained = load_rules(m["rules"])
        if trained.fingerprint() != self.rules.fingerprint():
            raise AgentError(
                f"checkpoint {self.name} was trained for rules {m.get('rules_name')!r} "
                f"(fingerprint {trained.fingerprint()}), not for {self.rules.name!r} ({self.rules.fingerprint()})"
            )
        if m.get("layout_version") != LAYOUT_VERSION:
            raise AgentError(
                f"checkpoint {self.name} uses observation layout version {m.get('layout_version')}, "
                f"this code encodes version {LAYOUT_VERSION}: retrain it"
            )
        self.num_players = int(m["num_players"])
        if num_players is not None and int(num_players) != self.num_players:
            raise AgentError(f"checkpoint {self.name} plays {self.num_players}-player games, not {num_players}-player ones")
        self.obs_size = observation_size(self.rules, self.num_players)
        if m.get("obs_size") != self.obs_size:
            raise AgentError(f"checkpoint {self.name} expects observations of size {m.get('obs_size')}, the env gives {self.obs_size}")
        from sb3_contrib import MaskablePPO

        model_file = self.path / "model.zip"
        if not model_file.is_file():
            raise AgentError(f"checkpoint {self.name} has no model.zip")
        self.model = MaskablePPO.load(model_file, device="cpu")
        self.policy = self.model.policy
        self.policy.set_training_mode(False)

    def act(self, observation, info) -> int:
        obs = np.asarray(observation, dtype=np.float32)
        if obs.shape != (self.obs_size,):
            raise AgentError(
                f"checkpoint {self.name} plays {self.num_players}-player games (observation size {self.obs_size}); "
                f"got an observation of shape {obs.shape}"
            )
        return int(masked_argmax_actions(self.policy, obs[None], np.asarray(info["action_mask"])[None])[0])


class PoolAgent(Agent):
    """Self-play opponent: each game, one of the newest saved policies of a training run.

    Built from ``"pool:DIR"`` (a run's ``checkpoints/`` folder of ``step_N.zip`` files).
    At each reset it picks one of the ``newest`` checkpoints at random (its own generator,
    seeded by ``reset(seed=...)``); while the folder is empty it plays ``fallback``.
    """

    name = "pool"

    def __init__(self, pool_dir, rules="classic", seed: int | None = None, newest: int = 5, fallback: str = "rules-of-thumb"):
        super().__init__(rules, seed)
        self.pool_dir = Path(pool_dir)
        self.newest = newest
        self.rng = np.random.default_rng(seed)
        from . import load

        self.fallback = load(fallback, rules=self.rules)
        self._models: dict[Path, object] = {}
        self.current = None

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        files = sorted(self.pool_dir.glob("step_*.zip"), key=lambda p: int(p.stem.split("_")[1]))[-self.newest :]
        if not files:
            self.current = None
            return
        pick = files[int(self.rng.integers(len(files)))]
        if pick not in self._models:
            from sb3_contrib import MaskablePPO

            self._models = {k: v for k, v in self._models.items() if k in files}
            self._models[pick] = MaskablePPO.load(pick, device="cpu").policy
        self.current = self._models[pick]

    def act(self, observation, info) -> int:
        if self.current is None:
            return self.fallback.act(observation, info)
        return int(masked_argmax_actions(self.current, np.asarray(observation, np.float32)[None], np.asarray(info["action_mask"])[None])[0])
