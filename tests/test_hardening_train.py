"""Training hardening: every config key has a bound, a run that cannot train writes nothing,
``--resume`` applies what it can, refuses the rest and never damages a run, and the batched
env's ending infos name the agent's seat."""

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from generala_training.algos import HYPERPARAMS
from generala_training.config import BOUNDS, CHOICES, DEFAULTS, ConfigError, load_config
from generala_training.envs import training_envs


def train_main(argv):
    """``generala train``'s main: it needs the train extra, so a core-only install skips the test."""
    pytest.importorskip("stable_baselines3")
    from generala_training.train import main

    return main(argv)


ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "ppo_tiny.yaml")
# a run of a few seconds: one rollout of 2 x 64 steps, one evaluation and one checkpoint at 256
QUICK = ["total_timesteps=256", "algo.n_steps=64", "eval.every=256", "eval.games=4", "checkpoint_every=256"]


def snapshot(folder: Path) -> dict:
    """Every path under ``folder`` with its bytes (None for a folder)."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    assert train_main(["--config", TINY, f"run_dir={runs}", "--run-name", "base", *QUICK]) == 0
    return runs / "base"


@pytest.fixture
def run(saved_run, tmp_path):
    """A copy of the saved run that a test may resume or damage."""
    return Path(shutil.copytree(saved_run, tmp_path / "run"))


# -- 1. every key has a bound ------------------------------------------------------------
@pytest.mark.parametrize(
    "override, message",
    [
        ("algo.n_steps=0", "'algo.n_steps' must be from 1 to 4,194,304"),
        ("algo.batch_size=0", "'algo.batch_size' must be from 2 \\(advantages are normalized per minibatch\\) to 4,194,304"),
        ("algo.batch_size=1", "'algo.batch_size' must be from 2"),
        ("policy.net_arch=[-5]", "'policy.net_arch' must be a non-empty list of at most 8 layer sizes"),
        ("policy.net_arch=[]", "'policy.net_arch' must be a non-empty list"),
        ("policy.net_arch=[32, wide]", "'policy.net_arch' must be a non-empty list"),
        ("policy.net_arch=[true]", "'policy.net_arch' must be a non-empty list"),
        (
            "policy.vf_arch=[0]",
            "'policy.vf_arch' must be a non-empty list of at most 8 layer sizes \\(the bound of a net's depth\\), each a whole number from 1 to 4,096 \\(the bound of a layer's width\\) \\(or null\\)",
        ),
        ("policy.vf_arch=wide", "'policy.vf_arch' must be a non-empty list"),
        ("threads=0", "'threads' must be from 1 to 1,024"),
        ("device=tpu", "'device' must be cpu, cuda, cuda:N, mps or auto"),
        ("device=cuda:x", "'device' must be cpu, cuda, cuda:N, mps or auto"),
        ("algo.gamma=2.0", "'algo.gamma' must be greater than 0 and at most 1"),
        ("algo.gamma=0", "'algo.gamma' must be greater than 0"),
        ("algo.gae_lambda=1.5", "'algo.gae_lambda' must be from 0 to 1"),
        ("algo.gae_lambda=-0.1", "'algo.gae_lambda' must be from 0 to 1"),
        ("algo.clip_range=0", "'algo.clip_range' must be greater than 0"),
        ("algo.n_epochs=0", "'algo.n_epochs' must be from 1 to 1,000"),
        ("algo.learning_rate=-1e-3", "'algo.learning_rate' must be greater than 0"),
        ("algo.learning_rate=0", "'algo.learning_rate' must be greater than 0"),
        ("algo.learning_rate=nan", "'algo.learning_rate' must be a finite number"),
        ("algo.learning_rate=inf", "'algo.learning_rate' must be a finite number"),
        ("algo.ent_coef=-0.01", "'algo.ent_coef' must be 0 or more"),
        ("algo.vf_coef=-1", "'algo.vf_coef' must be 0 or more"),
        ("algo.max_grad_norm=0", "'algo.max_grad_norm' must be greater than 0"),
        ("algo.target_kl=0", "'algo.target_kl' must be null or greater than 0"),
        ("algo.target_kl=lots", "'algo.target_kl' must be null or a finite number"),
        ("algo.target_kl=.inf", "'algo.target_kl' must be null or a finite number"),
        ("env.reward_scale=0", "'env.reward_scale' must be greater than 0"),
        ("env.reward_scale=.inf", "'env.reward_scale' must be a finite number"),
        ("env.reward_scale=.nan", "'env.reward_scale' must be a finite number"),
        ("env.num_players=0", "'env.num_players' must be from 1 to 6"),
        ("env.num_players=7", "'env.num_players' must be from 1 to 6"),
        ("env.agent_seat=1", "'env.agent_seat' must be 'random' or a seat from 0 to 0"),
        ("env.opponents=[]", "'env.opponents' must be null, an agent name, or a non-empty list"),
        ("env.opponents=3", "'env.opponents' must be null, an agent name"),
        ("env.opponents=[greedy, null]", "'env.opponents' must be null, an agent name"),
        ("env.rules=3", "'env.rules' must be a preset name, a YAML path or a mapping"),
        ("checkpoint_every=0", "'checkpoint_every' must be at least 1"),
        ("pretrain.games=-1", "'pretrain.games' must be from 0 to 100,000"),
        ("pretrain.epochs=0", "'pretrain.epochs' must be from 1 to 1,000"),
        ("pretrain.epsilon=1.5", "'pretrain.epsilon' must be from 0 to 1"),
        ("pretrain.learning_rate=0", "'pretrain.learning_rate' must be greater than 0"),
        ("pretrain.teacher=oracle", "'pretrain.teacher' must be one of optimal, optimal-2p, td-search, td-search-2p"),
        ("pretrain.teacher=optimal-2p", "'pretrain.teacher' must be optimal or td-search \\(optimal-2p teaches two-player games"),
        ("pretrain.teacher=td-search-2p", "'pretrain.teacher' must be optimal or td-search \\(td-search-2p teaches two-player games"),
        (["pretrain.teacher=td-search", "env.num_players=2", "env.reward=win"], "td-search teaches one-player games"),
        (["pretrain.teacher=optimal-2p", "env.num_players=2", "env.reward=score"], "'pretrain.teacher' must be optimal"),
        ("seed=-1", "'seed' must be from 0 to 2\\*\\*32 - 1"),
        ("total_timesteps=0", "'total_timesteps' must be at least 1"),
        ("vec_env.n_envs=0", "'vec_env.n_envs' must be from 1 to 65,536"),
        ("eval.games=0", "'eval.games' must be from 1 to 50,000"),
        ("eval.every=0", "'eval.every' must be at least 1"),
        ("eval.opponent=' '", "'eval.opponent' must be non-empty text"),
        ("name=a/b", "'name' must be a name without path separators"),
        ("run_dir=''", "'run_dir' must be non-empty text"),
        ("init_from=3", "'init_from' must be null or the path of a saved model"),
        # 129 x 1 samples in minibatches of 64 leave one of a single sample (its normalized advantage is NaN)
        (["vec_env.n_envs=1", "algo.n_steps=129"], "minibatch .* of one sample"),
    ],
)
def test_config_bounds_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(TINY, override if isinstance(override, list) else [override])


@pytest.mark.parametrize(
    "override",
    [
        "algo.gamma=1.0",
        "algo.gae_lambda=0",
        "algo.ent_coef=0",
        "algo.target_kl=null",
        "algo.target_kl=0.02",
        "device=cuda:1",
        "device=auto",
        "device=mps",
        "pretrain.games=0",
        "pretrain.epsilon=1",
        "seed=4294967295",
        "env.num_players=6",
    ],
)
def test_config_bounds_accept_their_edges(override):
    load_config(TINY, [override])


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_pass_the_bounds(path):
    load_config(path)


def test_every_default_key_is_checked_beyond_its_type():
    def leaves(d, prefix=()):
        for k, v in d.items():
            yield from leaves(v, prefix + (k,)) if isinstance(v, dict) else [prefix + (k,)]

    # checked by name in _validate rather than by a table entry
    by_hand = {
        ("name",),
        ("run_dir",),
        ("device",),
        ("init_from",),
        ("eval", "opponent"),
        ("policy", "net_arch"),
        ("policy", "vf_arch"),
        ("env", "rules"),
        ("env", "agent_seat"),
        ("env", "opponents"),
        ("policy", "ortho_init"),
        ("policy", "layer_norm"),
        ("algo", "normalize_reward"),  # a bool: its type is all there is to check
        ("pretrain", "teacher"),  # a name or a folder of td-search values (_teacher_folder)
    }
    as_hyperparams = {("algo", k) for k in HYPERPARAMS}  # checked as every algorithm's (generala_training.algos)
    unchecked = set(leaves(DEFAULTS)) - set(BOUNDS) - set(CHOICES) - as_hyperparams - by_hand
    assert not unchecked, f"keys without a bound: {sorted(unchecked)}"


# -- 2. a run that cannot train leaves nothing behind ---------------------------------------
@pytest.mark.parametrize(
    "overrides, message",
    [
        (["algo.n_steps=0"], "'algo.n_steps' must be from 1 to 4,194,304"),
        (["env.rules=no-such-rules"], "config key 'env.rules': unknown rule set 'no-such-rules'"),
        (["env.num_players=2", "env.opponents=nobody"], "cannot build the training envs .*unknown agent 'nobody'"),
        (["eval.opponent=nobody"], "'eval.opponent': unknown agent 'nobody'"),
        (["init_from=no-such-model.zip", "--trust-zip"], "'init_from': cannot load no-such-model.zip"),
    ],
)
def test_a_run_that_cannot_train_leaves_no_folder(tmp_path, capsys, overrides, message):
    assert train_main(["--config", TINY, f"run_dir={tmp_path}", "--run-name", "x", *overrides]) == 2
    err = capsys.readouterr().err
    assert err.startswith("generala train: error: ") and re.search(message, err), err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_fresh_run_never_writes_into_an_earlier_one(tmp_path, capsys):
    old = tmp_path / "x"
    old.mkdir()
    (old / "notes.txt").write_text("mine")
    before = snapshot(old)
    assert train_main(["--config", TINY, f"run_dir={tmp_path}", "--run-name", "x"]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert snapshot(old) == before


# -- 3. resume --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "override",
    [
        "env.num_players=2",
        "env.rules=double",
        "vec_env.n_envs=4",
        "policy.net_arch=[8]",
        "policy.vf_arch=[8]",
        "seed=1",
        "pretrain.games=5",
        "init_from=other.zip",
        "run_dir=elsewhere",
    ],
)
def test_resume_refuses_keys_it_cannot_change_and_writes_nothing(run, capsys, override):
    before = snapshot(run)
    assert train_main(["--resume", str(run), override]) == 2
    err = capsys.readouterr().err
    assert f"{override.split('=')[0]} cannot change when resuming" in err and "Traceback" not in err
    assert snapshot(run) == before  # config.yaml byte-identical, no command.txt line, no state.json change


def test_resume_applies_hyperparameter_overrides(run):
    from sb3_contrib import MaskablePPO

    overrides = [
        "algo.learning_rate=1e-3",
        "algo.ent_coef=0.05",
        "algo.clip_range=0.3",
        "algo.n_epochs=2",
        "algo.batch_size=32",
        "algo.max_grad_norm=0.7",
        "total_timesteps=384",
        "env.num_players=1",
    ]  # unchanged: accepted
    assert train_main(["--resume", str(run), *overrides]) == 0
    model = MaskablePPO.load(run / "latest.zip")
    assert model.num_timesteps >= 384
    assert model.learning_rate == 1e-3 and model.lr_schedule(1.0) == 1e-3
    assert model.policy.optimizer.param_groups[0]["lr"] == pytest.approx(1e-3)  # the updates ran with it
    assert model.ent_coef == 0.05 and model.clip_range(1.0) == 0.3 and model.n_epochs == 2
    assert model.batch_size == 32 and model.max_grad_norm == 0.7
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["algo"]["learning_rate"] == 1e-3 and cfg["total_timesteps"] == 384
    assert len((run / "command.txt").read_text().splitlines()) == 2


def test_resume_loads_the_schedule_and_rollout_of_the_overrides(run):
    import generala_training.train as tt

    cfg = tt.resume_config(run, ["algo.learning_rate=2e-3", "algo.lr_schedule=linear", "algo.n_steps=32", "algo.gamma=0.9"])
    venv = training_envs(cfg, run)
    try:
        model = tt.load_latest(cfg, run, venv)
    finally:
        venv.close()
    assert model.lr_schedule(0.5) == pytest.approx(1e-3)
    assert model.n_steps == 32 and model.rollout_buffer.buffer_size == 32 and model.rollout_buffer.gamma == 0.9


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda r: (r / "state.json").unlink(), "state.json is missing"),
        (lambda r: (r / "state.json").write_text("null"), "state.json must hold a mapping .*got null"),
        (lambda r: (r / "state.json").write_text('{"num_timesteps": 2'), "state.json is not valid JSON"),
        (lambda r: (r / "state.json").write_text('{"train_seconds": "long"}'), "state.json: 'train_seconds' must be a number"),
        (lambda r: (r / "latest.safetensors").write_bytes((r / "latest.safetensors").read_bytes()[:500]), "latest.safetensors is not a safetensors file"),
        (lambda r: (r / "latest.zip").unlink(), "latest.zip is missing"),
        (lambda r: (r / "config.yaml").unlink(), "config.yaml is missing"),
        (lambda r: (r / "config.yaml").write_text("algo: [unclosed\n"), "config.yaml is not valid YAML"),
        (lambda r: (r / "config.yaml").write_text("- 1\n- 2\n"), "config.yaml must hold a mapping"),
        (lambda r: (r / "config.yaml").write_text("algo: {n_step: 3}\n"), "config.yaml: unknown config key 'algo.n_step'"),
        (lambda r: (r / "config.yaml").write_text("algo: {gamma: 2.0}\n"), "config.yaml: config key 'algo.gamma' must be"),
        # a valid config that is not the saved model's: its envs do not fit the model
        (
            lambda r: (r / "config.yaml").write_text("env: {num_players: 2, opponents: greedy}\n"),
            "latest.safetensors holds another network than the run's config makes",
        ),
    ],
)
def test_resume_of_a_damaged_run_names_the_file_and_changes_nothing(run, capsys, damage, message):
    damage(run)
    before = snapshot(run)
    assert train_main(["--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("generala train: error: ") and re.search(message, err), err
    assert "Traceback" not in err
    assert snapshot(run) == before


def test_resume_of_a_folder_that_is_no_run(tmp_path, capsys):
    assert train_main(["--resume", str(tmp_path / "nothing")]) == 2
    assert "is not a run folder" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


# -- 4. the batched env's ending infos name the agent's seat -----------------------------------
def test_sb3_vec_env_ending_info_has_the_agents_seat_and_total():
    pytest.importorskip("stable_baselines3")
    from generala_env.adapters.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env(8, seed=3, rules="classic", num_players=2, opponents="random", agent_seat="random")
    rng = np.random.default_rng(0)
    venv.reset()
    seats_seen, ended = set(), 0
    while ended < 24:
        seat_now = venv.get_attr("seat")[0].copy()  # the agent's seat in each game being played
        masks = np.array(venv.env_method("action_masks"))
        _, _, dones, infos = venv.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
        for i in np.flatnonzero(dones):
            info = infos[i]
            assert info["seat"] == seat_now[i]
            # score reward at scale 1: the agent's return is its own total
            assert info["episode"]["r"] == info["totals"][info["seat"]]
            seats_seen.add(info["seat"])
            ended += 1
    venv.close()
    assert seats_seen == {0, 1}


def test_train_callback_logs_the_agents_total_in_random_seats(tmp_path):
    pytest.importorskip("sb3_contrib")
    import generala_training.train as tt

    cfg = load_config(
        TINY,
        [
            "vec_env.kind=batched",
            "vec_env.n_envs=8",
            "algo.n_steps=64",
            "algo.batch_size=128",
            "env.num_players=2",
            "env.opponents=random",
            "env.agent_seat=random",
            "env.reward_scale=1.0",
            "eval.every=1000000",
            "checkpoint_every=1000000",
            "total_timesteps=512",
        ],
    )
    venv = training_envs(cfg, tmp_path)
    model = tt.model_from_config(cfg, venv, tmp_path / "tb")

    class NoEvaluations:
        optimum = 1.0

    cb = tt.make_callback(cfg, tmp_path, {"train_seconds": 0.0, "evaluations": []}, 512, NoEvaluations())
    logged, returns = [], []
    on_step, on_rollout_end = cb._on_step, cb._on_rollout_end

    def step():
        returns.extend(i["episode"]["r"] for d, i in zip(cb.locals["dones"], cb.locals["infos"], strict=True) if d)
        return on_step()

    def rollout_end():
        logged.extend(cb.scores)
        on_rollout_end()

    cb._on_step, cb._on_rollout_end = step, rollout_end
    model.learn(512, callback=cb)
    venv.close()
    assert len(returns) >= 5 and logged == pytest.approx(returns)
