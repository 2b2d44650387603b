"""Caches that cannot be forged (issue 34): numba's compiled loops and the solvers' tables are
read only from private folders, a damaged or unwritable cache costs one warning and never an
error, forged solver values are refused, and nothing blocks on a FIFO.

Each test makes the hostile cache the way a red-teamer would (a folder of another user, a
group-writable one, a pickle that creates a marker file when it is unpickled, a FIFO, values
with a recomputed checksum) and checks the safe behaviour and that the legitimate use still
works. Another user is user id 12345 (``os.chown``): those tests need root.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import generala_env.files.cache as cache_mod
from generala_env.compiled.numba_cache import with_disk_cache
from generala_env.files.cache import CacheWarning

OTHER = 12345  # a user id that is not ours
ROOT_ONLY = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing a file's owner needs root")
REPO = Path(__file__).resolve().parent.parent
TINY = {"lines": ["ones", "fives", "generala"]}


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch):
    """Each test starts as a new process would: no cache warning given yet, no table shared."""
    from generala_agents import shared

    monkeypatch.setattr(cache_mod, "_reported", set())
    monkeypatch.setattr(shared, "_tables", {})


def give_away(*paths: Path, mode: int | None = None) -> None:
    """``paths`` and everything under them owned by the other user (and chmod ``mode``)."""
    for top in paths:
        for p in [top, *top.rglob("*")]:
            os.chown(p, OTHER, OTHER, follow_symlinks=False)
            if mode is not None and not p.is_symlink():
                os.chmod(p, mode)


class Marker:
    """A pickle that creates a file when it is unpickled: code run from a cache."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def evil(marker: Path) -> bytes:
    return pickle.dumps(Marker(marker))


def cache_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, CacheWarning)]


def env_without_cache_settings(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GENERALA_NUMBA", "NUMBA_DISABLE_JIT", "NUMBA_CACHE_DIR", "GENERALA_CACHE")}
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="default", **more)
    return env


# -- numba's cache, in this process: a function of one line, compiled in a moment -------------------
numba = pytest.importorskip("numba")


def add_one(x):
    return x + 1


def compiled():
    """``add_one`` as a fresh numba function with the project's on-disk cache, as the loops are."""
    return with_disk_cache(numba.njit(add_one))


def loops_folder(root: Path, source: Path, module: str, inlined: tuple[Path, ...] = ()) -> Path:
    """The folder of the cache of the loops of ``module`` (defined in ``source``, inlining the
    files ``inlined``) under the cache root ``root``: named after the module and what is
    compiled (the SHA-256 of the source's, then of the inlined files' bytes), never after
    a path."""
    inlined_digest = hashlib.sha256(b"".join(f.read_bytes() for f in inlined)).hexdigest() if inlined else ""
    own = hashlib.sha256(source.read_bytes()).hexdigest()
    return root / "numba" / f"{module}-{hashlib.sha256(f'{own} {inlined_digest}'.encode()).hexdigest()[:16]}"


def index_file(root: Path) -> Path:
    """Where numba keeps the index (a pickle) of ``add_one``'s cache under the cache root ``root``:
    numba's own file name, in the project's folder for this module's content."""
    name = f"{Path(__file__).stem}.add_one-{add_one.__code__.co_firstlineno}.py{sys.version_info[0]}{sys.version_info[1]}{sys.abiflags}.nbi"
    return loops_folder(root, Path(__file__), add_one.__module__) / name


def run_once() -> int:
    """Compile (or load) ``add_one`` and call it; its answer."""
    f = compiled()
    return int(f(41))


def test_a_private_cache_is_written_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        first = compiled()
        assert first(41) == 42
        again = compiled()
        assert again(41) == 42
    assert cache_warnings(record) == []
    assert first.stats.cache_misses and again.stats.cache_hits  # written by the first, read by the second
    index = index_file(tmp_path / "cache")
    assert index.is_file()
    for folder in (tmp_path / "cache", tmp_path / "cache" / "numba", index.parent):  # made readable by this user only
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert not list(REPO.joinpath("tests", "__pycache__").glob("test_trust_caches.add_one*"))  # never beside the sources


