"""Rule sets: the presets say what the rules README says, and bad input never plays."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from generala_env import RulesError, load_rules, preset_names

TEN = ["ones", "twos", "threes", "fours", "fives", "sixes", "straight", "full_house", "four_of_a_kind", "generala"]
ELEVEN = TEN + ["double_generala"]


# -- the presets --------------------------------------------------------------------
def test_presets_are_the_three_named_rule_sets():
    assert preset_names() == ["classic", "double", "sixty"]


def test_classic_is_the_table_of_the_how_to_play_page():
    r = load_rules("classic")
    assert list(r.lines) == TEN
    assert [r.value(k) for k in ("straight", "full_house", "four_of_a_kind", "generala")] == [20, 30, 40, 50]
    assert r.served_bonus == 5
    assert r.served_generala == "win" and r.served_generala_points is None
    assert (r.straight_wraps, r.straight_one_as_two, r.straight_gap, r.locked_holds) == (False, False, False, False)


def test_double_is_classic_plus_a_double_generala_line_worth_100():
    r, c = load_rules("double"), load_rules("classic")
    assert list(r.lines) == ELEVEN
    assert r.value("double_generala") == 100
    assert {k: v for k, v in r.settings().items() if k != "lines"} == {k: v for k, v in c.settings().items() if k != "lines"}


def test_sixty_has_the_other_values():
    r = load_rules("sixty")
    assert list(r.lines) == ELEVEN
    assert r.value("generala") == 60 and r.value("double_generala") == 120
    assert r.served_bonus == 10
    assert [r.value(k) for k in ("straight", "full_house", "four_of_a_kind")] == [20, 30, 40]


def test_none_means_classic_and_a_rule_set_passes_through():
    c = load_rules("classic")
    assert load_rules(None) == c
    assert load_rules(c) is c


def test_rule_set_is_immutable_and_hashable():
    r = load_rules("classic")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.served_bonus = 10
    assert hash(r) == hash(load_rules("classic"))
    assert isinstance(r.lines, tuple)


def test_settings_hold_exactly_the_keys_of_the_rules_readme():
    assert set(load_rules("classic").settings()) == {
        "lines",
        "values",
        "served_bonus",
        "served_generala",
        "served_generala_points",
        "straight_wraps",
        "straight_one_as_two",
        "straight_gap",
        "locked_holds",
    }


@pytest.mark.parametrize("name", ["classic", "double", "sixty"])
def test_settings_round_trip_through_a_mapping_and_a_yaml_file(name, tmp_path):
    r = load_rules(name)
    assert load_rules(r.settings()) == r
    path = tmp_path / f"{name}.yaml"
    path.write_text(r.to_yaml())
    assert load_rules(path) == r
    assert load_rules(str(path)) == r
    assert load_rules(path).fingerprint() == r.fingerprint()


def test_fingerprint_tells_rule_sets_apart():
    prints = {load_rules(n).fingerprint() for n in ("classic", "double", "sixty")}
    prints.add(load_rules({"straight_wraps": True}).fingerprint())
    assert len(prints) == 4


# -- overlays -------------------------------------------------------------------------
def test_mapping_without_base_overlays_classic():
    r = load_rules({"straight_wraps": True, "values": {"generala": 60}})
    assert r.straight_wraps is True
    assert list(r.lines) == TEN
    assert r.value("generala") == 60
    assert r.value("straight") == 20 and r.value("full_house") == 30  # values merge, not replace
    assert r.served_bonus == 5


def test_mapping_with_base_overlays_that_preset():
    r = load_rules({"base": "sixty", "served_bonus": 0, "values": {"straight": 25}})
    assert list(r.lines) == ELEVEN
    assert r.value("generala") == 60 and r.value("double_generala") == 120 and r.value("straight") == 25
    assert r.served_bonus == 0


def test_empty_mapping_is_classic():
    assert load_rules({}) == load_rules("classic")


def test_yaml_file_with_base(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("base: double\nlocked_holds: true\nserved_generala: points\nserved_generala_points: 100\n")
    r = load_rules(path)
    assert list(r.lines) == ELEVEN
    assert r.locked_holds and r.served_generala == "points" and r.served_generala_points == 100


def test_three_of_a_kind_line_can_be_added():
    r = load_rules({"lines": TEN[:6] + ["three_of_a_kind"] + TEN[6:]})
    assert r.line_index("three_of_a_kind") == 6 and r.num_lines == 11


# -- bad rule sets --------------------------------------------------------------------
BAD = [
    ({"bonus": 5}, r"unknown rule key.*'bonus'"),
    ({"lines": TEN + ["yahtzee"]}, r"unknown line 'yahtzee'"),
    ({"values": {"straight": -20}}, r"values\.straight must not be negative, got -20"),
    ({"served_bonus": -5}, r"served_bonus must not be negative"),
    ({"served_generala": "points", "served_generala_points": -1}, r"served_generala_points must not be negative"),
    ({"lines": TEN[:9] + ["double_generala"]}, r"double_generala line needs a generala line"),
    ({"lines": TEN + ["ones"]}, r"duplicate line.*ones"),
    ({"served_generala": "points"}, r"served_generala: points needs served_generala_points"),
    ({"served_generala_points": 100}, r"served_generala_points is set but served_generala is 'win'"),
    ({"served_generala": "maybe"}, r"served_generala must be one of win, points, got 'maybe'"),
    ({"values": {"yacht": 50}}, r"unknown key\(s\) in values: yacht"),
    ({"values": [20, 30]}, r"'values' must be a mapping"),
    ({"values": {"straight": 20.5}}, r"values\.straight must be a whole number"),
    ({"served_bonus": True}, r"served_bonus must be a whole number"),
    ({"straight_wraps": "yes"}, r"straight_wraps must be true or false, got 'yes'"),
    ({"locked_holds": 1}, r"locked_holds must be true or false"),
    ({"lines": []}, r"lines must be a non-empty list"),
    ({"lines": "ones"}, r"lines must be a non-empty list"),
    ({"base": "yahtzee"}, r"unknown rule set 'yahtzee'"),
    ({"base": 3}, r"'base' must be a preset name"),
    ("yahtzee", r"unknown rule set 'yahtzee'; presets: classic, double, sixty"),
    (42, r"rules must be a preset name, a YAML path, a mapping or a RuleSet, got int"),
]


@pytest.mark.parametrize("spec,message", BAD, ids=[m.split("\\")[0][:40] for _, m in BAD])
def test_bad_rule_set_raises_a_clear_error(spec, message):
    with pytest.raises(RulesError, match=message):
        load_rules(spec)


def test_rules_error_is_a_value_error():
    assert issubclass(RulesError, ValueError)


def test_file_that_is_not_yaml(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("lines: [ones, twos\nvalues: {straight: 20\n")
    with pytest.raises(RulesError, match=r"broken\.yaml is not valid YAML"):
        load_rules(path)


@pytest.mark.parametrize("text,kind", [("- ones\n- twos\n", "list"), ("classic\n", "str"), ("", "NoneType")])
def test_yaml_file_that_is_not_a_mapping(tmp_path, text, kind):
    path = tmp_path / "list.yaml"
    path.write_text(text)
    with pytest.raises(RulesError, match=rf"must hold a mapping of settings, got {kind}"):
        load_rules(path)


def test_missing_file(tmp_path):
    with pytest.raises(RulesError, match=r"does not exist"):
        load_rules(tmp_path / "nowhere.yaml")
    with pytest.raises(RulesError, match=r"does not exist"):
        load_rules(str(tmp_path / "nowhere.yaml"))


def test_bad_key_in_a_file_is_named(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("base: classic\nstraight_wrap: true\n")
    with pytest.raises(RulesError, match=r"unknown rule key.*'straight_wrap'"):
        load_rules(path)


def test_line_index_of_a_line_not_on_the_sheet():
    with pytest.raises(RulesError, match=r"'double_generala' is not on this sheet"):
        load_rules("classic").line_index("double_generala")


def test_presets_on_disk_are_the_ones_loaded():
    root = Path(__file__).resolve().parent.parent / "generala_env" / "presets"
    assert preset_names() == ["classic", "double", "sixty"]
    for name, lines in (("classic", 10), ("double", 11), ("sixty", 11)):
        assert load_rules(root / f"{name}.yaml") == load_rules(name)
        assert load_rules(name).num_lines == lines and load_rules(name).name == name


def test_line_indices_and_the_served_generala_win_are_on_the_rule_set():
    classic, double = load_rules("classic"), load_rules("double")
    assert (classic.generala_line, classic.double_generala_line) == (TEN.index("generala"), -1)
    assert (double.generala_line, double.double_generala_line) == (ELEVEN.index("generala"), ELEVEN.index("double_generala"))
    no_generala = load_rules({"lines": ["ones", "twos", "three_of_a_kind"]})
    assert (no_generala.generala_line, no_generala.double_generala_line) == (-1, -1)
    assert classic.served_generala_wins(2) and not classic.served_generala_wins(1)
    assert not no_generala.served_generala_wins(2)  # nothing to claim without a generala line
    assert not load_rules({"served_generala": "points", "served_generala_points": 80}).served_generala_wins(2)


def test_a_mapping_is_named_after_the_preset_it_overlays():
    assert load_rules({"served_bonus": 0}).name == "classic+custom"
    assert load_rules({"base": "sixty", "served_bonus": 0}).name == "sixty+custom"
    assert load_rules({"base": None, "served_bonus": 0}).name == "classic+custom"
    assert load_rules({}).name == "classic"
