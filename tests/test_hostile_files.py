"""Hostile YAML files: aliases that grow, deep nesting, odd keys and bytes all end in one clear line.

Each file here is small; what it would grow into is what is refused (issue 19, items 3, 8, 9).
"""

from __future__ import annotations

import os
import time

import pytest
from helpers import TINY_CONFIG

from generala_env.core.rules import RulesError, load_rules
from generala_env.files.safe_yaml import MAX_NODES, YamlFileError, parse_yaml, short_repr


def bomb_value(levels: int = 9) -> str:
    """About 500 bytes of flow YAML that stand for 9**levels values once the aliases are expanded."""
    parts = ["&a0 [x, x, x, x, x, x, x, x, x]"] + [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "[" + ", ".join(parts) + "]"


def alias_bomb(key: str) -> str:
    """A YAML file whose ``key`` (dotted: nested mappings) holds :func:`bomb_value`."""
    *outer, last = key.split(".")
    text, indent = "", ""
    for k in outer:
        text += f"{indent}{k}:\n"
        indent += "  "
    return text + f"{indent}{last}: {bomb_value()}\n"


def one_line(e: BaseException, limit: int = 600) -> str:
    text = str(e)
    assert "\n" not in text and len(text) < limit, text
    return text


def test_parse_yaml_refuses_an_alias_bomb_before_it_grows():
    t = time.perf_counter()
    with pytest.raises(YamlFileError, match="aliases expanded"):
        parse_yaml(alias_bomb("lines"), "bomb.yaml")
    assert time.perf_counter() - t < 5  # refused while composing, long before 9**9 values exist


def test_parse_yaml_keeps_a_few_plain_aliases():
    assert parse_yaml("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}


@pytest.mark.parametrize("key", ["served_bonus", "lines"])
def test_rules_file_with_an_alias_bomb_is_refused(tmp_path, key):
    f = tmp_path / "bomb.yaml"
    f.write_text(alias_bomb(key))
    with pytest.raises(RulesError, match="bomb.yaml.*aliases expanded") as e:
        load_rules(f)
    one_line(e.value)


@pytest.mark.parametrize("key", ["name", "env.opponents", "env.rules"])
def test_config_file_with_an_alias_bomb_is_refused(tmp_path, key):
    from generala_training.config import ConfigError, load_config

    f = tmp_path / "cfg.yaml"
    f.write_text(alias_bomb(key))
    assert len(f.read_bytes()) < 600
    with pytest.raises(ConfigError, match="cfg.yaml.*aliases expanded") as e:
        load_config(f)
    one_line(e.value)


def test_config_override_with_an_alias_bomb_is_refused():
    from generala_training.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="aliases expanded"):
        load_config(TINY_CONFIG, [f"name={bomb_value()}"])


def test_deeply_nested_lists_are_refused_in_one_line(tmp_path):
    from generala_training.config import ConfigError, load_config

    f = tmp_path / "deep.yaml"
    f.write_text("lines: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(RulesError, match="deep.yaml.*nested more than") as e:
        load_rules(f)
    one_line(e.value)
    f.write_text("env:\n  opponents: " + "[" * 5000 + "x" + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="deep.yaml.*nested more than"):
        load_config(f)


def test_integer_keys_are_refused_in_one_line(tmp_path):
    from generala_training.config import ConfigError, load_config

    f = tmp_path / "ints.yaml"
    f.write_text("1: 2\nlines: [ones]\n")
    with pytest.raises(RulesError, match="ints.yaml.*key must be text"):
        load_rules(f)
    with pytest.raises(ConfigError, match="ints.yaml.*key must be text"):
        load_config(f)
    with pytest.raises(RulesError, match="unknown rule key"):  # a mapping given in Python, int keys and all
        load_rules({1: 2, "lines": ["ones"]})


def test_bad_bytes_and_huge_integers_name_the_file(tmp_path):
    from generala_training.config import ConfigError, load_config

    f = tmp_path / "latin1.yaml"
    f.write_bytes("served_bonus: 5 # \u00e9\n".encode("latin-1"))
    with pytest.raises(RulesError, match="latin1.yaml is not UTF-8"):
        load_rules(f)
    g = tmp_path / "big.yaml"
    g.write_text("seed: " + "9" * 5000 + "\n")
    with pytest.raises(ConfigError, match="big.yaml") as e:
        load_config(g)
    one_line(e.value)


def test_a_rules_path_that_is_a_folder_says_so(tmp_path):
    d = tmp_path / "rules.yaml"
    d.mkdir()
    with pytest.raises(RulesError, match="is a folder"):
        load_rules(d)


def test_error_messages_never_expand_a_value_without_bound():
    from generala_training.config import ConfigError, load_config

    huge = ["ones"] * 10**6
    with pytest.raises(RulesError) as e:
        load_rules({"served_bonus": huge})
    one_line(e.value, 400)
    with pytest.raises(ConfigError) as e:
        load_config({"name": huge})
    one_line(e.value, 400)
    assert len(short_repr(list(range(10**6)))) <= 120
    assert short_repr(10**5000) == "<int>"  # no ValueError from int -> str, no 5000 digits
    assert MAX_NODES >= 10_000  # room for every real file (the biggest shipped one has a few hundred values)


# -- fuzzing: whatever the file holds, the loaders answer with their own one-line error ----------
import yaml  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from generala_env.core.rules import SETTING_KEYS  # noqa: E402

scalars = st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats() | st.text(max_size=12)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(scalars, inner, max_size=4), max_leaves=16)
RULE_KEYS = st.sampled_from([*SETTING_KEYS, "base", "values", "x"])
CONFIG_KEYS = st.sampled_from(["name", "seed", "total_timesteps", "env", "algo", "policy", "pretrain", "eval", "run_dir", "x"])
FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def _text(mapping, junk: str, cut: int) -> str:
    text = yaml.safe_dump(mapping, allow_unicode=True)
    return text[: cut % (len(text) + 1)] + junk  # a cut file with something after the cut


@FUZZ
@given(mapping=st.dictionaries(RULE_KEYS, values, max_size=5), junk=st.text(max_size=20), cut=st.integers(0, 10**6))
def test_fuzz_rules_files_fail_only_with_rules_error(tmp_path_factory, mapping, junk, cut):
    f = tmp_path_factory.mktemp("r") / "rules.yaml"
    f.write_text(_text(mapping, junk, cut), encoding="utf-8", errors="surrogatepass")
    try:
        load_rules(f)
    except RulesError as e:
        one_line(e)


@FUZZ
@given(mapping=st.dictionaries(CONFIG_KEYS, values, max_size=5), junk=st.text(max_size=20), cut=st.integers(0, 10**6))
def test_fuzz_config_files_fail_only_with_config_error(tmp_path_factory, mapping, junk, cut):
    from generala_training.config import ConfigError, load_config

    f = tmp_path_factory.mktemp("c") / "cfg.yaml"
    f.write_text(_text(mapping, junk, cut), encoding="utf-8", errors="surrogatepass")
    try:
        load_config(f)
    except ConfigError as e:
        one_line(e)


@FUZZ
@given(data=st.binary(max_size=300))
def test_fuzz_raw_bytes_fail_only_with_the_loaders_errors(tmp_path_factory, data):
    from generala_training.config import ConfigError, load_config

    f = tmp_path_factory.mktemp("b") / "raw.yaml"
    f.write_bytes(data)
    for load, error in ((load_rules, RulesError), (load_config, ConfigError)):
        try:
            load(f)
        except error as e:
            one_line(e)
