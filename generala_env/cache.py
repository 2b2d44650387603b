"""Where the project keeps what it computes once and reads again: the solvers' tables and
numba's compiled loops. No framework imports."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$GENERALA_CACHE``, or ``~/.cache/generala`` when that variable is unset or empty (an
    empty path would otherwise mean the current folder)."""
    value = os.environ.get("GENERALA_CACHE", "").strip()
    return Path(value) if value else Path.home() / ".cache" / "generala"
