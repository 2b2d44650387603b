"""How to install an optional extra: the one command every message about a missing one gives.

The package is on no index: it installs from a clone of the project (README, docs/install.md).
An extra that needs torch gets the CPU build of torch first, as an unpinned torch pulls a
CUDA build of several GB.
"""

from __future__ import annotations

TORCH = "torch==2.13.0"  # the CPU build, which satisfies every extra's torch>=2.3

# the extras that bring torch, directly or through another extra (pyproject.toml; a test checks)
NEEDS_TORCH = frozenset({"train", "tune", "benchmark", "ray", "all", "examples", "offline", "test"})


def install_command(extra: str) -> str:
    """The command that installs ``extra`` from the project's clone:
    ``pip install torch==2.13.0 && pip install ".[train]"`` for an extra that needs torch."""
    command = f'pip install ".[{extra}]"'
    return f"pip install {TORCH} && {command}" if extra in NEEDS_TORCH else command


def how_to_install(extra: str) -> str:
    """``in the project's clone: COMMAND``, for the end of a message about a missing ``extra``."""
    return f"in the project's clone: {install_command(extra)}"
