"""generala dataset: Minari datasets whose episodes replay bit for bit in the env they name."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("minari")

import minari  # noqa: E402

import generala_env  # noqa: E402, F401  (registers Generala-v0)
from generala_training import dataset as D  # noqa: E402
from generala_training.cli import main as cli_main  # noqa: E402

CLASSIC_OPTIMUM = 149.1132551  # generala solve --rules classic


def _write(root, *args) -> int:
    return cli_main(["dataset", "--out", str(root), *args])


def _replay(env, episode, seed):
    """The steps the env gives when reset with ``seed`` and fed the episode's actions."""
    obs, info = env.reset(seed=seed)
    observations, masks, rewards, terms, truncs = [obs], [info["action_mask"]], [], [], []
    for a in episode.actions:
        obs, r, te, tr, info = env.step(int(a))
        observations.append(obs)
        masks.append(info["action_mask"])
        rewards.append(r)
        terms.append(te)
        truncs.append(tr)
    return np.array(observations), np.array(masks), np.array(rewards), np.array(terms), np.array(truncs)


def _assert_replays(ds):
    env = ds.recover_environment()
    seeds = [m["seed"] for m in ds.storage.get_episode_metadata(range(ds.total_episodes))]
    for ep, seed in zip(ds.iterate_episodes(), seeds, strict=True):
        obs, masks, rewards, terms, truncs = _replay(env, ep, seed)
        assert np.array_equal(obs, ep.observations)  # bit for bit: float32 both sides
        assert np.array_equal(masks, ep.infos["action_mask"])
        assert np.array_equal(rewards, ep.rewards)
        assert np.array_equal(terms, ep.terminations) and terms[-1]
        assert np.array_equal(truncs, ep.truncations) and not truncs.any()


def test_one_player_dataset_loads_by_id_and_replays_in_its_env(tmp_path, monkeypatch, capsys):
    assert _write(tmp_path, "--agent", "optimal", "--episodes", "3", "--id", "generala/classic/expert-v0") == 0
    assert "generala/classic/expert-v0" in capsys.readouterr().out
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    ds = minari.load_dataset("generala/classic/expert-v0")
    assert ds.total_episodes == 3
    # a one-player game of classic is 10 writes and at most 3 throws a turn
    assert all(10 <= len(ep.actions) <= 30 and ep.observations.shape == (len(ep.actions) + 1, 54) for ep in ds.iterate_episodes())
    env = ds.recover_environment()
    assert env.spec.id == "Generala-v0"
    assert env.spec.kwargs == {"rules": "classic", "num_players": 1, "reward": "score"}
    meta = ds.storage.metadata
    g = meta["generala"]
    assert (meta["algorithm_name"], g["policy"], g["rules"], g["players"], g["opponent"]) == ("optimal", "optimal", "classic", 1, None)
    assert g["version"] == generala_env.__version__
    assert g["optimum"] == pytest.approx(CLASSIC_OPTIMUM, abs=1e-6)
    assert (meta["ref_min_score"], meta["ref_max_score"]) == (0.0, pytest.approx(CLASSIC_OPTIMUM, abs=1e-6))
    # the return is the final total: an optimal game of classic scores between 50 and 345
    returns = np.array([ep.rewards.sum() for ep in ds.iterate_episodes()])
    totals = [m["total"] for m in ds.storage.get_episode_metadata(range(3))]
    assert np.array_equal(returns, totals) and (returns >= 50).all()
    _assert_replays(ds)


def test_two_player_dataset_names_its_opponent_and_replays(tmp_path):
    args = ["--agent", "greedy", "--mix", "random:0.5", "--players", "2", "--opponent", "random", "--episodes", "4", "--id", "tt/two-v0"]
    assert _write(tmp_path, *args) == 0
    ds = minari.MinariDataset(tmp_path / "tt" / "two-v0" / "data")
    env = ds.recover_environment()
    assert env.spec.kwargs == {"rules": "classic", "num_players": 2, "reward": "win", "opponents": "random", "agent_seat": "random"}
    g = ds.storage.metadata["generala"]
    assert (g["players"], g["opponent"], g["policy"], g["mix"]) == (2, "random", "greedy + random at 0.5", {"agent": "random", "share": 0.5})
    # reward win: 0 until the last step, then +1 / 0 / -1
    for ep in ds.iterate_episodes():
        assert not ep.rewards[:-1].any() and ep.rewards[-1] in (-1.0, 0.0, 1.0)
    _assert_replays(ds)


