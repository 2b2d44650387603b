"""PPO compiled end to end in JAX: the env (:mod:`generala_env.jax.env`), the rollout and the
update in one jitted function (PureJaxRL's shape), on the CPU or an accelerator.

Model-free and from scratch: the learner sees only the env's observations, legal masks and
rewards. No solver, no dice model, no cloning, no opponents.

:func:`make_update` gives ``update(runner) -> (runner, metrics)``: ``num_steps`` steps of
``num_envs`` games (a ``lax.scan`` over Pgx's ``auto_reset`` step, actions drawn from the
masked policy), GAE, then ``epochs`` passes over the rollout in minibatches, each an Adam
step on PPO's clipped loss, all in one compiled call. The network is SB3's ``MlpPolicy``
(separate policy and value MLPs, optionally LayerNorm after each hidden Linear, orthogonal
initialisation), so :func:`export_tensors` writes it under SB3's tensor names and the
project's NumPy player (:mod:`generala_agents.policy_net`) plays it as it plays an SB3
export. :mod:`generala_training.jax_train` is the program around it (config, run folder,
evaluations, checkpoints, resume).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from generala_env.extras import how_to_install

try:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax
    from pgx.experimental import auto_reset  # type: ignore[import-untyped]  # pgx ships no type information
except ImportError as e:  # the jax extra
    raise ImportError(f"generala_training.jax_ppo needs jax, pgx, flax and optax, which are not installed; {how_to_install('jax')}") from e

from generala_env.jax.env import Generala

# a masked logit: finite, so that log-softmax and its gradient stay finite where an action is illegal
_MASKED = -1e9


@dataclass(frozen=True)
class Hyper:
    """What one update does; the training config's ``algo:``, ``vec_env.n_envs``, ``policy:``
    and ``env.reward_scale`` keys (:func:`generala_training.jax_train.hyper_of`)."""

    num_envs: int = 256
    num_steps: int = 64
    minibatch_size: int = 2048
    epochs: int = 10
    learning_rate: float = 3e-4
    lr_schedule: str = "constant"  # constant | linear (to 0 at total_updates)
    total_updates: int = 1
    gamma: float = 1.0
    gae_lambda: float = 0.1
    clip: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    reward_scale: float = 0.02
    net_arch: tuple[int, ...] = (256, 256)
    vf_arch: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    layer_norm: bool = True
    ortho_init: bool = True

    def __post_init__(self) -> None:
        """The sizes a training config is held to (:mod:`generala_training.algos`' ``MAX_...``),
        checked before anything is allocated: a Hyper made in Python past them is one
        ``ValueError`` line naming the field, its value and the bound."""
        from .algos import HYPERPARAMS, MAX_N_ENVS, activations_problem, bounded, layer_sizes_problem, rollout_problem

        checks = [("num_envs", self.num_envs, bounded(1, MAX_N_ENVS, "the bound of games stepped together"))]
        checks += [
            (name, getattr(self, name), HYPERPARAMS[key][1:])
            for name, key in (("num_steps", "n_steps"), ("minibatch_size", "batch_size"), ("epochs", "n_epochs"))
        ]
        for name, value, (ok, what) in checks:
            if not isinstance(value, int) or not ok(value):
                raise ValueError(f"Hyper.{name} must be a whole number {what}, got {value!r}")
        for name in ("net_arch", "vf_arch"):
            problem = layer_sizes_problem(list(getattr(self, name)))
            if problem:
                raise ValueError(f"Hyper.{name} {problem}")
        problem = rollout_problem(self.num_steps, self.num_envs)
        if problem:
            raise ValueError(f"Hyper.num_steps x Hyper.num_envs {problem}")
        problem = activations_problem(self.minibatch_size, list(self.net_arch), list(self.vf_arch))
        if problem:
            raise ValueError(f"Hyper.minibatch_size x the units of net_arch and vf_arch {problem}")

    @property
    def rollout(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatches(self) -> int:
        return self.rollout // self.minibatch_size


class ActorCritic(nn.Module):
    """SB3's ``MlpPolicy``: a policy MLP to the action logits and a value MLP to one value,
    each hidden layer Dense → [LayerNorm] → activation."""

    n_actions: int
    net_arch: tuple[int, ...]
    vf_arch: tuple[int, ...]
    activation: str
    layer_norm: bool
    ortho_init: bool

    @nn.compact
    def __call__(self, x):
        act = nn.relu if self.activation == "relu" else nn.tanh

        def init(gain: float):
            return nn.initializers.orthogonal(gain) if self.ortho_init else nn.initializers.lecun_normal()

        def mlp(h, widths, name):
            for i, w in enumerate(widths):
                h = nn.Dense(w, kernel_init=init(math.sqrt(2)), bias_init=nn.initializers.zeros, name=f"{name}_{i}")(h)
                if self.layer_norm:  # torch's LayerNorm: eps 1e-5
                    h = nn.LayerNorm(epsilon=1e-5, name=f"{name}_norm_{i}")(h)
                h = act(h)
            return h

        logits = nn.Dense(self.n_actions, kernel_init=init(0.01), bias_init=nn.initializers.zeros, name="action")(mlp(x, self.net_arch, "pi"))
        value = nn.Dense(1, kernel_init=init(1.0), bias_init=nn.initializers.zeros, name="value")(mlp(x, self.vf_arch, "vf"))
        return logits, value[..., 0]


def network(env: Generala, hp: Hyper) -> ActorCritic:
    return ActorCritic(env.num_actions, tuple(hp.net_arch), tuple(hp.vf_arch), hp.activation, hp.layer_norm, hp.ortho_init)


class Runner(NamedTuple):
    """Everything an update carries to the next: saved whole by a checkpoint, so that a run
    resumed from it goes on as if it had never stopped."""

    params: Any
    opt_state: Any
    games: Any  # the env's batched State
    episode_score: jax.Array  # (num_envs,) points so far in each game
    key: jax.Array  # raw uint32 key data: the run's one random stream (actions, dice, minibatches)
    updates: jax.Array  # updates done


def optimizer(hp: Hyper) -> optax.GradientTransformation:
    """Adam (SB3's eps 1e-5) after clipping the gradients' global norm; the learning rate
    constant, or falling linearly to 0 over the run's updates."""
    steps_per_update = hp.epochs * hp.minibatches
    lr: Any = hp.learning_rate
    if hp.lr_schedule == "linear":
        lr = optax.linear_schedule(hp.learning_rate, 0.0, hp.total_updates * steps_per_update)
    return optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.adam(lr, eps=1e-5))


def _step_fn(env: Generala):
    return jax.vmap(auto_reset(env.step, env.init))


def init_runner(env: Generala, hp: Hyper, seed: int) -> Runner:
    """A fresh run: the network's weights, Adam's state and ``num_envs`` new games, all drawn
    from ``seed``."""
    key = jax.random.key(seed)
    key, k_net, k_games = jax.random.split(key, 3)
    params = network(env, hp).init(k_net, jnp.zeros((1, *env.observation_shape), jnp.float32))
    games = jax.vmap(env.init)(jax.random.split(k_games, hp.num_envs))
    return Runner(params, optimizer(hp).init(params), games, jnp.zeros(hp.num_envs, jnp.float32), jax.random.key_data(key), jnp.int32(0))


class Rollout(NamedTuple):
    obs: jax.Array
    mask: jax.Array
    action: jax.Array
    logp: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array


def masked_logits(logits, mask):
    return jnp.where(mask, logits, _MASKED)


# the rollout, the advantages and the epochs are closures over one network and optimizer:
# long: traced together into the one jitted call an update is
def make_update(env: Generala, hp: Hyper):
    """``update(runner) -> (runner, metrics)``, jitted: one rollout and its PPO epochs."""
    net, opt, step = network(env, hp), optimizer(hp), _step_fn(env)
    n, mb = hp.num_envs, hp.minibatch_size

    def env_step(carry, _):
        params, games, score, key = carry
        key, k_act, k_dice = jax.random.split(key, 3)
        obs, mask = games.observation, games.legal_action_mask
        logits, value = net.apply(params, obs)
        logits = masked_logits(logits, mask)
        action = jax.random.categorical(k_act, logits)
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=1)[:, 0]
        games = step(games, action, jax.random.split(k_dice, n))
        points = games.rewards[:, 0]
        done = games.terminated
        score = score + points
        out = (Rollout(obs, mask, action, logp, value, points * hp.reward_scale, done), jnp.where(done, score, 0.0))
        return (params, games, jnp.where(done, 0.0, score), key), out

    def gae(values, rewards, dones, last_value):
        def back(carry, x):
            adv_next, v_next = carry
            v, r, d = x
            delta = r + hp.gamma * v_next * (1.0 - d) - v
            adv = delta + hp.gamma * hp.gae_lambda * (1.0 - d) * adv_next
            return (adv, v), adv

        _, adv = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), (values, rewards, dones), reverse=True)
        return adv, adv + values

    def loss(params, batch: Rollout, adv, ret):
        logits, value = net.apply(params, batch.obs)
        logp_all = jax.nn.log_softmax(masked_logits(logits, batch.mask))
        logp = jnp.take_along_axis(logp_all, batch.action[:, None], axis=1)[:, 0]
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)  # per minibatch, as SB3 does
        ratio = jnp.exp(logp - batch.logp)
        policy = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - hp.clip, 1 + hp.clip) * adv).mean()
        value_loss = ((ret - value) ** 2).mean()
        entropy = -jnp.where(batch.mask, jnp.exp(logp_all) * logp_all, 0.0).sum(axis=1).mean()
        total = policy + hp.vf_coef * value_loss - hp.ent_coef * entropy
        approx_kl = ((ratio - 1) - (logp - batch.logp)).mean()
        clipped = (jnp.abs(ratio - 1) > hp.clip).mean()
        return total, (policy, value_loss, entropy, approx_kl, clipped)

    grad = jax.value_and_grad(loss, has_aux=True)

    def update(runner: Runner):
        key = jax.random.wrap_key_data(runner.key)
        key, k_roll = jax.random.split(key)
        (params, games, score, _), (traj, finished) = jax.lax.scan(env_step, (runner.params, runner.games, runner.episode_score, k_roll), None, hp.num_steps)
        _, last_value = net.apply(params, games.observation)
        adv, ret = gae(traj.value, traj.reward, traj.done.astype(jnp.float32), last_value)
        flat = jax.tree.map(lambda x: x.reshape(hp.rollout, *x.shape[2:]), (traj, adv, ret))

        def epoch(carry, k):
            params, opt_state = carry
            order = jax.random.permutation(k, hp.rollout)[: hp.minibatches * mb].reshape(hp.minibatches, mb)

            def minibatch(carry, idx):
                params, opt_state = carry
                batch, a, r = jax.tree.map(lambda x: x[idx], flat)
                (_, aux), g = grad(params, batch, a, r)
                updates, opt_state = opt.update(g, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), aux

            return jax.lax.scan(minibatch, (params, opt_state), order)

        key, k_epochs = jax.random.split(key)
        (params, opt_state), aux = jax.lax.scan(epoch, (params, runner.opt_state), jax.random.split(k_epochs, hp.epochs))
        ended = traj.done.sum()
        values, returns = flat[0].value, flat[2]
        explained = 1.0 - jnp.var(returns - values) / (jnp.var(returns) + 1e-12)
        metrics = {
            "episodes": ended,
            "episode_score": finished.sum() / jnp.maximum(ended, 1),
            "policy_loss": aux[0].mean(),
            "value_loss": aux[1].mean(),
            "entropy": aux[2].mean(),
            "approx_kl": aux[3].mean(),
            "clip_fraction": aux[4].mean(),
            "explained_variance": explained,
        }
        runner = Runner(params, opt_state, games, score, jax.random.key_data(key), runner.updates + 1)
        return runner, metrics

    return jax.jit(update)


