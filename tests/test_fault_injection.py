"""Fault injection: ``generala train`` (with pretraining), ``generala export`` and a
``generala benchmark`` grid are killed at random moments (SIGKILL, SIGTERM, SIGINT, sent only to the PIDs this test started), then
recovered the documented way; the run must end consistent, with nothing lost, no torn or
temporary file and no process left behind (issue 19, item 5 of "What to deliver").

Bounded for CI: one round, about a minute. ``FAULT_ROUNDS=N`` (and ``FAULT_SEED``) run more
by hand; the counts go to stdout (``-s``) and to docs/robustness.md.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")

from generala_agents.ppo import SHIPPED  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--config",
    str(ROOT / "configs" / "ppo_tiny.yaml"),
    "pretrain.games=40",
    "pretrain.epochs=1",
    "total_timesteps=384",
    "algo.n_steps=64",
    "eval.games=4",
    "eval.every=128",
    "checkpoint_every=128",
]
SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)


def _start(args: list[str], token: str) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", GENERALA_FAULT_TOKEN=token)
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background job starts with SIGINT ignored
    )


def _ours(token: str) -> list[int]:
    """PIDs of live processes this test started or that they started (they carry its token)."""
    found = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            mine = f"GENERALA_FAULT_TOKEN={token}".encode() in (d / "environ").read_bytes().split(b"\0")
            if mine and (d / "stat").read_text().split(") ", 1)[1][0] != "Z":
                found.append(int(d.name))
        except (OSError, IndexError):
            continue
    return found


def _no_orphans(token: str) -> None:
    deadline = time.time() + 15
    while _ours(token) and time.time() < deadline:
        time.sleep(0.2)
    left = _ours(token)
    for pid in left:  # clean up before failing: only processes carrying this test's token
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left behind: {left}"


def _run(args: list[str], token: str, kill_after: float | None, sig, counts: dict) -> tuple[int, str]:
    p = _start(args, token)
    if kill_after is not None:
        try:
            p.wait(kill_after)
        except subprocess.TimeoutExpired:
            p.send_signal(sig)
            counts["faults injected"] += 1
    out = p.communicate(timeout=180)[0].decode(errors="replace")
    _no_orphans(token)
    return p.returncode, out


def _steps(zip_path: Path) -> int:
    """The step count of a saved model: its zip's, which its twin (NAME.safetensors, what the
    project reads back) must agree with."""
    from generala_agents.sb3_tensors import counts_of, read_twin

    with zipfile.ZipFile(zip_path) as z:  # a torn file fails here
        steps = json.loads(z.read("data"))["num_timesteps"]
    assert counts_of(read_twin(zip_path.with_suffix(".safetensors"))[1])["num_timesteps"] == steps, zip_path  # a torn twin fails here
    return steps


def _check_run(run: Path) -> None:
    state = json.loads((run / "state.json").read_text())
    assert state["num_timesteps"] == _steps(run / "latest.zip") == 384
    rows = [line.split(",") for line in (run / "evaluations.csv").read_text().splitlines()[1:]]
    steps = [int(float(r[0])) for r in rows]
    assert steps == sorted(set(steps)), f"evaluations.csv repeats or reorders steps: {steps}"
    assert _steps(run / "best_model.zip") == state["best_step"]
    for f in (run / "checkpoints").iterdir():
        assert f.name.startswith("step_") and f.suffix in (".zip", ".safetensors")
        assert f.suffix == ".safetensors" or _steps(f) == int(f.stem.split("_")[1])
    temps = [str(p) for p in run.rglob("*") if p.name.endswith(".tmp") or ".tmp." in p.name]
    assert not temps, temps


def test_kills_during_train_and_export_lose_nothing(tmp_path):
    rng = random.Random(int(os.environ.get("FAULT_SEED", "19")))
    rounds = int(os.environ.get("FAULT_ROUNDS", "1"))
    counts = {"rounds": 0, "faults injected": 0, "recoveries": 0}
    for r in range(rounds):
        token = uuid.uuid4().hex
        runs = tmp_path / f"runs{r}"
        run = runs / "r"
        fresh = ["generala_training.cli", "train", *TINY, f"run_dir={runs}", "--run-name", "r"]
        # train: killed twice at random moments (the second while it recovers), then recovered to the end
        for window in ((1.0, 14.0), (0.5, 8.0), None):
            resume = (run / "state.json").is_file() or (run / "config.yaml").is_file()
            args = ["generala_training.cli", "train", "--resume", str(run)] if resume else fresh
            sig = rng.choice(SIGNALS)
            rc, out = _run(args, token, rng.uniform(*window) if window else None, sig, counts)
            assert "Traceback" not in out, out[-3000:]
            if window is None:
                counts["recoveries"] += 1
                assert rc == 0, out[-3000:]
        _check_run(run)

        # export over an earlier checkpoint, killed, then again to the end
        dest = tmp_path / f"cks{r}"
        shutil.copytree(SHIPPED / "ppo-classic", dest / "ck")
        before = {p.name: p.read_bytes() for p in (dest / "ck").iterdir()}
        export = ["generala_training.cli", "export", str(run), "--name", "ck", "--games", "60", "--dest", str(dest), "--force"]
        sig = rng.choice(SIGNALS)
        rc, out = _run(export, token, rng.uniform(1.0, 10.0), sig, counts)
        assert "Traceback" not in out, out[-3000:]
        now = {p.name: p.read_bytes() for p in (dest / "ck").iterdir()} if (dest / "ck").is_dir() else None
        if rc != 0:  # cut short: the old checkpoint is whole (kill -9 between the two renames may have moved it aside)
            new = now is not None and json.loads(now["metadata.json"]).get("source_run") == str(run) and "evaluation" in json.loads(now["metadata.json"])
            assert now == before or new or now is None, "the checkpoint at DEST/NAME is neither the old one nor a whole new one"
            if sig != signal.SIGKILL:
                assert sorted(p.name for p in dest.iterdir()) == ["ck"], "temporary folders left after SIGINT/SIGTERM"
        rc, out = _run(export, token, None, None, counts)
        assert rc == 0, out[-3000:]
        assert sorted(p.name for p in dest.iterdir()) == ["ck"]  # the killed export's leftovers are gone
        meta = json.loads((dest / "ck" / "metadata.json").read_text())
        assert meta["source_run"] == str(run) and meta["training_steps"] == json.loads((run / "state.json").read_text())["best_step"]
        counts["recoveries"] += 1
        counts["rounds"] += 1
    print(f"\nfault injection: {counts}")


def test_kills_during_a_benchmark_grid_change_no_result(tmp_path):
    """A tiny grid killed at random moments, then run to the end by the same command, gives the
    results of the same grid run once: resumed runs go on bit for bit, and nothing torn, temporary
    or running is left."""
    pytest.importorskip("rliable")
    from test_benchmark import grid_args, write_configs

    from generala_training.benchmark import main as benchmark_main

    rng = random.Random(int(os.environ.get("FAULT_SEED", "19")))
    counts = {"faults injected": 0, "recoveries": 0}
    configs = write_configs(tmp_path / "configs")
    whole = tmp_path / "whole"
    assert benchmark_main(grid_args(configs, whole, "ppo_mask,dqn", "classic", 2)) == 0
    cut = tmp_path / "cut"
    token = uuid.uuid4().hex
    args = ["generala_training.cli", "benchmark", *grid_args(configs, cut, "ppo_mask,dqn", "classic", 2)]
    for window in ((1.5, 4.0), (1.0, 3.0), None):
        rc, out = _run(args, token, rng.uniform(*window) if window else None, rng.choice(SIGNALS), counts)
        assert "Traceback" not in out, out[-3000:]
    assert rc == 0, out[-3000:]
    counts["recoveries"] += 1
    a, b = (json.loads((d / "results.json").read_text())["runs"] for d in (whole, cut))
    keys = ("algo", "task", "seed", "steps", "score", "normalized_score", "illegal_stops", "curve")
    assert [{k: r[k] for k in keys} for r in a] == [{k: r[k] for k in keys} for r in b]
    left = [str(p) for p in cut.rglob("*") if p.name.endswith(".tmp") or p.name.startswith("ckpt_")]
    assert not left, left
    print(f"\nbenchmark fault injection: {counts}")


def test_a_ctrl_c_inside_a_c_callback_is_raised_again_not_lost(capfd):
    """What numba's compiler cache does when a SIGINT lands in it: the KeyboardInterrupt is
    raised inside a ctypes callback, where Python can only print it and drop it."""
    import ctypes
    import sys

    from generala_training.cli import _interrupt_again

    def callback():
        raise KeyboardInterrupt

    from_c = ctypes.CFUNCTYPE(None)(callback)
    # the hook hands the interrupt back as a SIGINT of the main thread: under `nohup` (or cron) the
    # process starts with SIGINT ignored, and Python then drops it, so the test sets Python's own handler
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    old, sys.unraisablehook = sys.unraisablehook, _interrupt_again
    try:
        with pytest.raises(KeyboardInterrupt):
            from_c()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # the interrupt comes back to the main thread, here
                time.sleep(0.001)
    finally:
        sys.unraisablehook = old
        signal.signal(signal.SIGINT, handler)
    assert "Traceback" not in capfd.readouterr().err
