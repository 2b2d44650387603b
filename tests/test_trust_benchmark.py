"""The benchmark at its edges (issue 34): what ``generala benchmark`` and ``generala benchmark
report`` read and write, attacked the way a red-teamer would. Each test makes the hostile thing
(a link to a victim file, the user's own plot, a FIFO, a link to /dev/zero, a forged or torn
file, a full disk), checks that the program refuses it with one line and harms nothing, and
checks that the legitimate use still works. Grids are tiny (one run of 128 steps)."""

from __future__ import annotations

import copy
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("rliable")

from test_benchmark import grid_args, write_configs  # noqa: E402

from generala_training.benchmark import CALLS_FILE, _logged_call, calls_of, main, plan, submission  # noqa: E402
from generala_training.benchmark.leaderboard import report_main, report_runs  # noqa: E402
from generala_training.benchmark.report import OUTPUTS, md, md_code  # noqa: E402
from generala_training.benchmark.suite import BenchmarkError, load_suite  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_RESULTS = ROOT / "docs" / "benchmarks" / "classic_1m" / "results.json"  # a built-in grid, suite version 1
VICTIM_TEXT = "the user's own file\n"


def tiny_args(configs: Path, out: Path, *extra: str) -> list[str]:
    return grid_args(configs, out, "ppo_mask", "classic", 1, 128, *extra)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    return write_configs(tmp_path_factory.mktemp("configs"))


@pytest.fixture(scope="module")
def done(configs, tmp_path_factory):
    """A finished grid of one run (ppo_mask on classic, seed 0, 128 steps)."""
    out = tmp_path_factory.mktemp("done") / "grid"
    assert main(tiny_args(configs, out)) == 0
    return out


@pytest.fixture()
def grid(done, tmp_path):
    """A copy of the finished grid: its command with this --out (and --force, since the copy holds
    the results of the command with the first --out) trains nothing and writes the report again."""
    return Path(shutil.copytree(done, tmp_path / "grid", symlinks=True))


@pytest.fixture()
def victim(tmp_path):
    f = tmp_path / "outside" / "victim.txt"
    f.parent.mkdir()
    f.write_text(VICTIM_TEXT)
    return f


# -- 1. outputs: never through a link, never over the user's file ---------------------------------
@pytest.mark.parametrize("name", ["aggregates.png", "learning_curves.png", "results.json", "results.md", ".lock", CALLS_FILE, ".generala-outputs.json"])
def test_a_link_in_the_grid_folder_is_never_written_through(name, grid, configs, victim, capsys):
    target = grid / name
    target.unlink()
    target.symlink_to(victim)
    capsys.readouterr()
    assert main(tiny_args(configs, grid, "--force")) == 2
    line = one_error_line(capsys)
    assert str(grid) in line
    assert victim.read_text() == VICTIM_TEXT and target.is_symlink()  # not truncated, not appended to, not replaced
    target.unlink()  # the link moved away, the same command writes the grid's outputs again
    if name == ".generala-outputs.json":  # without its record, every output there counts as the user's
        for f in OUTPUTS:
            (grid / f).unlink()
    if name == "results.json":  # without it, nothing says which command wrote the other outputs
        for f in OUTPUTS[1:]:
            (grid / f).unlink()
    assert main(tiny_args(configs, grid, "--force")) == 0
    for f in OUTPUTS:
        assert (grid / f).is_file() and not (grid / f).is_symlink()


def test_a_link_to_a_victim_as_calls_log_or_lock_of_a_new_grid_is_refused_before_training(configs, tmp_path, victim, capsys):
    for name in (CALLS_FILE, ".lock"):
        out = tmp_path / f"out-{name}"
        out.mkdir()
        (out / name).symlink_to(victim)
        capsys.readouterr()
        assert main(tiny_args(configs, out)) == 2
        assert "symbolic link" in one_error_line(capsys)
        assert victim.read_text() == VICTIM_TEXT
        assert not (out / "runs").exists()  # refused before anything was trained


def test_the_users_own_plot_in_out_is_not_replaced(configs, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "aggregates.png").write_bytes(b"my own plot")
    for extra in ((), ("--force",)):
        capsys.readouterr()
        assert main(tiny_args(configs, out, *extra)) == 2
        line = one_error_line(capsys)
        assert "aggregates.png" in line and "not written by generala benchmark" in line
        assert (out / "aggregates.png").read_bytes() == b"my own plot"
        assert not (out / "runs").exists()


