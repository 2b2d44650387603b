"""generala benchmark: tiny grids (a few hundred steps a run) through the command, checked against
their run folders; resuming; bad input; the Ray backend against the local one; the statistics."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers import forged_zip

pytest.importorskip("sb3_contrib")
pytest.importorskip("rliable")

from generala_training.benchmark import main, plan  # noqa: E402
from generala_training.benchmark.run import check_hyperparams_build, run_one, task_evaluator  # noqa: E402
from generala_training.benchmark.suite import (  # noqa: E402
    ALGOS,
    BenchmarkError,
    Task,
    load_algo,
    load_suite,
)

TINY_SUITE = {
    "name": "tiny-suite",
    "version": 1,
    "evaluation": {"seed": 7, "games": 6, "final_games": 10, "points": 2},
    "tasks": {
        "classic": {"env": {"rules": "classic"}, "reward_scale": 0.02, "illegal_penalty": -10, "max_illegal_in_a_row": 100},
        "duel": {
            "env": {"rules": "classic", "num_players": 2, "opponents": "greedy", "reward": "win", "agent_seat": "random"},
            "reward_scale": 1.0,
            "illegal_penalty": -0.2,
            "max_illegal_in_a_row": 100,
        },
    },
}
NET = {"net_arch": [16], "activation_fn": "tanh"}
TINY_ALGOS = {
    "ppo_mask": {"n_envs": 4, "policy_kwargs": NET, "hyperparams": {"n_steps": 32, "batch_size": 64, "n_epochs": 1}},
    "ppo": {"n_envs": 4, "policy_kwargs": NET, "hyperparams": {"n_steps": 32, "batch_size": 64, "n_epochs": 1}},
    "a2c": {"n_envs": 4, "policy_kwargs": NET, "hyperparams": {"n_steps": 8}},
    "trpo": {"n_envs": 4, "policy_kwargs": NET, "hyperparams": {"n_steps": 32, "batch_size": 64}},
    "dqn": {"n_envs": 4, "policy_kwargs": NET, "hyperparams": {"buffer_size": 1000, "learning_starts": 64, "batch_size": 32, "target_update_interval": 100}},
    "qrdqn": {
        "n_envs": 4,
        "policy_kwargs": {**NET, "n_quantiles": 5},
        "hyperparams": {"buffer_size": 1000, "learning_starts": 64, "batch_size": 32, "target_update_interval": 100},
    },
}
STEPS = 256


def write_configs(folder: Path, suite=None, algos=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tasks.yaml").write_text(yaml.safe_dump(suite or TINY_SUITE))
    for name, cfg in (algos or TINY_ALGOS).items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
    return folder


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    return write_configs(tmp_path_factory.mktemp("configs"))


def grid_args(configs: Path, out: Path, algos="ppo_mask,dqn", tasks="classic,duel", seeds=2, steps=STEPS, *extra):
    return [
        "--algos",
        algos,
        "--tasks",
        tasks,
        "--seeds",
        str(seeds),
        "--steps",
        str(steps),
        "--out",
        str(out),
        "--configs",
        str(configs),
        "--workers",
        "1",
        "--reps",
        "100",
        *extra,
    ]


@pytest.fixture(scope="module")
def grid(configs, tmp_path_factory):
    """A finished tiny grid: ppo_mask and dqn on a one-player and a two-player task, two seeds."""
    out = tmp_path_factory.mktemp("grid")
    assert main(grid_args(configs, out)) == 0
    return out


def test_results_json_agrees_with_the_run_folders(grid):
    from generala_agents.solver import load_or_solve

    res = json.loads((grid / "results.json").read_text())
    assert res["suite"] == {"name": "tiny-suite", "version": 1}
    (call,) = res["calls"]  # the one call that trained the runs, from OUT/calls.jsonl
    assert call["outcome"] == "done" and call["runs_to_train"] == 8 and res["wall_seconds"] == call["seconds"] > 0
    assert len(res["runs"]) == 2 * 2 * 2
    assert {(r["algo"], r["task"], r["seed"]) for r in res["runs"]} == {(a, t, s) for a in ("ppo_mask", "dqn") for t in ("classic", "duel") for s in (0, 1)}
    optimum = load_or_solve("classic")[0].expected_score
    assert res["optimum"]["classic"] == pytest.approx(optimum) and res["optimum"]["duel"] is None
    for r in res["runs"]:
        folder = grid / r["folder"]
        assert folder == grid / "runs" / r["task"] / r["algo"] / f"seed{r['seed']}"
        state = json.loads((folder / "state.json").read_text())
        assert state["done"] and (folder / "final_model.zip").is_file() and not list(folder.glob("ckpt_*"))
        assert r["steps"] == state["steps"] >= STEPS
        assert r["score"] == state["final"]["score"] and r["normalized_score"] == state["final"]["normalized_score"]
        if r["task"] == "classic":
            assert r["normalized_score"] == pytest.approx(r["score"] / optimum)
            assert 0 <= r["score"] <= 400
        else:
            assert r["normalized_score"] == r["score"] and 0 <= r["score"] <= 1  # the win rate
            assert r["score"] * 40 == pytest.approx(round(r["score"] * 40))  # 10 seeds x 2 seats, a draw counting half
        if r["algo"] == "ppo_mask":
            assert r["illegal_stops"] == 0  # the mask never lets it play an illegal action
        curve = (folder / "curve.csv").read_text().splitlines()
        assert curve[0].startswith("step,score,normalized_score") and len(curve) == 1 + len(state["evaluations"]) == 1 + 3  # before training, then 2 points
        assert [e["step"] for e in state["evaluations"]][0] == 0
    agg = res["aggregates"]
    from generala_training.benchmark.report import iqm

    for t in ("classic", "duel"):
        for a in ("ppo_mask", "dqn"):
            scores = [r["normalized_score"] for r in res["runs"] if r["task"] == t and r["algo"] == a]
            est = agg["per_task"][t][a]["iqm"]
            assert est["value"] == pytest.approx(iqm(np.array(scores)))
            assert est["ci"][0] <= est["value"] + 1e-12 and est["value"] <= est["ci"][1] + 1e-12
            assert agg["curves"][t][a]["steps"][0] == 0 and len(agg["curves"][t][a]["iqm"]) == 3
    assert set(agg["overall"]) == {"ppo_mask", "dqn"} and set(agg["overall"]["dqn"]) == {"iqm", "mean", "median", "optimality_gap"}
    (poi,) = agg["probability_of_improvement"]
    assert {poi["x"], poi["y"]} == {"ppo_mask", "dqn"} and 0 <= poi["probability"] <= 1
    assert len(agg["performance_profile"]["share_above"]["dqn"]) == len(agg["performance_profile"]["tau"])
    md = (grid / "results.md").read_text()
    assert "## classic (optimum 149.11)" in md and "## duel (win rate)" in md and "| ppo_mask |" in md
    for png in ("learning_curves.png", "aggregates.png", "performance_profile.png"):
        assert (grid / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_second_call_skips_the_finished_runs(grid, configs, capsys):
    states = {p: p.read_text() for p in grid.glob("runs/*/*/*/state.json")}
    models = {p: p.stat().st_mtime_ns for p in grid.glob("runs/*/*/*/final_model.zip")}
    before = json.loads((grid / "results.json").read_text())["runs"]
    capsys.readouterr()
    assert main(grid_args(configs, grid)) == 0
    assert "8 already done" in capsys.readouterr().out
    assert {p: p.read_text() for p in grid.glob("runs/*/*/*/state.json")} == states
    assert {p: p.stat().st_mtime_ns for p in grid.glob("runs/*/*/*/final_model.zip")} == models
    after = json.loads((grid / "results.json").read_text())
    assert after["runs"] == before and len(after["calls"]) == 1  # a call that trained nothing is not logged


class Cut(Exception):
    pass


def _params(path: Path, algo: str):
    from generala_training.benchmark.suite import algo_class

    return {k: v.numpy() for k, v in algo_class(algo).load(path, device="cpu").policy.state_dict().items()}


@pytest.mark.parametrize("algo", ["ppo", "qrdqn"])  # on-policy, and off-policy with its replay buffer
def test_a_cut_run_resumes_as_if_it_had_never_stopped(algo, configs, tmp_path):
    (whole,) = plan([algo], ["classic"], 1, STEPS, tmp_path / "whole", configs)
    (cut,) = plan([algo], ["classic"], 1, STEPS, tmp_path / "cut", configs)
    a = run_one(whole)

    def stop(point):
        if point["step"] > 0:
            raise Cut

    with pytest.raises(Cut):
        run_one(cut, report=stop)
    mid = json.loads((Path(cut.folder) / "state.json").read_text())
    ck = Path(cut.folder) / mid["checkpoint"]
    assert not mid["done"] and 0 < mid["steps"] < STEPS and (ck / "model.zip").is_file() and (ck / "model.safetensors").is_file()
    marker = tmp_path / "unpickled"
    forged_zip(ck / "model.zip", marker)  # the run goes on from the checkpoint's tensors: its zip is never unpickled
    b = run_one(cut)
    assert not marker.exists()
    drop = lambda s: [{k: v for k, v in e.items() if k != "train_seconds"} for e in s["evaluations"]] + [s["final"]]  # noqa: E731
    assert drop(a) == drop(b)
    pa, pb = _params(Path(whole.folder) / "final_model.zip", algo), _params(Path(cut.folder) / "final_model.zip", algo)
    assert pa.keys() == pb.keys() and all(np.array_equal(pa[k], pb[k]) for k in pa)


def test_a_run_leaves_nothing_in_the_temporary_folder(configs, tmp_path, monkeypatch):
    import tempfile

    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))  # where SB3 puts a logger's folder
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    (spec,) = plan(["ppo"], ["classic"], 1, 128, tmp_path / "runs", configs)
    run_one(spec)
    assert (Path(spec.folder) / "final_model.zip").is_file()
    assert [p.name for p in system_tmp.iterdir() if p.name.startswith("SB3-")] == []  # (torch keeps its own caches there)


def test_a_run_loads_its_tasks_rule_set_once(configs, tmp_path, monkeypatch):
    """A run loads its task's rules once and hands the rule set to the games of every chunk and to
    its evaluations (each of them loaded its own: five for a run of two evaluation points)."""
    import generala_env.core.rules as rules_module

    (spec,) = plan(["ppo_mask"], ["duel"], 1, STEPS, tmp_path / "runs", configs)
    made = []
    real = rules_module._build  # what load_rules makes every rule set with, from a name, a file or a mapping
    monkeypatch.setattr(rules_module, "_build", lambda settings, name: made.append(name) or real(settings, name))
    assert run_one(spec)["done"]
    assert made == ["classic"]


def test_the_same_seed_gives_the_same_run_and_another_seed_another(configs, tmp_path):
    one, two = (plan(["ppo_mask"], ["classic"], 2, 128, tmp_path / d, configs) for d in ("one", "two"))
    a0, b0 = run_one(one[0]), run_one(two[0])
    run_one(one[1])
    assert a0["final"] == b0["final"] and [e["score"] for e in a0["evaluations"]] == [e["score"] for e in b0["evaluations"]]
    pa, pb, p1 = (_params(Path(s.folder) / "final_model.zip", "ppo_mask") for s in (one[0], two[0], one[1]))
    assert all(np.array_equal(pa[k], pb[k]) for k in pa)
    assert not all(np.array_equal(pa[k], p1[k]) for k in pa)


def _error(capsys, args) -> str:
    capsys.readouterr()
    assert main(args) == 2
    return capsys.readouterr().err


def test_bad_input_is_refused_before_anything_is_trained(configs, tmp_path, capsys):
    out = tmp_path / "out"
    err = _error(capsys, grid_args(configs, out, algos="ppo_mask,sac"))
    assert "unknown algo id(s) sac" in err and all(a in err for a in ALGOS)
    err = _error(capsys, grid_args(configs, out, tasks="classic,yahtzee"))
    assert "unknown task id(s) yahtzee" in err and "classic, duel" in err
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert "is a file" in _error(capsys, grid_args(configs, a_file))
    assert not out.exists()
    for flag in ("--steps", "--seeds"):
        args = grid_args(configs, out)
        args[args.index(flag) + 1] = "0"
        with pytest.raises(SystemExit) as e:
            main(args)
        assert e.value.code == 2 and "must be at least 1" in capsys.readouterr().err
    bad = write_configs(tmp_path / "bad", algos={"dqn": {**TINY_ALGOS["dqn"], "hyperparams": {"learning_rat": 0.1}}})
    err = _error(capsys, grid_args(bad, out, algos="dqn"))
    assert "learning_rat is not hyperparameter(s) of DQN" in err and "learning_rate" in err
    suite = json.loads(json.dumps(TINY_SUITE))
    suite["tasks"]["classic"]["env"]["rules"] = {"base": "classic", "ones": 3}
    err = _error(capsys, grid_args(write_configs(tmp_path / "bad_rules", suite=suite), out, algos="dqn", tasks="classic"))
    assert "task 'classic'" in err and "ones" in err
    assert not out.exists()


def test_a_run_folder_of_other_settings_is_refused(grid, configs, capsys):
    err = _error(capsys, grid_args(configs, grid, steps=STEPS * 2))
    assert "holds a run with other settings (steps differ)" in err


@pytest.mark.parametrize(("module", "extra", "backend"), [("rliable", "benchmark", "local"), ("ray", "ray", "ray")])
def test_a_missing_extra_is_named(module, extra, backend, configs, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # import rliable / ray now fails
    err = _error(capsys, grid_args(configs, tmp_path / "out", "ppo_mask", "classic", 1, STEPS, "--backend", backend))
    # both extras bring torch: the CPU build first, from the clone (the package is on no index)
    assert f'in the project\'s clone: pip install torch==2.13.0 && pip install ".[{extra}]"' in err and module in err
    assert not (tmp_path / "out").exists()


def test_the_ray_backend_gives_the_local_results(grid, configs, tmp_path):
    pytest.importorskip("ray.tune")
    out = tmp_path / "ray"
    assert main(grid_args(configs, out, "ppo_mask,dqn", "classic", 1, STEPS, "--backend", "ray")) == 0  # one CPU, its trials in turn
    ray_runs = json.loads((out / "results.json").read_text())["runs"]
    local = {(r["algo"], r["task"], r["seed"]): r for r in json.loads((grid / "results.json").read_text())["runs"]}
    assert len(ray_runs) == 2
    for r in ray_runs:
        twin = local[(r["algo"], r["task"], r["seed"])]
        assert (r["steps"], r["score"], r["normalized_score"]) == (twin["steps"], twin["score"], twin["normalized_score"])
        assert r["folder"] == twin["folder"] == f"runs/{r['task']}/{r['algo']}/seed{r['seed']}"
        evs = json.loads((out / r["folder"] / "state.json").read_text())["evaluations"]
        local_evs = json.loads((grid / twin["folder"] / "state.json").read_text())["evaluations"]
        assert [e["score"] for e in evs] == [e["score"] for e in local_evs]


def test_two_local_workers_give_the_one_worker_results(grid, configs, tmp_path):
    out = tmp_path / "two"
    assert main(grid_args(configs, out, "ppo_mask,dqn", "classic", 1, STEPS, "--workers", "2")) == 0
    local = {(r["algo"], r["task"], r["seed"]): r for r in json.loads((grid / "results.json").read_text())["runs"]}
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert len(runs) == 2
    for r in runs:
        twin = local[(r["algo"], r["task"], r["seed"])]
        assert (r["steps"], r["score"], r["normalized_score"]) == (twin["steps"], twin["score"], twin["normalized_score"])


def test_the_evaluation_plays_the_harness_games_and_stops_at_an_illegal_action():
    from generala_training.harness import game_seed, play_lockstep

    task = Task("classic", {"rules": "classic"}, 0.02, -10, 100)
    first_legal = lambda obs, masks: masks.argmax(axis=1)  # noqa: E731
    res = task_evaluator(task, seed=3, games=20)(first_legal)
    recs = play_lockstep(first_legal, "classic", [game_seed(3, i) for i in range(20)])
    assert res["score"] == pytest.approx(np.mean([r.totals[0] for r in recs]))
    assert res["normalized_score"] == pytest.approx(res["score"] / 149.1117, rel=1e-4) and res["illegal_stops"] == 0
    # the third decision of every game is illegal: the game stops with what it has written (one write or none)
    calls = {"n": 0}

    def third_illegal(obs, masks):
        calls["n"] += 1
        acts = masks.argmax(axis=1)
        if calls["n"] == 3:
            acts[:] = 31  # hold all five dice: never legal
        return acts

    stopped = task_evaluator(task, seed=3, games=20)(third_illegal)
    assert stopped["illegal_stops"] == 1.0 and 0 <= stopped["score"] < res["score"]
    # with an opponent: the harness's games, the agent in each seat in turn on the same dice
    import generala_agents as agents
    from generala_env.core.game import outcome_points
    from generala_training.harness import play_game

    class FirstLegal:
        name = "first-legal"

        def act(self, obs, info):
            return int(np.argmax(info["action_mask"]))

    duel = Task("duel", {"rules": "classic", "num_players": 2, "opponents": "greedy", "reward": "win"}, 1.0, -0.2, 100)
    played = task_evaluator(duel, seed=3, games=10)(first_legal)
    greedy, points, totals = agents.load("greedy", rules="classic"), [], []
    for i in range(10):
        for seat in (0, 1):
            lineup = [greedy, greedy]
            lineup[seat] = FirstLegal()
            rec = play_game(lineup, "classic", game_seed(3, i))
            points.append(outcome_points(rec.winners, seat))
            totals.append(rec.totals[seat])
    assert played["win_rate"] == pytest.approx(np.mean(points)) and played["mean_total"] == pytest.approx(np.mean(totals))
    always_illegal = lambda obs, masks: np.full(len(masks), 31)  # noqa: E731
    lost = task_evaluator(duel, seed=3, games=10)(always_illegal)
    assert lost["win_rate"] == lost["normalized_score"] == 0.0 and lost["illegal_stops"] > 0.9


def test_the_shipped_suite_and_algorithm_files():
    suite = load_suite()
    assert suite.version >= 1 and {"classic", "double", "sixty", "classic_locked_holds", "classic_vs_greedy"} <= set(suite.tasks)
    assert suite.tasks["classic_locked_holds"].env["rules"]["locked_holds"] is True
    duel = suite.tasks["classic_vs_greedy"]
    assert duel.num_players == 2 and duel.env["reward"] == "win" and duel.env["opponents"] == "greedy"
    for algo in ALGOS:
        check_hyperparams_build(algo, load_algo(algo), suite.tasks["classic"])  # every shipped file builds its model


@pytest.mark.parametrize(
    "body, message",
    [
        ("n_envs: 4\nhyperparams: {gamma: 2}\n", "ppo_mask.yaml: hyperparams.gamma must be greater than 0 and at most 1, got 2"),
        ("n_envs: 4\nhyperparams: {n_steps: 2.5}\n", "ppo_mask.yaml: hyperparams.n_steps must be a whole number, got 2.5"),
        (
            "n_envs: 4\nhyperparams: {batch_size: 1}\n",
            "ppo_mask.yaml: hyperparams.batch_size must be from 2 \\(advantages are normalized per minibatch\\) to 4,194,304 \\(the bound of a minibatch's samples\\), got 1",
        ),
        ("n_envs: 4\nhyperparams: {target_kl: .inf}\n", "ppo_mask.yaml: hyperparams.target_kl must be null or a finite number, got inf"),
        ("n_envs: 3\nhyperparams: {n_steps: 3, batch_size: 8}\n", "n_steps x n_envs = 9 samples per rollout leave a minibatch .* of one sample"),
        ("n_envs: 4\nlr_schedule: cosine\n", "ppo_mask.yaml: lr_schedule must be one of constant, linear, got 'cosine'"),
        ("n_envs: 4\npolicy_kwargs: {net_arch: [0]}\n", "ppo_mask.yaml: policy_kwargs.net_arch must be a list of at most 8 layer sizes"),
        ("- 1\n", "algorithm file .*ppo_mask.yaml must hold a mapping of keys, got list"),
        ("", "ppo_mask.yaml: missing key\\(s\\) n_envs"),
        ("n_envs: 4\nhyperparams: [unclosed\n", "algorithm file .*ppo_mask.yaml is not valid YAML"),
    ],
)
def test_an_algorithm_file_is_held_to_the_bounds_of_a_training_config(tmp_path, body, message):
    """An algorithm file is read as a training config is, and its hyperparameters pass the checks
    of train's algo: keys, in the same words."""
    (tmp_path / "ppo_mask.yaml").write_text(body)
    with pytest.raises(BenchmarkError, match=message):
        load_algo("ppo_mask", tmp_path)
    with pytest.raises(BenchmarkError, match="algorithm file .*dqn.yaml does not exist"):
        load_algo("dqn", tmp_path)


