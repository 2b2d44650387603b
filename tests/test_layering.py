"""The layers, the opponent registry between them, the extras, and what importing costs.

``generala_env`` stands alone (it imports neither ``agents`` nor ``training``, not even
inside a function) and finds its opponents by name in :mod:`generala_env.envs.opponents`, which
``agents`` and other installed packages fill; playing against agents, shipped checkpoints
included, loads no torch; a program whose extra is missing says which to install; and the
dice tables, built with arrays at import, are the ones the plain loops of their definition give.
"""

from __future__ import annotations

import ast
import itertools
import os
import re
import shutil
import subprocess
import sys
import textwrap
from math import factorial
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from helpers import ROOT

import generala_agents as agents
import generala_env
from generala_agents.base import AgentError
from generala_agents.ppo import SHIPPED
from generala_env.core import dice
from generala_env.core.rules import load_rules
from generala_env.envs import opponents
from generala_env.envs.vector import BatchedRandom, GeneralaVectorEnv, PerGameOpponent, uniform_legal


# -- the dice tables, built with arrays at import, against the definition -------------------
def keep_roll_prob_by_loops() -> np.ndarray:
    """``KEEP_ROLL_PROB`` as the definition says it, one pair of keep and roll at a time."""

    def multinomial_prob(counts) -> float:
        n = int(sum(counts))
        ways = factorial(n)
        for c in counts:
            ways //= factorial(int(c))
        return ways / dice.FACES**n

    out = np.zeros((dice.NUM_KEEPS, dice.NUM_ROLLS), dtype=np.float64)
    for k, kc in enumerate(dice.KEEP_COUNTS):
        for r, rc in enumerate(dice.ROLL_COUNTS):
            d = rc - kc
            if (d >= 0).all():
                out[k, r] = multinomial_prob(d)
    return out


def test_keep_roll_prob_is_the_multinomial_of_the_missing_dice():
    assert dice.KEEP_ROLL_PROB.dtype == np.float64
    assert np.array_equal(dice.KEEP_ROLL_PROB, keep_roll_prob_by_loops())  # bit for bit
    assert np.allclose(dice.KEEP_ROLL_PROB.sum(axis=1), 1.0)
    assert dice.FULL_ROLL_PROB[dice.roll_index([6] * 5)] == 1 / 6**5


def test_the_other_tables_by_loops():
    rolls = list(itertools.combinations_with_replacement(range(1, 7), 5))
    keeps = [k for n in range(6) for k in itertools.combinations_with_replacement(range(1, 7), n)]
    assert dice.ROLLS.tolist() == [list(r) for r in rolls]
    assert keeps == dice.KEEPS_LIST
    assert dice.ROLL_COUNTS.tolist() == [dice.counts_of(r).tolist() for r in rolls]
    assert dice.KEEP_COUNTS.tolist() == [dice.counts_of(k).tolist() for k in keeps]
    for r, faces in enumerate(rolls):
        assert dice.roll_index(faces[::-1]) == r
        for m in range(dice.NUM_MASKS):
            held = [f for i, f in enumerate(faces) if m >> i & 1]
            assert dice.HOLD_KEEP[r, m] == dice.keep_index(held)
        for k in range(dice.NUM_KEEPS):
            made_by = [m for m in range(dice.NUM_MASKS) if dice.HOLD_KEEP[r, m] == k]
            assert dice.MASK_FOR_KEEP[r, k] == (min(made_by) if made_by else -1)
        proper = sorted({int(dice.HOLD_KEEP[r, m]) for m in range(dice.NUM_MASKS - 1)})
        assert dice.ROLL_PROPER_KEEPS[r].tolist() == proper + [-1] * (dice.ROLL_PROPER_KEEPS.shape[1] - len(proper))
    kc, rc = dice.KEEP_COUNTS, dice.ROLL_COUNTS
    assert np.array_equal(dice.KEEP_CONTAINS, np.all(kc[:, None, :] >= kc[None, :, :], axis=2))
    assert np.array_equal(dice.ROLL_CONTAINS_KEEP, np.all(rc[:, None, :] >= kc[None, :, :], axis=2))
    assert [dice.keep_index(k) for k in keeps] == list(range(dice.NUM_KEEPS))