def test_an_output_changed_by_the_user_since_is_not_replaced(grid, configs, capsys):
    (grid / "results.md").write_text("my notes on the results\n")
    capsys.readouterr()
    assert main(tiny_args(configs, grid, "--force")) == 2
    assert "results.md" in one_error_line(capsys)
    assert (grid / "results.md").read_text() == "my notes on the results\n"


def test_a_run_folder_behind_a_link_is_refused(configs, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "runs").symlink_to(elsewhere, target_is_directory=True)
    capsys.readouterr()
    assert main(tiny_args(configs, out)) == 2
    assert "symbolic link" in one_error_line(capsys)
    assert list(elsewhere.iterdir()) == []


def test_a_fifo_as_a_run_state_is_refused_without_waiting(configs, tmp_path, capsys):
    from generala_training.benchmark.run import check_folder

    (spec,) = plan(["ppo_mask"], ["classic"], 1, 128, tmp_path / "out", configs)
    folder = Path(spec.folder)
    folder.mkdir(parents=True)
    (folder / "spec.json").write_text(json.dumps(spec.identity()))
    os.mkfifo(folder / "state.json")
    with pytest.raises(BenchmarkError, match="state.json is not a regular file"):
        check_folder(spec)  # a read of a FIFO would wait for a writer forever


def test_a_checkpoint_link_is_removed_not_followed(tmp_path, victim):
    from generala_training.benchmark.run import _drop_checkpoints

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "ckpt_64").symlink_to(victim.parent, target_is_directory=True)
    (folder / "ckpt_128").mkdir()
    (folder / "ckpt_128" / "model.zip").write_bytes(b"zip")
    _drop_checkpoints(folder, "ckpt_128")
    assert victim.read_text() == VICTIM_TEXT and not (folder / "ckpt_64").is_symlink()
    assert (folder / "ckpt_128" / "model.zip").read_bytes() == b"zip"


@pytest.mark.parametrize("name", ["../elsewhere", "ckpt_64/../../elsewhere", "/tmp", "ckpt_7", None])
def test_a_resumed_run_loads_only_its_own_checkpoint(name, tmp_path):
    """A state.json naming a checkpoint outside the run, or a link to one, is refused before
    any zip there is unpickled; the run's own ckpt_N folder is loaded as before."""
    from generala_training.benchmark.run import _own_checkpoint

    folder = tmp_path / "run"
    (folder / "ckpt_128").mkdir(parents=True)
    (folder / "ckpt_128" / "model.zip").write_bytes(b"zip")
    (folder / "ckpt_128" / "model.safetensors").write_bytes(b"tensors")  # what the run goes on from
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "model.zip").write_bytes(b"a forged zip")
    (tmp_path / "elsewhere" / "model.safetensors").write_bytes(b"forged tensors")
    (folder / "ckpt_7").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(BenchmarkError, match="not a checkpoint folder of the run"):
        _own_checkpoint(folder, name)
    assert _own_checkpoint(folder, "ckpt_128") == folder / "ckpt_128"
    (folder / "ckpt_128" / "model.safetensors").unlink()  # a checkpoint of a zip alone: never unpickled, refused
    with pytest.raises(BenchmarkError, match="holds no model.safetensors"):
        _own_checkpoint(folder, "ckpt_128")


# -- 2. report --runs reads regular files only, bounded --------------------------------------------
def _good_submission(suite, **change) -> dict:
    data = submission.make(
        task="classic",
        algorithm="outside-ppo",
        library=("torch", "2.13.0"),
        seed=0,
        budget=250_000,
        steps=250_000,
        wall_clock_seconds=12.5,
        hardware="test machine",
        curve=[[0, 0.1], [125_000, 0.5], [250_000, 0.6]],
        final={"normalized_score": 0.6, "games": suite.evaluation.final_games, "illegal_stops": 0.0},
        suite=suite,
    )
    return {**data, **change}