def test_a_linear_learning_rate_in_an_algorithm_file_decays_over_the_run_and_is_in_its_spec(configs, tmp_path):
    from generala_training.benchmark.run import make_venv, new_model

    (tmp_path / "ppo.yaml").write_text("n_envs: 4\nlr_schedule: linear\nhyperparams: {learning_rate: 0.004, n_steps: 16, batch_size: 64}\n")
    linear = load_algo("ppo", tmp_path)
    assert linear.to_dict()["lr_schedule"] == "linear" and "lr_schedule" not in load_algo("ppo", configs).to_dict()
    venv = make_venv(load_suite(configs).tasks["classic"], linear, seed=0)
    try:
        model = new_model("ppo", linear, venv, seed=0, steps=1000)
        assert model.lr_schedule(1.0) == pytest.approx(0.004) and model.lr_schedule(0.25) == pytest.approx(0.001)
    finally:
        venv.close()


def test_our_statistics_equal_rliables():
    from rliable import library as rly
    from rliable import metrics as rm

    from generala_training.benchmark.report import (
        TAUS,
        iqm,
        metrics,
        probability_of_improvement,
        score_distribution,
    )

    rng = np.random.default_rng(0)
    for runs in (1, 2, 3, 4, 5, 8):
        for tasks in (1, 3):
            x = rng.integers(0, 5, (runs, tasks)) / 4  # coarse values: ties
            y = rng.integers(0, 5, (runs + 1, tasks)) / 4
            assert iqm(x) == pytest.approx(rm.aggregate_iqm(x))
            assert metrics(x) == pytest.approx([rm.aggregate_iqm(x), rm.aggregate_mean(x), rm.aggregate_median(x), rm.aggregate_optimality_gap(x)])
            assert probability_of_improvement(x, y) == pytest.approx(rm.probability_of_improvement(x, y))
            assert score_distribution(x) == pytest.approx(rly.score_distributions(x, TAUS))
    frames = rng.random((5, 7))
    assert iqm(frames, axis=0) == pytest.approx([rm.aggregate_iqm(frames[:, f]) for f in range(7)])


