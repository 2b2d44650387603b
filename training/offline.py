"""Offline RL on a Generala dataset, in plain torch: behaviour cloning, discrete CQL, discrete IQL.

    from generala_training.offline import load_transitions, train
    data = load_transitions("~/.minari/datasets/generala/classic/expert-v0")
    policy = train("cql", data, seed=0, steps=5000)
    policy.act_batch(observations, action_masks)       # masked argmax: legal actions only

Each algorithm is one short function over minibatches of the dataset's transitions, CleanRL's
way: everything it does is in its few lines. The networks are MLPs over the flat observation,
one output per action. Every algorithm reads the dataset's legal-action masks: a softmax or a max
over actions runs over the legal ones only, in training and at play time, so no algorithm can
choose an illegal action and all are played the same way (:class:`Policy`).

- ``bc``: behaviour cloning, the cross-entropy of the data's actions under a masked softmax.
- ``cql``: discrete conservative Q-learning (Kumar et al. 2020, CQL(H)): double-DQN targets plus
  ``alpha * (logsumexp_a Q(s, a) - Q(s, a_data))``, which pushes down actions the data never took.
- ``iql``: discrete implicit Q-learning (Kostrikov et al. 2022): V by expectile regression on Q,
  Q on ``r + gamma V(s')``, and a policy that clones the data's actions weighted by
  ``exp(beta * (Q - V))``; it never asks Q about an action outside the data.

Rewards are multiplied by ``reward_scale`` (the benchmark suite's, 0.02 for points) and the
return is undiscounted (``gamma`` 1), as the task is the final total.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ALGOS = ("bc", "cql", "iql")


class OfflineError(ValueError):
    """Bad input to offline training: one line naming the problem."""


@dataclass
class Transitions:
    """A dataset's steps as arrays: step ``t`` goes from ``observations[t]`` by ``actions[t]``."""

    observations: np.ndarray  # (N, n) float32
    actions: np.ndarray  # (N,) int64
    rewards: np.ndarray  # (N,) float32
    next_observations: np.ndarray  # (N, n) float32
    dones: np.ndarray  # (N,) float32: 1 where the episode ended (terminated or truncated)
    masks: np.ndarray  # (N, A) bool: legal actions at observations[t]
    next_masks: np.ndarray  # (N, A) bool: legal actions at next_observations[t]
    metadata: dict  # the dataset's Minari metadata

    def __len__(self) -> int:
        return len(self.actions)


def open_dataset(where: str | Path):
    """The Minari dataset at ``where``: a dataset folder (``ROOT/ID``, with ``data/`` in it), its
    ``data/`` folder, or a dataset id under ``$MINARI_DATASETS_PATH``. Whatever is wrong with it
    is an :class:`OfflineError` of one line: not there, not a Minari dataset, not readable, or
    not one of Generala-v0."""
    from minari.dataset.minari_dataset import MinariDataset

    path = Path(where).expanduser()
    if not path.exists() and not str(where).startswith((".", "/", "~")):
        from minari.storage.datasets_root_dir import get_dataset_path

        path = get_dataset_path(str(where))
    data = path / "data" if (path / "data").is_dir() else path
    if not (data / "metadata.json").is_file():
        raise OfflineError(f"{where}: not a Minari dataset (no data/metadata.json there)")
    try:
        ds = MinariDataset(data)
    except Exception as e:  # Minari reads what it finds: any error in it means the folder is not a dataset it can read
        raise OfflineError(f"{where}: not a readable Minari dataset ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no detail'})") from None
    spec = ds.env_spec
    if spec is None or spec.id != "Generala-v0" or not isinstance(ds.storage.metadata.get("generala"), dict):
        raise OfflineError(f"{where}: a Minari dataset of {spec.id if spec else 'no env'}, not one generala dataset wrote for Generala-v0")
    return ds


