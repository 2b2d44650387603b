"""A run's saves are read back from their twins of tensors: a payload zip at every place a run
can hold one is never unpickled, by export, resume, the self-play pool or a benchmark run;
a zip is opened only with --trust-zip (generala_agents.sb3_tensors, generala_training.model_tensors)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers import TINY_CONFIG, forged_zip

pytest.importorskip("sb3_contrib")

from safetensors.numpy import load_file, save_file  # noqa: E402

from generala_agents.sb3_tensors import FORMAT, TensorsError, read_twin  # noqa: E402
from generala_training.export import main as export_main  # noqa: E402
from generala_training.train import main as train_main  # noqa: E402

ZIPS = ("latest.zip", "best_model.zip", "final_model.zip")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The tiny config's run, trained once for the module."""
    runs = tmp_path_factory.mktemp("runs")
    assert train_main(["--config", TINY_CONFIG, f"run_dir={runs}", "--run-name", "tiny"]) == 0
    return runs / "tiny"


def _copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to, ignore=shutil.ignore_patterns(".lock"))
    return to


def _every_zip(run: Path) -> list[Path]:
    return [run / z for z in ZIPS] + sorted((run / "checkpoints").glob("step_*.zip"))


def _payloads(run: Path, marker: Path) -> None:
    """Every zip of ``run`` replaced by one whose unpickling creates ``marker``; the twins stay."""
    for z in _every_zip(run):
        forged_zip(z, marker)


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_every_zip_of_a_run_has_a_twin_with_its_step_count(run):
    zips = _every_zip(run)
    assert len(zips) == 5  # latest, best, final and the checkpoints of steps 256 and 512
    for z in zips:
        with zipfile.ZipFile(z) as f:
            steps = json.loads(f.read("data"))["num_timesteps"]
        arrays, header = read_twin(z.with_suffix(".safetensors"))
        assert header["format"] == FORMAT and json.loads(header["counts"])["num_timesteps"] == steps
        assert {k for k in arrays if k.startswith("optimizer.")} == set() or z.name == "latest.zip"
    latest, _ = read_twin(run / "latest.safetensors")
    assert any(k.startswith("optimizer.state.") for k in latest)  # what a resume needs


def test_export_reads_the_twin_and_never_the_payload_zips(run, tmp_path):
    marker = tmp_path / "unpickled"
    payload = _copy(run, tmp_path / "run")
    _payloads(payload, marker)
    other = _copy(run, tmp_path / "other")
    other_cfg = (other / "config.yaml").read_text().replace("seed: 0", "seed: 1", 1)
    (other / "config.yaml").write_text(other_cfg)
    _payloads(other, marker)
    args = ["--name", "t", "--games", "3", "--dest", str(tmp_path / "ex")]
    assert export_main([str(payload), *args, "--other-seed", str(other)]) == 0  # verify() inside: the twin plays as the run's model
    assert not marker.exists()
    meta = json.loads((tmp_path / "ex" / "t" / "metadata.json").read_text())
    assert meta["training_steps"] == 512 and [s["seed"] for s in meta["seeds"]] == [0, 1]
    # the checkpoint's weights are the twin's, tensor for tensor
    twin = {k[len("policy.") :]: v for k, v in load_file(str(run / "best_model.safetensors")).items()}
    exported = load_file(str(tmp_path / "ex" / "t" / "policy.safetensors"))
    assert exported.keys() == twin.keys() and all(np.array_equal(exported[k], twin[k]) for k in twin)


def test_a_zip_without_its_twin_is_opened_only_with_the_flag(run, tmp_path, capsys):
    marker = tmp_path / "unpickled"
    payload = _copy(run, tmp_path / "run")
    _payloads(payload, marker)
    for twin in payload.glob("*.safetensors"):
        twin.unlink()
    for t in (payload / "checkpoints").glob("*.safetensors"):
        t.unlink()
    args = ["--name", "t", "--games", "2", "--dest", str(tmp_path / "ex")]
    assert export_main([str(payload), *args]) == 2
    assert "--trust-zip" in _one_line(capsys)
    assert export_main([str(run), *args, "--other-seed", str(payload)]) == 2  # a sibling's zip too
    assert "--trust-zip" in _one_line(capsys)
    assert train_main(["--resume", str(payload)]) == 2
    assert "--trust-zip" in _one_line(capsys)
    assert not marker.exists() and not (tmp_path / "ex" / "t").exists()
    # the opt-in is the one door: asked for, the zip is unpickled (the payload runs; SB3 then fails on it)
    assert export_main([str(payload), *args, "--trust-zip"]) == 2
    assert marker.exists()


