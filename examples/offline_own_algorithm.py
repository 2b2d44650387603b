"""Your own offline algorithm on a Generala dataset, scored as the benchmark scores every policy.

    generala dataset --agent greedy --episodes 200 --id mine/greedy-v0 --out datasets
    python examples/offline_own_algorithm.py --root datasets --id mine/greedy-v0 --games 500

The dataset is read with Minari's own API (any library that reads Minari datasets would do);
the algorithm is yours: here a linear softmax policy cloned from the data's actions in plain
NumPy (behaviour cloning in twenty lines). Illegal actions are masked at play time, as the
benchmark masks every algorithm's. :func:`generala_training.benchmark.score_policy` plays the
suite's evaluation games of the dataset's task and normalises by the exact optimum.
"""

from __future__ import annotations

import argparse
import os

import numpy as np


def load(root: str, dataset_id: str):
    """Observations, legal masks and actions of every step, and the dataset's task, via Minari."""
    os.environ["MINARI_DATASETS_PATH"] = os.path.abspath(root)  # where generala dataset --out put it
    import minari

    data = minari.load_dataset(dataset_id)
    obs, masks, actions = [], [], []
    for ep in data.iterate_episodes():
        obs.append(ep.observations[:-1])  # the last observation is the game's end: no action follows it
        masks.append(ep.infos["action_mask"][:-1].astype(bool))
        actions.append(ep.actions)
    meta = data.storage.metadata
    return np.concatenate(obs), np.concatenate(masks), np.concatenate(actions), meta


def clone(obs: np.ndarray, masks: np.ndarray, actions: np.ndarray, steps: int, lr: float = 0.5, seed: int = 0) -> np.ndarray:
    """Weights of a linear policy (with a bias) whose masked softmax imitates ``actions``."""
    rng = np.random.default_rng(seed)
    x = np.hstack([obs, np.ones((len(obs), 1), obs.dtype)])
    w = rng.normal(0, 0.01, (x.shape[1], masks.shape[1]))
    for _ in range(steps):
        logits = np.where(masks, x @ w, -np.inf)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(actions)), actions] -= 1.0  # the cross-entropy's gradient in the logits
        w -= lr * x.T @ p / len(x)
    return w


def main(argv=None) -> dict:
    from generala_training.benchmark import score_policy

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", required=True, help="the folder generala dataset --out wrote into")
    p.add_argument("--id", required=True, help="the dataset's id (generala dataset --id)")
    p.add_argument("--steps", type=int, default=200, help="gradient steps (default 200)")
    p.add_argument("--games", type=int, default=500, help="evaluation games (default 500)")
    args = p.parse_args(argv)
    obs, masks, actions, meta = load(args.root, args.id)
    w = clone(obs, masks, actions, args.steps)

    def act_batch(observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        x = np.hstack([observations, np.ones((len(observations), 1), observations.dtype)])
        return np.where(action_masks.astype(bool), x @ w, -np.inf).argmax(axis=1)

    from generala_training.benchmark.offline import dataset_task
    from generala_training.benchmark.suite import load_suite

    task = dataset_task(meta, load_suite().tasks, None, args.id).name  # the suite's task of the data's game: rules, players, opponent
    result = score_policy(act_batch, task=task, games=args.games)
    print(f"{args.id}: {len(actions):,} steps cloned; normalised score {result['normalized_score']:.3f} on {args.games} games of task {task}")
    return result


if __name__ == "__main__":
    main()
