"""PPO in JAX (generala_training.jax_ppo, generala jax-train): the exported network plays as
the JAX one does, a run's folder plays as an agent and says how it learned, a resumed run goes
on bit for bit, the keys the learner cannot honour are refused in one line, and a resume trusts
nothing it reads (hard-linked logs, a best/ of two steps, forged arrays: one line each)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402

from generala_env.jax.env import make  # noqa: E402
from generala_training import jax_ppo  # noqa: E402
from generala_training.jax_train import main as jax_train_main  # noqa: E402

TINY = [
    "backend=jax",
    "name=tiny",
    "total_timesteps=256",
    "vec_env.n_envs=16",
    "algo.n_steps=8",
    "algo.batch_size=64",
    "algo.n_epochs=2",
    "algo.lr_schedule=constant",  # a linear schedule runs to 0 at total_timesteps, which the pieces below change
    "policy.net_arch=[16]",
    "policy.layer_norm=true",
    "policy.activation=relu",
    "eval.every=128",
    "eval.games=12",
    "checkpoint_every=128",
]


def _run(tmp_path, name, *extra):
    return jax_train_main(["--config", "jax_ppo_classic", f"run_dir={tmp_path}", "--run-name", name, *TINY, *extra])


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jaxruns")
    assert _run(folder, "a") == 0
    return folder / "a"


def test_the_exported_weights_give_the_jax_networks_logits_in_numpy():
    from generala_agents.policy_net import PolicyNet

    env = make("classic", 1, "score")
    for layer_norm, activation in ((True, "relu"), (False, "tanh")):
        hp = jax_ppo.Hyper(num_envs=4, num_steps=4, minibatch_size=8, net_arch=(32, 16), vf_arch=(8,), layer_norm=layer_norm, activation=activation)
        runner = jax_ppo.init_runner(env, hp, 3)
        params = jax.tree.map(lambda x: x + 0.1 * jax.random.normal(jax.random.key(1), x.shape), runner.params)  # LayerNorm's scale and bias away from 1 and 0
        obs = np.asarray(jax.random.uniform(jax.random.key(2), (64, *env.observation_shape)), dtype=np.float32)
        want, _ = jax_ppo.network(env, hp).apply(params, jnp.asarray(obs))
        net = PolicyNet(jax_ppo.network_metadata(env, hp), jax_ppo.export_tensors(params, hp), "test")
        np.testing.assert_allclose(net.logits(obs), np.asarray(want), rtol=1e-4, atol=1e-5)


def test_a_masked_policy_draws_only_legal_actions():
    mask = jax.random.bernoulli(jax.random.key(0), 0.2, (4096, 42)).at[:, 5].set(True)
    logits = jax.random.normal(jax.random.key(1), (4096, 42)) * 30
    actions = jax.random.categorical(jax.random.key(2), jax_ppo.masked_logits(logits, mask))
    assert bool(jnp.take_along_axis(mask, actions[:, None], axis=1).all())


def test_a_run_folder_plays_as_an_agent_and_says_it_learned_from_scratch(tiny_run):
    import generala_agents as agents
    from generala_training.harness import play_game

    rows = (tiny_run / "evaluations.csv").read_text().splitlines()
    assert rows[0].split(",")[:3] == ["step", "wall_seconds", "mean_score"] and len(rows) == 3  # steps 128 and 256
    assert sorted(p.name for p in (tiny_run / "checkpoints").iterdir()) == ["step_128", "step_256"]
    meta = json.loads((tiny_run / "best" / "metadata.json").read_text())
    assert meta["from_scratch"] is True and meta["solver_in_training"] == [] and meta["pretrain"] is None
    assert meta["algorithm"].startswith("PPO in JAX") and meta["hardware"]["jax"] == jax.__version__
    assert meta["training_steps"] in (128, 256) and meta["network"]["net_arch"] == {"pi": [16], "vf": [16]}
    state = json.loads((tiny_run / "state.json").read_text())
    assert state["num_timesteps"] == 256 and state["best_step"] == meta["training_steps"]
    agent = agents.load(str(tiny_run), rules="classic")
    rec = play_game([agent], "classic", 7)
    assert (rec.sheets[0] >= 0).all() and rec.totals[0] == rec.sheets[0].sum() and rec.decisions[0] >= 10


def test_a_resumed_run_goes_on_bit_for_bit(tmp_path, tiny_run):
    assert _run(tmp_path, "b", "total_timesteps=128") == 0
    assert jax_train_main(["--resume", str(tmp_path / "b"), "total_timesteps=256"]) == 0
    whole, pieces = load_file(str(tiny_run / "latest.safetensors")), load_file(str(tmp_path / "b" / "latest.safetensors"))
    assert whole.keys() == pieces.keys()
    for k in whole:
        np.testing.assert_array_equal(whole[k], pieces[k], err_msg=k)
    assert (tmp_path / "b" / "evaluations.csv").read_text().splitlines()[1:] != []
    assert _run(tmp_path, "b") == 2  # a fresh run never goes into a used folder


@pytest.mark.parametrize(
    "extra, named",
    [
        (["env.num_players=2"], "env.num_players"),
        (["env.opponents=greedy"], "env.opponents"),
        (["env.exploring_starts=0.5"], "env.exploring_starts"),
        (["pretrain.games=10"], "pretrain.games"),
        (["policy.head=keep"], "policy.head"),
        (["backend=sb3"], "backend"),
        (["device=cuda"], "device"),
    ],
)
def test_keys_the_jax_learner_cannot_honour_are_one_line(tmp_path, capsys, extra, named):
    assert _run(tmp_path, "c", *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("generala jax-train: error:") and named in err[0]
    assert not (tmp_path / "c").exists()


def test_generala_train_sends_a_jax_config_to_jax_train(tmp_path):
    pytest.importorskip("sb3_contrib")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-m", "generala_training.cli", "train", "--config", "jax_ppo_classic", f"run_dir={tmp_path}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert out.returncode == 2 and "generala jax-train" in out.stderr and "Traceback" not in out.stderr
    assert not any(Path(tmp_path).iterdir())


# -- a resume trusts nothing it reads (the trust issue, round three) ------------------------------
@pytest.fixture
def run_copy(tiny_run, tmp_path):
    """A copy of the module's tiny run that a test may damage."""
    import shutil

    return Path(shutil.copytree(tiny_run, tmp_path / "run"))


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