def test_wall_seconds_count_only_the_calls_that_trained_this_grid(configs, tmp_path):
    from generala_training.benchmark import CALLS_FILE, calls_of

    out = tmp_path / "out"
    out.mkdir()
    ours = plan(["ppo_mask"], ["classic"], 1, STEPS, out, configs)
    theirs = plan(["dqn"], ["classic"], 1, STEPS, out, configs)  # another grid, trained earlier in the same --out
    key = lambda specs: [str(Path(s.folder).relative_to(out)) for s in specs]  # noqa: E731
    lines = [
        {"command": "earlier grid", "seconds": 500.0, "runs": key(theirs)},
        {"command": "this grid", "seconds": 7.0, "runs": key(ours)},
        {"command": "an old line, runs not named", "seconds": 1.0},
    ]
    (out / CALLS_FILE).write_text("".join(json.dumps(c) + "\n" for c in lines))
    assert [c["command"] for c in calls_of(out, ours)] == ["this grid", "an old line, runs not named"]


def test_the_same_runs_give_the_same_intervals():
    # rliable resamples with NumPy's global generator: the report seeds it, and leaves it as it was
    from generala_training.benchmark.report import _estimates, metrics

    x = {"a": np.random.default_rng(0).random((5, 2))}
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    first, second = _estimates(x, metrics, 200), _estimates(x, metrics, 200)
    assert (first[1]["a"] == second[1]["a"]).all()
    assert (np.random.get_state()[1] == before).all()
