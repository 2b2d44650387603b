"""Hyperparameter search for MaskablePPO with Optuna: a TPE sampler, a median pruner, SQLite storage.

    python -m generala_training.tune --config configs/ppo_classic_scratch.yaml --trials 8 --steps 1000000
    python -m generala_training.tune --config ... --study ppo-scratch --storage sqlite:///tune/study.db   # resume or share

Each trial trains the base config with the sampled hyperparameters for ``--steps``
environment steps (``generala train``'s own loop: same envs, evaluations and run folder, under
``--run-dir``) and reports every evaluation's share of the optimal score to Optuna. The median
pruner stops a trial whose evaluation falls below the median of earlier trials at the same
step, from the middle of the trial on. The study lives in an SQLite file, so a cut study resumes where it stopped (Optuna
re-queues nothing by itself: a trial cut while running stays RUNNING/FAIL and is not counted)
and the file can be shared and opened with ``optuna-dashboard``. The objective is the best
evaluation of the trial.

The search space (``SPACE``) holds the levers that moved learning from scratch most in
docs/learning_from_scratch.md: learning rate, epochs, minibatch size, GAE λ, entropy bonus,
LayerNorm. Nothing here uses the solver but the evaluations' normalising constant.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from generala_env.extras import how_to_install

from .options import positive_int, seed_int

# name -> how to sample it; every name is a training config key (KEY=VALUE override)
SPACE = {
    "algo.learning_rate": ("log_float", 1e-4, 1e-3),
    "algo.n_epochs": ("choice", [4, 10, 20]),
    "algo.batch_size": ("choice", [1024, 2048, 4096]),
    "algo.gae_lambda": ("float", 0.0, 0.5),
    "algo.ent_coef": ("choice", [0.0, 0.0003, 0.001, 0.003]),
    "policy.layer_norm": ("choice", [True, False]),
}


def sample(trial) -> dict:
    """The trial's overrides, ``{key: value}``, drawn from :data:`SPACE`."""
    out = {}
    for key, (kind, *args) in SPACE.items():
        if kind == "log_float":
            out[key] = trial.suggest_float(key, args[0], args[1], log=True)
        elif kind == "float":
            out[key] = trial.suggest_float(key, args[0], args[1])
        else:
            out[key] = trial.suggest_categorical(key, args[0])
    return out


def objective(trial, base: str, steps: int, run_dir: Path, eval_games: int) -> float:
    """Train one trial; report each evaluation; return the best share of optimal."""
    import optuna

    import generala_training.train as tt
    from generala_training.config import ConfigError, load_config

    params = sample(trial)
    overrides = [f"{k}={v}" for k, v in params.items()] + [
        f"total_timesteps={steps}",
        f"eval.every={max(1, steps // 4)}",
        f"eval.games={eval_games}",
        f"checkpoint_every={steps}",
    ]
    try:
        cfg = load_config(base, overrides)
    except ConfigError as e:  # a combination the config refuses (e.g. a one-sample minibatch)
        raise optuna.TrialPruned(f"config refused: {e}") from None
    best = {"share": 0.0}

    def report(last: dict) -> None:
        best["share"] = max(best["share"], float(last["share_of_optimal"]))
        trial.report(float(last["share_of_optimal"]), int(last["step"]))
        if trial.should_prune():
            raise optuna.TrialPruned(f"pruned at step {last['step']} with {last['share_of_optimal']:.3f}")

    tt.train(cfg, run_dir / f"trial_{trial.number:04d}", command=f"generala_training.tune trial {trial.number}: {' '.join(overrides)}", on_evaluation=report)
    return best["share"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m generala_training.tune", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="the base training config (YAML)")
    p.add_argument("--trials", type=positive_int, default=8, help="trials to add to the study in this call")
    p.add_argument("--steps", type=positive_int, default=1_000_000, help="environment steps per trial")
    p.add_argument("--eval-games", type=positive_int, default=300, help="games per evaluation (four evaluations a trial)")
    p.add_argument("--study", default="ppo-scratch", help="study name in the storage")
    p.add_argument("--storage", default="sqlite:///tune/study.db", help="Optuna storage URL (an SQLite file by default)")
    p.add_argument("--run-dir", default="tune/runs", help="folder for the trials' run folders")
    p.add_argument("--seed", type=seed_int, default=0, help="seeds the sampler")
    args = p.parse_args(argv)
    try:
        import optuna
    except ImportError:
        print(f"python -m generala_training.tune: error: needs optuna, which is not installed; {how_to_install('tune')}", file=sys.stderr)
        return 2
    if args.storage.startswith("sqlite:///"):
        Path(args.storage[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    study = optuna.create_study(
        study_name=args.study,
        storage=args.storage,
        load_if_exists=True,
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=args.seed),
        # the first evaluation (a quarter of the steps) says little: prune from the second on
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=args.steps // 2),
    )
    run_dir = Path(args.run_dir) / args.study
    study.optimize(lambda t: objective(t, args.config, args.steps, run_dir, args.eval_games), n_trials=args.trials)
    print(markdown(study), end="")
    return 0


def markdown(study) -> str:
    """The study's trials as a table, best first."""
    import optuna

    done = [t for t in study.trials if t.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)]
    keys = list(SPACE)
    lines = ["| trial | state | best % of optimal | last step | " + " | ".join(keys) + " |", "|---:|---|---:|---:|" + "---|" * len(keys)]
    score = lambda t: t.value if t.value is not None else max(t.intermediate_values.values(), default=0.0)  # noqa: E731
    for t in sorted(done, key=score, reverse=True):
        last = max(t.intermediate_values, default=0)
        vals = " | ".join(f"{t.params[k]:.3g}" if isinstance(t.params.get(k), float) else str(t.params.get(k)) for k in keys)
        lines.append(f"| {t.number} | {t.state.name.lower()} | {100 * score(t):.1f} | {last:,} | {vals} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