def _the_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("generala jax-train: error: "), err
    return lines[0]


@pytest.mark.parametrize("name", ["command.txt", "evaluations.csv"])
def test_a_hard_linked_log_stops_a_jax_resume_with_one_line_and_the_linked_file_untouched(run_copy, tmp_path, capsys, name):
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own data\n")
    (run_copy / name).unlink()
    os.link(victim, run_copy / name)
    before = _tree(run_copy)
    assert jax_train_main(["--resume", str(run_copy), "total_timesteps=384"]) == 2
    assert _the_error_line(capsys).endswith(
        f"{run_copy / name} has 2 names (a hard link): nothing is appended to it, as that would write into the other names too; move it"
    )
    assert victim.read_text() == "the user's own data\n" and _tree(run_copy) == before


def test_newer_weights_under_older_metadata_in_best_stop_a_resume_with_one_line(run_copy, capsys):
    """What a kill between the two writes of an older best/ left: the weights of a later step under
    the metadata of an earlier one. The resume sees it and changes nothing."""
    best, ck = run_copy / "best", run_copy / "checkpoints"
    (best / "policy.safetensors").write_bytes((ck / "step_256" / "policy.safetensors").read_bytes())
    (best / "metadata.json").write_bytes((ck / "step_128" / "metadata.json").read_bytes())
    before = _tree(run_copy)
    assert jax_train_main(["--resume", str(run_copy), "total_timesteps=384"]) == 2
    line = _the_error_line(capsys)
    assert f"{best} is not whole: its policy.safetensors is not the file its metadata.json (step 128) names" in line, line
    assert _tree(run_copy) == before


def test_best_is_written_whole_and_a_swap_cut_short_is_settled_on_resume(run_copy):
    """best/ is made in a fresh folder and swapped in; a kill leaves the old best/ (or, where the
    file system cannot swap, the old folder renamed aside), never parts of both."""
    from generala_training.jax_train import _best_steps, settle_best

    meta = json.loads((run_copy / "best" / "metadata.json").read_text())
    assert meta["weights_sha256"] and _best_steps(run_copy) == meta["training_steps"]
    (run_copy / "best").rename(run_copy / ".best.abcdefgh.tmp.old")  # the old best/ aside, the new one not yet in
    new = run_copy / ".best.ijklmnop.tmp"
    new.mkdir()
    (new / "policy.safetensors").write_bytes(b"half written")
    mine = run_copy / ".best.qrstuvwx.tmp"  # not what write_best makes: left alone
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    settle_best(run_copy)
    assert _best_steps(run_copy) == meta["training_steps"]
    assert sorted(p.name for p in run_copy.iterdir() if p.name.startswith(".best")) == [".best.qrstuvwx.tmp"]


