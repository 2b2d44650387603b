"""A stable-baselines3 / sb3-contrib ``.zip`` as an agent, for files the user trusts.

Loading a zip unpickles it, which runs any code it holds: :func:`agents.load` opens one only
with ``trust_zip=True`` (the programs' ``--trust-zip``). Any SB3 algorithm's zip works: the
policy is rebuilt from the file's own class and weights (the ``train`` extra provides them).
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import numpy as np

from generala_env.core.encoding import Encoder
from generala_env.extras import how_to_install
from generala_env.files.cache import notice

from .base import WRITE, Agent, AgentError


class SB3ZipAgent(Agent):
    """A policy read from an SB3 ``.zip``, playing its deterministic action.

    :meth:`act_batch` is the policy exactly as the benchmark scores it (``predict(...,
    deterministic=True)``, with the mask for a maskable policy), illegal actions included.
    :meth:`act` plays legal actions only: a policy that reads no mask plays its most
    probable (actor-critic) or highest-valued (Q-learning) legal action.
    """

    name = "sb3-zip"

    def __init__(self, path, rules="classic", seed: int | None = None, num_players: int | None = None):
        super().__init__(rules, seed)
        self.path = Path(path)
        self.name = str(path)
        if not self.path.is_file():
            raise AgentError(f"agent {str(path)!r}: there is no file {path}")
        try:
            if "stable_baselines3" not in sys.modules:
                notice("torch", "loading torch and stable-baselines3 to read an SB3 zip (a few seconds, longer on a busy machine)")
            from stable_baselines3.common.save_util import load_from_zip_file
        except ImportError:
            raise AgentError(f"agent {str(path)!r}: an SB3 .zip needs the train extra, which is not installed; {how_to_install('train')}") from None
        try:
            data, params, _ = load_from_zip_file(self.path, device="cpu", print_system_info=False)
        except Exception as e:  # noqa: BLE001 - a file that is not an SB3 zip: one line
            raise AgentError(f"agent {str(path)!r} is not a stable-baselines3 zip: {type(e).__name__}: {e}") from None
        if not data or "policy_class" not in data or not params or "policy" not in params:
            raise AgentError(f"agent {str(path)!r} is not a stable-baselines3 zip: it has no policy")
        obs_space, act_space = data.get("observation_space"), data.get("action_space")
        n_actions = WRITE + self.rules.num_lines
        if getattr(act_space, "n", None) != n_actions:
            raise AgentError(
                f"agent {str(path)!r} has {getattr(act_space, 'n', '?')} actions; rules {self.rules.name!r} have {n_actions} (a model for other rules?)"
            )
        sizes = {p: Encoder(self.rules, p).size for p in ((num_players,) if num_players else range(1, 7))}
        shape = tuple(getattr(obs_space, "shape", ()) or ())
        if len(shape) != 1 or shape[0] not in sizes.values():
            want = " or ".join(str(s) for s in sorted(set(sizes.values())))
            raise AgentError(f"agent {str(path)!r} reads observations of shape {shape}; rules {self.rules.name!r} give ({want},) (a model for other rules?)")
        self.num_players = next(p for p, s in sizes.items() if s == shape[0])
        try:
            policy = data["policy_class"](obs_space, act_space, lambda _: 0.0, **data.get("policy_kwargs", {}))
            policy.load_state_dict(params["policy"])
        except Exception as e:  # noqa: BLE001
            raise AgentError(f"agent {str(path)!r}: its policy cannot be rebuilt: {type(e).__name__}: {e}") from None
        policy.set_training_mode(False)
        self.policy = policy
        self.masked = "action_masks" in inspect.signature(policy.predict).parameters

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The policy's deterministic actions for a batch, as the benchmark plays it."""
        obs = np.asarray(observations, dtype=np.float32)
        if self.masked:
            return self.policy.predict(obs, deterministic=True, action_masks=np.asarray(masks, dtype=bool))[0]
        return self.policy.predict(obs, deterministic=True)[0]

    def _preferences(self, obs: np.ndarray) -> np.ndarray | None:
        import torch

        p = self.policy
        with torch.no_grad():
            x = torch.as_tensor(obs[None], dtype=torch.float32)
            if hasattr(p, "get_distribution"):
                return p.get_distribution(x).distribution.logits[0].numpy()
            if hasattr(p, "quantile_net"):
                return p.quantile_net(x).mean(dim=1)[0].numpy()
            if hasattr(p, "q_net"):
                return p.q_net(x)[0].numpy()
        return None

    def act(self, observation, info) -> int:
        mask = self.legal_mask(info)
        obs = np.asarray(observation, dtype=np.float32)
        a = int(np.asarray(self.act_batch(obs[None], mask[None])).reshape(-1)[0])
        if mask[a]:
            return a
        prefs = self._preferences(obs)
        if prefs is None or not mask.any():
            raise AgentError(f"agent {self.name!r} chose illegal action {a} and its policy gives no preferences to pick a legal one")
        return int(np.argmax(np.where(mask, prefs, -np.inf)))
