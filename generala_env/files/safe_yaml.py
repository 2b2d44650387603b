"""Reading YAML files that someone else may have written: bounded, and failing in one line.

Every YAML file the project reads (rule sets, training configs, benchmark configs, a run's
``config.yaml``) goes through :func:`read_yaml`, which reads it with the one reader of files
(:func:`generala_env.files.file_io.read_regular`). PyYAML's ``safe_load`` runs no code, but
it lets a few hundred bytes of aliases (``&a [*b, *b, ...]`` nested nine deep) stand for
billions of values, and a list nested 100,000 deep overflows the stack. Here the document
is measured while it is composed, before any Python value is built: the values it stands
for (each alias counted as everything it repeats) and its nesting depth are capped, mapping
keys must be text, and a file that is not UTF-8 or holds an integer too long to convert is
reported with its name. Everything raises :class:`YamlFileError` (a ``ValueError``) naming
the file; callers turn it into their own error.

No framework import here: rules, agents and training all use it.
"""

from __future__ import annotations

import reprlib
from functools import cache
from pathlib import Path
from typing import Any

MAX_NODES = 100_000  # values a document may stand for, aliases expanded
MAX_DEPTH = 64  # lists and mappings inside each other
MAX_BYTES = 4 * 2**20  # a rules or config file is a few hundred bytes


class YamlFileError(ValueError):
    """A YAML file that cannot be read safely, or is not valid YAML."""


@cache
def _bounded_loader() -> type:
    """The loader class, made on first use: PyYAML is imported then, not with the package
    (``import generala_env`` reads no YAML; loading a rule set does)."""
    import yaml

    class _BoundedLoader(yaml.SafeLoader):
        """``SafeLoader`` that counts the values a document stands for while composing it."""

        def __init__(self, stream):
            super().__init__(stream)
            self._depth = 0
            self._nodes = 0
            self._sizes: dict[int, int] = {}  # id(node) -> values it stands for, itself included

        def _count(self, n: int, mark) -> None:
            self._nodes += n
            if self._nodes > MAX_NODES:
                raise YamlFileError(f"{_where(mark)}: the document stands for more than {MAX_NODES:,} values (aliases expanded); refused")

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                node = super().compose_node(parent, index)
                self._count(self._sizes.get(id(node), 1), mark)
                return node
            mark = self.peek_event().start_mark
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise YamlFileError(f"{_where(mark)}: nested more than {MAX_DEPTH} levels deep; refused")
            before = self._nodes
            try:
                node = super().compose_node(parent, index)
            finally:
                self._depth -= 1
            self._count(1, mark)
            self._sizes[id(node)] = self._nodes - before
            return node

        def construct_mapping(self, node, deep=False):
            for key_node, _ in node.value:
                if not (isinstance(key_node, yaml.ScalarNode) and key_node.tag == "tag:yaml.org,2002:str"):
                    raise YamlFileError(f"{_where(key_node.start_mark)}: a key must be text, got {short_repr(key_node.value)}")
            return super().construct_mapping(node, deep=deep)

    return _BoundedLoader


def _where(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "the document"


def parse_yaml(text: str, name: str = "<text>") -> Any:
    """The value of the YAML document ``text``; a :class:`YamlFileError` names ``name`` and the problem."""
    import yaml

    try:
        return yaml.load(text, Loader=_bounded_loader())
    except YamlFileError as e:
        raise YamlFileError(f"{name}: {e}") from None
    except yaml.YAMLError as e:
        raise YamlFileError(f"{name} is not valid YAML: {short_repr(str(e), 400)}") from None
    except (ValueError, RecursionError) as e:  # an integer of thousands of digits; a deep flow collection
        raise YamlFileError(f"{name}: a value cannot be read: {short_repr(str(e), 200)}") from None


def read_yaml(path: str | Path, what: str = "YAML file") -> Any:
    """The value of the YAML file ``path``, read by the one reader of files
    (:func:`generala_env.files.file_io.read_regular`: a regular file, never a FIFO, a device or a
    ``/proc`` file, of at most :data:`MAX_BYTES`) and parsed with the bounds above. Every
    problem is one :class:`YamlFileError` line that starts with ``what`` and the file's name."""
    from generala_env.files.file_io import FileProblem, read_regular

    path = Path(path)
    try:
        data = read_regular(path, MAX_BYTES, what, links=True)  # a user's file may be named by a link
    except FileProblem as e:
        raise YamlFileError(str(e)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise YamlFileError(f"{what} {path} is not UTF-8 text (byte {e.start})") from None
    return parse_yaml(text, f"{what} {path}")


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 3, 8, 8, 8, 8
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 80, 80, 40


def short_repr(value: Any, limit: int = 120) -> str:
    """``repr(value)`` cut to at most about ``limit`` characters, however large ``value`` is."""
    try:
        text = _REPR.repr(value)
    except Exception:  # a value whose repr fails is still named
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