def test_a_yaml_rule_set_travels_in_the_env_spec(tmp_path):
    rules = tmp_path / "mine.yaml"
    rules.write_text("base: classic\nlocked_holds: true\n")
    assert _write(tmp_path / "root", "--agent", "random", "--rules", str(rules), "--episodes", "2", "--id", "tt/locked-v0") == 0
    rules.unlink()  # the dataset needs the file no more
    ds = minari.MinariDataset(tmp_path / "root" / "tt" / "locked-v0" / "data")
    env = ds.recover_environment()
    assert env.unwrapped.rules.locked_holds is True
    assert ds.storage.metadata["generala"]["rules_fingerprint"] == env.unwrapped.rules.fingerprint()
    _assert_replays(ds)


def test_a_cut_run_goes_on_and_writes_what_an_uncut_one_does(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "CHUNK", 2)
    real, calls = D._write_chunk, []

    def cut_in_the_second_chunk(storage, episodes, first):
        calls.append(first)
        if len(calls) == 2:
            storage.update_episodes([D._buffer(episodes[0], first)])  # half a chunk on disk, then the kill
            raise KeyboardInterrupt
        real(storage, episodes, first)

    monkeypatch.setattr(D, "_write_chunk", cut_in_the_second_chunk)
    args = ["--agent", "greedy", "--episodes", "5", "--id", "tt/cut-v0"]
    assert _write(tmp_path / "a", *args) == 130  # Ctrl-C: generala's "interrupted"
    part = tmp_path / "a" / "tt" / ".cut-v0.partial"
    assert part.is_dir() and not (tmp_path / "a" / "tt" / "cut-v0").exists()
    monkeypatch.setattr(D, "_write_chunk", real)
    assert _write(tmp_path / "a", *args) == 0
    assert not part.exists()
    assert _write(tmp_path / "b", *args) == 0
    cut, whole = (minari.MinariDataset(tmp_path / x / "tt" / "cut-v0" / "data") for x in "ab")
    assert cut.total_episodes == whole.total_episodes == 5 and cut.total_steps == whole.total_steps
    for e1, e2 in zip(cut.iterate_episodes(), whole.iterate_episodes(), strict=True):
        assert np.array_equal(e1.actions, e2.actions) and np.array_equal(e1.observations, e2.observations)


def test_a_folder_it_did_not_write_is_never_replaced(tmp_path, capsys):
    mine = tmp_path / "tt" / "x-v0"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("my own")
    assert _write(tmp_path, "--agent", "random", "--episodes", "2", "--id", "tt/x-v0", "--force") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a dataset generala dataset wrote" in err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_text() == "my own"


def test_its_own_dataset_is_kept_unless_forced(tmp_path, capsys):
    assert _write(tmp_path, "--agent", "random", "--episodes", "2", "--id", "tt/y-v0") == 0
    assert _write(tmp_path, "--agent", "random", "--episodes", "2", "--id", "tt/y-v0") == 0  # the same arguments: nothing to do
    assert "already written" in capsys.readouterr().out
    assert _write(tmp_path, "--agent", "greedy", "--episodes", "2", "--id", "tt/y-v0") == 2
    assert "--force replaces it" in capsys.readouterr().err
    assert json.loads((tmp_path / "tt" / "y-v0" / D.RECORD).read_text())["agent"] == "random"
    assert _write(tmp_path, "--agent", "greedy", "--episodes", "2", "--id", "tt/y-v0", "--force") == 0
    assert json.loads((tmp_path / "tt" / "y-v0" / D.RECORD).read_text())["agent"] == "greedy"
    assert sorted(p.name for p in (tmp_path / "tt").iterdir()) == ["y-v0"]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--agent", "random", "--mix", "greedy:1.5"], "--mix takes AGENT:SHARE"),
        (["--agent", "optimal-2p"], "plays two-player games only"),
        (["--agent", "no-such-agent"], "no-such-agent"),
        (["--agent", "random", "--opponent", "greedy"], "--opponent is for two players"),
        (["--agent", "random", "--id", "../escape-v0"], "--id"),
    ],
)
def test_bad_arguments_get_one_line(tmp_path, capsys, args, says):
    assert _write(tmp_path, *args, "--episodes", "1") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
    assert list(tmp_path.iterdir()) == []


def test_a_policy_that_plays_an_illegal_action_is_one_line_and_leaves_no_dataset(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("def act(observation, info):\n    return 31  # hold all five: never legal\n")
    assert _write(tmp_path / "root", "--agent", f"{bad}:act", "--episodes", "2", "--id", "tt/bad-v0") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "played illegal action 31" in err
    assert not (tmp_path / "root" / "tt" / "bad-v0").exists()


def test_the_env_spec_rebuilds_with_gym_make(tmp_path):
    assert _write(tmp_path, "--agent", "random", "--players", "2", "--episodes", "1", "--id", "tt/spec-v0") == 0
    spec_json = json.loads((tmp_path / "tt" / "spec-v0" / "data" / "metadata.json").read_text())["env_spec"]
    env = gym.make(gym.envs.registration.EnvSpec.from_json(spec_json))
    assert env.unwrapped.num_players == 2 and env.unwrapped.rules.name == "classic"
