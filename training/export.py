"""``generala export``: turn a training run into a checkpoint folder with its metadata.

    generala export runs/ppo_classic_bc --name my-agent --games 10000   # writes ./exports/my-agent
    generala evaluate --agents exports/my-agent,greedy                  # a checkpoint folder is an agent spec

Reads the run's model (``best_model.zip`` by default) from its twin, ``best_model.safetensors``,
which ``generala train`` writes beside every zip: tensors and text, built into a model of the
run's config, so nothing is unpickled and exporting needs no opt-in. A run saved before twins
were written has the zip alone, an SB3 pickle that runs any code inside it when loaded: export
reads it only with ``--trust-zip`` (``--other-seed`` likewise). It writes ``DEST/NAME/policy.safetensors`` (the weights as plain tensors) and
``metadata.json``: rules, players, reward, observation layout version and size, the network,
training steps and time, the resolved config, and the evaluation figures measured here on
``--games`` seeded games (one player: mean score and share of the optimal expected score;
several players: win rates against baselines, seats swapped).

Nothing is overwritten until the new checkpoint is complete: it is written into a temporary
folder beside ``DEST/NAME``, loaded back and checked to choose the same actions as the
run's model, evaluated, and only then put at ``DEST/NAME``. Export replaces only a checkpoint
it made itself (a folder of exactly those two files, its metadata marked by export), and only
with ``--force``; a file, a link or any other folder there is refused, ``--force`` or not.
SIGINT or SIGTERM stops its evaluation workers and leaves ``DEST`` as it was.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import numpy as np

from generala_env.core.checks import is_whole
from generala_env.core.game import outcome_points
from generala_env.files import FileProblem, read_regular, rename_new
from generala_env.files.safe_yaml import short_repr

from .config import read_config_file
from .export_metadata import ExportError, make_metadata, write_metadata, write_policy
from .harness import game_seed, play_many
from .options import parser, positive_int, seed_int
from .stats import mean_ci, wilson


def verify(model, folder: Path, rules, players: int, states: int = 300) -> None:
    """Load ``folder`` as an agent and check that it picks the model's actions on seeded states."""
    import generala_agents as agents
    from generala_agents.policy_net import masked_argmax_actions
    from generala_env.envs.env import GeneralaEnv

    agent = agents.load(str(folder), rules=rules, num_players=players)
    env = GeneralaEnv(rules=rules, num_players=players, opponents="random" if players > 1 else None)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    for _ in range(states):
        ours = agent.act(obs, info)
        theirs = int(masked_argmax_actions(model.policy, obs[None], info["action_mask"][None])[0])
        if ours != theirs:
            raise ExportError(f"the exported weights play {ours} where the run's model plays {theirs}: not exported")
        legal = np.flatnonzero(info["action_mask"])
        obs, _, done, _, info = env.step(int(legal[rng.integers(len(legal))]))
        if done:
            obs, info = env.reset()


