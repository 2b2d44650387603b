"""Hostile checkpoints: every check happens at load time, reads are bounded by the metadata,
and a policy with no playable action says so (issue 19, items 4, 7, 8), then fuzzed."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

import generala_agents as agents
from generala_agents.base import AgentError
from generala_agents.policy_net import WEIGHTS_FILE, network_shapes
from generala_agents.ppo import METADATA_FILE, PPOAgent
from generala_env.core.encoding import LAYOUT_VERSION, observation_layout, observation_size
from generala_env.core.rules import load_rules
from generala_env.envs.env import GeneralaEnv

RULES = load_rules("classic")
OBS, N_ACTIONS = observation_size(RULES, 1), 32 + RULES.num_lines
DICE = observation_layout(RULES, 1)["dice_sorted"]


def network(fmt: str = "generala-keep-head", **kw) -> dict:
    net = {"format": fmt, "net_arch": {"pi": [16], "vf": [8]}, "activation": "relu", "obs_size": OBS, "n_actions": N_ACTIONS}
    if fmt == "generala-keep-head":
        net.update(keep_width=8, dice_slice=[DICE.start, DICE.stop])
    net.update(kw)
    return net


def write_checkpoint(folder: Path, net: dict, extra: dict | None = None, weights: dict | None = None) -> Path:
    """A checkpoint folder whose weights are random tensors of the shapes ``net`` describes."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"rules": RULES.settings(), "num_players": 1, "layout_version": LAYOUT_VERSION, "obs_size": OBS, "n_actions": N_ACTIONS, "network": net}
    (folder / METADATA_FILE).write_text(json.dumps(meta))
    if weights is None:
        fmt = net.get("format") if net.get("format") in ("generala-keep-head", "sb3-actor-critic-mlp") else "generala-keep-head"
        actor, critic = network_shapes(copy.deepcopy(network(fmt)), "test")
        rng = np.random.default_rng(0)
        weights = {k: rng.normal(size=s).astype(np.float32) for k, s in {**actor, **critic}.items()}
    save_file({**weights, **(extra or {})}, str(folder / WEIGHTS_FILE))
    return folder


def one_line(e: BaseException) -> str:
    text = str(e)
    assert "\n" not in text and len(text) < 600, text
    return text


def test_a_well_formed_keep_head_checkpoint_loads_and_plays(tmp_path):
    agent = agents.load(str(write_checkpoint(tmp_path / "ok", network())), rules=RULES)
    env = GeneralaEnv(rules=RULES)
    obs, info = env.reset(seed=1)
    assert info["action_mask"][agent.act(obs, info)]


def test_an_unused_tensor_is_refused_before_it_is_read(tmp_path):
    ck = write_checkpoint(tmp_path / "ck", network(), extra={"junk": np.zeros(1000, np.float32)})
    with pytest.raises(AgentError, match="tensors its network does not use: \\['junk'\\]") as e:
        agents.load(str(ck), rules=RULES)
    one_line(e.value)


def test_a_file_larger_than_its_network_needs_is_refused(tmp_path):
    ck = write_checkpoint(tmp_path / "ck", network())
    with open(ck / WEIGHTS_FILE, "ab") as f:
        f.write(b"\0" * 100_000)  # data past the last tensor: safetensors reads it as padding
    with pytest.raises(AgentError, match="more than the .* its metadata's network needs"):
        agents.load(str(ck), rules=RULES)


@pytest.mark.parametrize("dice", [[100, 105], [-3, 2], ["a", "b"], [DICE.start, DICE.start + 4], "x", None])
def test_a_bad_dice_slice_is_refused_at_load(tmp_path, dice):
    ck = write_checkpoint(tmp_path / "ck", network(dice_slice=dice), weights=None)
    with pytest.raises(AgentError, match="dice_slice") as e:
        agents.load(str(ck), rules=RULES)
    one_line(e.value)


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("activation", ["relu"], "unknown activation"),
        ("layer_norm", "yes", "layer_norm"),
        ("net_arch", {"pi": ["a"]}, "net_arch.pi"),
        ("net_arch", {"pi": [16], "vf": [10**9]}, "net_arch.vf"),
        ("keep_width", 2.5, "keep_width"),
        ("format", ["x"], "format"),
    ],
)
def test_metadata_fields_of_the_wrong_type_are_one_line(tmp_path, field, value, match):
    ck = write_checkpoint(tmp_path / "ck", network(**{field: value}))
    with pytest.raises(AgentError, match=match) as e:
        agents.load(str(ck), rules=RULES)
    one_line(e.value)