# -- generala_env stands alone ----------------------------------------------------------------
PACKAGE = Path(generala_env.__file__).parent
ABOVE = (
    "generala_agents",
    "generala_training",
    "generala_play",
    "agents",
    "training",
    "play",
)  # the packages that sit on top of the env, and their folders' names


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module an AST imports, at any depth (inside functions too), with its line;
    also ``importlib.import_module("...")`` and ``__import__("...")`` of a literal name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in ("import_module", "__import__"):
                found.append((node.lineno, node.args[0].value))
    return found


def test_the_env_package_never_imports_agents_or_training():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 10
    offending = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
        for path in files
        for line, module in imported_modules(ast.parse(path.read_text(), str(path)))
        if module.split(".")[0] in ABOVE
    ]
    assert offending == []


def test_the_applications_are_a_package_of_their_own():
    """The games people play (terminal, browser, replays) sit in play/, apart from the env and the
    training package; the command line is in training/cli.py."""
    assert not (PACKAGE / "cli.py").exists() and not (PACKAGE / "play.py").exists()
    assert (ROOT / "training" / "cli.py").is_file()
    games = ("terminal", "serve", "replay", "table", "moves", "hints")
    assert all((ROOT / "play" / f"{m}.py").is_file() for m in games)
    assert not any((ROOT / "training" / f"{m}.py").exists() for m in (*games, "play"))
    assert "<html" in (ROOT / "play" / "page.html").read_text()  # the browser page is a static file


def run_python(code: str, **env) -> str:
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_using_the_env_alone_loads_no_agent_and_no_training_module():
    out = run_python(
        """
        import sys
        import gymnasium as gym
        import numpy as np
        import generala_env
        from generala_env.envs.vector import GeneralaVectorEnv, uniform_legal

        first_legal = lambda obs, info: int(np.flatnonzero(info["action_mask"])[0])
        for kwargs in ({}, {"num_players": 3, "opponents": [first_legal, first_legal]}):
            env = gym.make("Generala-v0", rules="double", render_mode="ansi", **kwargs)
            obs, info = env.reset(seed=0)
            done = False
            while not done:
                obs, _, done, _, info = env.step(first_legal(obs, info))
            env.render()
        venv = GeneralaVectorEnv(8, num_players=2, opponents=first_legal)
        venv.reset(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(50):
            venv.step(uniform_legal(rng, venv.action_masks()))
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("generala_agents", "generala_training", "generala_play")))
        """
    )
    assert out.strip() == "[]"


HEAVY = ("torch", "stable_baselines3", "sb3_contrib", "matplotlib", "tensorboard", "tqdm")


def test_playing_agents_and_shipped_checkpoints_imports_no_torch():
    out = run_python(
        f"""
        import sys
        import gymnasium as gym
        import numpy as np
        import generala_env
        from generala_env.envs.vector import GeneralaVectorEnv, uniform_legal

        env = gym.make("Generala-v0", num_players=2, opponents="greedy")
        obs, info = env.reset(seed=0)
        obs, *_ = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        print("env:", sorted(m for m in {HEAVY!r} if m in sys.modules))

        venv = GeneralaVectorEnv(4, num_players=2, opponent_mix=["greedy", "random", "optimal"])
        venv.reset(seed=0)
        venv.step(uniform_legal(np.random.default_rng(0), venv.action_masks()))

        import generala_agents as agents
        for name, players in (("ppo-classic", 1), ("ppo-classic-2p", 2)):
            agent = agents.load(name)
            env = gym.make("Generala-v0", num_players=players, opponents="rules-of-thumb" if players > 1 else None)
            obs, info = env.reset(seed=1)
            done = False
            while not done:
                obs, _, done, _, info = env.step(agent.act(obs, info))
        print("all:", sorted(m for m in {HEAVY!r} if m in sys.modules))
        """
    )
    assert out.split("\n")[:2] == ["env: []", "all: []"]


# -- the opponent registry -----------------------------------------------------------------------
class FirstLegal:
    """A stand-in for a third party's agent."""

    def __init__(self, rules="classic", seed=None):
        self.rules = load_rules(rules)

    def act(self, observation, info):
        return int(np.flatnonzero(info["action_mask"])[0])


@pytest.fixture
def first_legal():
    opponents.register("first-legal", FirstLegal, summary="the first legal action")
    yield "first-legal"
    opponents.unregister("first-legal")


