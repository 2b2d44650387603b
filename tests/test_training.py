"""The PPO pipeline: a tiny run trains, saves, resumes, exports and plays; config errors are clear."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

import generala_agents as agents
from generala_agents.base import AgentError
from generala_agents.ppo import checkpoint_names, find_checkpoint, read_metadata
from generala_env.core.encoding import LAYOUT_VERSION, observation_size
from generala_env.core.rules import load_rules
from generala_training.config import ConfigError, load_config
from generala_training.harness import game_seed, play_many


def train_main(argv):
    """``generala train``'s main: it needs the train extra, so a core-only install skips the test."""
    pytest.importorskip("stable_baselines3")
    from generala_training.train import main

    return main(argv)


ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "ppo_tiny.yaml")


def test_tiny_run_writes_everything_a_run_needs(tiny_run):
    for f in ("config.yaml", "command.txt", "latest.zip", "best_model.zip", "final_model.zip", "state.json", "evaluations.csv"):
        assert (tiny_run / f).is_file(), f
    assert list((tiny_run / "checkpoints").glob("step_*.zip"))
    assert any(p.name.startswith("events.out.tfevents") for p in (tiny_run / "tb").rglob("*"))
    state = json.loads((tiny_run / "state.json").read_text())
    assert state["num_timesteps"] >= 512 and len(state["evaluations"]) == 2
    cfg = yaml.safe_load((tiny_run / "config.yaml").read_text())
    assert cfg["total_timesteps"] == 512 and cfg["env"]["rules"] == "classic"


def test_resume_continues_from_the_saved_step(tiny_run):
    from sb3_contrib import MaskablePPO

    before = MaskablePPO.load(tiny_run / "latest.zip").num_timesteps
    assert train_main(["--resume", str(tiny_run), "total_timesteps=1024"]) == 0
    after = MaskablePPO.load(tiny_run / "latest.zip").num_timesteps
    assert before >= 512 and after >= 1024
    state = json.loads((tiny_run / "state.json").read_text())
    assert [e["step"] for e in state["evaluations"]] == sorted(e["step"] for e in state["evaluations"])
    assert "resume" in (tiny_run / "command.txt").read_text()


