"""Checkpoints: tensors only (loading runs no code), checked at load time, exported without loss."""

import base64
import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import generala_agents as agents
import generala_env  # noqa: F401  (registers the env)
from generala_agents.base import AgentError
from generala_agents.policy_net import WEIGHTS_FILE
from generala_agents.ppo import METADATA_FILE, SHIPPED, PoolAgent, checkpoint_names, read_metadata
from generala_training.export import main as export_main


def train_main(argv):
    """``generala train``'s main: it needs the train extra, so a core-only install skips the test."""
    pytest.importorskip("stable_baselines3")
    from generala_training.train import main

    return main(argv)


ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "ppo_tiny.yaml")


@pytest.fixture(scope="module")
def tiny_run_2p(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    assert train_main(["--config", TINY, f"run_dir={runs}", "--run-name", "tiny2", "env.num_players=2", "env.opponents=random"]) == 0
    return runs / "tiny2"


@pytest.fixture
def shipped_copy(tmp_path):
    """A copy of the shipped one-player checkpoint that a test may spoil."""
    dst = tmp_path / "ck"
    shutil.copytree(SHIPPED / "ppo-classic", dst)
    return dst


class _Boom:
    """Unpickling this runs ``touch MARKER``: what a crafted SB3 zip can do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def crafted_model_zip(path: Path, marker: Path) -> None:
    """An SB3-style model.zip whose ``data`` holds a ``:serialized:`` pickle that runs a command."""
    blob = base64.b64encode(pickle.dumps(_Boom(marker))).decode()
    data = {"policy_class": {":type:": "<class 'abc.ABCMeta'>", ":serialized:": blob}}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("data", json.dumps(data))
        z.writestr("_stable_baselines3_version", "2.3.0")
    path.write_bytes(buf.getvalue())


# -- shipped checkpoints ------------------------------------------------------------------
@pytest.mark.parametrize("name", checkpoint_names())
def test_shipped_checkpoints_hold_tensors_and_metadata_only(name):
    files = sorted(p.name for p in (SHIPPED / name).iterdir())
    assert files == sorted([METADATA_FILE, WEIGHTS_FILE])
    meta = read_metadata(SHIPPED / name)
    assert meta["network"]["format"] == "sb3-actor-critic-mlp"


def test_a_crafted_model_zip_runs_no_code_when_an_agent_is_loaded(shipped_copy, tmp_path):
    marker = tmp_path / "pwned"
    crafted_model_zip(shipped_copy / "model.zip", marker)
    agent = agents.load(str(shipped_copy), rules="classic")  # loads the tensors, ignores model.zip
    env = gym.make("Generala-v0")
    obs, info = env.reset(seed=0)
    agent.act(obs, info)
    (shipped_copy / WEIGHTS_FILE).unlink()
    with pytest.raises(AgentError, match="runs code when loaded"):
        agents.load(str(shipped_copy), rules="classic")
    assert not marker.exists()


def test_generala_evaluate_on_a_crafted_checkpoint_runs_no_code(shipped_copy, tmp_path):
    pytest.importorskip("matplotlib")  # generala evaluate checks for the plot and the progress bar (the eval extra) first
    pytest.importorskip("tqdm")
    marker = tmp_path / "pwned"
    (shipped_copy / WEIGHTS_FILE).unlink()
    crafted_model_zip(shipped_copy / "model.zip", marker)
    proc = subprocess.run(
        [sys.executable, "-m", "generala_training.cli", "evaluate", "--agents", str(shipped_copy), "--games", "2", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode != 0 and "runs code when loaded" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists()


# -- checks at load time --------------------------------------------------------------------
@pytest.mark.parametrize("key", ["rules", "num_players", "network", "obs_size"])
def test_metadata_without_a_key_is_refused_by_name(shipped_copy, key):
    meta = read_metadata(shipped_copy)
    del meta[key]
    (shipped_copy / METADATA_FILE).write_text(json.dumps(meta))
    with pytest.raises(AgentError, match=f"lacks '{key}'"):
        agents.load(str(shipped_copy), rules="classic")


def test_two_player_weights_under_one_player_metadata_are_refused_at_load(shipped_copy):
    shutil.copyfile(SHIPPED / "ppo-classic-2p" / WEIGHTS_FILE, shipped_copy / WEIGHTS_FILE)
    with pytest.raises(AgentError, match="has shape .* the metadata's network needs"):
        agents.load(str(shipped_copy), rules="classic")


def test_truncated_weights_are_refused_at_load(shipped_copy):
    data = (shipped_copy / WEIGHTS_FILE).read_bytes()
    (shipped_copy / WEIGHTS_FILE).write_bytes(data[: len(data) // 2])
    with pytest.raises(AgentError, match="cannot be read"):
        agents.load(str(shipped_copy), rules="classic")


@pytest.mark.parametrize("name", ["greedy", "optimal", "random", "rules-of-thumb", "turn-optimal", "ppo-classic"])
def test_an_agent_built_for_classic_refuses_a_double_game_clearly(name):
    agent = agents.load(name, rules="classic")
    env = gym.make("Generala-v0", rules="double")
    obs, info = env.reset(seed=0)
    with pytest.raises(AgentError, match="classic"):
        agent.act(obs, info)


@pytest.mark.parametrize("bad", [None, "", 3])
def test_load_refuses_what_is_not_a_name(bad):
    with pytest.raises(AgentError, match="non-empty name"):
        agents.load(bad)


# -- the self-play pool -------------------------------------------------------------------
def test_pool_ignores_files_that_are_not_step_n(tiny_run, tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    step = sorted((tiny_run / "checkpoints").glob("step_*.zip"))[0]
    shutil.copyfile(step, pool / "step_256.zip")
    shutil.copyfile(step, pool / "step_final.zip")
    shutil.copyfile(step.with_suffix(".safetensors"), pool / "step_512.safetensors")
    (pool / "notes.txt").write_text("x")
    agent = agents.load(f"pool:{pool}", rules="classic", seed=0, trust_zip=True)
    assert [p.name for p in agent.pool_files()] == ["step_256.zip", "step_512.safetensors"]
    # a step plays its policy, from the zip (trusted) or the twin alike: the saved model's greedy actions
    from sb3_contrib import MaskablePPO

    from generala_agents.policy_net import masked_argmax_actions

    policy = MaskablePPO.load(step, device="cpu").policy
    env = gym.make("Generala-v0")
    obs, info = env.reset(seed=0)
    for seed in (1, 2, 3, 4):  # picks among the two steps
        agent.reset(seed=seed)
        for _ in range(20):
            assert agent.act(obs, info) == int(masked_argmax_actions(policy, obs[None], info["action_mask"][None])[0])
            obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
            if done:
                obs, info = env.reset()


def test_a_missing_pool_folder_is_said_and_a_file_refused(tmp_path):
    with pytest.warns(UserWarning, match="does not exist yet: playing 'rules-of-thumb'"):
        PoolAgent(tmp_path / "nowhere", rules="classic", trust_zip=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(AgentError, match="is not a folder"):
        PoolAgent(tmp_path / "file", rules="classic", trust_zip=True)


# -- export -----------------------------------------------------------------------------------
def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_export_writes_tensors_that_play_like_the_model_and_replaces_atomically(tiny_run, tmp_path):
    dest = tmp_path / "cks"
    assert export_main([str(tiny_run), "--name", "tiny", "--games", "4", "--dest", str(dest)]) == 0
    assert sorted(p.name for p in (dest / "tiny").iterdir()) == [METADATA_FILE, WEIGHTS_FILE]
    first = read_metadata(dest / "tiny")
    assert first["training_steps"] >= 512 and first["evaluation"]["games"] == 4 and first["pretrain"] is None
    assert 0 < first["training_seconds_to_model"] <= first["training_seconds"]  # best_model.zip is an evaluated step
    assert (dest / "tiny").stat().st_mode & 0o777 == 0o755 and (dest / "tiny" / WEIGHTS_FILE).stat().st_mode & 0o777 == 0o644
    assert export_main([str(tiny_run), "--name", "tiny", "--games", "5", "--dest", str(dest)]) == 2  # no --force: kept
    assert read_metadata(dest / "tiny")["evaluation"]["games"] == 4
    assert export_main([str(tiny_run), "--name", "tiny", "--games", "5", "--dest", str(dest), "--force"]) == 0
    assert read_metadata(dest / "tiny")["evaluation"]["games"] == 5
    assert sorted(p.name for p in dest.iterdir()) == ["tiny"]  # no temporary or old folders left


def test_export_of_a_broken_model_leaves_the_old_checkpoint_untouched(tiny_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    (run / "best_model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not really tensors")  # what export reads
    dest = tmp_path / "cks"
    shutil.copytree(SHIPPED / "ppo-classic", dest / "ppo-classic")
    before = _tree(dest)
    assert export_main([str(run), "--name", "ppo-classic", "--games", "4", "--dest", str(dest), "--force"]) == 2
    assert "is not a safetensors file" in capsys.readouterr().err
    assert _tree(dest) == before


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ".hidden", "x y"])
def test_export_names_must_be_plain(tiny_run, tmp_path, capsys, name):
    dest = tmp_path / "cks"
    assert export_main([str(tiny_run), "--name", name, "--games", "2", "--dest", str(dest)]) == 2
    assert "--name must be a plain name" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not dest.exists()


@pytest.mark.parametrize(
    "args, message", [(["--games", "0"], "argument --games: must be at least 1"), (["--seed", "-1"], "argument --seed: must be 0 or more")]
)
def test_export_options_are_checked(tiny_run, tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as e:
        export_main([str(tiny_run), "--name", "t", "--dest", str(tmp_path), *args])
    assert e.value.code == 2 and message in capsys.readouterr().err


# -- packaging ----------------------------------------------------------------------------------
def test_the_wheel_carries_presets_checkpoints_and_license(tmp_path):
    # --no-build-isolation builds with this environment's setuptools: [build-system] requires >= 77
    pytest.importorskip("setuptools", minversion="77")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT), "-w", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (whl,) = tmp_path.glob("generala_rl-*.whl")
    names = set(zipfile.ZipFile(whl).namelist())
    for preset in ("classic", "double", "sixty"):
        assert f"generala_env/presets/{preset}.yaml" in names
    for ck in checkpoint_names():
        assert {f"generala_agents/checkpoints/{ck}/{METADATA_FILE}", f"generala_agents/checkpoints/{ck}/{WEIGHTS_FILE}"} <= names
    assert "generala_env/py.typed" in names and "generala_agents/py.typed" in names
    assert "generala_play/page.html" in names  # the browser game's page
    assert not any(n.split("/")[0] in ("agents", "training", "play") for n in names)  # only distinctive import names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.endswith(".zip") for n in names)
    assert generala_env.__version__ in whl.name


def test_presets_are_read_from_inside_the_package():
    from generala_env.core.rules import PRESETS_DIR

    assert PRESETS_DIR.parent == Path(generala_env.__file__).parent
    assert np.isclose(agents.load("optimal").expected_score, 149.11, atol=0.01)


def test_a_layer_norm_policy_trains_exports_and_plays_the_same_actions(tmp_path):
    assert train_main(["--config", TINY, f"run_dir={tmp_path}", "--run-name", "ln", "policy.layer_norm=true"]) == 0
    # export checks that the NumPy policy picks the torch policy's actions on 300 states
    assert export_main([str(tmp_path / "ln"), "--name", "ln", "--games", "3", "--dest", str(tmp_path / "cks")]) == 0
    meta = read_metadata(tmp_path / "cks" / "ln")
    assert meta["network"]["layer_norm"] is True and meta["config"]["policy"]["layer_norm"] is True


def test_a_pool_opponent_in_the_batched_env_picks_up_new_checkpoints(tiny_run_2p, tmp_path):
    from generala_env.envs.vector import GeneralaVectorEnv

    pool = tmp_path / "pool"
    pool.mkdir()
    venv = GeneralaVectorEnv(4, rules="classic", num_players=2, opponents=f"pool:{pool}", opponent_trust=agents.Trust(zip=True))
    (opp,) = venv.batched_opponents
    obs, info = venv.reset(seed=0)
    assert opp.owner.current is None  # empty pool: the fallback plays
    shutil.copyfile(sorted((tiny_run_2p / "checkpoints").glob("step_*.zip"))[0], pool / "step_256.zip")
    rng = np.random.default_rng(0)
    for _ in range(200):  # several generations of 4 games
        masks = venv.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        venv.step(actions)
    assert opp.owner.current is not None


def test_a_pool_of_other_sized_checkpoints_is_a_clear_error(tiny_run, tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    shutil.copyfile(sorted((tiny_run / "checkpoints").glob("step_*.zip"))[0], pool / "step_256.zip")
    env = gym.make("Generala-v0", num_players=2, opponents=f"pool:{pool}", opponent_trust=agents.Trust(zip=True))
    with pytest.raises(AgentError, match="take observations of shape"):
        env.reset(seed=0)
        for _ in range(40):
            env.step(int(np.flatnonzero(env.unwrapped.action_masks())[0]))


def test_a_per_game_opponent_is_reset_once_per_generation_of_games():
    from generala_env.envs.vector import GeneralaVectorEnv

    class Counting:
        name = "counting"

        def __init__(self):
            self.resets = 0

        def reset(self, seed=None):
            self.resets += 1

        def act(self, obs, info):
            return int(np.flatnonzero(info["action_mask"])[-1])

    owner = Counting()
    venv = GeneralaVectorEnv(4, rules="classic", num_players=2, opponents=owner)
    venv.reset(seed=0)
    started = 4
    for _ in range(300):
        masks = venv.action_masks()
        _, _, terminated, truncated, _ = venv.step(masks.argmax(axis=1))
        started += int((terminated | truncated).sum())
    assert started > 12 and owner.resets == 1 + (started - 4) // 4


def test_a_keep_head_policy_trains_exports_and_plays_the_same_actions(tmp_path):
    assert train_main(["--config", TINY, f"run_dir={tmp_path}", "--run-name", "kh", "policy.head=keep", "policy.keep_width=8", "policy.layer_norm=true"]) == 0
    # export checks that the NumPy policy picks the torch policy's actions on 300 states
    assert export_main([str(tmp_path / "kh"), "--name", "kh", "--games", "3", "--dest", str(tmp_path / "cks")]) == 0
    net = read_metadata(tmp_path / "cks" / "kh")["network"]
    assert net["format"] == "generala-keep-head" and net["keep_width"] == 8 and net["layer_norm"] is True


def test_the_keep_head_gives_masks_that_keep_the_same_dice_the_same_logit():
    from generala_agents.policy_net import keep_features

    dice = np.array([2, 2, 5, 5, 6]) / 6.0
    f = keep_features(dice)
    # masks 0b00001 and 0b00010 keep one 2; 0b00101 and 0b01001 keep a 2 and a 5
    assert (f[1] == f[2]).all() and (f[5] == f[9]).all() and not (f[1] == f[4]).all()
    assert f[0].sum() == 0 and np.isclose(f[30, 6], 4 / 5)


# -- learned from scratch, or not ---------------------------------------------------------
def test_solver_ingredients_are_named():
    from generala_training.export_metadata import solver_ingredients

    clean = {"env": {"opponents": None}, "pretrain": {"games": 0}, "init_from": None}
    assert solver_ingredients(clean) == []
    assert solver_ingredients({**clean, "pretrain": {"games": 20000}})[0].startswith("pretrain.games = 20000")
    assert solver_ingredients({**clean, "init_from": "runs/x/best_model.zip"}) == ["init_from = 'runs/x/best_model.zip'"]
    mix = {**clean, "env": {"opponents": [["greedy"], "optimal", "self-play"]}}
    assert solver_ingredients(mix) == ["opponent 'optimal'"]


@pytest.mark.parametrize("name", checkpoint_names())
def test_a_checkpoint_called_scratch_has_no_solver_in_its_training(name):
    from generala_training.config import LEARNED_TEACHERS
    from generala_training.export_metadata import solver_ingredients

    meta = read_metadata(SHIPPED / name)
    if meta.get("from_scratch") or "scratch" in name:
        assert meta["from_scratch"] is True
        assert solver_ingredients(meta["config"], meta.get("pretrain")) == [] and meta["solver_in_training"] == []
        # behaviour cloning only from a td-search teacher that learned from its own games, and says so
        if meta.get("pretrain"):
            p = meta["pretrain"]
            assert p["teacher"] in LEARNED_TEACHERS or p["teacher_how"].startswith("TD(0) from its own games")
            assert p["teacher_solver_in_training"] == [] and p["teacher_train_seconds"] > 0
    else:  # the imitation-trained agents say so
        assert solver_ingredients(meta["config"]) or meta.get("pretrain") or meta.get("lineage")


def test_an_exports_temporary_folder_is_not_a_shipped_checkpoint(monkeypatch, tmp_path):
    import generala_agents.ppo as ppo

    shutil.copytree(SHIPPED / "ppo-classic", tmp_path / "ppo-classic")
    shutil.copytree(SHIPPED / "ppo-classic", tmp_path / ".ppo-classic.new-x1y2")
    monkeypatch.setattr(ppo, "SHIPPED", tmp_path)
    assert ppo.checkpoint_names() == ["ppo-classic"]
