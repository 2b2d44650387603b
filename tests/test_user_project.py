"""The project in a user's project: its import names never collide with the user's own packages.

RL projects often have an ``agents/`` or ``training/`` package of their own. A script run from
such a project's folder has that folder first on ``sys.path``, so a package of ours installed as
``agents`` would be shadowed (the env's opponents by name found no agents at all). Ours install as
``generala_agents`` and ``generala_training``; these tests build such a project and run the
README's quick start, as written, and an opponent by name there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_quick_start() -> str:
    """The README's first Python block after its "Quick start" heading, as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Quick start") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def user_project(tmp_path: Path) -> Path:
    """A project with its own ``agents`` and ``training`` packages, which say whose they are."""
    project = tmp_path / "my_rl_project"
    for name in ("agents", "training"):
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text(f"WHOSE = 'the user {name}'\n")
    return project


def run_in(project: Path, code: str) -> subprocess.CompletedProcess:
    script = project / "main.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, str(script)], cwd=project, capture_output=True, text=True, timeout=600, env=env)


def test_the_readme_quick_start_runs_in_a_project_with_its_own_agents_and_training(tmp_path):
    project = user_project(tmp_path)
    code = readme_quick_start() + textwrap.dedent(
        """
        import agents as mine, training as my_training
        print(mine.WHOSE, "/", my_training.WHOSE)
        """
    )
    res = run_in(project, code)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = dict(re.findall(r"^(greedy|optimal) ([0-9.]+)$", res.stdout, re.M))
    assert set(rows) == {"greedy", "optimal"} and float(rows["optimal"]) > float(rows["greedy"]) > 100
    assert "the user agents / the user training" in res.stdout  # the user's packages are still theirs


def test_an_opponent_by_name_is_found_in_a_project_with_its_own_agents(tmp_path):
    project = user_project(tmp_path)
    code = textwrap.dedent(
        """
        import sys
        import gymnasium as gym
        import generala_env

        env = gym.make("Generala-v0", num_players=2, opponents=["greedy"])
        obs, info = env.reset(seed=3)
        print(type(env.unwrapped.opponent_agents[0]).__name__)
        print(sys.modules["agents"].WHOSE if "agents" in sys.modules else "agents not imported")
        import agents
        print(agents.WHOSE)
        """
    )
    res = run_in(project, code)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split("\n")[:3] == ["GreedyAgent", "agents not imported", "the user agents"]


def test_no_module_imports_the_folders_by_their_generic_names():
    """Inside the clone ``agents`` would import the folder a second time, a copy apart from
    ``generala_agents`` (two registries, two of every class): nothing may name it."""
    pattern = re.compile(r"^\s*(?:from|import)\s+(?:agents|training|play)\b", re.M)
    folders = ("generala_env", "agents", "training", "play", "tests", "benchmarks", "examples")
    offending = [
        str(path.relative_to(ROOT))
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != Path(__file__).resolve() and pattern.search(path.read_text(encoding="utf-8"))  # this file writes a user's project
    ]
    assert offending == []
