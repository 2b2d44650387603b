"""Small, honest statistics for evaluations and tournaments."""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054


def mean_ci(x) -> tuple[float, float, float]:
    """Mean and its 95% normal confidence interval."""
    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, m, m
    h = Z95 * float(x.std(ddof=1)) / math.sqrt(len(x))
    return m, m - h, m + h


def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float, float]:
    """Proportion ``k/n`` with its Wilson score 95% interval."""
    if n <= 0:
        return float("nan"), float("nan"), float("nan")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # clamp against rounding: the interval always contains the observed proportion
    return p, max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))
