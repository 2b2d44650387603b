"""``generala jax-train`` runs as leaderboard submissions (model-free track): each run's
checkpoints (``checkpoints/step_N/``) scored with ``score_policy`` on the suite's evaluation
games make its learning curve, its last checkpoint (the final policy, as the protocol asks) its
final score on the suite's ``final_games``, and its ``state.json`` its wall-clock (training,
compilation and the run's own evaluations).

    generala jax-train --config jax_ppo_classic seed=0 total_timesteps=1000000 checkpoint_every=100000 eval.every=1000000 --run-name jax1m_s0
    python benchmarks/jax_ppo_submissions.py runs/jax1m_s0 runs/jax1m_s1 runs/jax1m_s2 --budget 1000000 --curve-games 200 --out docs/benchmarks/submissions/classic-1m
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not an installed one

from generala_env.files import read_json  # noqa: E402


def submission_of(run: Path, budget: int, games: int | None) -> dict:
    from generala_training.benchmark import score_policy, submission
    from generala_training.benchmark.suite import load_suite

    state = read_json(run / "state.json")
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    steps = sorted(int(m.group(1)) for p in (run / "checkpoints").iterdir() if (m := re.fullmatch(r"step_(\d+)", p.name)))
    if not steps:
        sys.exit(f"{run}: no checkpoints/step_N folders")
    curve = []
    for s in steps:
        r = score_policy(str(run / "checkpoints" / f"step_{s}"), task="classic", games=games)
        curve.append([s, round(r["normalized_score"], 6)])
        print(f"{run.name} step {s:,}: {r['normalized_score']:.4f}", flush=True)
    final = score_policy(str(run / "checkpoints" / f"step_{steps[-1]}"), task="classic")
    meta = read_json(run / "checkpoints" / f"step_{steps[-1]}" / "metadata.json")
    hw = meta["hardware"]
    notes = (
        "generala jax-train (generala_training.jax_ppo): PPO with env, rollout and update compiled together in JAX "
        f"(jax {hw['jax']}, flax {hw['flax']}, optax {hw['optax']}, pgx {hw['pgx']}), config {cfg['name']} "
        f"(net {cfg['policy']['net_arch']}, {cfg['vec_env']['n_envs']} games x {cfg['algo']['n_steps']} steps); masked actions; "
        f"model-free, from scratch: no solver, dice model, cloning or opponents; {round(steps[-1] / state['train_seconds'])} steps/s "
        "over the run's wall-clock (compilation and evaluations included); reproduce: generala jax-train --config "
        f"{cfg['name']} seed={cfg['seed']} total_timesteps={cfg['total_timesteps']} checkpoint_every={cfg['checkpoint_every']} "
        f"eval.every={cfg['eval']['every']}, then python benchmarks/jax_ppo_submissions.py RUN --budget {budget} --curve-games {games}"
    )
    return submission.make(
        task="classic",
        algorithm="jax-ppo",
        library=("jax", hw["jax"]),
        seed=int(cfg["seed"]),
        budget=budget,
        steps=steps[-1],
        wall_clock_seconds=round(float(state["train_seconds"]), 1),
        hardware=f"{hw['cores']}-core {hw['cpu']}, JAX on {hw['jax_devices'][0]}",
        curve=curve,
        final=final,
        suite=load_suite(None),
        notes=notes,
    )


def main(argv=None) -> None:
    from generala_training.benchmark import submission

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="generala jax-train run folders")
    p.add_argument("--budget", type=int, required=True, help="the named budget the runs compete at")
    p.add_argument("--out", type=Path, required=True, help="folder of the submission files")
    p.add_argument("--curve-games", type=int, default=None, help="games per curve point (default: the suite's final_games)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for run in args.runs:
        data = submission_of(run, args.budget, args.curve_games)
        path = submission.write(args.out / f"jax-ppo-classic-seed{data['seed']}.json", data)
        print(f"wrote {path}: final {data['final']['normalized_score']:.4f} after {data['steps']:,} steps in {data['wall_clock_seconds']:.0f} s")


if __name__ == "__main__":
    main()