# -- the weights, as SB3 names them ------------------------------------------------------------
def export_tensors(params, hp: Hyper) -> dict[str, np.ndarray]:
    """The network's weights under SB3's ``MlpPolicy`` state-dict names (a Linear's weight is
    ``(out, in)``; a LayerNorm's scale is its ``weight``), float32: what a checkpoint folder's
    ``policy.safetensors`` holds (:mod:`generala_agents.policy_net` reads them)."""
    p = jax.device_get(params)["params"]
    per_layer = 3 if hp.layer_norm else 2
    out: dict[str, np.ndarray] = {}

    def put(name: str, w, b) -> None:
        out[f"{name}.weight"] = np.ascontiguousarray(np.asarray(w, dtype=np.float32))
        out[f"{name}.bias"] = np.asarray(b, dtype=np.float32)

    for mine, theirs, widths in (("pi", "mlp_extractor.policy_net", hp.net_arch), ("vf", "mlp_extractor.value_net", hp.vf_arch)):
        for i in range(len(widths)):
            dense = p[f"{mine}_{i}"]
            put(f"{theirs}.{per_layer * i}", np.asarray(dense["kernel"]).T, dense["bias"])
            if hp.layer_norm:
                norm = p[f"{mine}_norm_{i}"]
                put(f"{theirs}.{per_layer * i + 1}", norm["scale"], norm["bias"])
    put("action_net", np.asarray(p["action"]["kernel"]).T, p["action"]["bias"])
    put("value_net", np.asarray(p["value"]["kernel"]).T, p["value"]["bias"])
    return out