@pytest.mark.parametrize("hostile", ["fifo in the folder", "link to /dev/zero in the folder", "fifo named"])
def test_report_refuses_a_fifo_or_a_device_at_once(hostile, tmp_path):
    suite = load_suite()
    runs = tmp_path / "subs"
    runs.mkdir()
    submission.write(runs / "good.json", _good_submission(suite))
    bad = runs / "bad.json"
    if hostile.startswith("fifo"):
        os.mkfifo(bad)
    else:
        bad.symlink_to("/dev/zero")
    named = bad if hostile == "fifo named" else runs
    # a subprocess, so that a read that waits on the FIFO (or reads /dev/zero without end) fails the test instead of hanging it
    cli = subprocess.run(
        [sys.executable, "-m", "generala_training.cli", "benchmark", "report", "--runs", str(named), "--out", str(tmp_path / "report"), "--reps", "20"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert cli.returncode == 2, cli.stderr
    lines = cli.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "only regular files are read" in lines[0], cli.stderr
    bad.unlink()  # the hostile file gone, the folder's submission reports
    assert report_runs([runs], reps=20)["algos"] == ["outside-ppo"]


def test_a_results_file_over_the_size_bound_is_refused(tmp_path):
    big = tmp_path / "results.json"
    big.write_text(json.dumps({"runs": [], "aggregates": {}, "padding": "x" * (submission.MAX_FILE_BYTES * 4)}))
    with pytest.raises(BenchmarkError, match="more than the"):
        submission.collect([big], load_suite())


# -- 3 and 5. a built-in results.json is held to a submission's checks ----------------------------
def _forged(tmp_path, change) -> Path:
    data = json.loads(SHIPPED_RESULTS.read_text())
    change(data)
    f = tmp_path / "forged" / "results.json"
    f.parent.mkdir(exist_ok=True)
    f.write_text(json.dumps(data))  # Python writes NaN and Infinity as JSON's extension does
    return f


def _set(path: str, value):
    def change(data):
        *head, last = path.split(".")
        node = data
        for key in head:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is KeyError:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return change


FORGERIES = [
    ("runs.0.normalized_score", float("nan"), "runs[0]: normalized_score"),
    ("runs.0.normalized_score", 1e308, "runs[0]: normalized_score"),
    ("runs.0.normalized_score", -0.5, "runs[0]: normalized_score"),
    ("runs.0.train_seconds", -3.0, "runs[0]: train_seconds"),
    ("runs.0.eval_seconds", float("inf"), "runs[0]: eval_seconds"),
    ("runs.0.steps", 10**18, "runs[0]: steps"),
    ("runs.0.illegal_stops", 2.0, "runs[0]: illegal_stops"),
    ("runs.0.seed", [0], "runs[0]: seed"),  # unhashable
    ("runs.0.seed", "0", "runs[0]: seed"),
    ("runs.0.task", KeyError, "runs[0]: task"),
    ("runs.0.algo", KeyError, "runs[0]: missing field(s) algo"),
    ("runs.0.algo", "a|b<script>", "runs[0]: algo"),
    ("runs.0.curve", [[0, float("nan")]], "runs[0]: curve[0] score"),
    ("runs.0.curve", [[0, 1e308]], "runs[0]: curve[0] score"),
    ("runs.0.curve", "up", "runs[0]: curve"),
    ("runs.0", 5, "runs[0] must be a mapping"),  # AttributeError before
    ("runs", "all of them", "runs must be a non-empty list"),  # TypeError before
    ("steps", 10**18, ": steps"),
    ("steps", "many", ": steps"),
    ("suite", None, ": suite"),
    ("library", "sb3", ": library"),
    ("hardware", 5, "runs[0]: hardware"),
    ("evaluation", KeyError, ": evaluation"),
]


@pytest.mark.parametrize(("field", "value", "words"), FORGERIES, ids=[f"{f}={v!r}"[:40] for f, v, _ in FORGERIES])
def test_a_forged_results_json_is_one_line_naming_the_file_and_field(field, value, words, tmp_path):
    suite = load_suite()
    assert len(submission.collect([SHIPPED_RESULTS], suite)) == 20  # the shipped grid passes as it is
    f = _forged(tmp_path, _set(field, value))
    with pytest.raises(BenchmarkError) as e:
        submission.collect([f.parent], suite)
    message = str(e.value)
    assert str(f) in message and words in message and "\n" not in message, message


def test_a_forged_results_json_through_the_command_is_one_line(tmp_path, capsys):
    f = _forged(tmp_path, _set("runs.3.normalized_score", float("nan")))
    capsys.readouterr()
    assert report_main(["--runs", str(f), "--out", str(tmp_path / "report"), "--reps", "20"]) == 2
    line = one_error_line(capsys)
    assert str(f) in line and "runs[3]: normalized_score" in line and "nan" in line
    assert not (tmp_path / "report" / "results.json").exists()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"final": {"normalized_score": 1e308, "games": 1000}}, "final.normalized_score"),
        ({"final": {"normalized_score": float("nan"), "games": 1000}}, "final.normalized_score"),
        ({"final": {"normalized_score": 0.6, "games": 1000, "illegal_stops": 1.5}}, "final.illegal_stops"),
        ({"wall_clock_seconds": 1e308}, "wall_clock_seconds"),
        ({"wall_clock_seconds": -1.0}, "wall_clock_seconds"),
        ({"curve": [[0, 0.1], [250_000, 1e308]]}, "curve[1] score"),
        ({"curve": [[0, 0.1], [10**18, 0.2]]}, "curve[1] step"),
        ({"seed": 10**30}, "seed"),
        ({"budget": 10**18}, "budget"),
        ({"task": ["classic"]}, "task"),  # unhashable: a TypeError before
        ({"suite": {"name": ["x"], "version": 1}}, "suite"),
    ],
)
def test_a_submission_out_of_range_is_refused(change, words):
    suite = load_suite()
    good = _good_submission(suite)
    assert submission.check(good, suite) == good
    with pytest.raises(BenchmarkError, match=re.escape(words)):
        submission.check({**good, **change}, suite)