def evaluate(dest: Path, name: str, rules, players: int, games: int, seed: int, opponents: list[str], spec: str | None = None) -> dict:
    """The checkpoint's figures on ``games`` seeded games (one player: score; several: win rates);
    ``spec`` names the checkpoint in the commands recorded to measure it again (default ``name``)."""
    spec = name if spec is None else spec
    from generala_agents.solver import load_or_solve

    seeds = [game_seed(seed, i) for i in range(games)]
    evaluation: dict = {"games": games, "seed": seed}
    if players == 1:
        optimal = load_or_solve(rules)[0].expected_score
        recs = play_many([(str(dest),)] * games, seeds, rules, desc=f"evaluating {name}: {games:,} seeded games")
        m, lo, hi = mean_ci([r.totals[0] for r in recs])
        evaluation.update(
            mean_score=m,
            ci95=[lo, hi],
            share_of_optimal=m / optimal,
            optimal_expected=optimal,
            command=f"generala evaluate --agents optimal,{spec} --games {games} --seed {seed}",
        )
        print(f"{name}: mean {m:.2f} (95% CI {lo:.2f}–{hi:.2f}) over {games} games = {m / optimal:.2%} of optimal {optimal:.2f}")
        return evaluation
    for opp in opponents:
        lineups, ss = [], []
        for s in seeds:
            for seat in range(players):
                lu = [opp] * players
                lu[seat] = str(dest)
                lineups.append(tuple(lu))
                ss.append(s)
        recs = play_many(lineups, ss, rules, desc=f"evaluating {name} vs {opp}: {len(lineups):,} seeded games")
        wins = draws = 0
        for lineup, r in zip(lineups, recs, strict=True):
            points = outcome_points(r.winners, lineup.index(str(dest)))
            wins += points == 1.0
            draws += 0.0 < points < 1.0  # a shared win: 1/k
        n = len(recs)
        wr = wilson(wins, n)
        evaluation[f"vs_{opp}"] = {
            "games": n,
            "win_rate": wr,
            "draw_rate": draws / n,
            "command": f"generala tournament --agents {spec},{opp} --players {players} --games {games} --seed {seed}",
        }
        print(f"{name} vs {opp}: win {wr[0]:.2%} (95% CI {wr[1]:.2%}–{wr[2]:.2%}), draws {draws / n:.2%}, {n} games")
    return evaluation


MAX_NAME = 100  # characters of --name: room for a clear name, far below a file system's 255


def is_export_checkpoint(folder: Path) -> bool:
    """Whether ``folder`` is a checkpoint this program wrote: a real folder (not a link) holding
    exactly ``metadata.json`` and ``policy.safetensors``, its metadata marked by export."""
    from generala_agents.policy_net import WEIGHTS_FILE
    from generala_agents.ppo import METADATA_FILE

    if folder.is_symlink() or not folder.is_dir():
        return False
    try:
        if sorted(p.name for p in folder.iterdir()) != sorted([METADATA_FILE, WEIGHTS_FILE]):
            return False
        if any((folder / f).is_symlink() for f in (METADATA_FILE, WEIGHTS_FILE)):
            return False
        meta = json.loads(read_regular(folder / METADATA_FILE, 2**20, "a checkpoint's metadata"))  # a FIFO or device: not a checkpoint
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(meta, dict) and all(k in meta for k in ("source_run", "source_model", "exported"))


def check_dest(dest: Path, force: bool) -> None:
    """Refuse a ``DEST/NAME`` that export may not replace: anything it did not make, and
    without ``--force`` a checkpoint it made. Checked before any work, and again at the end."""
    if not os.path.lexists(dest):
        return
    if not is_export_checkpoint(dest):
        kind = "a link" if dest.is_symlink() else ("a file" if not dest.is_dir() else "a folder that is not a checkpoint made by generala export")
        raise ExportError(
            f"{dest} exists and is {kind}: nothing was written; pick another --name or --dest (--force replaces only a checkpoint made by export)"
        )
    if not force:
        raise ExportError(f"checkpoint {dest} exists: nothing was written; pick another --name, or replace it with --force")


def _temp_name(name: str, kind: str) -> str:
    return f".{name}.{kind}-{os.getpid()}-"


