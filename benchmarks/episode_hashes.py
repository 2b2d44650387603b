"""Hashes of seeded episodes in every driver of the engine: the single env, the vector env and
PettingZoo, over rule sets and player counts.

Each line is one driver and setting: a SHA-256 over every observation, reward, end flag and
the info arrays of seeded random legal play (the actions come from their own seeded
generator). Two checkouts that print the same lines play the same games, bit for bit; run it
before and after a change to the engine and compare:

    python benchmarks/episode_hashes.py > before.txt   # on the old commit
    python benchmarks/episode_hashes.py | diff before.txt -

``--drop-info KEY,...`` leaves info keys out of the hashes: what changed in the info alone (a key
that left it) then does not hide that the games are the same. This script runs on checkouts
from before the package's folders (``generala_env.env``) as well, copied there:

    python benchmarks/episode_hashes.py --drop-info illegal_reason,action_mask
"""

from __future__ import annotations

import argparse
import hashlib

import numpy as np

DROP: set[str] = set()  # info keys left out of the hashes (--drop-info)

SETTINGS = [
    ("classic", 1),
    ("classic", 2),
    ("classic", 3),
    ("double", 2),
    ("sixty", 1),
    ({"lines": ["ones", "twos", "generala", "double_generala"], "locked_holds": True}, 2),
    ({"lines": ["straight", "full_house", "generala"], "served_generala": "points", "served_generala_points": 80, "straight_wraps": True}, 1),
]


def _feed(h, value) -> None:
    if isinstance(value, dict):
        for k in sorted(value):
            if k in DROP:
                continue
            h.update(k.encode())
            _feed(h, value[k])
    elif isinstance(value, (list, tuple)):
        for v in value:
            _feed(h, v)
    elif isinstance(value, np.ndarray) and value.dtype == object:
        for v in value.ravel():
            _feed(h, v)
    elif value is None:
        h.update(b"None")
    else:
        a = np.asarray(value)
        h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())


def single_env(rules, players: int, episodes: int = 40) -> str:
    import gymnasium as gym

    import generala_env  # noqa: F401

    h = hashlib.sha256()
    env = gym.make("Generala-v0", rules=rules, num_players=players, opponents="greedy" if players > 1 else None)
    pick = np.random.default_rng(1)
    for e in range(episodes):
        obs, info = env.reset(seed=e)
        _feed(h, (obs, info))
        done = False
        while not done:
            a = int(pick.choice(np.flatnonzero(info["action_mask"])))
            obs, r, term, trunc, info = env.step(a)
            _feed(h, (obs, r, term, trunc, info))
            done = term or trunc
    return h.hexdigest()[:16]


def vector_env(rules, players: int, n: int = 64, steps: int = 400) -> str:
    try:
        from generala_env.envs.vector import GeneralaVectorEnv
    except ImportError:  # a checkout from before generala_env's folders
        from generala_env.vector import GeneralaVectorEnv  # type: ignore[no-redef]

    h = hashlib.sha256()
    opponents = "greedy" if players > 1 else None
    try:
        venv = GeneralaVectorEnv(n, rules=rules, num_players=players, opponents=opponents, full_info=True, autoreset_mode="SameStep")
    except TypeError:  # a checkout from before the autoreset modes: same-step was the only one
        venv = GeneralaVectorEnv(n, rules=rules, num_players=players, opponents=opponents, full_info=True)
    obs, info = venv.reset(seed=3)
    _feed(h, (obs, info))
    pick = np.random.default_rng(2)
    for _ in range(steps):
        masks = venv.action_masks()
        u = pick.random(n)
        actions = np.array([np.flatnonzero(m)[int(x * m.sum())] for m, x in zip(masks, u, strict=True)])
        out = venv.step(actions)
        _feed(h, out)
    return h.hexdigest()[:16]


def pettingzoo(rules, players: int, games: int = 10) -> str:
    try:
        from generala_env.envs.multiagent import raw_env
    except ImportError:  # a checkout from before generala_env's folders
        from generala_env.multiagent import raw_env  # type: ignore[no-redef]

    h = hashlib.sha256()
    env = raw_env(rules=rules, num_players=players)
    pick = np.random.default_rng(4)
    for e in range(games):
        env.reset(seed=e)
        for _agent in env.agent_iter():
            obs, r, term, trunc, info = env.last()
            _feed(h, (obs, r, term, trunc, info))
            if term or trunc:
                env.step(None)
            else:
                env.step(int(pick.choice(np.flatnonzero(obs["action_mask"]))))
    return h.hexdigest()[:16]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--drop-info", default="", help="info keys to leave out of the hashes, comma-separated (default: none)")
    DROP.update(k for k in p.parse_args(argv).drop_info.split(",") if k)
    for rules, players in SETTINGS:
        name = rules if isinstance(rules, str) else "custom:" + ",".join(rules["lines"])
        print(f"single  {name:40s} p={players} {single_env(rules, players)}", flush=True)
        print(f"vector  {name:40s} p={players} {vector_env(rules, players)}", flush=True)
        if players > 1:
            try:
                print(f"pettingzoo {name:37s} p={players} {pettingzoo(rules, players)}", flush=True)
            except ImportError:
                print(f"pettingzoo {name:37s} p={players} (pettingzoo not installed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
