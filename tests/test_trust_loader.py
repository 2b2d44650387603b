"""One loader, one trust policy: what a spec may make this process do depends on who asks.

Each test plays the red team's move (a Python file that writes a marker when it runs, a pickle
that creates a file when it is unpickled, a pool of such zips) and checks that it is refused
where it must be, with one line naming the way in, and that the same spec works where the user
asked for it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from helpers import TINY_CONFIG, forged_zip

import generala_agents as agents
import generala_env  # noqa: F401  (registers the env)
from generala_agents import Trust
from generala_agents.base import AgentError
from generala_agents.ppo import SHIPPED, PoolAgent
from generala_env.envs import opponents
from generala_training.cli import main as cli_main


def hostile_file(folder: Path, marker: Path) -> Path:
    """A Python file whose import writes ``marker``, with an agent factory in it."""
    path = folder / "evil.py"
    path.write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from generala_agents.baselines import GreedyAgent\n"
        "def make(rules='classic', seed=None):\n    return GreedyAgent(rules, seed)\n"
    )
    return path


@pytest.fixture
def pool_of_forged_zips(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    marker = tmp_path / "unpickled"
    forged_zip(pool / "step_256.zip", marker)
    return pool, marker


# -- the policies ------------------------------------------------------------------------------
def test_the_named_policies():
    assert agents.Trust is opponents.Trust
    assert (Trust.PROGRAM.code, Trust.PROGRAM.paths, Trust.PROGRAM.zip) == (True, True, False)
    assert (Trust.WEB.code, Trust.WEB.paths, Trust.WEB.zip) == (False, False, False)
    assert Trust.PROGRAM.with_zip().zip and not Trust.PROGRAM.zip  # a new value; the named one is unchanged
    with pytest.raises(AttributeError):
        Trust.PROGRAM.zip = True  # type: ignore[misc]
    assert not Trust.WEB.with_zip().trusts_zips_in("/anywhere")  # a zip is a path: the web names none


def test_the_web_policy_takes_registered_names_only(tmp_path):
    marker = tmp_path / "ran"
    evil = hostile_file(tmp_path, marker)
    shutil.copytree(SHIPPED / "ppo-classic", tmp_path / "ckpt")
    forged_zip(tmp_path / "m.zip", tmp_path / "unpickled")
    for spec in (
        f"{evil}:make",
        "os:system",
        "subprocess:run",
        "pool:" + str(tmp_path),
        str(tmp_path / "ckpt"),
        str(tmp_path / "m.zip"),
        "../checkpoints/td-search",
    ):
        with pytest.raises(AgentError, match="unknown agent") as e:
            agents.load(spec, trust=Trust.WEB)
        assert "\n" not in str(e.value) and "spec" not in str(e.value)  # no hint at specs to a web caller
        with pytest.raises(AgentError):
            agents.load(spec, trust=Trust.WEB, trust_zip=True)  # trust_zip adds zips, not paths
    assert not marker.exists() and not (tmp_path / "unpickled").exists()
    assert agents.load("greedy", trust=Trust.WEB).name == "greedy"
    assert agents.load("ppo-classic-2p", trust=Trust.WEB).num_players == 2  # a shipped checkpoint is a registered name
    # the same file, asked for from Python, is the user's own code: it runs
    assert agents.load(f"{evil}:make").name == "greedy" and marker.read_text() == "ran"


def test_a_prefix_or_resolver_that_does_not_take_the_trust_is_not_asked_by_the_web(tmp_path):
    asked = []

    def resolver(name):
        asked.append(name)
        return None

    opponents.register_prefix("mine:", lambda rest, rules, seed: asked.append(rest))
    opponents.register_resolver(resolver)
    try:
        with pytest.raises(AgentError, match="unknown agent"):
            agents.load("mine:x", trust=Trust.WEB)
        with pytest.raises(AgentError, match="unknown agent"):
            agents.load("whatever", trust=Trust.WEB)
        assert asked == []
        with pytest.raises(AgentError):
            agents.load("whatever")  # the command line's trust asks it
        assert asked == ["whatever"]
    finally:
        opponents.unregister_prefix("mine:")
        opponents.unregister_resolver(resolver)


def test_a_trust_that_allows_folders_but_no_code_refuses_module_attr(tmp_path):
    marker = tmp_path / "ran"
    evil = hostile_file(tmp_path, marker)
    files_only = Trust(code=False, paths=True)
    with pytest.raises(AgentError, match="names Python code"):
        agents.load(f"{evil}:make", trust=files_only)
    with pytest.raises(AgentError, match="names Python code"):
        agents.load("os:system", trust=files_only)
    assert not marker.exists()
    shutil.copytree(SHIPPED / "ppo-classic", tmp_path / "ckpt")
    assert agents.load(str(tmp_path / "ckpt"), trust=files_only).name == "ckpt"


# -- SB3 zips: asked for at each use ------------------------------------------------------------
def test_a_pool_of_zips_needs_the_opt_in(pool_of_forged_zips):
    pytest.importorskip("sb3_contrib")
    pool, marker = pool_of_forged_zips
    with pytest.raises(AgentError, match="--trust-zip") as e:
        agents.load(f"pool:{pool}")
    assert "\n" not in str(e.value)
    with pytest.raises(AgentError, match="trust_zip=True"):
        PoolAgent(pool)
    assert not marker.exists()
    # with the opt-in the files really are opened: this test would see an unguarded route
    agent = agents.load(f"pool:{pool}", trust_zip=True)
    with pytest.raises(AgentError, match="cannot be loaded"):
        agent.reset(seed=0)
    assert marker.exists()


def test_a_pool_of_a_real_run_plays_with_the_opt_in(tiny_run, tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    shutil.copyfile(sorted((tiny_run / "checkpoints").glob("step_*.zip"))[0], pool / "step_256.zip")
    with pytest.raises(AgentError, match="--trust-zip"):
        agents.load(f"pool:{pool}", rules="classic")
    agent = agents.load(f"pool:{pool}", rules="classic", seed=0, trust_zip=True)
    agent.reset(seed=1)
    assert [p.name for p in agent.pool_files()] == ["step_256.zip"] and agent.current is not None  # the zip's policy, not the fallback
    obs, info = gym.make("Generala-v0").reset(seed=0)
    assert info["action_mask"][agent.act(obs, info)]
    with pytest.raises(AgentError, match="--trust-zip"):  # not remembered
        agents.load(f"pool:{pool}", rules="classic")


def test_the_envs_opponents_refuse_zips_unless_the_caller_trusts_them(pool_of_forged_zips, tmp_path):
    pytest.importorskip("sb3_contrib")
    from generala_env.envs.vector import GeneralaVectorEnv

    pool, marker = pool_of_forged_zips
    for opponents_given in (f"pool:{pool}", str(pool / "step_256.zip"), ["greedy", f"pool:{pool}"]):
        players = 3 if isinstance(opponents_given, list) else 2
        with pytest.raises(AgentError, match="--trust-zip"):
            gym.make("Generala-v0", num_players=players, opponents=opponents_given)
        with pytest.raises(AgentError, match="--trust-zip"):
            GeneralaVectorEnv(2, num_players=players, opponents=opponents_given)
    with pytest.raises(AgentError, match="--trust-zip"):
        GeneralaVectorEnv(2, num_players=2, opponent_mix=["greedy", f"pool:{pool}"])
    assert not marker.exists()
    # the Python caller who says so gets the pool (its zips open at the first reset)
    env = gym.make("Generala-v0", num_players=2, opponents=f"pool:{pool}", opponent_trust=Trust(zip=True))
    with pytest.raises(AgentError, match="cannot be loaded"):
        env.reset(seed=0)
    assert marker.exists()


def test_no_folder_is_trusted_for_being_the_programs_own(tmp_path):
    own = tmp_path / "run" / "checkpoints"
    own.mkdir(parents=True)
    assert not Trust().trusts_zips_in(own) and not Trust.PROGRAM.trusts_zips_in(own)
    assert Trust(zip=True).trusts_zips_in(own) and not Trust.WEB.with_zip().trusts_zips_in(own)
    marker = tmp_path / "unpickled"
    forged_zip(own / "step_1.zip", marker)  # a run's own checkpoints folder, a zip without its twin
    with pytest.raises(AgentError, match="--trust-zip"):
        gym.make("Generala-v0", num_players=2, opponents=f"pool:{own}")
    with pytest.raises(AgentError, match="--trust-zip"):
        agents.load(str(own / "step_1.zip"))
    assert not marker.exists()


def test_a_configs_pool_opponent_is_refused_and_self_play_is_the_runs_own(tmp_path, pool_of_forged_zips):
    pytest.importorskip("sb3_contrib")
    from generala_training.config import load_config
    from generala_training.envs import training_envs

    pool, marker = pool_of_forged_zips
    cfg = load_config(TINY_CONFIG, [f"run_dir={tmp_path}", "env.num_players=2", f"env.opponents=pool:{pool}"])
    with pytest.raises(AgentError, match="--trust-zip"):
        training_envs(cfg, tmp_path / "run")
    assert not marker.exists()
    cfg = load_config(TINY_CONFIG, [f"run_dir={tmp_path}", "env.num_players=2", "env.opponents=self-play"])
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    venv = training_envs(cfg, tmp_path / "run")  # the run's own checkpoints, played from their twins: no flag
    venv.close()
    forged_zip(tmp_path / "run" / "checkpoints" / "step_64.zip", marker)  # a step without its twin: even the run's own pool refuses it
    with pytest.raises(AgentError, match="--trust-zip"):
        training_envs(cfg, tmp_path / "run")
    assert not marker.exists()


def test_programs_refuse_a_pool_of_zips_without_the_flag(pool_of_forged_zips, tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    pool, marker = pool_of_forged_zips
    runs = [
        ["evaluate", "--agents", f"pool:{pool}", "--games", "2", "--out", str(tmp_path / "ev"), "--no-progress"],
        ["tournament", "--agents", f"greedy,pool:{pool}", "--games", "2", "--out", str(tmp_path / "to"), "--no-progress"],
        ["replay", f"pool:{pool}", "--out", str(tmp_path / "r.html")],
        ["replay", str(pool / "step_256.zip"), "--out", str(tmp_path / "r.html")],
    ]
    for argv in runs:
        assert cli_main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "--trust-zip" in err and "Traceback" not in err and err.count("\n") == 1, (argv, err)
    assert not marker.exists()
    assert not (tmp_path / "r.html").exists()


def test_diagnose_refuses_a_zip_and_a_runs_zips_without_the_flag(pool_of_forged_zips, tmp_path, capsys):
    from generala_training.diagnose import run

    pool, marker = pool_of_forged_zips
    assert run([str(pool / "step_256.zip"), "--games", "1"]) == 2
    err = capsys.readouterr().err
    assert "--trust-zip" in err and err.count("\n") == 1
    (tmp_path / "r" / "checkpoints").mkdir(parents=True)
    forged_zip(tmp_path / "r" / "checkpoints" / "step_5.zip", marker)
    assert run([str(tmp_path / "r"), "--run", "--games", "1"]) == 2
    assert "--trust-zip" in capsys.readouterr().err
    assert not marker.exists()
    assert run([str(tmp_path / "nowhere.zip"), "--games", "1"]) == 2
    assert "there is no file" in capsys.readouterr().err


# -- the two-player table: read once, never solved by a hint ---------------------------------------
SMALL = {"lines": ["ones", "twos", "generala"]}


def test_a_hint_never_solves_even_when_the_cache_holds_a_table_without_its_record(tmp_path, monkeypatch):
    import generala_agents.solver2p as s2p
    from generala_env.core.rules import load_rules
    from generala_play.hints import two_player_table

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules = load_rules(SMALL)
    np.save(s2p.cache_path(rules), np.zeros(3, np.float32))  # a table whose .json is missing: the old check saw a cached table

    def no_solve(self, *args, **kwargs):
        raise AssertionError("a hint started a two-player solve")

    monkeypatch.setattr(s2p.TwoPlayerSolver, "sheet_layout", no_solve)
    why = two_player_table(rules)
    assert isinstance(why, str) and "generala solve --players 2" in why
    monkeypatch.undo()
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    assert not isinstance(two_player_table(rules, solve=True), str)  # asked for: solved, then read by every caller
    a, b = agents.load("optimal-2p", rules=rules), two_player_table(rules)
    assert a.solver is b.solver  # one table per rule set per process


def test_what_an_agent_fits_is_read_without_loading_it():
    from generala_env.core.rules import load_rules

    fits = opponents.cannot_play
    assert "1-player" in fits("ppo-classic", "classic", 2)
    assert "trained for rules 'classic'" in fits("ppo-classic-2p", load_rules("double"), 2)
    assert fits("ppo-classic-2p", "classic", 2) is None and fits("greedy", "double", 2) is None
    assert "two-player games only" in fits("optimal-2p", "classic", 1) and fits("optimal-2p", "classic", 2) is None
    assert fits("td-search-2p", "classic", 3) is not None and fits("td-search", "double", 2) is not None
    assert fits("no-such-agent", "classic", 2) is None  # nobody said
