"""What an export writes beside the weights: the network's shape and the metadata.

``metadata.json`` records the rules, players, reward, observation layout, the network, training
steps and time, the resolved config and how the run learned: :func:`solver_ingredients` names
what in its config let the exact solver into its training (an agent that learned from it says so).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .config import SOLVER_TEACHERS


class ExportError(ValueError):
    """An export that cannot be made as asked."""


def seconds_at(state: dict, step: int) -> float | None:
    """Training wall-clock when the run reached ``step``, from its evaluations (``None`` if none was there)."""
    for e in state.get("evaluations") or []:
        if isinstance(e, dict) and e.get("step") == step and "wall_seconds" in e:
            return round(float(e["wall_seconds"]), 1)
    return None


def network_of(model) -> dict:
    """The ``network`` entry of a checkpoint's metadata for an SB3 MlpPolicy model."""
    from generala_agents.policy_net import KEEP_HEAD_FORMAT, NETWORK_FORMAT

    kw = model.policy_kwargs
    if kw.get("features_extractor_class") is not None:  # e.g. policy.dice onehot: the checkpoint format takes the plain observation
        name = getattr(kw["features_extractor_class"], "__name__", "?")
        raise ExportError(f"the model reads its observation through {name} (a training lever); a checkpoint holds MLPs on the plain observation")
    arch = kw.get("net_arch")
    if not isinstance(arch, dict):
        arch = {"pi": list(arch or [64, 64]), "vf": list(arch or [64, 64])}
    act = getattr(kw.get("activation_fn"), "__name__", "Tanh").lower()
    from torch import nn

    from .policies import KeepHead

    head = model.policy.action_net
    extra = {}
    if isinstance(head, KeepHead):
        extra = {"format": KEEP_HEAD_FORMAT, "keep_width": int(head.hold_mid.in_features), "dice_slice": [head.dice.start, head.dice.stop]}
    return {
        "format": NETWORK_FORMAT,
        "net_arch": {"pi": [int(w) for w in arch["pi"]], "vf": [int(w) for w in arch["vf"]]},
        "activation": act,
        "layer_norm": any(isinstance(m, nn.LayerNorm) for m in model.policy.mlp_extractor.modules()),
        "obs_size": int(model.observation_space.shape[0]),
        "n_actions": int(model.action_space.n),
        **extra,
    }


def write_policy(model, folder: Path) -> None:
    """The model's policy weights as ``policy.safetensors`` in ``folder``, written as every output
    is (:func:`generala_env.files.write_atomic`)."""
    from safetensors.torch import save

    from generala_agents.policy_net import WEIGHTS_FILE
    from generala_env.files import write_atomic

    tensors = {k: v.detach().cpu().contiguous() for k, v in model.policy.state_dict().items()}
    write_atomic(Path(folder) / WEIGHTS_FILE, save(tensors))


# agents whose moves come from the exact solver: as opponents or teachers they make a run learn from it
SOLVER_AGENTS = SOLVER_TEACHERS


def solver_ingredients(cfg: dict, pretrain: dict | None = None) -> list[str]:
    """What in a run's config (a plain mapping) let the exact solver into its training.

    Behaviour cloning from a solver (``pretrain.games`` > 0 with teacher ``optimal`` or
    ``optimal-2p``: it imitates the solver's moves and values), ``init_from`` (a start from
    another model, which may have), and solver-based opponents. Cloning a learned teacher
    (``td-search``, ``td-search-2p`` or a folder of td-search values: TD from their own games)
    brings in whatever went into the teacher: what ``pretrain`` (the run's record of its
    behaviour cloning) says, else what the teacher's values file says; a teacher whose
    training cannot be read counts as a solver ingredient. A run with none of these learned
    from scratch: the solver only measured it.
    """
    out = []
    teacher = (cfg.get("pretrain") or {}).get("teacher", "optimal")
    games = (cfg.get("pretrain") or {}).get("games", 0)
    if games and teacher in SOLVER_AGENTS:
        out.append(f"pretrain.games = {games} (behaviour cloning from the {teacher} player)")
    elif games:
        inside = _teacher_solver_ingredients(teacher, pretrain)
        out += [f"pretrain.games = {games} (behaviour cloning from {teacher!r}, which learned from: {i})" for i in inside]
    if cfg.get("init_from"):
        out.append(f"init_from = {cfg['init_from']!r}")
    opp = (cfg.get("env") or {}).get("opponents")
    names: set[str | None] = set()
    for entry in opp if isinstance(opp, list) else [opp]:
        names.update(entry if isinstance(entry, list) else [entry])
    out += [f"opponent {n!r}" for n in sorted(n for n in names if isinstance(n, str) and n in SOLVER_AGENTS)]
    return out


