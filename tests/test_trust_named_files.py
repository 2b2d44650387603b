"""Every file a user names is read by one reader (:func:`generala_env.files.read_regular`): it is
opened with ``O_NONBLOCK``, checked with ``fstat`` on that descriptor and refused unless it is a
regular file off ``/proc`` and ``/sys``, then read to at most its bound + 1 bytes.

At each surface that takes a file (train --config, jax-train --config, benchmark --configs DIR
with DIR/tasks.yaml, generala rules FILE, a rules path in a config, a file.py:attr agent, a
folder of td-search values) a FIFO, /dev/zero and a /proc file are each answered in one line.
The CLI runs in a subprocess with a timeout: a hang fails the test instead of blocking it."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generala_env.files.file_io import FileProblem, read_regular

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120  # seconds: train loads torch first (about 10 s on a busy 2-core machine); a hang is killed
KINDS = ("fifo", "device", "proc")
# the one line each kind is refused with
WHY = {
    "fifo": r"is a named pipe \(FIFO\): only regular files are read",
    "device": r"is a device: only regular files are read",
    "proc": r"is a file of the kernel's /proc or /sys: only regular files are read",
}
SOURCE = {"device": "/dev/zero", "proc": "/proc/self/status"}


def hostile(kind: str, path: Path) -> Path:
    """``path`` made the hostile file ``kind``: a FIFO with no writer, or a link to /dev/zero or to
    a /proc file (for surfaces whose file name is fixed, such as tasks.yaml or agent.py)."""
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(SOURCE[kind])
    return path


def named(kind: str, tmp_path: Path) -> str:
    """The hostile file itself where the user names a path: a FIFO, /dev/zero, /proc/self/status."""
    return str(hostile("fifo", tmp_path / "fifo.yaml")) if kind == "fifo" else SOURCE[kind]


def needs(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (an extra)")


def one_line_refusal(args: list[str], cwd: Path, why: str) -> str:
    """Run ``generala ARGS``; it must stop within :data:`TIMEOUT` with status 2 and one error
    line matching ``why``, and no traceback. Returns that line."""
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "generala_training.cli", *args], capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd, stdin=subprocess.DEVNULL
    )
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr, (done.returncode, done.stderr[-2000:])
    assert re.search(why, errors[0]), errors[0]
    assert time.monotonic() - t0 < TIMEOUT
    return errors[0]


# -- the reader itself -------------------------------------------------------------------------
def test_read_regular_refuses_a_proc_file_and_follows_a_link_only_when_asked(tmp_path):
    for kernel_file in ("/proc/self/status", "/proc/version", "/sys/kernel/mm/transparent_hugepage/enabled"):
        if os.path.exists(kernel_file):
            with pytest.raises(FileProblem, match=f"file {kernel_file} is a file of the kernel's /proc or /sys"):
                read_regular(kernel_file, 1 << 20)
    (tmp_path / "real.yaml").write_text("seed: 1\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    assert read_regular(tmp_path / "link.yaml", 100, links=True) == b"seed: 1\n"
    with pytest.raises(FileProblem, match="symbolic link"):
        read_regular(tmp_path / "link.yaml", 100)
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    with pytest.raises(FileProblem, match="is a device"):  # followed, then refused by fstat
        read_regular(tmp_path / "zero.yaml", 100, links=True)


def _bytes_read() -> int:
    """The bytes this process has read so far (the kernel's count, /proc/self/io's rchar)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="Linux's /proc/self/io counts the bytes read")
def test_a_config_of_dev_zero_is_refused_without_reading_it():
    """It once read 4 MiB of zeros before refusing; now not a byte of it."""
    from generala_training.config import ConfigError, load_config

    with pytest.raises(ConfigError):
        load_config("/dev/zero")  # imports and caches warmed
    before = _bytes_read()
    with pytest.raises(ConfigError, match="config file /dev/zero is a device"):
        load_config("/dev/zero")
    assert _bytes_read() - before < 64 << 10