def test_a_registered_name_plays_in_both_envs_and_is_listed(first_legal):
    env = gym.make("Generala-v0", num_players=2, opponents=first_legal)
    obs, info = env.reset(seed=0)
    *_, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
    assert [(s, a) for s, a, _ in info["opponent_moves"]] == [(1, 0), (1, 0), (1, 32)]  # reroll all twice, write ones
    venv = GeneralaVectorEnv(3, num_players=2, opponents=first_legal)
    assert isinstance(venv.batched_opponents[0], PerGameOpponent)
    venv.reset(seed=0)
    venv.step(uniform_legal(np.random.default_rng(0), venv.action_masks()))
    assert first_legal in opponents.names() and first_legal in agents.names()
    assert opponents.describe()[first_legal] == "the first legal action"
    assert isinstance(agents.load(first_legal), FirstLegal)


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(opponents.UnknownAgentError, match=r"unknown agent 'nobody'; known agents: random, greedy, .*ppo-classic"):
        gym.make("Generala-v0", num_players=2, opponents="nobody")
    with pytest.raises(opponents.UnknownAgentError, match="unknown agent 'nobody'"):
        GeneralaVectorEnv(2, num_players=2, opponents="nobody")


def test_greedy_and_random_are_played_batched_and_subclasses_game_by_game():
    from generala_agents.baselines import GreedyAgent, RandomAgent
    from generala_agents.batched import BatchedGreedy

    class Careful(GreedyAgent):
        pass

    venv = GeneralaVectorEnv(
        4, rules="double", num_players=2, opponent_mix=["greedy", "random", GreedyAgent("double"), RandomAgent("double"), Careful("double")]
    )
    kinds = [type(o) for o in venv.batched_opponents]
    assert kinds == [BatchedGreedy, BatchedRandom, BatchedGreedy, BatchedRandom, PerGameOpponent]
    assert venv.batched_opponents[0].rules.name == "double"
    assert opponents.make_batched("optimal") is None and opponents.make_batched("greedy").name == "greedy"


def test_prefixes_and_resolvers_reach_names_not_known_in_advance(tmp_path):
    opponents.register_prefix("first:", lambda rest, rules, seed: FirstLegal(rules, seed))
    try:
        assert isinstance(opponents.make("first:anything", rules="sixty"), FirstLegal)
    finally:
        opponents.unregister_prefix("first:")
    shutil.copytree(SHIPPED / "ppo-classic-2p", tmp_path / "mine")  # a checkpoint folder by its path
    env = gym.make("Generala-v0", num_players=2, opponents=str(tmp_path / "mine"))
    obs, info = env.reset(seed=0)
    env.step(int(np.flatnonzero(info["action_mask"])[-1]))
    assert type(env.unwrapped.opponent_agents[0]).__name__ == "PPOAgent"
    with pytest.raises(AgentError, match=r"agent '.*nowhere': no such folder"):
        agents.load(str(tmp_path / "nowhere"))


def test_an_installed_package_registers_through_its_entry_point(tmp_path):
    (tmp_path / "other_agents.py").write_text(
        "from generala_env.envs import opponents\n"
        "class Last:\n"
        "    def __init__(self, rules, seed=None):\n"
        "        self.rules = rules\n"
        "    def act(self, obs, info):\n"
        "        return int(info['action_mask'].nonzero()[0][-1])\n"
        "def register():\n"
        "    opponents.register('last-legal', Last)\n"
    )
    dist = tmp_path / "other_agents-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: other-agents\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[generala.agents]\nother = other_agents:register\n")
    out = run_python(
        """
        import sys
        import gymnasium as gym
        import generala_env
        env = gym.make("Generala-v0", num_players=2, opponents="last-legal")
        env.reset(seed=0)
        print(type(env.unwrapped.opponent_agents[0]).__name__, "generala_agents" in sys.modules)
        """,
        PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    )
    assert out.strip() == "Last True"  # the project's own agents came in through theirs


