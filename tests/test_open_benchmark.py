"""The open benchmark: agent specs everywhere, the Python API that returns results, scoring an
outside policy exactly as a built-in run is scored, submissions, the merged report, CLI hygiene."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers import TINY_CONFIG

import generala_agents as agents
from generala_agents.base import AgentError
from generala_training.evaluate import evaluate
from generala_training.tournament import tournament

ROOT = Path(__file__).resolve().parent.parent

AGENT_FILE = textwrap.dedent(
    """
    import numpy as np
    import generala_agents as agents

    class Wrapped:
        '''greedy, from outside: the factory is called as Wrapped(rules=..., seed=...)'''
        def __init__(self, rules=None, seed=None):
            self.inner = agents.load("greedy", rules=rules)
        def act(self, observation, info):
            return self.inner.act(observation, info)

    def make(rules=None, seed=None):
        return Wrapped(rules=rules, seed=seed)

    def last_legal(observation, info):
        return int(np.flatnonzero(info["action_mask"])[-1])

    class Plain:  # a class whose constructor takes nothing: made with no arguments
        def act(self, observation, info):
            return int(np.flatnonzero(info["action_mask"])[-1])

    instance = Wrapped(rules="classic")
    not_an_agent = 42
    returns_text = lambda observation, info: "write"
    """
)


@pytest.fixture()
def agent_file(tmp_path, monkeypatch):
    f = tmp_path / "outside_agents.py"
    f.write_text(AGENT_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return f


# -- agent specs -------------------------------------------------------------------------------
def test_module_and_file_specs_play_as_the_agent_they_wrap(agent_file):
    specs = ["greedy", f"{agent_file}:Wrapped", "outside_agents:make", "outside_agents:instance"]
    rows = evaluate(specs, games=30, seed=3, workers=1)
    means = {r["agent"]: r["mean"] for r in rows}
    assert len(set(means.values())) == 1, means  # the same games, the same choices
    assert means["greedy"] > 100


def test_a_class_that_takes_no_arguments_is_an_agent(agent_file):
    rows = evaluate([f"{agent_file}:Plain", f"{agent_file}:last_legal"], games=10, seed=0, workers=1)
    assert rows[0]["mean"] == rows[1]["mean"]


def test_a_plain_function_is_an_agent(agent_file):
    agent = agents.load(f"{agent_file}:last_legal", rules="classic")
    rows = evaluate({"last": agent, "spec": f"{agent_file}:last_legal"}, games=10, seed=0, workers=1)
    assert rows[0]["mean"] == rows[1]["mean"]


@pytest.mark.parametrize(
    "spec, words",
    [
        ("no_such_module_xyz:agent", "no module named 'no_such_module_xyz'"),
        ("outside_agents:missing", "has no attribute 'missing'"),
        ("outside_agents:not_an_agent", "not an agent"),
        ("/no/such/file.py:agent", "there is no file /no/such/file.py"),
        ("./my_model.zip", "there is no file ./my_model.zip"),
        ("nobody-knows-me", "unknown agent 'nobody-knows-me'"),
    ],
)
def test_every_wrong_spec_is_one_clear_line(agent_file, spec, words):
    with pytest.raises(AgentError) as e:
        agents.load(spec, rules="classic")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_an_act_that_returns_no_action_is_named(agent_file):
    with pytest.raises(AgentError, match="not an action number"):
        evaluate([f"{agent_file}:returns_text"], games=1, workers=1)


def test_a_checkpoint_for_other_rules_is_refused():
    with pytest.raises(AgentError, match="rules"):
        agents.load("ppo-classic", rules="double")


def test_a_zip_needs_the_flag_at_every_use(tmp_path):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from generala_env.adapters.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env(2, seed=0, monitor=False)
    path = tmp_path / "m.zip"
    MaskablePPO("MlpPolicy", venv, n_steps=8, batch_size=16, seed=0).save(path)
    with pytest.raises(AgentError, match="runs any code"):
        agents.load(str(path))
    agent = agents.load(str(path), trust_zip=True)
    with pytest.raises(AgentError, match="trust-zip"):  # not remembered
        agents.load(str(path))
    rows = evaluate([str(path)], games=5, trust_zip=True, workers=1)
    assert rows[0]["games"] == 5 and agent.masked
    out = subprocess.run(
        [sys.executable, "-m", "generala_training.cli", "evaluate", "--agents", str(path), "--games", "2", "--out", str(tmp_path / "o"), "--no-progress"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode != 0 and "--trust-zip" in out.stderr and "Traceback" not in out.stderr


def test_env_opponents_take_specs(agent_file):
    import gymnasium as gym

    env = gym.make("Generala-v0", num_players=2, opponents=f"{agent_file}:Wrapped")
    obs, info = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape


# -- the Python API: results, workers, the caller's own agents ------------------------------------
def test_results_are_the_same_for_any_number_of_workers(agent_file):
    one = evaluate(["greedy", f"{agent_file}:last_legal"], games=24, seed=5, workers=1)
    two = evaluate(["greedy", f"{agent_file}:last_legal"], games=24, seed=5, workers=2)
    assert one == two
    assert [r["mean"] for r in one] == sorted((r["mean"] for r in one), reverse=True)  # best first


NOTEBOOK = """
import torch
torch.ones(64, 64) @ torch.ones(64, 64)
import numpy as np
from generala_env.envs import opponents
from generala_training.evaluate import evaluate
from generala_training.tournament import tournament