def test_metadata_nested_200k_deep_is_one_line(tmp_path):
    ck = write_checkpoint(tmp_path / "ck", network())
    (ck / METADATA_FILE).write_text('{"config": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(AgentError, match="nested more than") as e:
        agents.load(str(ck), rules=RULES)
    one_line(e.value)


def test_act_raises_when_no_legal_action_can_be_played(tmp_path):
    ck = write_checkpoint(tmp_path / "ck", network("sb3-actor-critic-mlp"))
    agent = agents.load(str(ck), rules=RULES)
    env = GeneralaEnv(rules=RULES)
    obs, info = env.reset(seed=1)
    with pytest.raises(AgentError, match="all zeros"):
        agent.act(obs, {**info, "action_mask": np.zeros_like(info["action_mask"])})
    agent.net.out = (agent.net.out[0], np.full_like(agent.net.out[1], -np.inf))  # every logit -inf
    with pytest.raises(AgentError, match="finite logit"):
        agent.act(obs, info)
    agent.net.out = (agent.net.out[0], np.full_like(agent.net.out[1], np.nan))
    with pytest.raises(AgentError, match="finite logit"):
        agent.act(obs, info)


def test_a_torn_self_play_checkpoint_is_one_clear_line(tmp_path):
    pytest.importorskip("sb3_contrib")
    from generala_agents.ppo import PoolAgent

    (tmp_path / "step_5632.zip").write_bytes(b"PK\x03\x04" + b"\0" * 100)  # a save cut by kill -9
    pool = PoolAgent(tmp_path, rules=RULES, trust_zip=True)
    with pytest.raises(AgentError, match="step_5632.zip cannot be loaded.*delete it"):
        pool.reset(seed=0)


# -- fuzzing ----------------------------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ("format", "net_arch", "activation", "obs_size", "n_actions", "layer_norm", "keep_width", "dice_slice")
CASES = {"checkpoint": 0}


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(fmt=st.sampled_from(["generala-keep-head", "sb3-actor-critic-mlp"]), changes=st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=3))
def test_fuzz_checkpoint_metadata_fails_only_with_agent_error(tmp_path_factory, fmt, changes):
    CASES["checkpoint"] += 1
    ck = write_checkpoint(tmp_path_factory.mktemp("fz"), network(fmt, **changes))
    try:
        agent = PPOAgent(ck, rules=RULES)
    except AgentError as e:
        one_line(e)
        return
    obs, info = GeneralaEnv(rules=RULES).reset(seed=0)
    assert info["action_mask"][agent.act(obs, info)]


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.binary(max_size=200), cut=st.integers(0, 4000))
def test_fuzz_weights_bytes_fail_only_with_agent_error(tmp_path_factory, data, cut):
    CASES["checkpoint"] += 1
    ck = write_checkpoint(tmp_path_factory.mktemp("fb"), network())
    raw = (ck / WEIGHTS_FILE).read_bytes()
    (ck / WEIGHTS_FILE).write_bytes(raw[:cut] + data)  # a cut file, with junk after the cut
    try:
        PPOAgent(ck, rules=RULES)
    except AgentError as e:
        one_line(e)


def test_a_checkpoint_whose_metadata_is_a_fifo_is_refused_at_once(tmp_path):
    """A FIFO at metadata.json is refused in one line, never opened for reading (which would wait
    for a writer forever): agents.load and export's check of its own checkpoints alike."""
    import shutil
    import subprocess
    import sys

    from generala_agents.ppo import SHIPPED

    ck = tmp_path / "ck"
    shutil.copytree(SHIPPED / "ppo-classic", ck)
    (ck / "metadata.json").unlink()
    os.mkfifo(ck / "metadata.json")
    code = (
        "import generala_agents as agents\n"
        "from generala_training.export import is_export_checkpoint\n"
        f"assert not is_export_checkpoint(__import__('pathlib').Path({str(ck)!r}))\n"
        "from generala_agents.ppo import read_metadata\n"
        f"for load in (agents.load, read_metadata):\n    try:\n        load({str(ck)!r})\n    except agents.AgentError as e:\n        print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded, read = out.stdout.splitlines()
    assert "holds no agent" in loaded and "metadata.json" in read and "regular" in read, out.stdout
