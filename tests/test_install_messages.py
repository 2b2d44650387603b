"""The install command of a missing extra: one, from a clone (the package is on no index),
torch's CPU build first where the extra needs torch."""

from __future__ import annotations

import re

import pytest
from helpers import ROOT

from generala_env.extras import NEEDS_TORCH, install_command


def test_the_install_command_gets_the_cpu_torch_first_from_the_clone():
    assert install_command("train") == 'pip install torch==2.13.0 && pip install ".[train]"'
    assert install_command("eval") == 'pip install ".[eval]"'
    assert install_command("jax") == 'pip install ".[jax]"'


def test_the_extras_that_need_torch_are_those_of_pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    def needs_torch(extra: str, seen=()) -> bool:
        for req in extras[extra]:
            if re.match(r"torch\b", req):
                return True
            inner = re.match(r"generala-rl\[([^\]]+)\]", req)
            if inner and any(needs_torch(e.strip(), seen + (extra,)) for e in inner.group(1).split(",") if e.strip() not in seen):
                return True
        return False

    assert {e for e in extras if needs_torch(e)} == NEEDS_TORCH


def test_the_readme_and_install_page_give_the_same_command():
    for page in ("README.md", "docs/install.md"):
        assert install_command("train") in (ROOT / page).read_text(), page


def test_no_message_sends_a_user_to_an_index_the_package_is_not_on():
    """Every missing-extra message comes from generala_env.extras; none says ``generala-rl[...]``,
    which pip would look for on an index (and, for torch, fetch a CUDA build of several GB)."""
    offenders = []
    for folder in ("generala_env", "agents", "training", "play", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "generala-rl[" in path.read_text(encoding="utf-8"):
                offenders.append(rel)
    assert offenders == []