def sweep_leftovers(root: Path, name: str) -> None:
    """Clean up after an export of ``name`` that was killed (kill -9) before it could: its
    ``.NAME.new-PID-*`` and ``.NAME.old-PID-*`` folders in ``root``, when that PID is no longer
    running and the folder holds nothing but files export writes. An old checkpoint moved
    aside just before the kill goes back to ``NAME`` if nothing took its place; the rest is removed."""
    from generala_agents.policy_net import WEIGHTS_FILE
    from generala_agents.ppo import METADATA_FILE

    for p in root.glob(f".{glob_escape(name)}.*-*-*"):
        kind, _, rest = p.name[len(name) + 2 :].partition("-")
        pid = rest.partition("-")[0]
        if kind not in ("new", "old", "seed") or not pid.isdigit() or p.is_symlink() or not p.is_dir() or _running(int(pid)):
            continue
        if not all(f.name in (METADATA_FILE, WEIGHTS_FILE) and f.is_file() and not f.is_symlink() for f in p.iterdir()):
            continue
        if kind == "old" and not os.path.lexists(root / name) and is_export_checkpoint(p):
            os.rename(p, root / name)
        else:
            shutil.rmtree(p, ignore_errors=True)


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def put_in_place(tmp: Path, dest: Path, force: bool = False) -> None:
    """Put the finished folder ``tmp`` at ``dest``: one rename, or, replacing a checkpoint export
    made (``force``), two renames on one file system and the old one removed.

    ``tmp`` comes from ``mkdtemp`` (owner-only); the checkpoint gets the usual modes first.
    """
    os.chmod(tmp, 0o755)
    for f in tmp.iterdir():
        os.chmod(f, 0o644)
    check_dest(dest, force)  # again: something may have appeared there while we evaluated
    old = None
    if force and os.path.lexists(dest):
        # moved aside first, then checked: what is checked is what gets removed, whatever appeared meanwhile
        old = dest.with_name(_temp_name(dest.name, "old") + secrets.token_hex(4))
        os.rename(dest, old)
        if not is_export_checkpoint(old):
            rename_new(old, dest)
            raise ExportError(f"{dest} changed while export ran and is not a checkpoint made by export: nothing was replaced")
    try:
        rename_new(tmp, dest)  # never over what appeared at dest since the check (an empty folder of the user's, a link)
    except BaseException:
        if old is not None:
            os.rename(old, dest)
        raise
    if old is not None:
        shutil.rmtree(old)


def _check_run_config(cfg, path: Path) -> None:
    """Refuse a run's ``config.yaml`` whose keys that export reads have the wrong type: one line naming the file and key."""
    if not isinstance(cfg, dict) or not isinstance(cfg.get("env"), dict):
        raise ExportError(f"{path} is not a training config")
    env, pretrain = cfg["env"], cfg.get("pretrain")
    whole = lambda v: is_whole(v)  # noqa: E731
    checks = [
        ("env.rules", env.get("rules", "classic"), lambda v: isinstance(v, (str, dict)), "a preset name, a YAML path or a mapping of settings"),
        ("env.num_players", env.get("num_players", 1), lambda v: whole(v) and 1 <= v <= 6, "a whole number from 1 to 6"),
        ("env.reward", env.get("reward"), lambda v: v is None or isinstance(v, str), "text"),
        ("env.opponents", env.get("opponents"), lambda v: v is None or isinstance(v, (str, list)), "null, a name or a list of names"),
        ("pretrain", pretrain, lambda v: v is None or isinstance(v, dict), "a mapping"),
        ("init_from", cfg.get("init_from"), lambda v: v is None or isinstance(v, str), "null or a path"),
        ("seed", cfg.get("seed", 0), whole, "a whole number"),
    ]
    if isinstance(pretrain, dict):
        checks += [
            ("pretrain.games", pretrain.get("games", 0), lambda v: whole(v) and v >= 0, "a whole number of 0 or more"),
            ("pretrain.teacher", pretrain.get("teacher", "optimal"), lambda v: isinstance(v, str), "text"),
        ]
    for key, value, ok, what in checks:
        if not ok(value):
            raise ExportError(f"{path}: config key {key!r} must be {what}, got {short_repr(value)}")


def _check_pretrain_record(state: dict, path: Path) -> None:
    """Refuse a ``state.json`` whose record of behaviour cloning has fields of the wrong type."""
    pretrain = state.get("pretrain")
    if not isinstance(pretrain, dict):
        return
    for key in ("seconds", "teacher_train_seconds"):
        if key in pretrain and (isinstance(pretrain[key], bool) or not isinstance(pretrain[key], (int, float))):
            raise ExportError(f"{path}: 'pretrain.{key}' must be a number, got {short_repr(pretrain[key])}")
    if "teacher" in pretrain and not isinstance(pretrain["teacher"], str):
        raise ExportError(f"{path}: 'pretrain.teacher' must be text, got {short_repr(pretrain['teacher'])}")


