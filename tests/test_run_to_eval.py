"""From a training run to its evaluation (issue 33, items 4 and 5): a run folder is an agent spec,
default output folders never collide, total_timesteps is honoured in whole rollouts, export writes
outside the shipped agents, and the shipped training configs are found by name from any folder.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import forged_zip

import generala_agents as agents
from generala_agents import Trust
from generala_agents.base import AgentError
from generala_training.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]


def _one_error_line(err: str, program: str) -> str:
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith(f"generala {program}: error: ")]
    assert len(errors) == 1 and err.strip().count("\n") == 0, err
    return errors[0]


def _copy_run(tiny_run: Path, to: Path, drop: tuple[str, ...] = ()) -> Path:
    shutil.copytree(tiny_run, to, ignore=shutil.ignore_patterns(".lock", *drop))
    return to


def _export(run: Path, name: str, dest: Path | None = None) -> int:
    from generala_training.export import main as export_main

    return export_main([str(run), "--name", name, "--games", "2", *(["--dest", str(dest)] if dest is not None else [])])


def _greedy_actions_of_the_zip(path: Path, states: int = 40) -> tuple[list[int], list]:
    """The actions MaskablePPO's own policy (loaded by SB3, the oracle) plays on seeded states, and the states."""
    from sb3_contrib import MaskablePPO

    from generala_agents.policy_net import masked_argmax_actions
    from generala_env.envs.env import GeneralaEnv

    policy = MaskablePPO.load(path, device="cpu").policy
    env = GeneralaEnv(rules="classic")
    rng = np.random.default_rng(3)
    obs, info = env.reset(seed=5)
    seen, actions = [], []
    for _ in range(states):
        seen.append((obs, info))
        actions.append(int(masked_argmax_actions(policy, obs[None], info["action_mask"][None])[0]))
        legal = np.flatnonzero(info["action_mask"])
        obs, _, done, _, info = env.step(int(legal[rng.integers(len(legal))]))
        if done:
            obs, info = env.reset()
    return actions, seen