def load_transitions(where: str | Path) -> Transitions:
    """Every step of the dataset at ``where`` (:func:`open_dataset`) as :class:`Transitions`."""
    ds = open_dataset(where)
    obs, acts, rews, nxt, dones, masks, next_masks = [], [], [], [], [], [], []
    try:
        for ep in ds.iterate_episodes():
            T = len(ep.actions)
            m = np.asarray(ep.infos["action_mask"], dtype=bool)
            if ep.observations.shape[0] != T + 1 or m.shape[0] != T + 1:
                raise OfflineError(f"{where}: episode {ep.id} has {T} actions but {ep.observations.shape[0]} observations and {m.shape[0]} masks")
            obs.append(ep.observations[:-1])
            nxt.append(ep.observations[1:])
            acts.append(ep.actions)
            rews.append(ep.rewards)
            dones.append(np.logical_or(ep.terminations, ep.truncations))
            masks.append(m[:-1])
            next_masks.append(m[1:])
    except OfflineError:
        raise
    except Exception as e:  # a torn or altered episode file: name the dataset, not the library's frame
        raise OfflineError(f"{where}: an episode cannot be read ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no detail'})") from None
    if not acts:
        raise OfflineError(f"{where}: the dataset holds no episodes")
    t = Transitions(
        observations=np.concatenate(obs).astype(np.float32),
        actions=np.concatenate(acts).astype(np.int64),
        rewards=np.concatenate(rews).astype(np.float32),
        next_observations=np.concatenate(nxt).astype(np.float32),
        dones=np.concatenate(dones).astype(np.float32),
        masks=np.concatenate(masks),
        next_masks=np.concatenate(next_masks),
        metadata=ds.storage.metadata,
    )
    if not t.masks[np.arange(len(t)), t.actions].all():
        raise OfflineError(f"{where}: the dataset holds actions its own masks call illegal")
    return t


# -- the networks and the policy --------------------------------------------------------------------
def mlp(n_in: int, n_out: int, hidden: tuple[int, ...] = (256, 256)):
    import torch.nn as nn

    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(n_in, h), nn.ReLU()]
        n_in = h
    return nn.Sequential(*layers, nn.Linear(n_in, n_out))


def masked(values, mask):
    """``values`` with illegal actions at the lowest float: out of every max, softmax and logsumexp."""
    import torch

    return values.masked_fill(~mask, torch.finfo(values.dtype).min)


class Policy:
    """A trained network played greedily: the legal action of the highest output (logit or Q)."""

    def __init__(self, net, algo: str):
        self.net, self.algo = net.eval(), algo

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.net(torch.as_tensor(np.asarray(observations, dtype=np.float32)))
            return masked(out, torch.as_tensor(np.asarray(masks, dtype=bool))).argmax(dim=1).numpy()


# -- the algorithms ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hyper:
    """What the algorithms take: one set, so that they differ only in their losses."""

    batch_size: int = 256
    learning_rate: float = 3e-4
    gamma: float = 1.0  # the task's return is the undiscounted final total
    reward_scale: float = 0.02  # the suite's: a game's return of ~150 points is ~3
    target_update: int = 500  # gradient steps between copies of the Q network to its target
    cql_alpha: float = 1.0  # CQL: the weight of the conservative term
    iql_expectile: float = 0.8  # IQL: V is this expectile of Q over the data's actions
    iql_beta: float = 3.0  # IQL: the inverse temperature of the advantage weights


def _batches(data: Transitions, steps: int, batch_size: int, rng: np.random.Generator):
    import torch

    r = torch.as_tensor(data.rewards)
    arrays = [torch.as_tensor(x) for x in (data.observations, data.actions, data.next_observations, data.dones, data.masks, data.next_masks)]
    for _ in range(steps):
        i = torch.as_tensor(rng.integers(0, len(data), size=batch_size))
        o, a, o2, d, m, m2 = (x[i] for x in arrays)
        yield o, a, r[i], o2, d, m, m2