def test_an_oversized_config_is_refused_after_its_bound_plus_one(tmp_path):
    from generala_env.files.safe_yaml import MAX_BYTES
    from generala_training.config import ConfigError, load_config

    (tmp_path / "big.yaml").write_bytes(b"#" * (MAX_BYTES + 1))
    with pytest.raises(ConfigError, match=f"config file {tmp_path / 'big.yaml'} has 4,194,305 bytes, more than the 4,194,304 read"):
        load_config(tmp_path / "big.yaml")
    (tmp_path / "edge.yaml").write_bytes(b"#" * MAX_BYTES)
    assert load_config(tmp_path / "edge.yaml").name == "ppo"  # the bound itself is read


# -- each surface, through the CLI ------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_train_config(kind, tmp_path):
    needs("torch", "sb3_contrib")
    line = one_line_refusal(["train", "--config", named(kind, tmp_path), f"run_dir={tmp_path / 'runs'}"], tmp_path, WHY[kind])
    assert line.startswith("generala train: error: config file ")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_jax_train_config(kind, tmp_path):
    needs("jax", "pgx", "flax", "optax")
    line = one_line_refusal(["jax-train", "--config", named(kind, tmp_path), f"run_dir={tmp_path / 'runs'}"], tmp_path, WHY[kind])
    assert line.startswith("generala jax-train: error: config file ")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_benchmark_configs_folder_whose_tasks_file_is_hostile(kind, tmp_path):
    needs("torch", "sb3_contrib", "rliable", "matplotlib")
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs" / "benchmark", configs)
    (configs / "tasks.yaml").unlink()
    hostile(kind, configs / "tasks.yaml")
    line = one_line_refusal(["benchmark", "--configs", str(configs), "--steps", "100", "--out", str(tmp_path / "out")], tmp_path, WHY[kind])
    assert line.startswith(f"generala benchmark: error: task suite file {configs / 'tasks.yaml'} ")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_rules_file(kind, tmp_path):
    line = one_line_refusal(["rules", named(kind, tmp_path)], tmp_path, WHY[kind])
    assert line.startswith("generala rules: error: rule file ")  # a FIFO once read "does not exist"


@pytest.mark.parametrize("kind", KINDS)
def test_rules_path_in_a_config(kind, tmp_path):
    needs("torch", "sb3_contrib")
    config = tmp_path / "config.yaml"
    config.write_text((ROOT / "configs" / "ppo_tiny.yaml").read_text() + f"\n# the rules: a file\nenv: {{rules: {named(kind, tmp_path)}}}\n")
    line = one_line_refusal(["train", "--config", str(config), f"run_dir={tmp_path / 'runs'}"], tmp_path, WHY[kind])
    assert line.startswith("generala train: error: config key 'env.rules': rule file ")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("kind", KINDS)
def test_agent_file(kind, tmp_path):
    hostile(kind, tmp_path / "agent.py")
    line = one_line_refusal(["evaluate", "--agents", "agent.py:act", "--games", "1", "--out", str(tmp_path / "out")], tmp_path, WHY[kind])
    assert line.startswith("generala evaluate: error: agent spec 'agent.py:act': the file ")


@pytest.mark.parametrize("kind", KINDS)
def test_td_search_values_folder(kind, tmp_path):
    """A folder of td-search values is the project's own output: a link there is refused as a link."""
    folder = tmp_path / "td"
    folder.mkdir()
    hostile(kind, folder / "td_search.json")
    why = WHY["fifo"] if kind == "fifo" else r"is a symbolic link: only regular files are read"
    line = one_line_refusal(["evaluate", "--agents", "td", "--games", "1", "--out", str(tmp_path / "out")], tmp_path, why)
    assert "td/td_search.json" in line


# -- in Python: the checkpoint weights a folder names ---------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_checkpoint_weights(kind, tmp_path):
    import generala_agents as agents
    from generala_agents.base import AgentError

    folder = tmp_path / "ckpt"
    folder.mkdir()
    shutil.copy(ROOT / "checkpoints" / "ppo-classic" / "metadata.json", folder / "metadata.json")
    hostile(kind, folder / "policy.safetensors")
    t0 = time.monotonic()
    with pytest.raises(AgentError, match=WHY[kind]) as e:
        agents.load(str(folder), rules="classic")
    assert "\n" not in str(e.value) and time.monotonic() - t0 < 30
