"""JAX is an extra: the core never imports it, and the JAX env says which extra it needs."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)


def test_the_core_and_generala_v0_never_import_jax():
    res = run_python(
        """
        import sys
        import gymnasium as gym
        import numpy as np
        import generala_env
        from generala_env.planning.model import Model
        from generala_env.envs.vector import GeneralaVectorEnv

        env = gym.make("Generala-v0", rules="double", num_players=2, opponents="random")
        obs, info = env.reset(seed=0)
        env.step(int(np.flatnonzero(info["action_mask"])[0]))
        GeneralaVectorEnv(4, rules="classic").reset(seed=0)
        Model("classic").initial_state()
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("jax", "jaxlib", "pgx", "flax", "optax")))
        """
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_the_jax_env_without_jax_names_its_extra():
    res = run_python(
        """
        import sys
        sys.modules["jax"] = None  # as if it were not installed
        import generala_env.jax.env
        """
    )
    assert res.returncode != 0
    assert (
        res.stderr.strip()
        .splitlines()[-1]
        .endswith('generala_env.jax.env needs jax and pgx, which are not installed; in the project\'s clone: pip install ".[jax]"')
    )