class Last:
    name = "last"
    def act(self, observation, info):
        return int(np.flatnonzero(info["action_mask"])[-1])

opponents.register("nb-agent", lambda rules=None, seed=None: Last())
rows = evaluate(["greedy", Last(), "nb-agent"], games=12, seed=1, workers=2)
one = evaluate(["greedy", Last(), "nb-agent"], games=12, seed=1, workers=1)
assert rows == one, (rows, one)
t = tournament(["greedy", Last()], games=6, workers=2)
print("MEANS", [round(r["mean"], 3) for r in rows], t[0]["agent"], t[0]["points_rate"])
"""


def test_the_notebook_case_python_c_torch_and_workers():
    pytest.importorskip("torch")  # the case is torch imported (its threads started) before the workers
    out = subprocess.run([sys.executable, "-c", NOTEBOOK], capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "MEANS" in out.stdout


def test_a_script_without_a_main_guard(tmp_path):
    pytest.importorskip("torch")  # the case is torch imported (its threads started) before the workers
    script = tmp_path / "noguard.py"
    script.write_text(NOTEBOOK)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("MEANS") == 1


def test_tournament_returns_its_rows():
    rows = tournament(["greedy", "random"], games=10, seed=0, workers=1)
    assert len(rows) == 1 and rows[0]["games"] == 20
    assert rows[0]["points_rate"] > 0.8


# -- scoring an outside policy --------------------------------------------------------------------
def _tiny_grid(tmp_path, algos="ppo_mask,ppo"):
    pytest.importorskip("rliable")
    from test_benchmark import grid_args, write_configs

    from generala_training.benchmark import main

    configs = write_configs(tmp_path / "configs")
    out = tmp_path / "grid"
    assert main(grid_args(configs, out, algos, "classic,duel", 1)) == 0
    return configs, out, json.loads((out / "results.json").read_text())


def test_score_policy_gives_a_built_in_runs_recorded_score(tmp_path):
    pytest.importorskip("sb3_contrib")
    from generala_training.benchmark import score_policy

    configs, out, res = _tiny_grid(tmp_path)
    for run in res["runs"]:
        model = out / run["folder"] / "final_model.zip"
        got = score_policy(str(model), task=run["task"], config_dir=configs, trust_zip=True)
        assert got["normalized_score"] == run["normalized_score"], run
        assert got["illegal_stops"] == run["illegal_stops"]
        assert got["games"] == res["evaluation"]["final_games"]
        assert len(run["curve"]) == res["evaluation"]["points"] + 1  # results.json keeps each run's curve
    # the CLI prints the same figure
    run = res["runs"][0]
    cli = subprocess.run(
        [sys.executable, "-m", "generala_training.cli", "benchmark", "score", "--agent", str(out / run["folder"] / "final_model.zip"), "--task", run["task"], "--configs", str(configs), "--trust-zip", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["normalized_score"] == run["normalized_score"]
    _merge_a_submission(tmp_path, configs, out, res)


def test_score_policy_takes_a_batched_callable_and_an_agent():
    from generala_training.benchmark import score_policy

    greedy = agents.load("greedy")
    by_agent = score_policy(greedy, task="classic", games=20)
    by_spec = score_policy("greedy", task="classic", games=20)
    assert by_agent == by_spec and 0.7 < by_agent["normalized_score"] < 1.0

    def first_legal(obs, masks):
        return np.argmax(masks, axis=1)

    batched = score_policy(first_legal, task="classic", games=20)
    one_by_one = score_policy(agents.load(lambda o, info: int(np.argmax(info["action_mask"]))), task="classic", games=20)
    assert batched["normalized_score"] == one_by_one["normalized_score"]
    illegal = score_policy(lambda obs, masks: np.zeros(len(obs), dtype=int) + 60, task="classic", games=5)
    assert illegal["illegal_stops"] == 1.0 and illegal["normalized_score"] == 0.0


# -- submissions and the merged report -------------------------------------------------------------
def _submission(suite, **change):
    from generala_training.benchmark import submission

    data = submission.make(
        task="classic",
        algorithm="outside-ppo",
        library=("torch", "2.13.0"),
        seed=0,
        budget=250_000,
        steps=256,
        wall_clock_seconds=12.5,
        hardware="test machine",
        curve=[[0, 0.1], [128, 0.2], [256, 0.3]],
        final={"normalized_score": 0.3, "games": suite.evaluation.final_games, "illegal_stops": 0.0},
        suite=suite,
    )
    data.update(change)
    return data


def _merge_a_submission(tmp_path, configs, grid, res):
    from generala_training.benchmark import submission
    from generala_training.benchmark.leaderboard import report_main
    from generala_training.benchmark.suite import load_suite

    suite = load_suite(configs)
    subs = tmp_path / "subs"
    subs.mkdir()
    for seed in (0, 1):
        for task in ("classic", "duel"):
            submission.write(subs / f"outside-{task}-{seed}.json", _submission(suite, seed=seed, task=task, budget=256, steps=256) | {"budget": 256})
    # a budget of 256 steps is no named budget: the file is refused ...
    merged = tmp_path / "merged"
    assert report_main(["--runs", str(grid), str(subs), "--out", str(merged), "--configs", str(configs), "--reps", "50"]) == 2
    # ... and at a named one it ranks with the grid's runs once the grid is at that budget too
    for f in subs.glob("*.json"):
        data = json.loads(f.read_text())
        data["budget"] = 250_000
        submission.write(f, data)
    res_file = grid / "results.json"
    held = json.loads(res_file.read_text())
    held["steps"] = 250_000
    res_file.write_text(json.dumps(held))
    assert report_main(["--runs", str(grid), str(subs), "--out", str(merged), "--configs", str(configs), "--reps", "50"]) == 0
    out = json.loads((merged / "results.json").read_text())
    assert set(out["algos"]) == {"ppo_mask", "ppo", "outside-ppo"}
    assert "outside-ppo" in (merged / "results.md").read_text()
    assert out["aggregates"]["curves"]["classic"]["outside-ppo"]["steps"] == [0, 128, 256]


def test_a_bad_submission_is_refused_with_its_field():
    from generala_training.benchmark import BenchmarkError, submission
    from generala_training.benchmark.suite import load_suite

    suite = load_suite()
    good = _submission(suite)
    assert submission.check(good, suite) == good
    for change, words in [
        ({"suite": {"name": suite.name, "version": suite.version + 1}}, "version"),
        ({"seed": -1}, "seed"),
        ({"curve": [[10, 0.1], [5, 0.2]]}, "must increase"),
        ({"budget": 123}, "named budget"),
        ({"steps": 10**9}, "over the budget"),
        ({"final": {"normalized_score": "high", "games": 1000}}, "final.normalized_score"),
        ({"task": "chess"}, "task"),
        ({"algorithm": "a b"}, "algorithm"),
        ({"colour": "red"}, "unknown field"),
    ]:
        with pytest.raises(BenchmarkError, match=words):
            submission.check({**good, **change}, suite)
    bad = dict(good)
    del bad["hardware"]
    with pytest.raises(BenchmarkError, match="missing field"):
        submission.check(bad, suite)


# -- CLI hygiene ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["benchmark", "--seed", "1", "--steps", "10", "--out", "x"],
        ["benchmark", "--algo", "ppo", "--steps", "10", "--out", "x"],
        ["evaluate", "--game", "10"],
        ["tournament", "--agents", "greedy,random", "--game", "3"],
        ["benchmark", "score", "--agent", "greedy", "--gam", "3"],
        ["train", "--config", TINY_CONFIG, "--run-nam", "x"],
        ["export", "runs/x", "--name", "y", "--gam", "3"],
        ["play", "--opponent", "greedy"],
        ["solve", "--rule", "classic"],
        ["replay", "greedy", "--game", "1"],
        ["serve", "--por", "8001"],
    ],
)
def test_no_option_is_taken_from_a_prefix(argv, capsys):
    from generala_training.cli import main

    # train and export check for the train extra, serve for the serve extra, before they parse
    train = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "tqdm")
    for module in {"train": train, "export": train, "serve": ("fastapi", "uvicorn")}.get(argv[0], ()):
        pytest.importorskip(module)
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_out_never_replaces_what_a_different_command_wrote(tmp_path):
    pytest.importorskip("matplotlib")
    from generala_training.evaluate import main

    out = tmp_path / "res"
    assert main(["--agents", "greedy", "--games", "3", "--out", str(out), "--no-progress"]) == 0
    assert main(["--agents", "greedy", "--games", "3", "--out", str(out), "--no-progress"]) == 0  # the same command again
    with pytest.raises(ValueError, match="different command"):
        main(["--agents", "random", "--games", "3", "--out", str(out), "--no-progress"])
    assert json.loads((out / "results.json").read_text())["agents"][0]["agent"] == "greedy"
    assert main(["--agents", "random", "--games", "3", "--out", str(out), "--no-progress", "--force"]) == 0
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "results.md").write_text("my notes")
    with pytest.raises(ValueError, match="did not write"):
        main(["--agents", "greedy", "--games", "3", "--out", str(mine), "--no-progress", "--force"])
    assert (mine / "results.md").read_text() == "my notes"
    os.remove(mine / "results.md")


def test_the_console_script_finds_a_module_in_the_current_folder(agent_file):
    script = Path(sys.executable).parent / "generala"
    if not script.exists():
        pytest.skip("the generala console script is not installed beside this python")
    out = subprocess.run(
        [str(script), "benchmark", "score", "--agent", "outside_agents:make", "--games", "5", "--json"],
        capture_output=True,
        text=True,
        cwd=agent_file.parent,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert out.returncode == 0, out.stderr
    wrapped = json.loads(out.stdout)["normalized_score"]
    from generala_training.benchmark import score_policy

    assert wrapped == score_policy("greedy", task="classic", games=5)["normalized_score"]


def test_curves_a_little_apart_are_one_curve_and_far_apart_are_refused(tmp_path):
    pytest.importorskip("rliable")
    from generala_training.benchmark import BenchmarkError, submission
    from generala_training.benchmark.leaderboard import report_runs
    from generala_training.benchmark.suite import load_suite

    suite = load_suite()
    for seed, last in ((0, 250_000), (1, 250_040)):  # a run that counts steps by whole games ends past the target
        curve = [[0, 0.1], [125_000 + seed * 7, 0.5], [last, 0.6 + seed / 10]]
        submission.write(tmp_path / f"s{seed}.json", _submission(suite, seed=seed, steps=last, curve=curve))
    res = report_runs([tmp_path], reps=50)
    assert res["aggregates"]["curves"]["classic"]["outside-ppo"]["steps"] == [0, 125_003, 250_020]
    far = _submission(suite, seed=2, steps=250_000, curve=[[0, 0.1], [200_000, 0.5], [250_000, 0.6]])
    submission.write(tmp_path / "s2.json", far)
    with pytest.raises(BenchmarkError, match="different steps"):
        report_runs([tmp_path], reps=50)