def test_the_forged_index_lies_where_numba_reads_it(tmp_path, monkeypatch):
    """The control for the tests below: the same forged index in a private folder of this user
    is unpickled (a private cache is trusted, as ssh and pip trust theirs). So when they find
    no marker, it is the owner and mode check that kept it out."""
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
    assert run_once() == 42  # a private cache with add_one in it
    marker = tmp_path / "ran"
    index_file(tmp_path / "cache").write_bytes(evil(marker))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert run_once() == 42
    assert marker.exists()


HOSTILE_FOLDERS = {
    "root of another user": lambda root: give_away(root),
    "root writable by all": lambda root: os.chmod(root, 0o777),
    "root writable by the group": lambda root: os.chmod(root, 0o770),
    "numba folder of another user": lambda root: give_away(root / "numba"),
    "numba folder writable by all": lambda root: os.chmod(root / "numba", 0o777),
    "source folder of another user, in a private root": lambda root: give_away(index_file(root).parent, mode=0o755),
    "source folder writable by all": lambda root: os.chmod(index_file(root).parent, 0o777),
    "index file of another user": lambda root: give_away(index_file(root), mode=0o644),
    "index file writable by all": lambda root: os.chmod(index_file(root), 0o666),
}


@ROOT_ONLY
@pytest.mark.parametrize("how", list(HOSTILE_FOLDERS))
def test_a_forged_numba_index_outside_a_private_folder_is_never_unpickled(tmp_path, monkeypatch, how):
    root = tmp_path / "cache"
    index = index_file(root)
    index.parent.mkdir(parents=True)
    marker = tmp_path / "ran"
    index.write_bytes(evil(marker))
    HOSTILE_FOLDERS[how](root)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in root.rglob("*"))
    monkeypatch.setenv("GENERALA_CACHE", str(root))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert run_once() == 42 and run_once() == 42  # compiled in memory, twice
    assert not marker.exists()
    said = cache_warnings(record)
    assert len(said) == 1, said
    assert "is not used" in said[0] or ("cannot be read" in said[0] and "compiled without it" in said[0]), said
    assert sorted((p.name, p.stat().st_mtime_ns) for p in root.rglob("*")) == before  # nothing written there or replaced


def test_a_cache_root_that_is_a_link_is_not_followed(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "link"))
    with pytest.warns(CacheWarning, match="symbolic link"):
        assert run_once() == 42
    assert list(real.iterdir()) == []