# -- the programs and the extras ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "missing", "install"),
    [
        (["evaluate", "--games", "2"], "matplotlib", 'pip install ".[eval]"'),
        (["tournament", "--agents", "greedy,random", "--games", "2"], "tqdm", 'pip install ".[eval]"'),
        (["train", "--config", "ppo_tiny"], "torch", 'pip install torch==2.13.0 && pip install ".[train]"'),  # the CPU build first
        (["dataset", "--agent", "random", "--episodes", "1"], "minari", 'pip install torch==2.13.0 && pip install ".[offline]"'),
    ],
)
def test_a_program_without_its_extra_says_which_to_install(argv, missing, install, tmp_path):
    if missing == "tqdm":
        pytest.importorskip("matplotlib")  # the plot is checked first: without it that is what is said
    code = f"""
        import sys
        sys.modules[{missing!r}] = None  # as if it were not installed
        from generala_training.cli import main
        sys.exit(main({argv + ["--out", str(tmp_path / "out")] if argv[0] != "train" else argv!r}))
        """
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"needs {missing}, which is not installed; in the project's clone: {install}" in res.stderr
    assert not (tmp_path / "out").exists()  # checked before anything is written


def test_the_core_install_is_light_and_the_extras_hold_the_rest():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {re.split(r"[<>=\[ ]", d)[0] for d in project["dependencies"]}
    assert core == {"gymnasium", "numpy", "pyyaml", "numba", "safetensors"}
    extras = project["optional-dependencies"]
    names = {k: {re.split(r"[<>=\[ ]", d)[0] for d in v} for k, v in extras.items()}
    assert names["train"] == {"torch", "stable-baselines3", "sb3-contrib", "tensorboard", "tqdm"}
    assert names["eval"] == {"matplotlib", "tqdm"}
    assert names["tune"] == {"generala-rl", "optuna"}
    assert names["benchmark"] == {"generala-rl", "rliable", "pandas"}
    assert names["offline"] == {"minari", "pillow", "tqdm", "torch"}  # minari pinned: its format and API move between releases
    assert extras["all"] == ["generala-rl[train,eval,multiagent,tune,benchmark,offline]"] and "generala-rl[all]" in extras["test"]
    assert project["scripts"] == {"generala": "generala_training.cli:main"}
    assert project["entry-points"][opponents.ENTRY_POINT_GROUP] == {"generala_agents": "generala_agents"}


def _long_functions(root: Path) -> list[str]:
    """Functions of the packages over 60 lines or 12 parameters with no comment above them saying
    why: a ``# long: ...`` or ``# many parameters: ...`` line (a section divider is no reason)."""
    found = []
    for package in ("generala_env", "agents", "training", "play"):
        for path in sorted((root / package).rglob("*.py")):
            lines = path.read_text().splitlines()
            for node in ast.walk(ast.parse("\n".join(lines))):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                a = node.args
                params = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
                params -= bool(a.args) and a.args[0].arg in ("self", "cls")
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                above = lines[first - 2].strip() if first >= 2 else ""
                if (size > 60 or params > 12) and not above.startswith(("# long", "# many")):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({size} lines, {params} parameters)")
    return found


def test_a_long_function_says_why_in_a_comment_above_it(tmp_path):
    root = Path(__file__).resolve().parent.parent
    assert _long_functions(root) == []
    (tmp_path / "generala_env").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    (tmp_path / "generala_env" / "m.py").write_text(f"def f(a, b):\n{body}\n\n\n# long: a reason\ndef g():\n{body}\n\n\n# -- a section\ndef h():\n{body}\n")
    assert [f.split(" ")[1] for f in _long_functions(tmp_path)] == ["f", "h"]


def test_a_module_of_the_flat_layout_still_imports_and_says_where_it_lives_now():
    """``generala_env.MOVED``: each 0.2.0 module path imports the names of its new module, with a
    DeprecationWarning on the importing line that names the new place."""
    import importlib
    import sys
    import warnings

    import generala_env

    assert set(generala_env.MOVED) >= {"env", "vector", "multiagent", "game", "engine", "rules", "jax_env", "sb3", "video", "model"}
    for old in ("vector", "engine"):
        sys.modules.pop(f"generala_env.{old}", None)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            module = importlib.import_module(f"generala_env.{old}")
        new = importlib.import_module(f"generala_env.{generala_env.MOVED[old]}")
        assert [str(w.message) for w in said if w.category is DeprecationWarning] == [
            f"generala_env.{old} moved to generala_env.{generala_env.MOVED[old]}; the old name goes in the next release"
        ]
        assert all(getattr(module, k) is v for k, v in vars(new).items() if not k.startswith("__"))
    assert importlib.import_module("generala_env.vector").GeneralaVectorEnv is importlib.import_module("generala_env.envs.vector").GeneralaVectorEnv