def _read_run(run: Path, model_name: str, trust_zip: bool) -> tuple[dict, dict, Path]:
    """A run's config, state and the file its model is read from: the twin of ``model_name``
    (``NAME.safetensors``, tensors and text), else, with ``trust_zip`` only, the zip itself."""
    from generala_agents.sb3_tensors import twin

    from .runs import read_state

    if not run.is_dir():
        raise ExportError(f"{run} is not a run folder")
    cfg = read_config_file(run / "config.yaml", "the run's config file", ExportError)
    _check_run_config(cfg, run / "config.yaml")
    state = read_state(run / "state.json", ExportError, "export needs a run's state.json as train wrote it", required=False) or {}
    _check_pretrain_record(state, run / "state.json")
    if Path(model_name).name != model_name or not model_name.endswith(".zip"):
        raise ExportError(f"--model names a model file of the run folder (best_model.zip, latest.zip, final_model.zip), got {model_name!r}")
    model = run / model_name
    for source in (twin(model), model):
        if os.path.lexists(source) and (source.is_symlink() or not source.is_file()):
            raise ExportError(f"{source} is a symbolic link or not a regular file: export reads only the run's own model files")
    if twin(model).is_file():
        return cfg, state, twin(model)
    if not model.is_file():
        raise ExportError(f"{model} does not exist")
    if not trust_zip:
        raise ExportError(
            f"{model} is an SB3 zip, which runs any code inside it when loaded, and the run has no {twin(model).name} beside it "
            "(a run saved before tensors were written beside its zips): pass --trust-zip if you made the run"
        )
    return cfg, state, model


# what may differ between runs of one recipe: the seed, and the teacher trained with that seed
_SEED_KEYS = {("seed",), ("pretrain", "teacher"), ("run_dir",)}


def _recipe(cfg: dict) -> dict:
    flat = {}
    for k, v in cfg.items():
        for k2, v2 in v.items() if isinstance(v, dict) else [(None, v)]:
            key = (k,) if k2 is None else (k, k2)
            if key not in _SEED_KEYS:
                flat[key] = v2
    return flat


def _sibling(run: Path, model_name: str, cfg: dict, trust_zip: bool) -> tuple[Path, dict, dict, Path]:
    """Another seed's run of the recipe of ``cfg``: its folder, config, state and model file."""
    other, state, model_file = _read_run(run, model_name, trust_zip)
    a, b = _recipe(cfg), _recipe(other)
    differ = sorted(".".join(k) for k in set(a) | set(b) if a.get(k) != b.get(k))
    if differ:
        raise ExportError(f"--other-seed {run} is not the same recipe: its config differs in {', '.join(differ[:5])}")
    if other.get("seed") == cfg.get("seed"):
        raise ExportError(f"--other-seed {run} has the same seed ({cfg.get('seed')}) as the exported run")
    return run, other, state, model_file


def _seed_record(cfg: dict, meta: dict, run: str) -> dict:
    ev = meta["evaluation"]
    figures = {k: ev[k] for k in ("mean_score", "ci95", "share_of_optimal") if k in ev} or {k: v for k, v in ev.items() if k.startswith("vs_")}
    return {"seed": cfg.get("seed"), "run": run, "training_steps": meta["training_steps"], "budget_seconds": meta["budget_seconds"], **figures}


