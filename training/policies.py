"""Policy networks for MaskablePPO beyond SB3's MlpPolicy: LayerNorm, a shared hold scorer, and
an entropy bonus at hold decisions only.

``LayerNormMaskablePolicy`` is sb3-contrib's ``MaskableActorCriticPolicy`` whose policy and
value MLPs put a ``LayerNorm`` after each hidden ``Linear`` (before the activation). The
state-dict names follow SB3's (``mlp_extractor.policy_net.K``), with three modules a layer
instead of two, and ``generala_agents.policy_net.PolicyNet`` reads them back when ``network.layer_norm`` is
true, so such a policy exports and plays like any other.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from generala_agents.policy_net import (  # the NumPy side of the keep head: one definition
    HOLD_BITS,
    KEEP_FEATURES,
)


def _mlp(inputs: int, widths: list[int], activation: type[nn.Module]) -> tuple[nn.Sequential, int]:
    layers: list[nn.Module] = []
    for w in widths:
        layers += [nn.Linear(inputs, w), nn.LayerNorm(w), activation()]
        inputs = w
    return nn.Sequential(*layers), inputs


class LayerNormMlpExtractor(nn.Module):
    """Separate policy and value MLPs, each hidden layer Linear → LayerNorm → activation."""

    def __init__(self, feature_dim: int, net_arch: dict, activation_fn: type[nn.Module]):
        super().__init__()
        self.policy_net, self.latent_dim_pi = _mlp(feature_dim, list(net_arch["pi"]), activation_fn)
        self.value_net, self.latent_dim_vf = _mlp(feature_dim, list(net_arch["vf"]), activation_fn)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.policy_net(features), self.value_net(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.policy_net(features)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.value_net(features)


class LayerNormMaskablePolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic with LayerNorm in both MLPs (``net_arch`` as ``dict(pi=..., vf=...)``)."""

    def _build_mlp_extractor(self) -> None:
        arch = self.net_arch if isinstance(self.net_arch, dict) else {"pi": list(self.net_arch), "vf": list(self.net_arch)}
        # SB3 annotates mlp_extractor as MlpExtractor; it needs only latent_dim_pi/vf and forward_actor/critic
        self.mlp_extractor = LayerNormMlpExtractor(self.features_dim, arch, self.activation_fn)  # type: ignore[assignment]


# -- an entropy bonus at hold decisions only ------------------------------------------------
class HoldEntropyMixin:
    """A policy whose ``evaluate_actions`` reports no entropy at states with no rolls left, so
    that MaskablePPO's ``ent_coef`` bonus keeps only the holds exploring (the writes get none).

    Extra ``policy_kwargs``: ``no_rolls_at``, the index in the observation of ``rolls_left``'s
    entry for 0 rolls left (1 there: the state is a write decision)."""

    def __init__(self, *args, no_rolls_at: int = 11, **kwargs):
        self.no_rolls_at = int(no_rolls_at)
        super().__init__(*args, **kwargs)

    def evaluate_actions(self, obs, actions, action_masks=None):
        values, log_prob, entropy = super().evaluate_actions(obs, actions, action_masks=action_masks)
        if entropy is not None:
            entropy = entropy * (obs[:, self.no_rolls_at] < 0.5).to(entropy.dtype)
        return values, log_prob, entropy

    def _get_constructor_parameters(self) -> dict:
        data = super()._get_constructor_parameters()  # type: ignore[misc]
        data.update(no_rolls_at=self.no_rolls_at)
        return data


class HoldEntropyMaskablePolicy(HoldEntropyMixin, MaskableActorCriticPolicy):
    """SB3's MlpPolicy for MaskablePPO with the entropy bonus at holds only."""


class HoldEntropyLayerNormPolicy(HoldEntropyMixin, LayerNormMaskablePolicy):
    """:class:`LayerNormMaskablePolicy` with the entropy bonus at holds only."""


