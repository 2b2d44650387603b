"""The `generala` command's own subcommands: rules, solve, play-random, agents."""

import json

import pytest

from generala_training.cli import main as cli


def test_rules_prints_the_sheet_and_settings(capsys):
    assert cli(["rules", "double"]) == 0
    out = capsys.readouterr().out
    assert "double_generala" in out and "100" in out and "served_bonus: 5" in out
    assert cli(["rules"]) == 0
    assert "classic, double, sixty" in capsys.readouterr().out


def test_rules_yaml_round_trips(tmp_path, capsys):
    from generala_env.core.rules import load_rules

    assert cli(["rules", "sixty", "--yaml"]) == 0
    f = tmp_path / "r.yaml"
    f.write_text(capsys.readouterr().out)
    assert load_rules(f) == load_rules("sixty")


def test_unknown_rules_is_a_clear_error(capsys):
    assert cli(["rules", "nope"]) == 2
    assert "unknown rule set 'nope'" in capsys.readouterr().err


def test_solve_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    assert cli(["solve", "--rules", "classic", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["expected_score"] == pytest.approx(149.1133, abs=1e-3) and first["source"] == "solved"
    assert cli(["solve", "--rules", "classic", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == "cache"


@pytest.mark.parametrize("players", [1, 2])
def test_play_random_shows_a_whole_game(players, capsys):
    assert cli(["play-random", "--players", str(players), "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "Game over" in out and out.count("Dice:") >= 10 and ("final score" if players == 1 else "winner(s)") in out
    assert ("winner" in out) == (players > 1)  # a game alone has a score, not a winner


def test_agents_lists_builtins_and_checkpoints(capsys):
    assert cli(["agents"]) == 0
    out = capsys.readouterr().out
    for name in ("random", "greedy", "turn-optimal", "rules-of-thumb", "optimal", "ppo-classic"):
        assert name in out


def test_a_ctrl_c_inside_a_module_being_imported_is_one_line_and_status_130(monkeypatch, capsys):
    """A Ctrl-C that lands in a class statement of a module being imported (torch's, on a busy
    machine) reaches the program as a RuntimeError caused by the interrupt; it is an interrupt."""
    import types

    from generala_training import cli

    def interrupted_import(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as k:
            raise RuntimeError("Error calling __set_name__ on 'cached_property' instance '_cptr'") from k

    def broken(args):
        raise RuntimeError("a bug, not an interrupt")

    for func in (interrupted_import, broken):
        parser = types.SimpleNamespace(parse_args=lambda argv, func=func: types.SimpleNamespace(func=func))
        monkeypatch.setattr(cli, "build_parser", lambda parser=parser: parser)
        if func is broken:
            with pytest.raises(RuntimeError, match="a bug"):
                cli.main(["rules"])
        else:
            assert cli.main(["rules"]) == 130
            assert capsys.readouterr().err.strip() == "generala rules: interrupted"
