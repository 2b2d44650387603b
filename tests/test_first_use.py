"""First use without silent stalls, and compiled once (issue 33, item 3).

The first compile of the loops in a process says so on stderr, once, before the wait; loops
read from the cache say nothing. The cache is keyed on what is compiled, not where it lies:
the same source reached through two paths (a clone's ``generala_env/`` and the installed one)
is compiled once. Compiles are counted with numba's own counters (``stats.cache_misses``
and ``stats.cache_hits`` of each loop), never timed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import generala_env.files.cache as cache_mod
from generala_env.files.cache import Progress, notice

NOTICE = "generala: compiling the game engine"


def test_a_notice_is_one_line_on_stderr_once_per_process(capsys, monkeypatch):
    monkeypatch.setattr(cache_mod, "_noticed", set())
    monkeypatch.delenv("GENERALA_QUIET", raising=False)
    notice("compile", "compiling the game engine for first use (about 30 s)")
    notice("compile", "compiling the game engine for first use (about 30 s)")
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == "generala: compiling the game engine for first use (about 30 s)\n"


def test_generala_quiet_silences_the_notices_and_the_bars(capsys, monkeypatch):
    monkeypatch.setattr(cache_mod, "_noticed", set())
    monkeypatch.setenv("GENERALA_QUIET", "1")
    notice("solve", "solving")
    bar = Progress("solving", 8, "sheet")
    bar.update(8)
    bar.close()
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("GENERALA_QUIET", "0")  # 0 is not quiet
    notice("solve again", "solving")
    assert capsys.readouterr().err == "generala: solving\n"


def test_without_tqdm_the_bar_is_a_line_at_each_quarter_and_never_passes_its_total(capsys, monkeypatch):
    monkeypatch.delenv("GENERALA_QUIET", raising=False)
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm fails
    bar = Progress("teacher's games", 8, "game")
    for _ in range(10):
        bar.update(1)
    bar.close()
    assert capsys.readouterr().err.splitlines() == [
        "teacher's games: 2 of 8 games",
        "teacher's games: 4 of 8 games",
        "teacher's games: 6 of 8 games",
        "teacher's games: 8 of 8 games",
    ]
    assert bar.done == 8


# -- the loops' cache, in new processes as a user starts them ---------------------------------------
numba = pytest.importorskip("numba")

LOOPS = """
from generala_env.compiled.batched import cached_njit


@cached_njit()
def triple(x):
    return 3 * x


@cached_njit()
def add(x, y):
    return x + y
"""

PROBE = """
import fu_loops
assert fu_loops.triple(14) == 42 and fu_loops.add(40, 2) == 42
loops = (fu_loops.triple, fu_loops.add)
print(fu_loops.__file__, sum(sum(f.stats.cache_misses.values()) for f in loops), sum(sum(f.stats.cache_hits.values()) for f in loops))
"""


def clean_env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GENERALA_NUMBA", "NUMBA_DISABLE_JIT", "NUMBA_CACHE_DIR", "GENERALA_CACHE", "GENERALA_QUIET")}
    env.update(OMP_NUM_THREADS="1", **more)
    return env


def probe(folder: Path, cache: Path, **more: str) -> tuple[Path, int, int, str]:
    """Run the two loops of ``folder/fu_loops.py``: the file, how many were compiled, how many
    were read from the cache, and stderr."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=folder, env=clean_env(PYTHONPATH=str(folder), GENERALA_CACHE=str(cache), **more), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    where, compiled, loaded = out.stdout.strip().splitlines()[-1].rsplit(" ", 2)
    return Path(where), int(compiled), int(loaded), out.stderr


def two_copies(tmp_path: Path) -> tuple[Path, Path]:
    clone, site = tmp_path / "clone", tmp_path / "venv" / "site-packages"
    for folder in (clone, site):
        folder.mkdir(parents=True)
        (folder / "fu_loops.py").write_text(LOOPS)
    return clone, site


