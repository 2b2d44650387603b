"""Errors that help: the name meant (did you mean), and a path that holds no agent."""

from __future__ import annotations

import pytest

import generala_agents as agents
from generala_agents.base import AgentError
from generala_env.envs.opponents import Trust
from generala_env.suggest import closest
from generala_training.cli import main as cli


# -- did you mean ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "word, meant",
    [("optimall", "optimal"), ("win_max", "win-max"), ("Optimal-2P", "optimal-2p"), ("greedy2", "greedy"), ("nobody", None), ("td", None)],
)
def test_the_closest_agent_name(word, meant):
    assert closest(word, agents.names()) == meant


def test_a_mistyped_agent_says_the_name_meant_first():
    with pytest.raises(AgentError) as e:
        agents.load("optimall")
    assert str(e.value) == f"unknown agent 'optimall'; did you mean 'optimal'? (known agents: {', '.join(agents.names())})"


def test_an_agent_name_far_from_every_name_lists_them_and_the_spec_forms():
    with pytest.raises(AgentError) as e:
        agents.load("nobody")
    assert str(e.value).startswith(f"unknown agent 'nobody'; known agents: {', '.join(agents.names())}; or a spec: an agent spec: a registered name")


def test_the_tournament_says_the_agent_meant(capsys):
    pytest.importorskip("matplotlib")  # past argparse the program checks for its plot first
    assert cli(["tournament", "--agents", "optimall,greedy", "--games", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == f"generala tournament: error: unknown agent 'optimall'; did you mean 'optimal'? (known agents: {', '.join(agents.names())})\n"


def test_a_mistyped_rule_set_says_the_one_meant(capsys):
    assert cli(["rules", "classsic"]) == 2
    assert capsys.readouterr().err == (
        "generala rules: error: unknown rule set 'classsic'; did you mean 'classic'? (presets: classic, double, sixty, or a path to a YAML file)\n"
    )
    assert cli(["rules", "yahtzee"]) == 2
    assert capsys.readouterr().err == "generala rules: error: unknown rule set 'yahtzee'; presets: classic, double, sixty, or a path to a YAML file\n"


def test_a_mistyped_rule_key_says_the_one_meant():
    from generala_env.core.rules import RulesError, load_rules

    with pytest.raises(RulesError, match=r"^unknown rule key\(s\) 'served_bonnus'; did you mean 'served_bonus'\? \(known keys: base, lines, "):
        load_rules({"served_bonnus": 5})


@pytest.mark.parametrize(
    "override, line",
    [
        (
            "algo.learning_rat=1e-4",
            "unknown config key 'algo.learning_rat'; did you mean 'algo.learning_rate'? (known keys here: batch_size, clip_range, ent_coef, "
            "gae_lambda, gamma, learning_rate, lr_schedule, max_grad_norm, n_epochs, n_steps, normalize_reward, target_kl, vf_coef)",
        ),
        ("evl.games=3", "unknown config key 'evl'; did you mean 'eval'? (known keys here: algo, backend, "),
        ("colour=blue", "unknown config key 'colour'; known keys here: algo, backend, "),
    ],
)
def test_a_mistyped_config_key_says_the_one_meant(override, line):
    from generala_training.config import ConfigError, load_config

    with pytest.raises(ConfigError) as e:
        load_config("ppo_tiny", [override])
    assert str(e.value).startswith(line)


def test_a_mistyped_config_name_says_the_one_meant():
    from generala_training.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=r"^config file ppo_tny does not exist; did you mean 'ppo_tiny'\? \(the shipped configs are "):
        load_config("ppo_tny")


# -- a path that holds no agent ----------------------------------------------------------------
def test_a_path_with_nothing_there_is_no_such_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for spec, line in [
        ("runs/nope", "agent 'runs/nope': no such folder runs/nope"),
        ("./exports/mine", "agent './exports/mine': no such folder ./exports/mine"),
        (str(tmp_path / "gone"), f"agent '{tmp_path / 'gone'}': no such folder {tmp_path / 'gone'}"),
    ]:
        with pytest.raises(AgentError) as e:
            agents.load(spec)
        assert str(e.value) == line
    pytest.importorskip("matplotlib")
    assert cli(["tournament", "--agents", "runs/nope,greedy", "--games", "2", "--no-progress"]) == 2
    assert capsys.readouterr().err == "generala tournament: error: agent 'runs/nope': no such folder runs/nope\n"


def test_a_folder_or_file_that_holds_no_agent_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(AgentError) as e:
        agents.load(str(tmp_path / "empty"))
    assert str(e.value) == (
        f"agent '{tmp_path / 'empty'}': the folder {tmp_path / 'empty'} holds no agent: neither a checkpoint (made by generala export), "
        "a training run (made by generala train) nor td-search values"
    )
    with pytest.raises(AgentError, match=r"notes.txt is a file, not an agent's folder .*; Python code is named path/to/file.py:attr$"):
        agents.load(str(tmp_path / "notes.txt"))


def test_a_web_caller_hears_nothing_of_folders(tmp_path):
    with pytest.raises(AgentError) as e:
        agents.load("runs/nope", trust=Trust.WEB)
    assert str(e.value).startswith("unknown agent 'runs/nope'; known agents: ") and "folder" not in str(e.value)