def _measure_sibling(sibling, args, rules, players: int, opponents: list[str], where: Path) -> dict:
    """Another seed's model, made into a checkpoint in a temporary folder and measured like the exported one."""
    run, cfg, state, model_file = sibling
    model = _load_model(model_file, rules, players, run)
    tmp = Path(tempfile.mkdtemp(prefix=_temp_name(args.name, "seed"), dir=where))
    try:
        write_policy(model, tmp)
        meta = make_metadata(model, rules, players, cfg, state, name=args.name, source_run=str(run), source_model=args.model)
        write_metadata(tmp, meta)
        meta["evaluation"] = evaluate(tmp, f"{args.name} (seed {cfg.get('seed')})", rules, players, args.games, args.seed, opponents)
        if meta["solver_in_training"]:
            raise ExportError(f"--other-seed {run} has a solver in its training ({meta['solver_in_training'][0]}) where the exported run has none")
        return _seed_record(cfg, meta, str(run))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _load_model(model_file: Path, rules, players: int, run: Path):
    """The run's model, refused unless it takes the observations of the run's games: built from
    the run's config and filled from the twin ``model_file`` (nothing unpickled), or, for a
    ``.zip`` (``--trust-zip``), loaded by SB3."""
    from generala_env.core.encoding import observation_size

    if model_file.suffix == ".zip":
        from sb3_contrib import MaskablePPO

        try:
            model = MaskablePPO.load(model_file, device="cpu")
        except Exception as e:  # a broken zip fails in many ways inside SB3
            raise ExportError(f"{model_file} does not load as a MaskablePPO model: {type(e).__name__}: {e}") from None
    else:
        model = _model_from_twin(model_file, rules, players, run)
    shape = model.observation_space.shape
    assert shape is not None  # a MaskablePPO model's observation space is a Box
    obs_size, want = int(shape[0]), observation_size(rules, players)
    if obs_size != want:
        raise ExportError(f"{model_file} takes observations of size {obs_size}, the run's {players}-player {rules.name!r} games give {want}")
    return model


def _model_from_twin(twin_file: Path, rules, players: int, run: Path):
    """A model of the run's config (its network), on one game of the run's rules, holding the twin's weights and step count."""
    import dataclasses

    from generala_agents.sb3_tensors import TensorsError

    from .config import ConfigError, load_config
    from .envs import make_envs
    from .model_tensors import load_twin
    from .models import model_from_config

    try:
        cfg = load_config(run / "config.yaml")
        venv = make_envs(1, 0, monitor=False, rules=rules, num_players=players, opponents="random" if players > 1 else None)
        try:
            model = model_from_config(dataclasses.replace(cfg, init_from=None), venv, run / "tb", rules=rules)
        finally:
            venv.close()
        load_twin(model, twin_file, optimizer=False)
    except (ConfigError, TensorsError) as e:
        raise ExportError(f"{twin_file} cannot be read into the run's model: {e}") from None
    return model