def _forge(run: Path, change) -> None:
    """``change(arrays, index)`` on the arrays of the run's latest.safetensors, written back with
    its own metadata; ``index``: an array's key by its place in the runner (``.games.dice``)."""
    from safetensors import safe_open
    from safetensors.numpy import save

    from generala_training.config import load_config
    from generala_training.jax_train import hyper_of

    path = run / "latest.safetensors"
    with safe_open(str(path), "np") as f:
        said = f.metadata()
    arrays = load_file(str(path))
    names = jax_ppo.runner_names(jax_ppo.init_runner(make("classic", 1, "score"), hyper_of(load_config(run / "config.yaml"), 1), 0))
    change(arrays, {name: f"{i:04d}" for i, name in enumerate(names)})
    path.write_bytes(save(arrays, metadata=said))


def _set(name: str, where, value):
    def change(arrays, index):
        arrays[index[name]][where] = value

    return change


@pytest.mark.parametrize(
    "change, named",
    [
        (_set(".params['params']['action']['bias']", 0, np.nan), r"array \d{4} \(\.params\['params'\]\['action'\]\['bias'\]\) holds nan: every weight"),
        (_set(".opt_state[1][0].mu['params']['pi_0']['kernel']", (0, 0), np.inf), r"\.mu\['params'\]\['pi_0'\]\['kernel'\]\) holds inf"),
        (_set(".updates", (), -3), r"array \d{4} \(\.updates\) is -3: a count of updates or steps is never below 0"),
        (_set(".games._dice", (0, 0), 99), r"its games are not games of classic: game 0: dice \[99, \d, \d, \d, \d\]: a die shows 1 to 6"),
        (_set(".games._rolls_left", 3, 7), r"game 3: rolls_left is 7, outside 0 to 2"),
        (_set(".games._sheets", (0, 0, 0), 7), r"game 0: sheets: seat 0's ones holds 7, which is neither -1 \(open\) nor points the line can hold"),
        (_set(".updates", (), 5), r"it holds 5 updates of 128 steps but says it holds 256 steps"),
    ],
    ids=["nan-weight", "inf-moment", "updates-minus-3", "dice-99", "rolls-left-7", "sheet-7", "updates-not-its-steps"],
)
def test_a_forged_latest_stops_a_jax_resume_with_one_line(run_copy, capsys, change, named):
    import re

    _forge(run_copy, change)
    before = _tree(run_copy)
    assert jax_train_main(["--resume", str(run_copy), "total_timesteps=384"]) == 2
    line = _the_error_line(capsys)
    assert line.startswith(f"generala jax-train: error: {run_copy / 'latest.safetensors'} cannot be resumed from: ") and re.search(named, line), line
    assert _tree(run_copy) == before and not (run_copy / "checkpoints" / "step_-384").exists()


def test_a_state_json_ahead_of_latest_stops_a_jax_resume(run_copy, capsys):
    state = json.loads((run_copy / "state.json").read_text())
    state["num_timesteps"] = 1_000_000
    (run_copy / "state.json").write_text(json.dumps(state))
    assert jax_train_main(["--resume", str(run_copy), "total_timesteps=384"]) == 2
    assert "state.json says 1000000 steps, but" in _the_error_line(capsys)


def test_every_wait_of_a_run_says_what_it_does_and_how_long_here(tmp_path, capsys, monkeypatch):
    """The set-up, the training step's compile and the evaluations each start with a line; the
    compile's estimate is a range on a machine that never compiled it, then its own last time."""
    from generala_env.files.cache import measured_seconds

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path / "cache"))  # timings.json of its own: nothing measured yet
    assert _run(tmp_path, "said") == 0
    out = capsys.readouterr().out
    assert "setting up the JAX env and the learner's first state (compiled) (3–30 s)" in out
    assert "compiling the training step (10–90 s; its first update included)" in out
    assert "evaluating the policy on 12 seeded games in NumPy, every 128 steps" in out
    key = "jax-train compile 16x8 minibatch 64 net [16]"
    assert measured_seconds(key) is not None
    assert _run(tmp_path, "again") == 0
    assert "as it took here last time; its first update included)" in capsys.readouterr().out
