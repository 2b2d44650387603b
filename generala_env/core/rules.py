"""Rule sets: which sheet is played and how each line scores.

A :class:`RuleSet` is an immutable, validated value holding exactly the settings of
the project's rules README. It is built from a preset name (``"classic"``), a path to a
YAML file, a mapping of settings overlaid on ``classic`` (or on the preset named by its
``base:`` key), or another ``RuleSet``. Anything unknown or inconsistent raises
:class:`RulesError` naming the problem; nothing is silently ignored.

No gymnasium or torch import here: this is the game itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.files.safe_yaml import YamlFileError, read_yaml, short_repr
from generala_env.suggest import refusal

NUMBER_LINES = ("ones", "twos", "threes", "fours", "fives", "sixes")
COMBINATION_LINES = ("straight", "full_house", "four_of_a_kind", "generala", "double_generala")
OPTIONAL_LINES = ("three_of_a_kind",)
KNOWN_LINES = NUMBER_LINES + COMBINATION_LINES + OPTIONAL_LINES
VALUE_KEYS = COMBINATION_LINES
SERVED_GENERALA_MODES = ("win", "points")

# The most any one point value of a rule set may be (values.*, served_bonus,
# served_generala_points). A line then holds at most 2 * MAX_VALUE (a value plus the
# served bonus), so the tables sized or typed by points stay small and exact: the
# int32 points table and sheets, the encoder's per-line table of every value a line can
# hold (one float32 per value: about 1 MB for 12 lines), observation scales in float32
# (a 12-line total, under 2**24, is exact) and the solver's float64 values.
MAX_VALUE = 10_000

# the presets ship inside the package (package data), so a wheel install has them too
PRESETS_DIR = Path(__file__).resolve().parent.parent / "presets"


class RulesError(ValueError):
    """A rule set that cannot be played as given."""


@dataclass(frozen=True)
class RuleSet:
    """One validated Generala rule set. Build it with :func:`load_rules`."""

    lines: tuple[str, ...]
    values: tuple[tuple[str, int], ...]
    served_bonus: int
    served_generala: str
    served_generala_points: int | None
    straight_wraps: bool
    straight_one_as_two: bool
    straight_gap: bool
    locked_holds: bool
    name: str = field(default="custom", compare=False)

    # -- convenient views -------------------------------------------------------
    def value(self, line: str) -> int:
        """Fixed points of a combination line (straight … double_generala)."""
        return dict(self.values)[line]

    @property
    def num_lines(self) -> int:
        return len(self.lines)

    def line_index(self, line: str) -> int:
        try:
            return self.lines.index(line)
        except ValueError:
            raise RulesError(f"line {short_repr(line)} is not on this sheet; lines: {', '.join(self.lines)}") from None

    @cached_property
    def generala_line(self) -> int:
        """Index of the generala line, -1 when the sheet has none."""
        return self.lines.index("generala") if "generala" in self.lines else -1

    @cached_property
    def double_generala_line(self) -> int:
        """Index of the double generala line, -1 when the sheet has none."""
        return self.lines.index("double_generala") if "double_generala" in self.lines else -1

    def served_generala_wins(self, num_players: int) -> bool:
        """Whether five alike on a turn's first roll, with the generala line open, wins the
        game on the spot: ``served_generala: win``, two or more players and a generala line."""
        return self.served_generala == "win" and num_players >= 2 and self.generala_line >= 0

    def settings(self) -> dict[str, Any]:
        """The settings as a plain mapping (what a YAML file would hold)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "name":
                continue
            v = getattr(self, f.name)
            if f.name == "lines":
                v = list(v)
            elif f.name == "values":
                v = dict(v)
            out[f.name] = v
        return out

    def fingerprint(self) -> str:
        """A short hash of the settings; two rule sets that play alike share it."""
        blob = json.dumps(self.settings(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def to_yaml(self) -> str:
        import yaml  # on first use: importing the package reads no YAML

        return yaml.safe_dump(self.settings(), sort_keys=False)

    def __str__(self) -> str:  # pragma: no cover - cosmetic
        return f"RuleSet({self.name}, {len(self.lines)} lines)"


SETTING_KEYS = tuple(f.name for f in fields(RuleSet) if f.name != "name")


def preset_names() -> list[str]:
    """Names of the presets shipped in ``generala_env/presets/``."""
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = read_yaml(path, "rule file")
    except YamlFileError as e:
        raise RulesError(str(e)) from None
    if not isinstance(data, dict):
        raise RulesError(f"rule file {path} must hold a mapping of settings, got {type(data).__name__}")
    return data


def _preset_settings(name: str, _seen: tuple[str, ...] = ()) -> dict[str, Any]:
    path = PRESETS_DIR / f"{name}.yaml"
    if not path.is_file():
        presets = preset_names()
        raise RulesError(refusal(f"unknown rule set {short_repr(name)}", name, presets, f"presets: {', '.join(presets)}, or a path to a YAML file"))
    return _resolve(_read_yaml(path), _seen + (name,))


def _resolve(data: Mapping[str, Any], seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """Overlay a mapping on its base (``base:`` key, else classic) and return full settings."""
    data = dict(data)
    base = data.pop("base", None)
    unknown = sorted(set(data) - set(SETTING_KEYS), key=str)
    if unknown:
        raise RulesError(
            refusal(
                f"unknown rule key(s) {', '.join(map(short_repr, unknown))}",
                unknown[0] if len(unknown) == 1 else "",
                SETTING_KEYS,
                f"known keys: base, {', '.join(SETTING_KEYS)}",
            )
        )
    if base is None and "classic" not in seen:
        base = "classic"
    if base is None:
        return data
    if not isinstance(base, str):
        raise RulesError(f"'base' must be a preset name, got {short_repr(base)}")
    if base in seen:
        raise RulesError(f"rule set 'base' chain loops through {short_repr(base)}")
    settings = _preset_settings(base, seen)
    values = dict(settings.get("values", {}))
    if "values" in data:
        if not isinstance(data["values"], Mapping):
            raise RulesError(f"'values' must be a mapping of line to points, got {short_repr(data['values'])}")
        values.update(data["values"])
    settings.update(data)
    settings["values"] = values
    return settings


def _optional_int(key: str, v: Any) -> int | None:
    """:func:`_int`, or ``None`` for ``None``."""
    return None if v is None else _int(key, v)


def _int(key: str, v: Any) -> int:
    """A point value: a whole number (Python or NumPy) from 0 to :data:`MAX_VALUE`, as a Python int."""
    if not is_whole(v):
        raise RulesError(f"{key} must be a whole number, got {short_repr(v)}")
    v = int(v)  # a NumPy integer would not go through JSON (the fingerprint) and compares unlike an int
    if v < 0:
        raise RulesError(f"{key} must not be negative, got {v}")
    if v > MAX_VALUE:
        raise RulesError(f"{key} must be at most {MAX_VALUE}, got {v}")
    return v


def _bool(key: str, v: Any) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise RulesError(f"{key} must be true or false, got {short_repr(v)}")
    return bool(v)


def _build(settings: Mapping[str, Any], name: str) -> RuleSet:
    missing = [k for k in SETTING_KEYS if k not in settings]
    if missing:
        raise RulesError(f"rule set is missing setting(s): {', '.join(missing)}")

    lines = settings["lines"]
    if isinstance(lines, str) or not isinstance(lines, (list, tuple)) or not lines:
        raise RulesError(f"lines must be a non-empty list of line names, got {short_repr(lines)}")
    for line in lines:
        if line not in KNOWN_LINES:
            raise RulesError(f"unknown line {short_repr(line)}; known lines: {', '.join(KNOWN_LINES)}")
    dupes = sorted({line for line in lines if list(lines).count(line) > 1})
    if dupes:
        raise RulesError(f"duplicate line(s) on the sheet: {', '.join(dupes)}")
    if "double_generala" in lines and "generala" not in lines:
        raise RulesError("the double_generala line needs a generala line on the sheet")

    values = settings["values"]
    if not isinstance(values, Mapping):
        raise RulesError(f"values must be a mapping of line to points, got {short_repr(values)}")
    unknown = sorted(set(values) - set(VALUE_KEYS), key=str)
    if unknown:
        raise RulesError(
            f"unknown key(s) in values: {', '.join(short_repr(k)[1:-1] if isinstance(k, str) else short_repr(k) for k in unknown)}; known: {', '.join(VALUE_KEYS)}"
        )
    missing = [k for k in VALUE_KEYS if k not in values]
    if missing:
        raise RulesError(f"values is missing: {', '.join(missing)}")
    vals = tuple((k, _int(f"values.{k}", values[k])) for k in VALUE_KEYS)

    mode = settings["served_generala"]
    if mode not in SERVED_GENERALA_MODES:
        raise RulesError(f"served_generala must be one of {', '.join(SERVED_GENERALA_MODES)}, got {short_repr(mode)}")
    sg_points = _optional_int("served_generala_points", settings["served_generala_points"])
    if mode == "points" and sg_points is None:
        raise RulesError("served_generala: points needs served_generala_points (the worth of a served generala)")
    if mode == "win" and sg_points is not None:
        raise RulesError("served_generala_points is set but served_generala is 'win'; set served_generala: points to use it")

    return RuleSet(
        lines=tuple(lines),
        values=vals,
        served_bonus=_int("served_bonus", settings["served_bonus"]),
        served_generala=mode,
        served_generala_points=sg_points,
        straight_wraps=_bool("straight_wraps", settings["straight_wraps"]),
        straight_one_as_two=_bool("straight_one_as_two", settings["straight_one_as_two"]),
        straight_gap=_bool("straight_gap", settings["straight_gap"]),
        locked_holds=_bool("locked_holds", settings["locked_holds"]),
        name=name,
    )


def load_rules(spec: str | Path | Mapping[str, Any] | RuleSet | None = None) -> RuleSet:
    """A validated :class:`RuleSet` from a preset name, YAML path, mapping or RuleSet.

    ``None`` means ``classic``. A mapping is overlaid on ``classic``, or on the preset
    its ``base:`` key names.

    The rule set's :attr:`~RuleSet.name` (for messages and metadata; it takes no part in
    comparisons or the fingerprint): a preset's name; a YAML file's stem; for a mapping,
    the preset it is overlaid on followed by ``+custom`` (``"sixty+custom"``; ``"classic+custom"``
    without a ``base:`` key), and ``"classic"`` for an empty one; a ``RuleSet`` keeps its own.
    """
    if spec is None:
        spec = "classic"
    if isinstance(spec, RuleSet):
        return spec
    if isinstance(spec, Mapping):
        return _build(_resolve(spec), name=f"{spec.get('base') or 'classic'}+custom" if spec else "classic")
    if isinstance(spec, (str, Path)):
        s = str(spec)
        looks_like_path = isinstance(spec, Path) or s.endswith((".yaml", ".yml")) or "/" in s or "\\" in s
        if looks_like_path:
            path = Path(s)  # read as it is: a folder, a FIFO or a device is named as what it is
            return _build(_resolve(_read_yaml(path)), name=path.stem)
        return _build(_preset_settings(s), name=s)
    raise RulesError(f"rules must be a preset name, a YAML path, a mapping or a RuleSet, got {type(spec).__name__}")