def network_metadata(env: Generala, hp: Hyper) -> dict:
    """The checkpoint metadata's ``network``: SB3's actor-critic MLP format."""
    return {
        "format": "sb3-actor-critic-mlp",
        "net_arch": {"pi": list(hp.net_arch), "vf": list(hp.vf_arch)},
        "activation": hp.activation,
        "layer_norm": hp.layer_norm,
        "obs_size": int(env.observation_shape[0]),
        "n_actions": int(env.num_actions),
    }


# -- a runner as plain arrays (a checkpoint) ------------------------------------------------------
def runner_arrays(runner: Runner) -> dict[str, np.ndarray]:
    """Every leaf of ``runner`` as a NumPy array, named by its position in the tree."""
    leaves = jax.tree.leaves(jax.device_get(runner))
    return {f"{i:04d}": np.asarray(x) for i, x in enumerate(leaves)}


def runner_names(template: Runner) -> list[str]:
    """Each leaf's place in the runner (``.games.dice``, ``.opt_state[1][0].mu[...]``), in the
    order of :func:`runner_arrays`' names."""
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(template)[0]]


def runner_from_arrays(template: Runner, arrays: dict[str, np.ndarray], env: Generala | None = None) -> Runner:
    """``template`` (a fresh :func:`init_runner` of the same config) with its leaves replaced by
    ``arrays``, read back from a file and trusted in nothing: a :class:`ValueError` names the first
    leaf whose shape or type differs, a float that is not finite (weights, Adam's moments, a
    game's observation or score: a NaN would train on), Adam's second moments below 0, a counter
    below 0 (the updates done, Adam's step counts, which cannot be fewer than the updates), and
    with ``env``, the first game the env cannot reach (:meth:`Generala.state_problem`: dice of
    99, rolls left, sheets out of range)."""
    leaves, tree = jax.tree.flatten(template)
    names = runner_names(template)
    if len(arrays) != len(leaves):
        raise ValueError(f"it holds {len(arrays)} arrays, the run's config makes {len(leaves)}")
    got_leaves = []
    for i, leaf in enumerate(leaves):
        got = arrays.get(f"{i:04d}")
        if got is None or got.shape != leaf.shape or got.dtype != leaf.dtype:
            what = "none" if got is None else f"{got.dtype}{list(got.shape)}"
            raise ValueError(f"array {i:04d} ({names[i]}) is {what}, the run's config makes {leaf.dtype}{list(leaf.shape)}")
        got_leaves.append(got)
    by_name = dict(zip(names, got_leaves, strict=True))
    for i, (name, got) in enumerate(by_name.items()):
        where = f"array {i:04d} ({name})"
        if got.dtype.kind == "f" and not np.isfinite(got).all():
            raise ValueError(f"{where} holds {got[~np.isfinite(got)].flat[0]}: every weight, moment and score must be a finite number")
        if ".nu[" in name and (got < 0).any():
            raise ValueError(f"{where} holds {got[got < 0].flat[0]}: Adam's second moments are never below 0")
        if (name.endswith(".count") or name == ".updates") and (got < 0).any():
            raise ValueError(f"{where} is {got}: a count of updates or steps is never below 0")
    updates = int(by_name[".updates"])
    for name, got in by_name.items():
        if name.endswith(".count") and int(got) < updates:
            raise ValueError(f"{name} is {int(got)}, fewer than the {updates} updates done: each update takes at least one optimizer step")
    if (by_name[".episode_score"] < 0).any():
        raise ValueError(f".episode_score holds {by_name['.episode_score'].min()}: points written are never below 0")
    runner = jax.tree.unflatten(tree, [jnp.asarray(x) for x in got_leaves])
    if env is not None:
        problem = env.state_problem(runner.games)
        if problem is not None:
            raise ValueError(f"its games are not games of {env.rules.name}: {problem}")
    return runner