# -- a structured action head: one shared scorer for every hold ---------------------------
class KeepHead(nn.Module):
    """Action logits from the trunk's output ``h`` and the observation.

    Each hold mask is scored by one small MLP from ``h`` and the *kept dice* of that mask
    (their face counts, read from the observation's sorted dice), with weights shared by all
    31 masks: two masks that keep the same dice get the same logit, and what is learnt about
    keeping a pair of fives serves in every state with a pair of fives. Writes are a linear
    layer on ``h``. The input is ``cat(h, obs)`` (see :class:`KeepHeadExtractor`).
    """

    def __init__(self, hidden: int, dice_slice: slice, num_lines: int, width: int):
        super().__init__()
        self.hidden, self.dice = hidden, dice_slice
        self.register_buffer("bits", torch.as_tensor(HOLD_BITS), persistent=False)
        self.hold_state = nn.Linear(hidden, width)
        self.hold_keep = nn.Linear(KEEP_FEATURES, width)
        self.hold_mid = nn.Linear(width, width)
        self.hold_out = nn.Linear(width, 1)
        self.write = nn.Linear(hidden, num_lines)

    def keep_features(self, obs: torch.Tensor) -> torch.Tensor:
        faces = torch.clamp(torch.round(obs[:, self.dice] * 6.0), 1, 6).long() - 1  # (B, 5), 0-based
        onehot = nn.functional.one_hot(faces, 6).float()  # (B, 5, 6)
        kept = torch.einsum("mi,bif->bmf", self.bits, onehot)  # (B, 31, 6)
        return torch.cat([kept, kept.sum(-1, keepdim=True)], dim=-1) / 5.0

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        h, obs = latent[:, : self.hidden], latent[:, self.hidden :]
        z = torch.relu(self.hold_state(h)[:, None, :] + self.hold_keep(self.keep_features(obs)))
        hold = self.hold_out(torch.relu(self.hold_mid(z))).squeeze(-1)  # (B, 31)
        keep_all = torch.zeros_like(hold[:, :1])  # action 31, never legal
        return torch.cat([hold, keep_all, self.write(h)], dim=1)


class KeepHeadExtractor(nn.Module):
    """Policy trunk whose latent is ``cat(trunk(obs), obs)``; value MLP as usual (both with optional LayerNorm)."""

    def __init__(self, feature_dim: int, net_arch: dict, activation_fn: type[nn.Module], layer_norm: bool):
        super().__init__()
        build = _mlp if layer_norm else _plain_mlp
        self.policy_net, self.trunk_dim = build(feature_dim, list(net_arch["pi"]), activation_fn)
        self.value_net, self.latent_dim_vf = build(feature_dim, list(net_arch["vf"]), activation_fn)
        self.latent_dim_pi = self.trunk_dim + feature_dim

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.policy_net(features), features], dim=1)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.value_net(features)


def _plain_mlp(inputs: int, widths: list[int], activation: type[nn.Module]) -> tuple[nn.Sequential, int]:
    layers: list[nn.Module] = []
    for w in widths:
        layers += [nn.Linear(inputs, w), activation()]
        inputs = w
    return nn.Sequential(*layers), inputs


class KeepHeadMaskablePolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic with :class:`KeepHead` as its action head.

    Extra ``policy_kwargs``: ``dice_slice`` (``(start, stop)`` of ``dice_sorted`` in the
    observation), ``num_lines``, ``keep_width`` (the hold scorer's width) and ``layer_norm``.
    """

    def __init__(self, *args, dice_slice=(6, 11), num_lines: int = 10, keep_width: int = 64, layer_norm: bool = False, **kwargs):
        self.dice_slice, self.num_lines, self.keep_width, self.layer_norm = tuple(dice_slice), num_lines, keep_width, layer_norm
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        arch = self.net_arch if isinstance(self.net_arch, dict) else {"pi": list(self.net_arch), "vf": list(self.net_arch)}
        # SB3 annotates mlp_extractor as MlpExtractor; it needs only latent_dim_pi/vf and forward_actor/critic
        self.mlp_extractor = KeepHeadExtractor(self.features_dim, arch, self.activation_fn, self.layer_norm)  # type: ignore[assignment]

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        extractor = self.mlp_extractor
        assert isinstance(extractor, KeepHeadExtractor)  # built by _build_mlp_extractor above
        self.action_net = KeepHead(extractor.trunk_dim, slice(*self.dice_slice), self.num_lines, self.keep_width)
        if self.ortho_init:
            self.action_net.apply(partial(self.init_weights, gain=np.sqrt(2)))
            for out in (self.action_net.hold_out, self.action_net.write):
                out.apply(partial(self.init_weights, gain=0.01))
        # SB3 annotates optimizer_class as type[Optimizer], whose base __init__ takes no lr (SB3 makes the same call)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_constructor_parameters(self) -> dict:
        data = super()._get_constructor_parameters()
        data.update(dice_slice=self.dice_slice, num_lines=self.num_lines, keep_width=self.keep_width, layer_norm=self.layer_norm)
        return data


# -- the dice as one-hot faces ------------------------------------------------------------------
class OneHotDice(BaseFeaturesExtractor):
    """The observation, and with it each of the five sorted dice as a one-hot face: 30 more
    inputs, read back from the observation's ``dice_sorted`` (faces / 6) at ``dice_slice``."""

    def __init__(self, observation_space, dice_slice: tuple[int, int]):
        super().__init__(observation_space, features_dim=int(observation_space.shape[0]) + 6 * (dice_slice[1] - dice_slice[0]))
        self.lo, self.hi = int(dice_slice[0]), int(dice_slice[1])

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        faces = torch.round(observations[:, self.lo : self.hi] * 6).long().clamp(1, 6) - 1
        return torch.cat([observations, nn.functional.one_hot(faces, 6).to(observations.dtype).flatten(1)], dim=1)
