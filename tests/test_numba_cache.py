"""Numba's on-disk cache of the batched loops is never stale after an edit of the rules.

Numba keys a cached loop on the file that defines it (``batched.py``), but the loops inline
the rules (``engine.py``) and the encoding (``observe.py``): ``batched.cached_njit`` keys the
cache on those files too. Here a copy of the package runs a loop, the copy's ``engine.py``
is edited (``batched.py`` untouched), and the loop must follow the edit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

import generala_env  # noqa: E402

# how many dice a write throws, by the copy's rules (dice_needed inlines engine.dice_thrown)
PROBE = """
import numpy as np, generala_env, generala_env.compiled.batched as K
from generala_env.core.engine import tables
from generala_env.core.rules import load_rules
assert K.NUMBA
need = np.zeros(1, dtype=np.int64)
K.dice_needed(np.zeros(1, dtype=np.int64), np.array([32]), np.zeros(1, dtype=np.int64), tuple(tables(load_rules("classic"), 1)), need)
print(generala_env.__file__, int(need[0]))
"""


def _probe(root: Path, **more_env: str) -> tuple[str, int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GENERALA_NUMBA", "NUMBA_DISABLE_JIT", "NUMBA_CACHE_DIR")}
    env.update(PYTHONPATH=str(root), NUMBA_DEBUG_CACHE="1", OMP_NUM_THREADS="1", **more_env)
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env, capture_output=True, text=True, check=True).stdout
    where, thrown = out.strip().splitlines()[-1].rsplit(" ", 1)
    return where, int(thrown), out


def test_an_edit_of_the_rules_recompiles_the_cached_loops(tmp_path):
    package = tmp_path / "generala_env"
    shutil.copytree(Path(generala_env.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    where, thrown, _ = _probe(tmp_path)
    assert Path(where).parent == package  # the copy, not the installed package
    assert thrown == 5  # a write throws the next player's five dice

    _, thrown, log = _probe(tmp_path)
    assert thrown == 5 and "data loaded" in log  # unchanged sources: the cache is used

    engine = package / "core" / "engine.py"
    source = engine.read_text()
    edited = source.replace("if action < NUM_MASKS else DICE\n", "if action < NUM_MASKS else DICE - 1\n")
    assert edited != source
    engine.write_text(edited)
    _, thrown, _ = _probe(tmp_path)
    assert thrown == 4  # compiled anew from the edited rules, not loaded from the cache


def test_the_cache_goes_to_the_project_cache_folder_not_beside_the_sources(tmp_path):
    """An installed package lives in site-packages, where pip never removes files it did not
    install: numba's cache files there would outlive an uninstall (a ``generala_env/__pycache__``
    left behind shadows the next install). They go to ``$GENERALA_CACHE/numba``."""
    package = tmp_path / "site" / "generala_env"
    shutil.copytree(Path(generala_env.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    where, thrown, _ = _probe(package.parent, GENERALA_CACHE=str(cache))
    assert Path(where).parent == package and thrown == 5
    assert not [p.name for p in package.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert [p for p in (cache / "numba").rglob("*.nbi")]
    _, _, log = _probe(package.parent, GENERALA_CACHE=str(cache))
    assert "data loaded" in log  # and read from there


# -- no process compiles what the cache holds --------------------------------------------------
def _signatures() -> dict[str, int]:
    from generala_env.compiled.compiling import _LOOPS

    return {d.py_func.__qualname__: len(d.signatures) for d in list(_LOOPS)}


def _play_single(env, steps: int = 12) -> None:
    import numpy as np

    env.reset(seed=0)
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(int(np.flatnonzero(env.action_masks())[-1]))
        if terminated or truncated:
            env.reset()


def test_a_copied_env_and_read_only_actions_run_the_compiled_loops():
    """A pickled or deep-copied env (an env sent to a worker, a checker's copy) and actions
    from a read-only or strided array (``np.asarray`` of a JAX array, a column of a table)
    use the loops compiled for the original: numba types a read-only array apart from a
    writable one, and pickling makes every array writable, so a copy used to compile the
    whole engine again (a minute on a small machine) and keep a second entry in the cache."""
    import copy
    import pickle

    import numpy as np

    from generala_env.envs.env import GeneralaEnv
    from generala_env.envs.vector import GeneralaVectorEnv

    env, venv = GeneralaEnv(num_players=2), GeneralaVectorEnv(4, num_players=2)
    _play_single(env)
    venv.reset(seed=0)
    venv.step(np.zeros(4, dtype=np.int64))
    before = _signatures()

    for other in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        _play_single(other)
    for other in (pickle.loads(pickle.dumps(venv)), copy.deepcopy(venv), venv):
        other.reset(seed=1)
        frozen = np.zeros(4, dtype=np.int64)
        frozen.flags.writeable = False
        other.step(frozen)
        other.step(np.zeros((4, 2), dtype=np.int64)[:, 0])  # strided
    assert _signatures() == before


PLAY = """
import sys
if sys.argv[1] == "jax":
    import jax, jax.numpy as jnp
    jnp.zeros(3).block_until_ready()
import copy, pickle
import numpy as np
from generala_env.envs.env import GeneralaEnv
from generala_env.envs.vector import GeneralaVectorEnv
env, venv = GeneralaEnv(num_players=2), GeneralaVectorEnv(2, num_players=2)
for e in (env, copy.deepcopy(env)):
    e.reset(seed=0)
    e.step(int(np.flatnonzero(e.action_masks())[-1]))
for v in (venv, pickle.loads(pickle.dumps(venv))):
    v.reset(seed=0)
    v.step(np.zeros(2, dtype=np.int64))
print("played")
"""


def test_a_later_process_reads_the_cache_with_jax_imported_first_or_not(tmp_path):
    """A fresh cache: the first process compiles the engine and says so; later ones, JAX
    imported first or not, read every loop from the cache and print no compile notice."""
    pytest.importorskip("jax")
    env = {k: v for k, v in os.environ.items() if k not in ("GENERALA_NUMBA", "NUMBA_DISABLE_JIT", "NUMBA_CACHE_DIR", "GENERALA_QUIET")}
    env["GENERALA_CACHE"] = str(tmp_path / "cache")

    def run(first: str) -> str:
        done = subprocess.run([sys.executable, "-c", PLAY, first], env=env, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.strip() == "played", done.stderr
        return done.stderr

    assert "compiling the game engine for first use" in run("numba")
    for first in ("jax", "numba", "jax"):
        assert "compiling" not in run(first), first