def main(argv=None) -> int:
    p = parser("generala export", __doc__.split("\n\n")[0])
    p.add_argument("run", help="a run folder made by generala train")
    p.add_argument("--name", required=True, help="checkpoint name, e.g. ppo-classic (letters, digits, '.', '_', '-')")
    p.add_argument(
        "--model",
        default="best_model.zip",
        help="which model of the run (best_model.zip, latest.zip, final_model.zip; default best_model.zip): read from its twin NAME.safetensors",
    )
    p.add_argument("--games", type=positive_int, default=10000, help="evaluation games (at least 1)")
    p.add_argument("--seed", type=seed_int, default=0, help="the seed of the evaluation games")
    p.add_argument("--opponents", default="rules-of-thumb,optimal,greedy", help="for several players: whom to measure against")
    p.add_argument(
        "--dest",
        default="exports",
        help="folder that receives NAME/ (default: ./exports, in the current folder); play it with --agents DEST/NAME",
    )
    p.add_argument("--force", action="store_true", help="replace DEST/NAME if it is a checkpoint made by generala export (never anything else)")
    p.add_argument(
        "--other-seed",
        action="append",
        default=[],
        metavar="RUN",
        help="a run of the same recipe with another seed (repeatable): its --model is measured on the same games, and the metadata lists every seed's figures",
    )
    p.add_argument(
        "--trust-zip",
        action="store_true",
        help="read a run's SB3 .zip where it has no .safetensors twin (a run saved before twins were written): "
        "loading a zip unpickles it, which runs any code inside it; asked for at every use, never remembered",
    )
    args = p.parse_args(argv)
    from .harness import Interrupted, signals_interrupt

    try:
        with signals_interrupt():
            return _export(args)
    except (ExportError, FileProblem) as e:
        print(f"generala export: error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        where = Path(args.dest) / args.name
        done = f"{where} was already written, whole" if getattr(args, "written", False) else f"nothing was written, {where} is as it was"
        print(f"generala export: {e}: {done}", file=sys.stderr)
        return e.exit_status


def _check_name_and_dest(args, is_plain_name) -> Path:
    """``--dest``, checked with ``--name`` before any work: a plain name, a real folder (never a
    link), what a killed export left there swept, and ``DEST/NAME`` free or replaceable."""
    if not is_plain_name(args.name) or len(args.name) > MAX_NAME:
        raise ExportError(
            f"--name must be a plain name of at most {MAX_NAME} characters (letters, digits, '.', '_', '-'; no path), got {short_repr(args.name, 60)}"
        )
    root = Path(args.dest)
    if root.is_symlink():
        raise ExportError(f"--dest {root} is a symbolic link: export writes only into a real folder; give the folder it points to, or another --dest")
    if root.exists() and not root.is_dir():
        raise ExportError(f"--dest {root} is a file, not a folder")
    if root.is_dir():
        sweep_leftovers(root, args.name)
    check_dest(root / args.name, args.force)
    return root


def _export(args) -> int:
    from generala_agents.base import AgentError
    from generala_agents.policy_net import WEIGHTS_FILE
    from generala_agents.ppo import METADATA_FILE, is_plain_name
    from generala_env.core.rules import RulesError, load_rules

    root = _check_name_and_dest(args, is_plain_name)
    cfg, state, model_file = _read_run(Path(args.run), args.model, args.trust_zip)
    try:
        rules = load_rules(cfg["env"]["rules"])
    except (RulesError, KeyError) as e:
        raise ExportError(f"the run's config names rules that cannot be loaded: {e}") from None
    players = int(cfg["env"].get("num_players", 1))
    opponents = [o for o in args.opponents.split(",") if o]
    if players > 1 and not opponents:
        raise ExportError("--opponents is empty: a several-player checkpoint is measured against them")
    model = _load_model(model_file, rules, players, Path(args.run))
    siblings = [_sibling(Path(r), args.model, cfg, args.trust_zip) for r in args.other_seed]

    # everything is made in a temporary folder beside DEST/NAME, which takes its place at the end
    root.mkdir(parents=True, exist_ok=True)
    dest = root / args.name
    tmp = Path(tempfile.mkdtemp(prefix=_temp_name(args.name, "new"), dir=root))
    try:
        # 1. the weights, as plain tensors
        write_policy(model, tmp)
        # 2. the metadata; with it the folder is a checkpoint, which must play the model's actions
        meta = make_metadata(model, rules, players, cfg, state, name=args.name, source_run=str(args.run), source_model=args.model)
        write_metadata(tmp, meta)
        try:
            verify(model, tmp, rules, players)
        except AgentError as e:
            raise ExportError(f"the exported checkpoint does not load: {e}") from None
        # 3. the evaluation, added to the metadata (with the recipe's other seeds, on the same games)
        meta["evaluation"] = evaluate(tmp, args.name, rules, players, args.games, args.seed, opponents, spec=str(dest))
        if siblings:
            meta["seeds"] = [_seed_record(cfg, meta, str(args.run))]
            meta["seeds"] += [_measure_sibling(s, args, rules, players, opponents, tmp.parent) for s in siblings]
        write_metadata(tmp, meta)
        from .harness import STOP_SIGNALS

        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # the swap is a few ms: it finishes, then a signal counts
        try:
            put_in_place(tmp, dest, args.force)
            args.written = True
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {dest}/{WEIGHTS_FILE} and {METADATA_FILE}; play it with --agents {dest} (Python: generala_agents.load({str(dest)!r}))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