def test_numba_cache_dir_is_checked_too(tmp_path, monkeypatch):
    """``NUMBA_CACHE_DIR`` wins over the project's folder, under the same rule."""
    from numba.core import config

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    marker = tmp_path / "ran"
    forged = shared / index_file(tmp_path).relative_to(tmp_path / "numba")
    forged.parent.mkdir()
    forged.write_bytes(evil(marker))
    os.chmod(forged.parent, 0o777)
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "private"))
    monkeypatch.setattr(config, "CACHE_DIR", str(shared))
    with pytest.warns(CacheWarning, match="group or others can write"):
        assert run_once() == 42
    assert not marker.exists()
    os.chmod(shared, 0o700)
    os.chmod(forged.parent, 0o700)
    forged.unlink()
    monkeypatch.setattr(cache_mod, "_reported", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_once() == 42
    assert forged.is_file()  # a private NUMBA_CACHE_DIR is used
    assert not (tmp_path / "private" / "numba").exists()


DAMAGE = {
    "garbage": lambda b: b"\x00\xffnot a pickle at all" * 7,
    "truncated": lambda b: b[: len(b) // 3],
    "empty": lambda b: b"",
    "another structure": lambda b: pickle.dumps(numba.__version__) + pickle.dumps(42),
    "a module that is not there": lambda b: b"cno_such_module\nThing\n.",
}


@pytest.mark.parametrize("how", list(DAMAGE))
@pytest.mark.parametrize("which", ["index", "data"])
def test_a_damaged_numba_cache_is_compiled_again_with_one_warning(tmp_path, monkeypatch, how, which):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
    assert run_once() == 42
    index = index_file(tmp_path / "cache")
    target = index if which == "index" else next(index.parent.glob(index.name.replace(".nbi", ".*.nbc")))
    target.write_bytes(DAMAGE[how](target.read_bytes()))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        f = compiled()
        assert f(41) == 42
        assert f.stats.cache_misses  # compiled, not loaded
        g = compiled()
        assert g(41) == 42
    said = cache_warnings(record)
    assert len(said) == 1 and "cannot be read" in said[0] and "compiled without it" in said[0], said
    assert g.stats.cache_hits  # the damaged file was written again, and is read from now on


def full_disk(monkeypatch) -> None:
    """Every temporary file made from now on writes into /dev/full: ENOSPC for real."""
    import tempfile

    real = tempfile.mkstemp

    def into_dev_full(*args, **kwargs):
        fd, name = real(*args, **kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name

    monkeypatch.setattr(tempfile, "mkstemp", into_dev_full)


def test_a_numba_cache_on_a_full_disk_compiles_in_memory_with_one_warning(tmp_path, monkeypatch):
    """ENOSPC for real: the cache's files are written into /dev/full."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
    full_disk(monkeypatch)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert run_once() == 42 and run_once() == 42
    said = cache_warnings(record)
    assert len(said) == 1 and "cannot be written" in said[0] and "No space left" in said[0], said
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # no index, no data, no temp file


# the review's reproductions, in a new process as a user runs a game
GAME = "import gymnasium as gym, generala_env; e = gym.make('Generala-v0'); e.reset(seed=0); print('played', e.step(32)[1])"


def forge_numba_indexes(root: Path, payload: bytes) -> list[Path]:
    """``payload`` as the cache index of every function of ``generala_env/compiled/one_game.py`` (a game's
    compiled calls), ``generala_env/compiled/env_loops.py`` (the env's step) and ``generala_env/compiled/batched.py``
    (the loops over games), where numba looks for it under the cache root ``root``."""
    import ast

    import generala_env
    from generala_env.compiled.compiling import INLINED_SOURCES

    package = Path(generala_env.__file__).resolve().parent
    inlined = tuple(package / f for f in INLINED_SOURCES)
    made = []
    for stem in ("one_game", "env_loops", "batched"):
        source = package / "compiled" / f"{stem}.py"
        folder = loops_folder(root, source, f"generala_env.compiled.{stem}", inlined)
        folder.mkdir(parents=True, exist_ok=True)
        for node in ast.parse(source.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                for line in {node.lineno, *(d.lineno for d in node.decorator_list)}:
                    made.append(folder / f"{stem}.{node.name}-{line}.py{sys.version_info[0]}{sys.version_info[1]}{sys.abiflags}.nbi")
                    made[-1].write_bytes(payload)
    return made


@ROOT_ONLY
def test_a_game_never_runs_a_pickle_from_a_cache_another_user_can_write(tmp_path):
    """The review's reproduction: a cache folder of another user, open to all, holding a forged
    index for every loop of the env; the next game of this user (root here) must not run it."""
    root, marker = tmp_path / "cache", tmp_path / "ran"
    forge_numba_indexes(root, evil(marker))
    give_away(root, mode=0o777)
    out = subprocess.run([sys.executable, "-c", GAME], cwd=tmp_path, env=env_without_cache_settings(GENERALA_CACHE=str(root)), capture_output=True, text=True)
    assert out.returncode == 0 and "played" in out.stdout, out.stderr[-3000:]
    assert not marker.exists()
    assert out.stderr.count("CacheWarning") == 1 and "belongs to user id 12345" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_a_game_with_garbage_numba_indexes_plays_and_mends_the_cache(tmp_path):
    root = tmp_path / "cache"
    forge_numba_indexes(root, b"garbage, not a pickle")
    env = env_without_cache_settings(GENERALA_CACHE=str(root), NUMBA_DEBUG_CACHE="1")
    out = subprocess.run([sys.executable, "-c", GAME], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "played" in out.stdout, out.stderr[-3000:]
    assert out.stderr.count("CacheWarning") == 1 and "cannot be read" in out.stderr and "Traceback" not in out.stderr, out.stderr
    again = subprocess.run([sys.executable, "-c", GAME], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "CacheWarning" not in again.stderr, again.stderr
    assert "data loaded" in again.stdout  # the indexes were written again, and the loops come from the cache


# -- the one-player solver's table ----------------------------------------------------------------
def forge_one_player(rules, change) -> Path:
    """The cached table of ``rules`` with its values changed by ``change`` and the checksum
    recomputed for them, as whoever edits the file would."""
    from generala_agents.solver import SOLVER_VERSION, cache_meta, cache_path

    path = cache_path(rules)
    with np.load(path) as z:
        V = z["V"].copy()
    change(V)
    np.savez(path, V=V, meta=np.array(json.dumps(cache_meta(rules, SOLVER_VERSION, V, 0.0))))
    return path


FORGED_VALUES = {
    "999 at the start": (lambda V: V.__setitem__(0, 999.0), "lies outside"),
    "a plausible start, one point up": (lambda V: V.__setitem__(0, V[0] + 1.0), "do not follow from one another"),
    "every value doubled": (lambda V: V.__imul__(2.0), "do not follow from one another"),
    "every value times ten": (lambda V: V.__imul__(10.0), "lies outside"),
    "a negative value": (lambda V: V.__setitem__(4, -1.0), "lies outside"),
    "not a number": (lambda V: V.__setitem__(6, np.nan), "not finite"),
    "infinite": (lambda V: V.__setitem__(0, np.inf), "not finite"),
    "a full sheet worth points": (lambda V: V.__setitem__(-2, 5.0), "lies outside"),
}


@pytest.mark.parametrize("how", list(FORGED_VALUES))
def test_forged_one_player_values_with_a_recomputed_checksum_are_refused(tmp_path, monkeypatch, how):
    from generala_agents.solver import load_or_solve
    from generala_env.core.rules import load_rules

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules(TINY)
    real, source = load_or_solve(rules)
    assert source == "solved" and load_or_solve(rules)[1] == "cache"  # the legitimate cache is used
    change, why = FORGED_VALUES[how]
    forge_one_player(rules, change)
    with pytest.warns(CacheWarning, match=why):
        s, source = load_or_solve(rules)
    assert source == "solved" and s.expected_score == pytest.approx(real.expected_score, abs=1e-12)
    assert load_or_solve(rules)[1] == "cache"  # the forged file was replaced by the values solved


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder", "another user's"])
def test_a_one_player_cache_file_that_is_not_ours_is_neither_read_nor_replaced(tmp_path, monkeypatch, kind):
    from generala_agents.solver import cache_path, load_or_solve
    from generala_env.core.rules import load_rules

    if kind == "another user's" and os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root")
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
    rules = load_rules(TINY)
    real = load_or_solve(rules)[0].expected_score
    path = cache_path(rules)
    outside = tmp_path / "elsewhere.npz"
    os.replace(path, outside)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        forge = np.load(outside)
        np.savez(outside, V=np.full_like(forge["V"], 999.0), meta=forge["meta"])
        path.symlink_to(outside)
    elif kind == "folder":
        path.mkdir()
    else:
        os.replace(outside, path)
        give_away(path)
    with pytest.warns(CacheWarning, match="neither read nor replaced"):
        s, source = load_or_solve(rules)  # a FIFO would block a plain open(): it is never opened
    assert source == "solved" and s.expected_score == pytest.approx(real)
    left = {"fifo": path.is_fifo, "symlink": path.is_symlink, "folder": path.is_dir, "another user's": lambda: path.lstat().st_uid == OTHER}
    assert left[kind]()  # as it was: not replaced
    if kind == "symlink":
        assert np.load(outside)["V"][0] == 999.0  # nothing written through the link


def test_a_one_player_cache_bigger_than_its_table_is_not_read(tmp_path, monkeypatch):
    """A file of gigabytes at the cache's name is refused by its size, not read into memory."""
    from generala_agents.solver import cache_path, load_or_solve
    from generala_env.core.rules import load_rules

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules(TINY)
    real = load_or_solve(rules)[0].expected_score
    with open(cache_path(rules), "r+b") as f:
        f.truncate(8 << 30)  # sparse: no disk used
    with pytest.warns(CacheWarning, match=r"is not used: it has 8,589,934,592 bytes, more than the [\d,]+ read"):
        s, source = load_or_solve(rules)
    assert source == "solved" and s.expected_score == pytest.approx(real)
    assert cache_path(rules).stat().st_size < 1 << 20  # replaced by the table solved


@ROOT_ONLY
@pytest.mark.parametrize("mode", [None, 0o777, 0o775])
def test_a_solver_cache_folder_that_is_not_private_is_neither_read_nor_written(tmp_path, monkeypatch, mode):
    from generala_agents.solver import cache_path, load_or_solve
    from generala_env.core.rules import load_rules

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules(TINY)
    real = load_or_solve(rules)[0].expected_score
    forge_one_player(rules, lambda V: V.__setitem__(0, 999.0))
    before = cache_path(rules).read_bytes()
    if mode is None:
        give_away(tmp_path)
    else:
        os.chmod(tmp_path, mode)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        s, source = load_or_solve(rules)
    assert source == "solved" and s.expected_score == pytest.approx(real)
    said = cache_warnings(record)
    assert len(said) == 1 and said[0].startswith(f"the cache folder {tmp_path} is not used"), said  # not read: the folder's warning, not the values'
    assert cache_path(rules).read_bytes() == before  # not rewritten


def solve_cli(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    """``generala solve``; the timeout only keeps a hang from stopping the suite."""
    return subprocess.run([sys.executable, "-m", "generala_training.cli", "solve", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def warning_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "warning" in line.lower()]


def test_generala_solve_refuses_forged_values_in_one_line(tmp_path):
    from generala_agents.solver import cache_path
    from generala_env.core.rules import load_rules

    rules_file = tmp_path / "tiny.yaml"
    rules_file.write_text("lines: [ones, fives, generala]\n")
    env = env_without_cache_settings(GENERALA_CACHE=str(tmp_path / "cache"), GENERALA_NUMBA="0")
    first = solve_cli("--rules", str(rules_file), env=env)
    assert first.returncode == 0 and "solved in" in first.stdout, first.stderr
    score = first.stdout.split("optimal expected score ")[1].split()[0]
    path = tmp_path / "cache" / cache_path(load_rules(str(rules_file))).name
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
        forge_one_player(load_rules(str(rules_file)), lambda V: V.__setitem__(0, 999.0))
    assert path.is_file()
    forged = solve_cli("--rules", str(rules_file), env=env)
    assert forged.returncode == 0 and "999" not in forged.stdout and f"optimal expected score {score}" in forged.stdout, forged.stdout
    assert "solved in" in forged.stdout and "read from cache" not in forged.stdout
    lines = warning_lines(forged.stderr)
    assert len(lines) == 1 and lines[0].startswith("generala solve: warning: the solver cache") and "lies outside" in lines[0], forged.stderr
    assert forged.stderr.strip() == lines[0]  # that one line, and nothing else
    again = solve_cli("--rules", str(rules_file), env=env)
    assert "read from cache" in again.stdout and again.stderr == ""


# -- the two-player table -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_player_files(tmp_path_factory):
    """A solved two-player table of :data:`TINY` and its record, as files (solved once)."""
    from generala_agents.solver2p import cache_path, load_or_solve_2p
    from generala_env.core.rules import load_rules

    folder = tmp_path_factory.mktemp("solved2p")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GENERALA_CACHE", str(folder))
        rules = load_rules(TINY)
        s, source = load_or_solve_2p(rules)
        assert source == "solved"
        path = cache_path(rules)
        return {"npy": path.read_bytes(), "json": path.with_suffix(".json").read_bytes(), "name": path.name, "value": s.first_player_value}


def place(tmp_path, files) -> Path:
    from generala_agents.solver2p import cache_path
    from generala_env.core.rules import load_rules

    path = cache_path(load_rules(TINY))
    assert path.parent == tmp_path and path.name == files["name"]
    path.write_bytes(files["npy"])
    path.with_suffix(".json").write_bytes(files["json"])
    return path


def test_agents_on_the_same_rules_share_one_read_only_table(tmp_path, monkeypatch, two_player_files):
    import generala_agents as agents
    from generala_agents.solver2p import is_cached, shared_table

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    assert not is_cached(TINY) and shared_table(TINY) is None  # nothing cached: nothing solved either
    place(tmp_path, two_player_files)
    assert is_cached(TINY)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = agents.load("optimal-2p", rules=TINY)
        b = agents.load("optimal-2p", rules=TINY)
    assert a.solver is b.solver is shared_table(TINY) and a.source == "cache"
    assert isinstance(a.solver.V, np.memmap) and not a.solver.V.flags.writeable
    assert a.first_player_value == pytest.approx(two_player_files["value"], abs=1e-7)


def forge_two_player(path: Path, change) -> None:
    from generala_agents.solver import cache_meta
    from generala_agents.solver2p import SOLVER2P_VERSION
    from generala_env.core.rules import load_rules

    V = np.load(path).copy()
    change(V)
    np.save(path, V)
    meta = cache_meta(load_rules(TINY), SOLVER2P_VERSION, V, 1.0, first_player_value=float(V[0]))
    path.with_suffix(".json").write_text(json.dumps(meta))


FORGED_CHANCES = {
    "a sure win at the start": (lambda V: V.__setitem__(slice(None), 0.999), "do not follow from one another"),
    "a chance above 1": (lambda V: V.__setitem__(3, 999.0), "outside 0 to 1"),
    "a negative chance": (lambda V: V.__setitem__(-1, -0.5), "outside 0 to 1"),
    "not a number": (lambda V: V.__setitem__(0, np.nan), "not finite"),
}


@pytest.mark.parametrize("how", list(FORGED_CHANCES))
def test_a_forged_two_player_table_is_refused_and_a_hint_never_solves(tmp_path, monkeypatch, two_player_files, how):
    from generala_agents.solver2p import TwoPlayerSolver, is_cached, shared_table
    from generala_env.core.rules import load_rules
    from generala_play.hints import two_player_table

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    path = place(tmp_path, two_player_files)
    change, why = FORGED_CHANCES[how]
    forge_two_player(path, change)
    assert is_cached(TINY)  # the record names these rules: only the values give the forgery away

    def no_solve(self, *args, **kwargs):
        raise AssertionError("a hint started a solve")

    monkeypatch.setattr(TwoPlayerSolver, "solve", no_solve)
    with pytest.warns(CacheWarning, match=why):
        got = two_player_table(load_rules(TINY))
    assert isinstance(got, str) and "not in the cache" in got
    assert shared_table(TINY) is None
    place(tmp_path, two_player_files)
    monkeypatch.setattr(cache_mod, "_reported", set())
    got = two_player_table(load_rules(TINY))  # the genuine table: a hint at once, still no solve
    assert not isinstance(got, str) and got.first_player_value == pytest.approx(two_player_files["value"], abs=1e-7)


@pytest.mark.parametrize("which", ["npy", "json"])
@pytest.mark.parametrize("kind", ["fifo", "symlink", "another user's", "too big", "truncated"])
def test_a_two_player_file_that_is_not_a_table_is_refused_without_blocking(tmp_path, monkeypatch, two_player_files, which, kind):
    from generala_agents.solver2p import shared_table

    if kind == "another user's" and os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root")
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    path = place(tmp_path, two_player_files)
    target = path if which == "npy" else path.with_suffix(".json")
    if kind == "fifo":
        target.unlink()
        os.mkfifo(target)  # a plain open() for reading would wait for a writer forever
    elif kind == "symlink":
        elsewhere = tmp_path / "elsewhere"
        os.replace(target, elsewhere)
        target.symlink_to(elsewhere)
    elif kind == "another user's":
        give_away(target)
    elif kind == "too big":
        with open(target, "ab") as f:
            f.write(b" " * (2 << 20))
    else:
        target.write_bytes(target.read_bytes()[: len(target.read_bytes()) // 2])
    with pytest.warns(CacheWarning, match="is not used"):
        assert shared_table(TINY) is None


def test_a_table_that_cannot_be_written_is_kept_in_memory_with_a_warning(tmp_path, monkeypatch, two_player_files):
    """ENOSPC for real (/dev/full) while the table is written: a warning, the table in memory, no file left."""
    from generala_agents.solver2p import TwoPlayerSolver, load_or_solve_2p

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    full_disk(monkeypatch)
    with pytest.warns(RuntimeWarning, match="No space left"):
        s, source = load_or_solve_2p(TINY)
    assert source == "solved" and isinstance(s, TwoPlayerSolver)
    assert s.first_player_value == pytest.approx(two_player_files["value"], abs=1e-7)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_generala_solve_does_not_hang_on_a_fifo_beside_the_table(tmp_path):
    """The review's reproduction: a FIFO as the two-player table's record, which a plain read
    would wait on forever."""
    from generala_agents.solver2p import cache_path
    from generala_env.core.rules import load_rules

    rules_file = tmp_path / "tiny.yaml"
    rules_file.write_text("lines: [ones, fives, generala]\n")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    npy = cache / cache_path(load_rules(str(rules_file))).name
    npy.write_bytes(b"\x93NUMPY")
    os.mkfifo(npy.with_suffix(".json"))
    env = env_without_cache_settings(GENERALA_CACHE=str(cache))
    out = solve_cli("--rules", str(rules_file), "--players", "2", env=env)
    assert out.returncode == 0 and "P(win) + 1/2 P(draw)" in out.stdout and "solved in" in out.stdout, out.stderr[-3000:]
    lines = warning_lines(out.stderr)
    assert len(lines) == 1 and "named pipe" in lines[0] and "neither read nor replaced" in lines[0], out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    assert npy.with_suffix(".json").is_fifo() and npy.read_bytes() == b"\x93NUMPY"  # left for the user to remove
    npy.with_suffix(".json").unlink()
    npy.unlink()
    solved = solve_cli("--rules", str(rules_file), "--players", "2", env=env)
    assert solved.returncode == 0 and "solved in" in solved.stdout and not warning_lines(solved.stderr), solved.stderr[-3000:]
    cached = solve_cli("--rules", str(rules_file), "--players", "2", env=env)
    assert "read from cache" in cached.stdout and not warning_lines(cached.stderr)


# -- a cache nobody may write -------------------------------------------------------------------
@pytest.mark.parametrize("error", [errno.EACCES, errno.EROFS])
def test_a_read_only_cache_works_with_a_warning(tmp_path, monkeypatch, capsys, error):
    """A private cache folder nobody may write (a read-only copy, a read-only file system; root
    writes anywhere, so the refusal comes from where a new file is made in the folder)."""
    import tempfile

    from generala_training.cli import main

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))
    assert run_once() == 42  # the cache folders are there: only writing fails

    def read_only(*args, **kwargs):
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert int(with_disk_cache(numba.njit(lambda x: x * 2))(21)) == 42  # a loop not in the cache yet
    said = cache_warnings(record)
    assert len(said) == 1 and "cannot be written" in said[0] and os.strerror(error) in said[0], said
    rules_file = tmp_path / "tiny.yaml"
    rules_file.write_text("lines: [ones, fives, generala]\n")
    assert main(["solve", "--rules", str(rules_file)]) == 0
    out, err = capsys.readouterr()
    assert "optimal expected score" in out and "solved in" in out
    assert err.count("\n") == 1 and err.startswith("generala solve: warning: cannot write the solver cache") and os.strerror(error) in err, err
    assert not list((tmp_path / "cache").glob("solve-*"))  # nothing written, no temp file left