# -- a run folder is an agent spec -----------------------------------------------------------------
def test_a_run_folder_without_the_opt_in_is_refused_naming_the_ways_that_work(tiny_run, tmp_path, capsys):
    with pytest.raises(AgentError) as e:
        agents.load(str(tiny_run))
    message = str(e.value)
    assert "\n" not in message and "--trust-zip" in message and f"generala export {tiny_run} --name NAME" in message
    assert "--agents exports/NAME" in message and "best_model.zip" in message
    out = tmp_path / "ev"
    assert cli_main(["evaluate", "--agents", f"greedy,{tiny_run}", "--games", "2", "--no-progress", "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err, "evaluate")
    assert "--trust-zip" in line and "generala export" in line
    assert not out.exists()


def test_a_run_folder_plays_its_best_model_with_the_opt_in(tiny_run):
    pytest.importorskip("sb3_contrib")
    agent = agents.load(str(tiny_run), trust_zip=True)
    assert agent.name == str(tiny_run)
    assert agent.metadata == {"run": str(tiny_run), "model": "best_model.zip", "training_steps": 512}  # the tiny config's 2 rollouts of 256
    assert agent.played == "best_model.zip (step 512)"
    expected, states = _greedy_actions_of_the_zip(tiny_run / "best_model.zip")
    assert [agent.act(obs, info) for obs, info in states] == expected
    with pytest.raises(AgentError, match="--trust-zip"):  # asked for at each use, never remembered
        agents.load(str(tiny_run))


def test_a_run_without_a_best_model_plays_its_final_then_its_latest(tiny_run, tmp_path):
    pytest.importorskip("sb3_contrib")
    run = _copy_run(tiny_run, tmp_path / "run", drop=("best_model.zip",))
    assert agents.load(str(run), trust_zip=True).metadata["model"] == "final_model.zip"
    (run / "final_model.zip").unlink()
    assert agents.load(str(run), trust_zip=True).played == "latest.zip (step 512)"
    for f in ("latest.zip",):
        (run / f).unlink()
    with pytest.raises(AgentError, match="holds no model yet"):
        agents.load(str(run), trust_zip=True)


def test_evaluate_and_tournament_take_a_run_folder_and_say_which_model_plays(tiny_run, tmp_path, capsys):
    out = tmp_path / "ev"
    argv = ["evaluate", "--agents", f"{tiny_run},greedy", "--games", "2", "--no-progress", "--out", str(out), "--trust-zip"]
    assert cli_main(argv) == 0
    assert f"{tiny_run}: plays best_model.zip (step 512)" in capsys.readouterr().out
    rows = json.loads((out / "results.json").read_text())["agents"]
    assert sorted(r["agent"] for r in rows) == sorted([str(tiny_run), "greedy"])


def test_a_run_folder_holding_an_export_plays_it_without_the_opt_in(tiny_run, tmp_path):
    pytest.importorskip("sb3_contrib")
    run = _copy_run(tiny_run, tmp_path / "run")
    assert _export(run, "ck", dest=run) == 0
    agent = agents.load(str(run))  # weights only: no opt-in
    assert type(agent).__name__ == "PPOAgent" and agent.played == "its export ck of best_model.zip (step 512)"
    expected, states = _greedy_actions_of_the_zip(run / "best_model.zip")
    assert [agent.act(obs, info) for obs, info in states] == expected
    assert agents.load(str(run), trust_zip=True).metadata["model"] == "best_model.zip"  # asked for: the run's model itself
    shutil.copytree(run / "ck", run / "ck2")
    with pytest.raises(AgentError, match="several exports") as e:
        agents.load(str(run))
    assert str(run / "ck") in str(e.value) and str(run / "ck2") in str(e.value)


# -- the trust policy stays the only gate -----------------------------------------------------------
def test_a_run_folder_is_no_way_around_the_zip_opt_in(tiny_run, tmp_path):
    marker = tmp_path / "unpickled"
    run = _copy_run(tiny_run, tmp_path / "run", drop=("best_model.zip", "final_model.zip", "latest.zip"))
    forged_zip(run / "best_model.zip", marker)
    with pytest.raises(AgentError, match="--trust-zip"):
        agents.load(str(run))
    with pytest.raises(AgentError, match="unknown agent"):
        agents.load(str(run), trust=Trust.WEB, trust_zip=True)  # a web page names no folder
    with pytest.raises(AgentError, match="--trust-zip"):
        agents.load(str(run), trust=Trust(zip=False))  # no folder is trusted for being a run's
    assert not marker.exists()
    # a model file that is a link to a zip elsewhere is refused even with the opt-in
    (run / "best_model.zip").unlink()
    forged_zip(tmp_path / "evil.zip", marker)
    (run / "best_model.zip").symlink_to(tmp_path / "evil.zip")
    with pytest.raises(AgentError, match="is a link"):
        agents.load(str(run), trust_zip=True)
    assert not marker.exists()


def test_an_export_in_a_run_folder_that_is_a_link_is_refused(tmp_path):
    from generala_agents.ppo import SHIPPED

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("name: x\n")
    (run / "state.json").write_text("{}\n")
    shutil.copytree(SHIPPED / "ppo-classic", tmp_path / "elsewhere")
    (run / "ck").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(AgentError, match="is a link or holds one"):
        agents.load(str(run))
    (run / "ck").unlink()
    (run / "ck").mkdir()
    shutil.copyfile(SHIPPED / "ppo-classic" / "metadata.json", run / "ck" / "metadata.json")
    (run / "ck" / "policy.safetensors").symlink_to(SHIPPED / "ppo-classic" / "policy.safetensors")
    with pytest.raises(AgentError, match="is a link or holds one"):
        agents.load(str(run))
    (run / "ck" / "policy.safetensors").unlink()
    shutil.copyfile(SHIPPED / "ppo-classic" / "policy.safetensors", run / "ck" / "policy.safetensors")
    assert agents.load(str(run)).played.startswith("its export ck")  # the same files, the run's own: played


# -- default output folders -------------------------------------------------------------------------
def test_default_out_folders_differ_per_command_and_agent_set(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    common = ["--games", "2", "--no-progress"]
    assert cli_main(["evaluate", "--agents", "greedy,random", *common]) == 0
    assert cli_main(["evaluate", "--agents", "greedy,rules-of-thumb", *common]) == 0  # a different evaluation: not refused
    assert cli_main(["evaluate", "--agents", "greedy,random", *common]) == 0  # the same command again: its own folder
    assert cli_main(["tournament", "--agents", "greedy,random", *common]) == 0
    assert cli_main(["tournament", "--agents", "greedy,rules-of-thumb", *common]) == 0
    out = capsys.readouterr().out
    folders = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert len(folders) == 4, folders
    assert sum(bool(re.fullmatch(r"evaluate-classic-s0-[0-9a-f]{8}", f)) for f in folders) == 2
    assert sum(bool(re.fullmatch(r"tournament-classic-2p-s0-[0-9a-f]{8}", f)) for f in folders) == 2
    for f in folders:
        assert f"results go to {Path('results') / f}" in out
        assert (tmp_path / "results" / f / "results.json").is_file()
    agents_of = {
        f: sorted(r["agent"] for r in json.loads((tmp_path / "results" / f / "results.json").read_text())["agents"])
        for f in folders
        if f.startswith("evaluate")
    }
    assert sorted(agents_of.values()) == [["greedy", "random"], ["greedy", "rules-of-thumb"]]


# -- total_timesteps in whole rollouts --------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "planned"),
    [
        (["total_timesteps=700"], 512),  # rollouts of 128 x 2 = 256: two fit
        (["total_timesteps=512"], 512),
        (["total_timesteps=100"], 256),  # less than one rollout: one
        (["total_timesteps=1000", "vec_env.n_envs=3"], 768),  # rollouts of 384
        (["total_timesteps=100000", "algo.n_steps=256", "vec_env.n_envs=16"], 98304),  # 24 rollouts of 4,096
    ],
)
def test_the_planned_steps_are_whole_rollouts_at_or_below_total_timesteps(overrides, planned):
    from generala_training.config import load_config, planned_timesteps

    assert planned_timesteps(load_config(ROOT / "configs" / "ppo_tiny.yaml", overrides)) == planned


def test_a_run_stops_at_its_rollout_boundary_and_says_so(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    from generala_training.train import main as train_main

    tiny = str(ROOT / "configs" / "ppo_tiny.yaml")
    assert train_main(["--config", tiny, f"run_dir={tmp_path}", "--run-name", "r", "total_timesteps=700", "eval.games=4"]) == 0
    cap = capsys.readouterr()
    assert "training 512 steps: 2 rollouts of 256" in cap.out and "total_timesteps 700 rounded down to whole rollouts" in cap.out
    assert json.loads((tmp_path / "r" / "state.json").read_text())["num_timesteps"] == 512
    assert "512/512" in cap.err and not re.search(r"\b(5[2-9]\d|[6-9]\d\d)/512\b", cap.err)  # the bar ends at its total
    assert train_main(["--resume", str(tmp_path / "r"), "total_timesteps=1000"]) == 0  # 768: one more rollout
    cap = capsys.readouterr()
    assert "training 256 steps: 1 rollouts of 256" in cap.out
    assert json.loads((tmp_path / "r" / "state.json").read_text())["num_timesteps"] == 768


# -- export and the shipped agents ------------------------------------------------------------------
def test_export_writes_into_exports_by_default_and_its_checkpoint_plays_by_path(tiny_run, tmp_path, monkeypatch, capsys):
    pytest.importorskip("sb3_contrib")
    from generala_agents import ppo

    shipped_before = sorted(p.name for p in ppo.SHIPPED.iterdir())
    monkeypatch.chdir(tmp_path)
    assert _export(tiny_run, "mine") == 0
    assert "play it with --agents exports/mine" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "exports" / "mine").iterdir()) == ["metadata.json", "policy.safetensors"]
    assert sorted(p.name for p in ppo.SHIPPED.iterdir()) == shipped_before
    assert "mine" not in agents.names()
    meta = json.loads((tmp_path / "exports" / "mine" / "metadata.json").read_text())
    assert meta["evaluation"]["command"] == "generala evaluate --agents optimal,exports/mine --games 2 --seed 0"
    assert agents.load("exports/mine").name == "mine"


def test_a_stray_folder_among_the_shipped_checkpoints_is_not_a_shipped_agent(monkeypatch, tmp_path):
    from generala_agents import ppo

    for name in ("ppo-classic", "my-weak-agent"):
        shutil.copytree(ppo.SHIPPED / "ppo-classic", tmp_path / name)
    monkeypatch.setattr(ppo, "SHIPPED", tmp_path)
    assert ppo.checkpoint_names() == ["ppo-classic"]
    assert ppo.find_checkpoint("my-weak-agent") is None
    assert ppo.find_checkpoint(str(tmp_path / "my-weak-agent")) == tmp_path / "my-weak-agent"  # by its path it plays


def test_the_shipped_list_names_every_checkpoint_the_repository_ships():
    from generala_agents import ppo

    assert ppo.SHIPPED_CHECKPOINTS == (
        "jax-ppo-classic",
        "ppo-classic",
        "ppo-classic-2p",
        "ppo-classic-2p-scratch",
        "ppo-classic-2p-win",
        "ppo-classic-scratch",
    )
    assert ppo.checkpoint_names() == sorted(ppo.SHIPPED_CHECKPOINTS)
    assert all(name in agents.names() for name in ppo.SHIPPED_CHECKPOINTS)


# -- the shipped configs by name -----------------------------------------------------------------
def test_a_shipped_config_is_found_by_name_from_any_folder(tmp_path, monkeypatch):
    from generala_training.config import ConfigError, load_config

    monkeypatch.chdir(tmp_path)
    by_path = load_config(ROOT / "configs" / "ppo_tiny.yaml")
    for name in ("ppo_tiny", "ppo_tiny.yaml", "configs/ppo_tiny.yaml"):
        cfg = load_config(name)
        assert cfg == by_path and cfg.total_timesteps == 512 and cfg.name == "ppo_tiny"
    with pytest.raises(
        ConfigError,
        match=r"config file ppo_huge does not exist; the shipped configs are jax_ppo_classic, ppo_classic, .*ppo_tiny \(generala train --list-configs\)",
    ):
        load_config("ppo_huge")
    with pytest.raises(ConfigError, match="does not exist"):
        load_config("elsewhere/ppo_tiny.yaml")  # a path to another folder is a path, not a name
    (tmp_path / "ppo_tiny.yaml").write_text("name: mine\ntotal_timesteps: 256\n")
    assert load_config("ppo_tiny.yaml").name == "mine"  # the user's own file comes first


def test_list_configs_names_each_shipped_config_with_a_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli_main(["train", "--list-configs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[0]: line.split(None, 1)[1] for line in lines[:-1]}
    assert sorted(listed) == sorted(p.stem for p in (ROOT / "configs").glob("*.yaml"))
    assert listed["ppo_tiny"] == "A few hundred steps: the smoke test's config (seconds, not a real agent)."
    assert listed["ppo_classic_scratch"] == "ppo-classic-scratch: MaskablePPO from scratch on classic, one player."
    assert lines[-1].startswith("(generala train --config NAME trains one")