def test_a_submission_file_with_nan_is_refused_and_none_is_written(tmp_path):
    suite = load_suite()
    f = tmp_path / "nan.json"
    f.write_text(json.dumps(_good_submission(suite, wall_clock_seconds=float("nan"))))
    with pytest.raises(BenchmarkError, match=f"{f}: wall_clock_seconds"):
        submission.read(f, suite)
    with pytest.raises(ValueError):  # write refuses what JSON cannot hold
        submission.write(tmp_path / "out.json", _good_submission(suite, wall_clock_seconds=float("inf")))
    assert not (tmp_path / "out.json").exists()


def test_results_with_a_number_json_cannot_hold_are_not_written(grid):
    from generala_env.files import OutputFolder
    from generala_training.benchmark.report import write

    res = json.loads((grid / "results.json").read_text())
    before = (grid / "results.json").read_bytes()
    broken = copy.deepcopy(res)
    broken["runs"][0]["score"] = float("nan")
    with pytest.raises(BenchmarkError, match="not finite"):
        write(broken, OutputFolder(grid, "generala benchmark"))
    assert (grid / "results.json").read_bytes() == before
    assert "NaN" not in before.decode() and "Infinity" not in before.decode()


def test_text_fields_are_escaped_in_results_md(tmp_path):
    suite = load_suite()
    hostile = {
        "hardware": "<script>alert(1)</script> | injected cell\n# a heading of mine",
        "library": {"name": "torch`code`", "version": "2.13 & <b>bold</b>"},
    }
    runs = tmp_path / "subs"
    runs.mkdir()
    for seed in (0, 1):
        submission.write(runs / f"s{seed}.json", _good_submission(suite, seed=seed, **hostile))
    res = report_runs([runs], reps=20, command="generala benchmark report --runs 'a`b' '|x\n<i>'")
    from generala_training.benchmark.report import markdown

    text = markdown(res)
    command = next(line for line in text.splitlines() if line.startswith("Command: "))
    assert command == "Command: ``generala benchmark report --runs 'a`b' '|x <i>'``"  # a code span shows it as it is, tags included
    assert "<" not in text.replace(command, "")  # no tag anywhere else
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\| injected cell # a heading of mine" in text
    assert "torch\\`code\\` 2.13 &amp; &lt;b&gt;bold&lt;/b&gt;" in text
    assert not any(line.startswith("# a heading") for line in text.splitlines())
    row = next(line for line in text.splitlines() if "alert(1)" in line)
    assert row.replace("\\|", "").count("|") == 6  # five cells: no cell was added
    assert md("a|b\r\nc`d<e>&f\\") == "a\\|b  c\\`d&lt;e&gt;&amp;f\\\\"
    assert md_code("x ``y`` z") == "```x ``y`` z```" and md_code("`a") == "`` `a ``"


# -- 4. a torn calls.jsonl -----------------------------------------------------------------------
def test_a_torn_last_call_is_named_skipped_and_the_grid_goes_on(grid, configs, capsys):
    log = grid / CALLS_FILE
    good = log.read_text()
    log.write_text(good + '{"command": "generala benchmark --algos ppo_mask", "sec')  # a logging cut short
    with pytest.warns(UserWarning, match=rf"{CALLS_FILE}, line 2: a torn last record"):
        assert main(tiny_args(configs, grid, "--force")) == 0
    assert json.loads((grid / "results.json").read_text())["calls"] == [json.loads(good)]


