"""Trained PPO policies shipped as checkpoints (filled in by the training pipeline)."""

from __future__ import annotations

from pathlib import Path

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


def checkpoint_names() -> list[str]:
    return sorted(p.name for p in CHECKPOINTS.glob("*") if (p / "metadata.json").is_file())


def checkpoint_summary() -> dict[str, str]:
    return {n: "trained MaskablePPO policy (checkpoints/" + n + ")" for n in checkpoint_names()}


def find_checkpoint(name: str):
    for cand in (CHECKPOINTS / name, Path(name)):
        if (cand / "metadata.json").is_file():
            return cand
    return None


class PPOAgent:  # replaced by the training pipeline
    def __init__(self, *a, **k):
        raise NotImplementedError("PPO checkpoints are not available yet")