def train_bc(data: Transitions, steps: int, hp: Hyper, rng: np.random.Generator):
    import torch
    import torch.nn.functional as F

    net = mlp(data.observations.shape[1], data.masks.shape[1])
    opt = torch.optim.Adam(net.parameters(), lr=hp.learning_rate)
    for o, a, _r, _o2, _d, m, _m2 in _batches(data, steps, hp.batch_size, rng):
        loss = F.cross_entropy(masked(net(o), m), a)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def train_cql(data: Transitions, steps: int, hp: Hyper, rng: np.random.Generator):
    import torch
    import torch.nn.functional as F

    q = mlp(data.observations.shape[1], data.masks.shape[1])
    target = copy.deepcopy(q)
    opt = torch.optim.Adam(q.parameters(), lr=hp.learning_rate)
    for step, (o, a, r, o2, d, m, m2) in enumerate(_batches(data, steps, hp.batch_size, rng)):
        with torch.no_grad():  # double DQN: the online net picks the next legal action, the target values it
            a2 = masked(q(o2), m2).argmax(dim=1, keepdim=True)
            y = r * hp.reward_scale + hp.gamma * (1.0 - d) * target(o2).gather(1, a2).squeeze(1)
        qs = q(o)
        q_data = qs.gather(1, a[:, None]).squeeze(1)
        conservative = (torch.logsumexp(masked(qs, m), dim=1) - q_data).mean()
        loss = F.mse_loss(q_data, y) + hp.cql_alpha * conservative
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % hp.target_update == 0:
            target.load_state_dict(q.state_dict())
    return q


def train_iql(data: Transitions, steps: int, hp: Hyper, rng: np.random.Generator):
    import torch
    import torch.nn.functional as F

    n, A = data.observations.shape[1], data.masks.shape[1]
    q, v, pi = mlp(n, A), mlp(n, 1), mlp(n, A)
    target = copy.deepcopy(q)
    opts = [torch.optim.Adam(net.parameters(), lr=hp.learning_rate) for net in (q, v, pi)]
    for step, (o, a, r, o2, d, m, _m2) in enumerate(_batches(data, steps, hp.batch_size, rng)):
        with torch.no_grad():
            q_t = target(o).gather(1, a[:, None]).squeeze(1)
        v_o = v(o).squeeze(1)
        diff = q_t - v_o  # expectile regression: V under-weighs the data's worse actions
        v_loss = (torch.abs(hp.iql_expectile - (diff < 0).float()) * diff**2).mean()
        with torch.no_grad():
            y = r * hp.reward_scale + hp.gamma * (1.0 - d) * v(o2).squeeze(1)
            weight = torch.exp(hp.iql_beta * (q_t - v_o.detach())).clamp(max=100.0)
        q_loss = F.mse_loss(q(o).gather(1, a[:, None]).squeeze(1), y)
        pi_loss = (weight * F.cross_entropy(masked(pi(o), m), a, reduction="none")).mean()
        for opt, loss in zip(opts, (q_loss, v_loss, pi_loss), strict=True):
            opt.zero_grad()
            loss.backward()
            opt.step()
        if (step + 1) % hp.target_update == 0:
            target.load_state_dict(q.state_dict())
    return pi


TRAINERS: dict[str, Callable] = {"bc": train_bc, "cql": train_cql, "iql": train_iql}


def train(algo: str, data: Transitions, seed: int, steps: int, hp: Hyper | None = None) -> Policy:
    """``algo`` trained for ``steps`` gradient steps on ``data`` from ``seed`` (network weights and
    minibatches both), as a :class:`Policy`. Single-threaded torch: runs are reproducible."""
    import torch

    if algo not in TRAINERS:
        raise OfflineError(f"unknown offline algorithm {algo!r}; known: {', '.join(ALGOS)}")
    torch.manual_seed(seed)
    return Policy(TRAINERS[algo](data, steps, hp or Hyper(), np.random.default_rng(seed)), algo)