def test_a_call_logged_after_a_torn_one_is_a_line_of_its_own(configs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    specs = plan(["ppo_mask"], ["classic"], 1, 128, out, configs)
    log = out / CALLS_FILE
    log.write_text('{"command": "first", "seconds": 1.0}\n{"command": "cut sh')
    with pytest.warns(UserWarning, match="line 2"):
        assert [c["command"] for c in calls_of(out, specs)] == ["first"]
    with pytest.warns(UserWarning, match="line 2: a torn last record"), _logged_call(out, "second", 1, ["runs/classic/ppo_mask/seed0"]):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing torn is left
        assert [c["command"] for c in calls_of(out, specs)] == ["first", "second"]


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        ('{"command": "a", "seconds": 1}\nnot json\n{"command": "b", "seconds": 2}\n', "line 2: not a JSON record"),
        ('{"command": "a", "seconds": 1}\n[1, 2]\n', "call 2: a call is a JSON object"),
        ('{"command": "a", "seconds": NaN}\n', "call 1: seconds"),
        ('{"command": "a", "seconds": 1e308}\n', "call 1: seconds"),
        ('{"command": "a", "seconds": 1, "runs": [["x"]]}\n', "call 1: runs"),
    ],
)
def test_a_bad_call_record_is_one_line_naming_the_file(lines, words, configs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    specs = plan(["ppo_mask"], ["classic"], 1, 128, out, configs)
    (out / CALLS_FILE).write_text(lines)
    with pytest.raises(BenchmarkError) as e:
        calls_of(out, specs)
    assert str(out / CALLS_FILE) in str(e.value) and words in str(e.value)


# -- 5. report --out: a folder in the way, a full disk ------------------------------------------
def test_report_out_whose_results_md_is_a_folder_is_one_line(tmp_path, capsys):
    out = tmp_path / "report"
    (out / "results.md").mkdir(parents=True)
    capsys.readouterr()
    assert report_main(["--runs", str(SHIPPED_RESULTS), "--out", str(out), "--reps", "20"]) == 2
    line = one_error_line(capsys)
    assert str(out / "results.md") in line and "a folder" in line
    assert not (out / "results.json").exists()


def test_a_full_disk_during_report_is_one_line_and_keeps_the_last_report(tmp_path, capsys, monkeypatch):
    out = tmp_path / "report"
    args = ["--runs", str(SHIPPED_RESULTS), "--out", str(out), "--reps", "20"]
    assert report_main(args) == 0
    before = {f: (out / f).read_bytes() for f in OUTPUTS}

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    capsys.readouterr()
    assert report_main(args) == 2
    line = one_error_line(capsys)
    assert "No space left on device" in line and str(out / "results.json") in line
    monkeypatch.undo()
    assert {f: (out / f).read_bytes() for f in OUTPUTS} == before
    assert not [p.name for p in out.iterdir() if ".tmp" in p.name]


def test_a_report_through_links_writes_nothing_through_them(tmp_path, victim, capsys):
    out = tmp_path / "report"
    out.mkdir()
    (out / "performance_profile.png").symlink_to(victim)
    capsys.readouterr()
    assert report_main(["--runs", str(SHIPPED_RESULTS), "--out", str(out), "--reps", "20"]) == 2
    assert "symbolic link" in one_error_line(capsys)
    assert victim.read_text() == VICTIM_TEXT


# -- 6. the aggregates plot ------------------------------------------------------------------------
def test_the_aggregates_plot_overlaps_nothing_and_counts_seeds_in_words(done):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from generala_training.benchmark.report import _aggregates_figure, seeds_per_algorithm

    res = json.loads((done / "results.json").read_text())
    assert seeds_per_algorithm(res) == "1 seed"
    fig = _aggregates_figure(res, {a: "C0" for a in res["algos"]})
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    title = fig._suptitle.get_window_extent(renderer)
    label = fig._supxlabel.get_window_extent(renderer)
    assert "1 seed " in fig._suptitle.get_text()
    for ax in fig.axes:
        assert not title.overlaps(ax.title.get_window_extent(renderer))
        for tick in ax.get_xticklabels():
            if tick.get_text():
                assert not label.overlaps(tick.get_window_extent(renderer))
    plt.close(fig)