def test_the_same_loops_at_two_paths_are_compiled_once(tmp_path):
    clone, site = two_copies(tmp_path)
    cache = tmp_path / "cache"
    where, compiled, loaded, err = probe(clone, cache)
    assert where == clone / "fu_loops.py" and (compiled, loaded) == (2, 0)
    assert err.count(NOTICE) == 1, err  # one line for the two compiles
    assert f"cached in {cache / 'numba'} afterwards" in err

    where, compiled, loaded, err = probe(site, cache)
    assert where == site / "fu_loops.py"  # another path ...
    assert (compiled, loaded) == (0, 2)  # ... the same code: both loops read from the cache
    assert NOTICE not in err, err  # and nothing said
    assert len(list((cache / "numba").glob("fu_loops-*"))) == 1  # one folder for both


def test_an_edited_copy_is_compiled_anew_and_leaves_the_others_entry_alone(tmp_path):
    clone, site = two_copies(tmp_path)
    cache = tmp_path / "cache"
    assert probe(clone, cache)[1:3] == (2, 0)
    (site / "fu_loops.py").write_text(LOOPS.replace("return 3 * x", "return x * 3"))
    _, compiled, loaded, err = probe(site, cache)
    assert (compiled, loaded) == (2, 0) and err.count(NOTICE) == 1  # other code: compiled, never the clone's loaded
    assert probe(clone, cache)[1:3] == (0, 2)  # the clone's entry is still there
    assert len(list((cache / "numba").glob("fu_loops-*"))) == 2


def test_a_compile_after_a_pause_is_announced_again(tmp_path):
    """The loops compile as they are first called: a compile that starts after the others
    ended (here: any, with no gap allowed) is a new wait, with its own line."""
    clone, _ = two_copies(tmp_path)
    (clone / "sitecustomize.py").write_text("import generala_env.compiled.compiling as K\nK.COMPILE_GAP = -1.0\n")
    _, compiled, _, err = probe(clone, tmp_path / "cache")
    assert compiled == 2
    lines = [line for line in err.splitlines() if line.startswith("generala: ")]
    assert [line.split(" (")[0] for line in lines] == [
        "generala: compiling the game engine for first use",
        "generala: compiling more of the game engine for first use",
    ], err


def test_generala_quiet_compiles_without_a_word(tmp_path):
    clone, _ = two_copies(tmp_path)
    _, compiled, _, err = probe(clone, tmp_path / "cache", GENERALA_QUIET="1")
    assert compiled == 2 and NOTICE not in err, err


def test_a_cache_that_is_not_used_is_announced_as_such(tmp_path):
    clone, _ = two_copies(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, 0o777)  # not private: not used
    _, compiled, _, err = probe(clone, cache)
    assert compiled == 2
    assert err.count(NOTICE) == 1 and "its cache is not used, so each process compiles it again" in err, err


ENGINE_PROBE = """
import numpy as np, generala_env, generala_env.compiled.batched as K
from generala_env.core.engine import tables
from generala_env.core.rules import load_rules
need = np.zeros(1, dtype=np.int64)
K.dice_needed(np.zeros(1, dtype=np.int64), np.array([32]), np.zeros(1, dtype=np.int64), tuple(tables(load_rules("classic"), 1)), need)
s = K.dice_needed.stats
print(generala_env.__file__, sum(s.cache_misses.values()), sum(s.cache_hits.values()))
"""


