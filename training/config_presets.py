"""The shipped training configs: ``configs/*.yaml`` of the checkout, package data in a wheel.

``generala train --config NAME`` finds one by its name from any folder
(:func:`generala_training.config.resolve_config_path`); ``generala train --list-configs``
names them, each with the first sentence of its leading comment.
"""

from __future__ import annotations

from pathlib import Path


def configs_dir() -> Path:
    """The shipped training configs: package data in a wheel (``generala_training/configs``), else the checkout's ``configs/``."""
    here = Path(__file__).resolve().parent
    installed = here / "configs"
    return installed if installed.is_dir() else here.parent / "configs"


def shipped_configs() -> dict[str, Path]:
    """Each shipped training config by name (its file name without ``.yaml``)."""
    return {p.stem: p for p in sorted(configs_dir().glob("*.yaml")) if p.is_file()}


def config_summary(path: Path) -> str:
    """The first sentence of a config file's leading comment: what the config is for."""
    from generala_env.files import FileProblem, read_regular
    from generala_env.files.safe_yaml import MAX_BYTES

    words: list[str] = []
    try:
        text = read_regular(path, MAX_BYTES, "config file", links=True).decode("utf-8")
    except (FileProblem, UnicodeDecodeError):
        return ""
    for line in text.splitlines():
        if not line.startswith("#") or line.startswith("#  "):  # the comment ends, or a command line in it starts
            break
        words += line.lstrip("#").split()
    text = " ".join(words)
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def list_configs() -> int:
    """``generala train --list-configs``: the shipped configs, one line each."""
    found = shipped_configs()
    width = max(map(len, found), default=0) + 2
    for name, path in found.items():
        print(f"{name:<{width}}{config_summary(path)}")
    print(f"(generala train --config NAME trains one; they live in {configs_dir()})")
    return 0