def test_export_then_load_by_path_and_play_legal_games(tiny_run, tmp_path):
    from generala_training.export import main as export_main

    assert export_main([str(tiny_run), "--name", "tiny-ppo", "--games", "6", "--dest", str(tmp_path)]) == 0
    ck = tmp_path / "tiny-ppo"
    meta = read_metadata(ck)
    assert meta["layout_version"] == LAYOUT_VERSION and meta["num_players"] == 1
    assert meta["evaluation"]["games"] == 6 and 0 < meta["evaluation"]["share_of_optimal"] < 1.2
    recs = play_many([(str(ck),)] * 4, [game_seed(1, i) for i in range(4)], "classic", workers=1, progress=False)
    assert all((r.sheets >= 0).all() for r in recs)
    # made for classic: refused for other rules, with a clear reason
    with pytest.raises(AgentError, match="trained for rules 'classic'"):
        agents.load(str(ck), rules="double")
    # a layout from another version of the code is refused too
    meta["layout_version"] = LAYOUT_VERSION + 1
    (ck / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(AgentError, match="observation layout version"):
        agents.load(str(ck), rules="classic")


def test_export_measures_the_recipes_other_seeds_on_the_same_games(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    from generala_training.export import main as export_main
    from generala_training.train import main as train_main

    runs = tmp_path / "runs"
    tiny_run = runs / "seed0"  # its own run: other tests go on with the module's tiny_run
    for name, seed in (("seed0", 0), ("seed7", 7)):
        assert train_main(["--config", TINY, f"run_dir={runs}", "--run-name", name, f"seed={seed}"]) == 0
    argv = [str(tiny_run), "--name", "tiny-ppo", "--games", "6", "--dest", str(tmp_path / "ck"), "--other-seed", str(runs / "seed7")]
    assert export_main(argv) == 0
    meta = read_metadata(tmp_path / "ck" / "tiny-ppo")
    seeds = meta["seeds"]
    assert [s["seed"] for s in seeds] == [0, 7] and seeds[0]["mean_score"] == meta["evaluation"]["mean_score"]
    assert all(0 < s["share_of_optimal"] < 1.2 and s["budget_seconds"]["total"] > 0 for s in seeds)
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["tiny-ppo"]  # the other seed's temporary folder is gone
    # another recipe, or the same seed, is refused in one line before anything is written
    assert train_main(["--config", TINY, f"run_dir={runs}", "--run-name", "other", "seed=8", "algo.n_epochs=2"]) == 0
    for other, why in ((runs / "other", "not the same recipe: its config differs in algo.n_epochs"), (tiny_run, "has the same seed (0)")):
        assert export_main([*argv[:5], "--dest", str(tmp_path / "ck2"), "--other-seed", str(other)]) == 2
        assert why in capsys.readouterr().err
    assert not (tmp_path / "ck2").exists() or not any((tmp_path / "ck2").iterdir())


def test_ctrl_c_saves_before_exiting(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    import generala_training.train as tt

    calls = {"n": 0}
    real = tt.make_callback

    def interrupting(*a, **k):
        cb = real(*a, **k)
        on_step = cb._on_step

        def step():
            calls["n"] += 1
            if calls["n"] == 40:
                raise KeyboardInterrupt
            return on_step()

        cb._on_step = step
        return cb

    monkeypatch.setattr(tt, "make_callback", interrupting)
    with pytest.raises(SystemExit) as e:
        train_main(["--config", TINY, f"run_dir={tmp_path}", "--run-name", "cut"])
    assert e.value.code == 130
    state = json.loads((tmp_path / "cut" / "state.json").read_text())
    assert 0 < state["num_timesteps"] < 512 and (tmp_path / "cut" / "latest.zip").is_file()


@pytest.mark.parametrize(
    "override, message",
    [
        ("algo.learning_rat=1e-4", "unknown config key 'algo.learning_rat'"),
        ("colour=blue", "unknown config key 'colour'"),
        ("algo.n_steps=many", "'algo.n_steps' must be a whole number"),
        ("vec_env.kind=threads", "'vec_env.kind' must be one of dummy, subproc, batched"),
        ("env.reward=money", "'env.reward' must be one of score, win"),
        ("env=3", "'env' must be a mapping"),
        ("total_timesteps", "an override is KEY=VALUE"),
        ("env.agent_seat=left", "seat number or 'random'"),
    ],
)
def test_config_errors_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(TINY, [override])


def test_a_value_net_of_its_own_shape(tmp_path):
    """``policy.vf_arch`` gives the critic its own hidden layers; the policy keeps ``net_arch``."""
    pytest.importorskip("sb3_contrib")
    from generala_training.envs import training_envs
    from generala_training.models import model_from_config

    cfg = load_config(TINY, ["policy.net_arch=[16]", "policy.vf_arch=[48, 24]"])
    assert load_config(TINY, []).policy.vf_arch is None
    model = model_from_config(cfg, training_envs(cfg), tmp_path)
    assert model.policy.net_arch == {"pi": [16], "vf": [48, 24]}
    with pytest.raises(ConfigError, match="'policy.vf_arch' must be a non-empty list"):
        load_config(TINY, ["policy.vf_arch=[]"])


def test_an_entropy_bonus_at_holds_only(tmp_path):
    """``policy.entropy_on: holds``: the policy reports its entropy at hold decisions and none
    at write decisions (no rolls left), so ``ent_coef`` rewards exploring holds alone."""
    pytest.importorskip("sb3_contrib")
    import torch

    from generala_env.envs.env import GeneralaEnv
    from generala_training.envs import training_envs
    from generala_training.models import model_from_config

    on_all = load_config(TINY, ["policy.layer_norm=true"])
    on_holds = load_config(TINY, ["policy.layer_norm=true", "policy.entropy_on=holds"])
    a, b = model_from_config(on_all, training_envs(on_all), tmp_path), model_from_config(on_holds, training_envs(on_holds), tmp_path)
    b.policy.load_state_dict(a.policy.state_dict())  # the same weights: only the entropy differs
    env = GeneralaEnv()
    obs, info = env.reset(seed=0)
    rows, masks, writes = [], [], []
    for rolls in (2, 1, 0):
        env.game.set_state(rolls_left=rolls)
        rows.append(env.encoder.encode(env.game, 0))
        masks.append(env.game.legal_mask())
        writes.append(rolls == 0)
    obs_t, mask_t = torch.as_tensor(np.array(rows)), np.array(masks)
    actions = torch.as_tensor([int(np.flatnonzero(m)[-1]) for m in masks])
    _, lp_a, ent_a = a.policy.evaluate_actions(obs_t, actions, action_masks=mask_t)
    _, lp_b, ent_b = b.policy.evaluate_actions(obs_t, actions, action_masks=mask_t)
    assert torch.equal(lp_a, lp_b)
    assert (ent_a > 0).all()
    assert torch.equal(ent_b, torch.where(torch.as_tensor(writes), torch.zeros_like(ent_a), ent_a))
    with pytest.raises(ConfigError, match="'policy.entropy_on' must be"):
        load_config(TINY, ["policy.entropy_on=writes"])


def test_config_file_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("algo: {n_step: 12}\n")
    assert train_main(["--config", str(bad)]) == 2
    assert "unknown config key 'algo.n_step'" in capsys.readouterr().err
    bad.write_text("a: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")


@pytest.mark.parametrize("name", checkpoint_names())
def test_shipped_checkpoints_load_and_play_complete_legal_games(name):
    meta = read_metadata(find_checkpoint(name))
    rules = load_rules(meta["rules"])
    players = meta["num_players"]
    assert meta["layout_version"] == LAYOUT_VERSION
    assert meta["obs_size"] == observation_size(rules, players)
    for key in ("training_steps", "training_seconds", "config", "evaluation", "rules_fingerprint"):
        assert key in meta
    lineup = tuple([name] + ["greedy"] * (players - 1))
    recs = play_many([lineup] * 3, [game_seed(4, i) for i in range(3)], rules, workers=1, progress=False)
    for r in recs:
        assert r.served_generala_win or (r.sheets >= 0).all()
    np.testing.assert_equal(len(recs), 3)


def test_the_one_hot_dice_lever_reads_the_faces_back_and_is_not_exported(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    import gymnasium as gym
    import torch

    from generala_env.core.encoding import observation_layout
    from generala_training.export import main as export_main
    from generala_training.policies import OneHotDice
    from generala_training.train import main as train_main

    dice = observation_layout(load_rules("classic"), 1)["dice_sorted"]
    space = gym.spaces.Box(-1, 1, (observation_size(load_rules("classic"), 1),), np.float32)
    obs = torch.zeros((2, space.shape[0]))
    obs[0, dice] = torch.tensor([1, 1, 3, 5, 6]) / 6.0
    obs[1, dice] = torch.tensor([2, 2, 2, 2, 2]) / 6.0
    out = OneHotDice(space, (dice.start, dice.stop))(obs)
    assert out.shape == (2, space.shape[0] + 30) and torch.equal(out[:, : space.shape[0]], obs)
    faces = out[:, space.shape[0] :].reshape(2, 5, 6).argmax(-1) + 1
    assert faces.tolist() == [[1, 1, 3, 5, 6], [2, 2, 2, 2, 2]] and out[:, space.shape[0] :].sum().item() == 10
    runs = tmp_path / "runs"
    assert train_main(["--config", TINY, f"run_dir={runs}", "--run-name", "onehot", "policy.dice=onehot", "algo.normalize_reward=true"]) == 0
    assert export_main([str(runs / "onehot"), "--name", "x", "--games", "2", "--dest", str(tmp_path / "ck")]) == 2
    assert "reads its observation through OneHotDice" in capsys.readouterr().err


def test_normalize_reward_wraps_only_the_training_envs():
    pytest.importorskip("sb3_contrib")
    from stable_baselines3.common.vec_env import VecNormalize

    from generala_training.config import load_config
    from generala_training.envs import training_envs

    venv = training_envs(load_config(TINY, ["algo.normalize_reward=true"]))
    assert isinstance(venv, VecNormalize) and venv.norm_reward and not venv.norm_obs
    venv.reset()
    _, rewards, _, _ = venv.step(np.array([32] * venv.num_envs))  # write the first line: points, scaled
    assert np.isfinite(rewards).all()
    assert not isinstance(training_envs(load_config(TINY)), VecNormalize)


@pytest.mark.parametrize("kind", ["dummy", "batched"])
def test_a_run_loads_its_rule_set_once_and_a_resume_once_again(tmp_path, monkeypatch, kind):
    """``generala train`` loads ``env.rules`` where the run starts and hands the rule set to its
    envs, its model, its evaluation and its opponents: one rule set is made per run (the dummy
    envs, the network and the evaluation each loaded their own: four)."""
    pytest.importorskip("sb3_contrib")
    import generala_env.core.rules as rules_module
    from generala_training.train import main as train_main

    made = []
    real = rules_module._build  # what load_rules makes every rule set with, from a name, a file or a mapping
    monkeypatch.setattr(rules_module, "_build", lambda settings, name: made.append(name) or real(settings, name))
    two_players = ["env.num_players=2", "env.opponents=[greedy, random]"]
    assert train_main(["--config", TINY, f"run_dir={tmp_path}", "--run-name", "once", f"vec_env.kind={kind}", *two_players]) == 0
    assert made == ["classic"]
    made.clear()
    assert train_main(["--resume", str(tmp_path / "once"), "total_timesteps=768"]) == 0
    assert made == ["classic"]


def test_train_trains_the_benchmarks_masked_ppo_and_checks_its_keys_in_the_same_words(tmp_path):
    """generala train's algorithm is the benchmark's ppo_mask (one list of algorithms), built by the
    one AlgoConfig, and a bad hyperparameter is refused in the words an algorithm file gets."""
    pytest.importorskip("sb3_contrib")
    from generala_training.algos import ALGOS, TRAIN_ALGO
    from generala_training.envs import training_envs
    from generala_training.models import algo_config, model_from_config

    assert ALGOS[TRAIN_ALGO].masked and ALGOS[TRAIN_ALGO].cls == "MaskablePPO"
    cfg = load_config(TINY, ["algo.lr_schedule=linear", "algo.learning_rate=0.002"])
    algo = algo_config(cfg, load_rules("classic"))
    assert (algo.algo, algo.n_envs, algo.hyperparams["n_steps"], algo.policy_kwargs["net_arch"]) == ("ppo_mask", 2, 128, {"pi": [32, 32], "vf": [32, 32]})
    model = model_from_config(cfg, training_envs(cfg), tmp_path)
    assert type(model).__name__ == "MaskablePPO" and model.lr_schedule(0.5) == pytest.approx(0.001)
    with pytest.raises(ConfigError, match=r"^config key 'algo.gamma' must be greater than 0 and at most 1, got 2.0$"):
        load_config(TINY, ["algo.gamma=2"])


def test_the_builders_dummy_env_i_is_the_single_env_seeded_seed_times_1000_plus_i():
    pytest.importorskip("stable_baselines3")
    import gymnasium as gym

    import generala_env  # noqa: F401  (registers Generala-v0)
    from generala_training.envs import make_envs

    venv = make_envs(3, 7, kind="dummy", rules="double", reward_scale=0.5)
    first = venv.reset()  # each env's second game: its first began when it was made
    _, rewards, _, _ = venv.step(np.full(3, 31))
    for i in range(3):
        single = gym.make("Generala-v0", rules="double")
        single.reset(seed=7000 + i)
        obs, _ = single.reset()
        assert np.array_equal(first[i], obs)
        assert rewards[i] == 0.5 * single.step(31)[1]  # the same move, its reward scaled
    with pytest.raises(ValueError, match="margin .* needs kind batched"):
        make_envs(2, 0, kind="dummy", training_reward="margin", num_players=2, opponents="greedy")
