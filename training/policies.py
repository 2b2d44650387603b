"""Policy networks for MaskablePPO beyond SB3's MlpPolicy: LayerNorm in the hidden layers.

``LayerNormMaskablePolicy`` is sb3-contrib's ``MaskableActorCriticPolicy`` whose policy and
value MLPs put a ``LayerNorm`` after each hidden ``Linear`` (before the activation). The
state-dict names follow SB3's (``mlp_extractor.policy_net.K``), with three modules a layer
instead of two, and ``agents.ppo.PolicyNet`` reads them back when ``network.layer_norm`` is
true, so such a policy exports and plays like any other.
"""

from __future__ import annotations

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn


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
        self.mlp_extractor = LayerNormMlpExtractor(self.features_dim, arch, self.activation_fn)