def budget_seconds(state: dict, pretrain: dict | None) -> dict:
    """Wall-clock seconds of everything that trained the model: PPO (every ``--resume`` piece),
    behaviour cloning, and a learned teacher's own training (with the one-player table a
    two-player teacher built on); ``total`` is their sum."""
    out = {"ppo": round(float(state.get("train_seconds", 0.0)), 1)}
    if pretrain:
        out["behaviour_cloning"] = round(float(pretrain.get("seconds", 0.0)), 1)
        if "teacher_train_seconds" in pretrain:
            out["teacher"] = round(float(pretrain["teacher_train_seconds"]), 1)
        base = pretrain.get("teacher_built_on")
        if isinstance(base, dict) and isinstance(base.get("train_seconds"), (int, float)):
            out["teacher_built_on"] = round(float(base["train_seconds"]), 1)
    out["total"] = round(sum(out.values()), 1)
    return out


def _teacher_solver_ingredients(teacher: str, pretrain: dict | None) -> list[str]:
    """What went into a learned teacher's training, from the run's record or the teacher's file."""
    if not (pretrain and "teacher_solver_in_training" in pretrain):
        from generala_agents.base import AgentError

        from .pretrain import teacher_record

        try:
            pretrain = teacher_record(teacher)
        except AgentError:
            return ["a teacher whose training cannot be read"]
    inside = pretrain.get("teacher_solver_in_training")
    return [str(i) for i in inside] if isinstance(inside, list) else ["a teacher that does not say how it learned"]


def make_metadata(model, rules, players: int, cfg: dict, state: dict, *, name: str, source_run: str, source_model: str) -> dict:
    """The checkpoint's ``metadata.json``, all but its evaluation: what it plays, its network,
    how it was trained (``cfg``, the run's config as a plain mapping; ``state``, its ``state.json``)
    and where it came from."""
    from generala_env.core.encoding import LAYOUT_VERSION, observation_size

    from .pretrain import teacher_record

    pretrain = state.get("pretrain")
    if pretrain and "teacher_how" not in pretrain and pretrain.get("teacher") not in SOLVER_AGENTS:
        pretrain = {**pretrain, **teacher_record(pretrain["teacher"])}  # a run from before runs kept this record
    return {
        "name": name,
        "algorithm": "sb3-contrib MaskablePPO",
        "rules_name": rules.name,
        "rules": rules.settings(),
        "rules_fingerprint": rules.fingerprint(),
        "num_players": players,
        "reward": cfg["env"].get("reward"),
        "layout_version": LAYOUT_VERSION,
        "obs_size": observation_size(rules, players),
        "n_actions": 32 + rules.num_lines,
        "network": network_of(model),
        "training_steps": int(model.num_timesteps),
        "training_seconds": round(float(state.get("train_seconds", 0.0)), 1),
        "training_seconds_to_model": seconds_at(state, int(model.num_timesteps)),
        "pretrain": pretrain,
        "budget_seconds": budget_seconds(state, pretrain),
        "solver_in_training": solver_ingredients(cfg, pretrain),
        "from_scratch": not solver_ingredients(cfg, pretrain),
        "source_run": source_run,
        "source_model": source_model,
        "config": cfg,
        "exported": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def write_metadata(folder: Path, meta: dict) -> None:
    """``meta`` as the ``metadata.json`` of ``folder``, written atomically and never through a link."""
    from generala_agents.ppo import METADATA_FILE
    from generala_env.files import write_atomic

    write_atomic(Path(folder) / METADATA_FILE, json.dumps(meta, indent=2, default=float))
