"""generala benchmark offline: BC, CQL and IQL trained on a dataset, scored on the suite's games;
a foreign, corrupt or mismatched dataset gets one line and nothing is written."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("torch")

from generala_training import offline as O  # noqa: E402
from generala_training.cli import main as cli_main  # noqa: E402


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """Two tiny datasets: classic and sixty, one player, greedy."""
    root = tmp_path_factory.mktemp("datasets")
    for rules in ("classic", "sixty"):
        assert cli_main(["dataset", "--agent", "greedy", "--rules", rules, "--episodes", "6", "--id", f"tt/{rules}-v0", "--out", str(root)]) == 0
    return root


def _bench(*args) -> int:
    return cli_main(["benchmark", "offline", *args])


def test_transitions_are_the_dataset_steps(root):
    data = O.load_transitions(root / "tt" / "classic-v0")
    assert data.dones.sum() == 6  # six games, each ended once
    # greedy plays classic's 10 lines: the rewards of a game sum to its total, and data[t + 1] starts where data[t] ended
    assert data.masks[np.arange(len(data)), data.actions].all()
    assert np.array_equal(data.observations[1:][data.dones[:-1] == 0], data.next_observations[:-1][data.dones[:-1] == 0])
    assert data.metadata["generala"]["rules"] == "classic"


@pytest.mark.parametrize("algo", O.ALGOS)
def test_each_algorithm_trains_and_plays_only_legal_actions(root, algo):
    data = O.load_transitions(root / "tt" / "classic-v0")
    policy = O.train(algo, data, seed=0, steps=3, hp=O.Hyper(batch_size=16))
    acts = policy.act_batch(data.observations, data.masks)
    assert data.masks[np.arange(len(data)), acts].all()
    # a mask of one legal action leaves the argmax no choice
    only = np.zeros_like(data.masks)
    only[:, 40] = True
    assert (policy.act_batch(data.observations, only) == 40).all()


def test_the_same_seed_trains_the_same_policy(root):
    data = O.load_transitions(root / "tt" / "classic-v0")
    a, b = (O.train("cql", data, seed=3, steps=4, hp=O.Hyper(batch_size=8)) for _ in range(2))
    assert all(np.array_equal(x.detach().numpy(), y.detach().numpy()) for x, y in zip(a.net.parameters(), b.net.parameters(), strict=True))


def test_the_command_scores_every_run_like_an_online_one(root, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["--dataset", str(root / "tt" / "classic-v0"), "--algos", "bc,cql", "--seeds", "2", "--steps", "2", "--games", "3", "--out", str(out)]
    assert _bench(*args) == 0
    res = json.loads((out / "results.json").read_text())
    (d,) = res["datasets"]
    assert d["task"] == "classic" and [(r["algo"], r["seed"]) for r in d["runs"]] == [("bc", 0), ("bc", 1), ("cql", 0), ("cql", 1)]
    for r in d["runs"]:
        assert r["games"] == 3 and r["illegal_stops"] == 0.0
        assert r["normalized_score"] == pytest.approx(r["mean_total"] / 149.1132551, rel=1e-6)
    assert "| `tt/classic-v0` | classic |" in (out / "results.md").read_text()


def test_a_dataset_of_other_rules_than_the_task_is_refused(root, tmp_path, capsys):
    out = tmp_path / "out"
    assert _bench("--dataset", str(root / "tt" / "sixty-v0"), "--task", "classic", "--steps", "1", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "played under the rules 'sixty', but task 'classic' plays 'classic'" in err
    assert not out.exists()


def test_its_own_task_is_found_from_the_dataset(root, tmp_path):
    out = tmp_path / "out"
    assert _bench("--dataset", str(root / "tt" / "sixty-v0"), "--algos", "bc", "--seeds", "1", "--steps", "1", "--games", "2", "--out", str(out)) == 0
    assert json.loads((out / "results.json").read_text())["datasets"][0]["task"] == "sixty"


def _copy(root, tmp_path):
    import shutil

    dst = tmp_path / "copy"
    shutil.copytree(root / "tt" / "classic-v0", dst)
    return dst


@pytest.mark.parametrize(
    "spoil, says",
    [
        (lambda d: (d / "data" / "metadata.json").unlink(), "not a Minari dataset"),
        (lambda d: (d / "data" / "metadata.json").write_text("{not json"), "not a readable Minari dataset"),
        (lambda d: (d / "data" / "0" / "part-0.arrow").write_bytes(b"\0" * 64), "an episode cannot be read"),
        (lambda d: _foreign(d / "data" / "metadata.json"), "a Minari dataset of CartPole-v1, not one generala dataset wrote"),
    ],
    ids=["no-metadata", "torn-metadata", "torn-episode", "foreign-env"],
)
def test_a_corrupt_or_foreign_dataset_is_one_line_and_nothing_is_written(root, tmp_path, capsys, spoil, says):
    d = _copy(root, tmp_path)
    spoil(d)
    out = tmp_path / "out"
    assert _bench("--dataset", str(d), "--steps", "1", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert not out.exists()


def _foreign(path):
    meta = json.loads(path.read_text())
    meta["env_spec"] = (
        meta["env_spec"]
        .replace("Generala-v0", "CartPole-v1")
        .replace("generala_env.envs.env:GeneralaEnv", "gymnasium.envs.classic_control.cartpole:CartPoleEnv")
    )
    meta.pop("generala")
    path.write_text(json.dumps(meta))


def test_results_of_the_user_are_never_overwritten(root, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.md").write_text("my notes")
    assert _bench("--dataset", str(root / "tt" / "classic-v0"), "--algos", "bc", "--seeds", "1", "--steps", "1", "--games", "2", "--out", str(out)) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert (out / "results.md").read_text() == "my notes" and not (out / "results.json").exists()


def test_an_illegal_action_is_masked_at_play_time_for_every_algorithm(root):
    """A network whose highest output is always an illegal action still plays legal ones:
    the argmax runs over the mask, as the suite plays every masked algorithm."""
    import torch

    data = O.load_transitions(root / "tt" / "classic-v0")
    net = torch.nn.Linear(data.observations.shape[1], data.masks.shape[1])
    with torch.no_grad():
        net.weight.zero_()
        net.bias.zero_()
        net.bias[31] = 1e6  # hold all five: never legal
    acts = O.Policy(net, "bc").act_batch(data.observations, data.masks)
    assert (acts != 31).all() and data.masks[np.arange(len(data)), acts].all()


def test_a_users_own_algorithm_reads_a_dataset_with_minari_and_is_scored(root, monkeypatch):
    """examples/offline_own_algorithm.py: a dataset read with Minari's own API, a policy cloned in
    plain NumPy, scored by score_policy on the dataset's task with illegal actions masked."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "offline_own_algorithm.py"
    spec = importlib.util.spec_from_file_location("offline_own_algorithm", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))  # the example sets it; put back after the test
    result = example.main(["--root", str(root), "--id", "tt/classic-v0", "--steps", "20", "--games", "4"])
    assert result["task"] == "classic" and result["games"] == 4 and result["illegal_stops"] == 0.0
    assert 0.0 < result["normalized_score"] < 1.2