def test_a_clone_and_its_install_share_the_compiled_engine(tmp_path):
    """The project's own loops: a copy of ``generala_env`` (the clone's source tree, first on
    the path when Python starts in the clone's root) and the installed package."""
    import generala_env

    installed = Path(generala_env.__file__).resolve().parent
    clone = tmp_path / "clone"
    shutil.copytree(installed, clone / "generala_env", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"

    def run(cwd: Path, path: str) -> tuple[Path, int, int, str]:
        out = subprocess.run(
            [sys.executable, "-c", ENGINE_PROBE], cwd=cwd, env=clean_env(PYTHONPATH=path, GENERALA_CACHE=str(cache)), capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr[-3000:]
        where, compiled, loaded = out.stdout.strip().splitlines()[-1].rsplit(" ", 2)
        return Path(where).parent, int(compiled), int(loaded), out.stderr

    where, compiled, loaded, err = run(clone, str(clone))
    assert where == clone / "generala_env" and (compiled, loaded) == (1, 0) and err.count(NOTICE) == 1, err
    where, compiled, loaded, err = run(tmp_path, "")
    assert where == installed and (compiled, loaded) == (0, 1), err
    assert NOTICE not in err, err


# -- the one-player solver's table ----------------------------------------------------------------
def test_the_solver_counts_every_sheet_it_solves():
    from generala_agents.solver import Solver

    done: list[int] = []
    solver = Solver({"lines": ["ones", "generala", "double_generala"]})
    solver.solve(done.append)
    # 7 sheets not full, and the 3 of them with generala filled once more (scored or not)
    assert sum(done) == solver.sheets == 10


def test_the_solve_estimate_follows_the_measured_cost():
    from generala_agents.solver import solve_seconds_estimate
    from generala_env.core.rules import load_rules

    classic = load_rules("classic")
    assert solve_seconds_estimate(classic) == 0.5
    assert solve_seconds_estimate(load_rules({**load_rules("double").settings(), "locked_holds": True})) == 9.0


def test_a_long_solve_is_announced_with_a_bar_and_a_cached_one_is_not(tmp_path, monkeypatch, capsys):
    import generala_agents.solver as solver_mod

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GENERALA_QUIET", raising=False)
    monkeypatch.setattr(cache_mod, "_noticed", set())
    monkeypatch.setattr(solver_mod, "NOTICE_SECONDS", 0.0)  # every solve counts as long
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the plain bar
    rules = {"lines": ["ones", "fives", "generala"]}
    _, source = solver_mod.load_or_solve(rules)
    err = capsys.readouterr().err.splitlines()
    path = solver_mod.cache_path(solver_mod.load_rules(rules))
    assert source == "solved"
    assert err[0].startswith("generala: solving the one-player game of rules ") and err[0].endswith(f"; cached in {path} afterwards)")
    assert err[-1] == "solving: 7 of 7 sheets"
    monkeypatch.setattr(cache_mod, "_noticed", set())
    _, source = solver_mod.load_or_solve(rules)
    assert source == "cache" and capsys.readouterr().err == ""


def test_a_program_that_loads_torch_says_so_before_the_wait():
    """Importing torch and SB3 takes seconds (twenty on a busy machine): train says so first."""
    env = {k: v for k, v in os.environ.items() if k != "GENERALA_QUIET"}
    res = subprocess.run([sys.executable, "-m", "generala_training.cli", "train", "--help"], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "generala: loading torch and stable-baselines3" in res.stderr and "--config" in res.stdout


def test_help_of_a_program_whose_extra_is_missing_says_what_it_does_and_what_to_install(monkeypatch, capsys):
    from generala_training.cli import main

    monkeypatch.setitem(sys.modules, "fastapi", None)  # the serve extra missing
    assert main(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("generala serve: play in the browser")
        and 'it needs the serve extra, which is not installed; in the project\'s clone: pip install ".[serve]"' in out
    )


def test_a_waits_estimate_is_this_machines_last_measure_or_a_range(tmp_path, monkeypatch, capsys):
    """A notice's estimate: a range while this machine has not measured the wait, then what the
    last one took here (kept in the cache folder's timings.json); a solve is measured as it runs."""
    import generala_agents.solver as solver_mod

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GENERALA_QUIET", raising=False)
    assert cache_mod.how_long("compiling the game engine", 20, 90) == "20–90 s"
    cache_mod.record_seconds("compiling the game engine", 41.26)
    assert cache_mod.how_long("compiling the game engine", 20, 90) == "about 41 s, as it took here last time"
    (tmp_path / "cache" / cache_mod.TIMINGS).write_text("not json")
    assert cache_mod.measured_seconds("compiling the game engine") is None  # a damaged file: a range again

    monkeypatch.setattr(cache_mod, "_noticed", set())
    monkeypatch.setattr(solver_mod, "NOTICE_SECONDS", 0.0)  # every solve counts as long
    monkeypatch.setitem(sys.modules, "tqdm", None)
    rules = {"lines": ["ones", "fives", "generala"]}
    solver_mod.load_or_solve(rules, use_cache=False)
    first = capsys.readouterr().err.splitlines()[0]
    assert "(0.0039–0.012 s;" in first  # three lines: 0.5 s x 2 ** -7 on one core to three times it, never solved here
    monkeypatch.setattr(cache_mod, "_noticed", set())
    solver_mod.load_or_solve(rules, use_cache=False)
    assert "as it took here last time" in capsys.readouterr().err.splitlines()[0]