def test_a_resume_from_the_twin_goes_on_as_a_resume_from_the_zip(run, tmp_path):
    """Resumed from latest.safetensors (payload zips everywhere) or from the genuine latest.zip
    (--trust-zip, the twin removed), one more rollout ends in the same weights, bit for bit."""
    marker = tmp_path / "unpickled"
    twin_run, zip_run = _copy(run, tmp_path / "twin"), _copy(run, tmp_path / "zip")
    _payloads(twin_run, marker)
    (zip_run / "latest.safetensors").unlink()
    assert train_main(["--resume", str(twin_run), "total_timesteps=768"]) == 0
    assert train_main(["--resume", str(zip_run), "total_timesteps=768", "--trust-zip"]) == 0
    assert not marker.exists()
    a, b = load_file(str(twin_run / "latest.safetensors")), load_file(str(zip_run / "latest.safetensors"))
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    _, header = read_twin(twin_run / "latest.safetensors")
    assert json.loads(header["counts"])["num_timesteps"] == 768


def test_a_self_play_run_plays_and_resumes_on_the_twins(tmp_path):
    """A two-player self-play run: its pool plays the twins of its checkpoints, and after payload
    zips replace every zip of the run, its resume and its pool (in training and in gym.make)
    unpickle none of them."""
    import gymnasium as gym

    marker = tmp_path / "unpickled"
    sp = ["env.num_players=2", "env.opponents=self-play", "eval.games=2", "eval.opponent=random", "checkpoint_every=128"]
    assert train_main(["--config", TINY_CONFIG, f"run_dir={tmp_path}", "--run-name", "sp", "total_timesteps=256", *sp]) == 0
    run = tmp_path / "sp"
    _payloads(run, marker)
    assert train_main(["--resume", str(run), "total_timesteps=512"]) == 0
    assert (run / "checkpoints" / "step_512.safetensors").is_file()
    env = gym.make("Generala-v0", num_players=2, opponents=f"pool:{run / 'checkpoints'}")  # no flag: twins hold tensors
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert not marker.exists()


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda a: a.__setitem__("policy.action_net.bias", np.full_like(a["policy.action_net.bias"], np.nan)), "NaN or infinite"),
        (lambda a: a.pop("policy.action_net.bias"), "another network"),
        (lambda a: a.__setitem__("policy.action_net.bias", np.zeros(3, np.float32)), "another network"),
    ],
)
def test_a_spoiled_twin_is_refused_in_one_line(run, tmp_path, capsys, spoil, message):
    payload = _copy(run, tmp_path / "run")
    twin = payload / "latest.safetensors"
    arrays, header = read_twin(twin)
    arrays = dict(arrays)
    spoil(arrays)
    save_file(arrays, str(twin), metadata=header)
    assert train_main(["--resume", str(payload)]) == 2
    assert message in _one_line(capsys)


@pytest.mark.parametrize("counts", ['{"num_timesteps": -3}', '{"num_timesteps": true}', "[]", '{"_n_updates": 1}'])
def test_a_twin_with_wrong_counts_is_refused(run, tmp_path, counts):
    twin = tmp_path / "t.safetensors"
    arrays, header = read_twin(run / "best_model.safetensors")
    save_file(dict(arrays), str(twin), metadata={**header, "counts": counts})
    with pytest.raises(TensorsError, match="counts"):
        read_twin(twin)


def test_a_twin_of_another_format_or_a_fifo_is_refused(run, tmp_path):
    import os

    arrays, header = read_twin(run / "best_model.safetensors")
    save_file(dict(arrays), str(tmp_path / "t.safetensors"), metadata={**header, "format": "pickle"})
    with pytest.raises(TensorsError, match="format"):
        read_twin(tmp_path / "t.safetensors")
    os.mkfifo(tmp_path / "f.safetensors")
    with pytest.raises(TensorsError, match="regular"):
        read_twin(tmp_path / "f.safetensors")
