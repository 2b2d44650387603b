"""``generala dataset``: Minari datasets of games played by any agent, for offline RL.

    generala dataset --agent optimal --episodes 1000 --id generala/classic/expert-v0 --out DIR
    generala dataset --agent greedy --mix random:0.2 --players 2 --opponent greedy --out DIR
    generala dataset --suite reference --out DIR     # the reference datasets (docs/offline.md)

A dataset is Farama's Minari format (the successor of D4RL), written in its ``arrow`` storage
at ``DIR/ID`` so that ``MINARI_DATASETS_PATH=DIR`` makes ``minari.load_dataset(ID)`` find it.
Every episode is a game of ``gym.make("Generala-v0", ...)`` reset with its own seed
(``generala_training.harness.game_seed(seed, i)``), driven by the env itself: each step stores the
flat observation, the action, the reward, the termination and truncation, and the legal-action
mask in ``infos["action_mask"]``; each episode its seed, so replaying its actions in the env reset
with that seed gives the same steps bit for bit. The dataset's env spec carries the env's
keyword arguments (the rule set, the players, the opponent, the reward), so
``MinariDataset.recover_environment()`` makes the env the data came from.

The metadata names the policy (``algorithm_name``), and under ``generala`` the rule set and its
fingerprint, the players, the opponent, the project's version and the exact optimum (the
one-player solver's expected score) the project normalises by; ``ref_min_score`` and
``ref_max_score`` make ``minari.get_normalized_score`` give the project's normalised score (one
player: return / optimum; two players with ``reward: win``: the share of the points).

Writing is atomic and resumable: episodes go in chunks into ``.NAME.partial`` beside the
destination, renamed into place when every episode is in; a cut run, started again with the same
arguments, goes on from its last whole chunk. A dataset folder this program did not write is never
replaced; one it wrote is replaced only with ``--force``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from generala_env.files import FileProblem, lock_folder, lstat_or_none, read_json, rename_new, write_json

from .options import MissingExtra, parser, positive_int, require_extra, seed_int

PROGRAM = "generala dataset"
RECORD = "generala-dataset.json"  # in a dataset's folder: the arguments that wrote it, and the mark that this program did
DATA_FORMAT = "arrow"  # Minari's storage that needs no h5py; pyarrow comes with minari's own dependencies
PROGRESS = "progress.json"  # in the partial folder: the episodes and steps of the whole chunks written
CHUNK = 50  # episodes written at a time: a cut run loses at most this many
OFFLINE_MODULES = ("minari", "pyarrow", "PIL")  # minari's arrow storage imports Pillow


class DatasetError(ValueError):
    """Bad input to a dataset: one line naming the problem."""


# -- what a dataset is made of --------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """Everything that decides a dataset's content: the same plan writes the same episodes."""

    dataset_id: str
    agent: str
    mix: tuple[str, float] | None  # (agent, share of steps it plays instead), or None
    rules: Any  # the env's ``rules`` argument: a preset name or a mapping of settings
    players: int
    opponent: str | None
    reward: str
    episodes: int
    seed: int

    @property
    def policy_name(self) -> str:
        return self.agent if self.mix is None else f"{self.agent} + {self.mix[0]} at {self.mix[1]:g}"

    def env_kwargs(self) -> dict:
        """``gym.make("Generala-v0", **env_kwargs())``: the env every episode is played in."""
        kwargs: dict[str, Any] = {"rules": self.rules, "num_players": self.players, "reward": self.reward}
        if self.players > 1:
            kwargs.update(opponents=self.opponent, agent_seat="random")
        return kwargs

    def record(self) -> dict:
        """The plan as JSON (``RECORD``): compared on resume, kept with the finished dataset."""
        return {
            "written_by": PROGRAM,
            "dataset_id": self.dataset_id,
            "agent": self.agent,
            "mix": None if self.mix is None else {"agent": self.mix[0], "share": self.mix[1]},
            "env": self.env_kwargs(),
            "episodes": self.episodes,
            "seed": self.seed,
        }


def parse_mix(text: str) -> tuple[str, float]:
    """``AGENT:SHARE`` (``random:0.2``): the agent that plays each step with probability SHARE."""
    agent, sep, share = text.rpartition(":")
    try:
        p = float(share)
    except ValueError:
        p = float("nan")
    if not sep or not agent or not (0.0 < p <= 1.0):
        raise DatasetError(f"--mix takes AGENT:SHARE with a share above 0 and at most 1 (random:0.2), got {text!r}")
    return agent, p


def rules_argument(spec: str):
    """The env's ``rules`` argument for ``--rules``: a preset's name as it is; a YAML file's
    settings as a mapping, so that the dataset's env spec rebuilds the rules without the file."""
    from generala_env.core.rules import load_rules, preset_names

    rules = load_rules(spec)
    return spec if spec in preset_names() else rules.settings()


# -- playing ----------------------------------------------------------------------------------------
class MixedPolicy:
    """``agent``, except that each step, with probability ``share``, ``other`` plays instead
    (an epsilon-mix); the draw comes from a generator seeded by the episode's seed."""

    def __init__(self, agent, other=None, share: float = 0.0):
        self.agent, self.other, self.share = agent, other, share
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        from .harness import game_seed

        self.rng = np.random.default_rng([0x4D4958, int(seed)])
        for k, a in enumerate((self.agent, self.other)):
            if a is not None and hasattr(a, "reset"):
                a.reset(seed=game_seed(seed, k))

    def act(self, observation, info) -> int:
        if self.other is not None and self.rng.random() < self.share:
            return int(self.other.act(observation, info))
        return int(self.agent.act(observation, info))


def load_policy(plan: Plan, rules) -> MixedPolicy:
    """The plan's policy: its agent (and mix), each checked to play ``plan.players``-player games."""
    import generala_agents as agents
    from generala_agents.base import AgentError
    from generala_env.envs import opponents

    def one(spec: str):
        why = opponents.cannot_play(spec, rules, plan.players)
        if why is not None:
            raise DatasetError(why)
        try:
            return agents.load(spec, rules=rules)
        except AgentError as e:
            raise DatasetError(str(e)) from None

    return MixedPolicy(one(plan.agent), *((one(plan.mix[0]), plan.mix[1]) if plan.mix else ()))


@dataclass
class Episode:
    seed: int
    observations: np.ndarray  # (T + 1, n) float32
    actions: np.ndarray  # (T,) int64
    rewards: np.ndarray  # (T,) float64
    terminations: np.ndarray  # (T,) bool
    truncations: np.ndarray  # (T,) bool
    masks: np.ndarray  # (T + 1, A) int8: the legal actions at each observation
    total: int  # the agent's final total
    seat: int
    points: float  # the agent's share of the game's point: 1 a win, 1/k a win shared by k, 0 a loss (one player: 1)


def play_episode(env, policy: MixedPolicy, seed: int, name: str) -> Episode:
    """One game in ``env`` (made by ``gym.make``) reset with ``seed``, ``policy`` choosing every
    action; an action the mask does not allow is a :class:`DatasetError` naming it."""
    obs, info = env.reset(seed=seed)
    policy.reset(seed)
    observations, masks = [obs], [info["action_mask"]]
    actions: list[int] = []
    rewards: list[float] = []
    terms: list[bool] = []
    truncs: list[bool] = []
    while True:
        a = policy.act(obs, info)
        if not (0 <= a < len(info["action_mask"])) or not info["action_mask"][a]:
            raise DatasetError(f"policy {name} played illegal action {a} (episode seed {seed}): a dataset holds legal play only")
        obs, r, term, trunc, info = env.step(a)
        observations.append(obs)
        masks.append(info["action_mask"])
        actions.append(a)
        rewards.append(float(r))
        terms.append(bool(term))
        truncs.append(bool(trunc))
        if term or trunc:
            break
    seat = int(info["seat"])
    winners = np.asarray(info["winners"], dtype=bool)
    return Episode(
        seed=int(seed),
        observations=np.asarray(observations, dtype=np.float32),
        actions=np.asarray(actions, dtype=np.int64),
        rewards=np.asarray(rewards, dtype=np.float64),
        terminations=np.asarray(terms, dtype=bool),
        truncations=np.asarray(truncs, dtype=bool),
        masks=np.asarray(masks, dtype=np.int8),
        total=int(info["totals"][seat]),
        seat=seat,
        points=float(winners[seat]) / max(1, int(winners.sum())),
    )


# -- the folder -------------------------------------------------------------------------------------
def dataset_dir(root: Path, dataset_id: str) -> Path:
    return root.joinpath(*dataset_id.split("/"))


def partial_dir(dest: Path) -> Path:
    """Where a dataset is written until it is whole: beside it, so that the rename is atomic."""
    return dest.with_name(f".{dest.name}.partial")


def read_record(folder: Path) -> dict | None:
    """The record this program left in ``folder``, or ``None`` when it holds none (not ours)."""
    path = folder / RECORD
    if lstat_or_none(path) is None:
        return None
    try:
        rec = read_json(path, 1 << 20, "dataset record")
    except (FileProblem, ValueError):
        return None
    return rec if isinstance(rec, dict) and rec.get("written_by") == PROGRAM else None


def check_id(dataset_id: str) -> str:
    from minari.dataset.minari_dataset import parse_dataset_id

    try:
        parse_dataset_id(dataset_id)
    except ValueError:
        raise DatasetError(f"--id must be a Minari dataset id, NAMESPACE/NAME-vN (generala/classic/expert-v0), got {dataset_id!r}") from None
    if any(part in ("", ".", "..") or part.startswith(".") for part in dataset_id.split("/")):
        raise DatasetError(f"--id parts may not be empty or start with a dot, got {dataset_id!r}")
    return dataset_id


def _metadata(plan: Plan, rules, optimum: float) -> dict:
    import minari

    from generala_env import LAYOUT_VERSION, __version__

    win = plan.reward == "win"
    return {
        "dataset_id": plan.dataset_id,
        "algorithm_name": plan.policy_name,
        "author": {"generala-rl"},
        "code_permalink": "https://github.com/generala-rl/generala-rl",
        "description": f"Generala ({rules.name} rules, {plan.players} player{'s' if plan.players > 1 else ''}"
        + (f" against {plan.opponent}" if plan.opponent else "")
        + f"), {plan.episodes} games played by {plan.policy_name}; reward: {plan.reward}",
        "requirements": [f"generala-rl=={__version__}"],
        "minari_version": minari.__version__,
        # minari.get_normalized_score: return / optimum, or the share of the points at two players
        "ref_min_score": -1.0 if win else 0.0,
        "ref_max_score": 1.0 if win else optimum,
        "generala": {
            "policy": plan.policy_name,
            "agent": plan.agent,
            "mix": None if plan.mix is None else {"agent": plan.mix[0], "share": plan.mix[1]},
            "rules": rules.name,
            "rules_fingerprint": rules.fingerprint(),
            "rules_settings": rules.settings(),
            "players": plan.players,
            "opponent": plan.opponent,
            "reward": plan.reward,
            "seed": plan.seed,
            "version": __version__,
            "layout_version": LAYOUT_VERSION,
            "optimum": optimum,
        },
    }


def _buffer(ep: Episode, episode_id: int):
    from minari.data_collector.episode_buffer import EpisodeBuffer

    return EpisodeBuffer(
        id=episode_id,
        seed=ep.seed,
        observations=ep.observations,
        actions=ep.actions,
        rewards=list(ep.rewards),
        terminations=list(ep.terminations),
        truncations=list(ep.truncations),
        infos={"action_mask": ep.masks},
    )


def _progress(total: int, done: int, desc: str):
    """A progress bar on stderr (tqdm, if installed), and a function that moves it on by n."""
    try:
        from tqdm import tqdm
    except ImportError:
        return (lambda n: None), (lambda: None)
    bar = tqdm(total=total, initial=done, unit="game", desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True)
    return bar.update, bar.close


def _arrow_storage():
    """Minari's arrow storage, its size measured once a chunk: Minari measures it after every
    episode by walking every file of the dataset, which makes a long write quadratic."""
    from minari.dataset._storages.arrow_storage import ArrowStorage

    class ChunkedArrowStorage(ArrowStorage):
        size_now: float | None = None  # while set, get_size() answers it instead of walking the files

        def get_size(self) -> float:
            return self.size_now if self.size_now is not None else super().get_size()

    return ChunkedArrowStorage


def _storage(data: Path, env, plan: Plan, rules, optimum: float):
    """The partial dataset's Minari storage: made when missing, else read back; episode folders
    past the last whole chunk (a write that was cut) are removed."""
    from minari.dataset.minari_storage import MinariStorage

    if lstat_or_none(data / "metadata.json") is None:
        if data.exists():
            shutil.rmtree(data)  # a storage cut before its metadata was written: ours, in our partial folder
        MinariStorage.new(data, env.observation_space, env.action_space, env_spec=env.spec, data_format=DATA_FORMAT).update_metadata(
            _metadata(plan, rules, optimum)
        )
    storage = _arrow_storage()(data, env.observation_space, env.action_space)
    whole = read_json(data.parent / PROGRESS, 1 << 10, "progress file") if lstat_or_none(data.parent / PROGRESS) is not None else {"episodes": 0, "steps": 0}
    for child in data.iterdir():
        if child.is_dir() and child.name.isdigit() and int(child.name) >= whole["episodes"]:
            shutil.rmtree(child)
    storage.update_metadata({"total_episodes": int(whole["episodes"]), "total_steps": int(whole["steps"])})
    return storage


def _write_chunk(storage, episodes: list[Episode], first: int) -> None:
    """Append ``episodes`` as episodes ``first, first + 1, ...``; the dataset's metadata counts them
    only once all are written (``PROGRESS``), so a cut chunk is written again whole on resume."""
    ids = list(range(first, first + len(episodes)))
    storage.size_now = 0.0
    try:
        storage.update_episodes([_buffer(ep, i) for i, ep in zip(ids, episodes, strict=True)])
        storage.update_episode_metadata([{"total": ep.total, "seat": ep.seat, "points": ep.points} for ep in episodes], ids)
    finally:
        storage.size_now = None
    storage.update_metadata({"dataset_size": storage.get_size()})
    write_json(storage.data_path.parent / PROGRESS, {"episodes": storage.total_episodes, "steps": storage.total_steps})


def _written_already(dest: Path, part: Path, wanted: dict, force: bool) -> bool:
    """Whether ``dest`` holds the dataset ``wanted`` describes (and ``force`` does not ask for it
    anew); a :class:`DatasetError` where writing it would replace what is not ours to replace."""
    if lstat_or_none(dest) is not None:
        rec = read_record(dest)
        if rec is None:
            raise DatasetError(f"{dest} exists and is not a dataset generala dataset wrote: it is not replaced")
        if rec == wanted and not force:
            return True
        if not force:
            raise DatasetError(f"{dest} holds a dataset written with other arguments: --force replaces it")
    if lstat_or_none(part) is not None:
        rec = read_record(part)
        if rec is None:
            raise DatasetError(f"{part} exists and is not a partial dataset generala dataset wrote: remove it or choose another --id")
        if rec != wanted:
            raise DatasetError(f"{part} is a cut run of a dataset with other arguments: run that command again to finish it, or remove it")
    return False


def write_dataset(plan: Plan, root: Path, force: bool = False, quiet: bool = False) -> dict:
    """Write ``plan``'s dataset at ``root/ID`` (see the module's docstring); the summary of
    its episodes (:func:`summary`)."""
    import gymnasium as gym

    from generala_agents.solver import load_or_solve
    from generala_env import ENV_ID
    from generala_env.core.rules import load_rules

    from .harness import game_seed

    rules = load_rules(plan.rules)
    dest = dataset_dir(root, plan.dataset_id)
    part = partial_dir(dest)
    wanted = plan.record()
    if _written_already(dest, part, wanted, force):
        if not quiet:
            print(f"{dest}: already written with these arguments")
        return summary(dest)
    policy = load_policy(plan, rules)
    optimum = float(load_or_solve(rules)[0].expected_score)
    part.mkdir(parents=True, exist_ok=True)
    with lock_folder(part, "another generala dataset"):
        write_json(part / RECORD, wanted)
        env = gym.make(ENV_ID, **plan.env_kwargs())
        storage = _storage(part / "data", env, plan, rules, optimum)
        done = storage.total_episodes
        step, close = _progress(plan.episodes, done, plan.dataset_id) if not quiet else ((lambda n: None), (lambda: None))
        try:
            while done < plan.episodes:
                chunk = range(done, min(done + CHUNK, plan.episodes))
                episodes = [play_episode(env, policy, game_seed(plan.seed, i), plan.policy_name) for i in chunk]
                _write_chunk(storage, episodes, done)
                done += len(episodes)
                step(len(episodes))
        finally:
            close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part / PROGRESS)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part / ".lock")  # the lock is held through its open descriptor; the dataset keeps no lock file
    if lstat_or_none(dest) is not None:  # --force over a dataset of ours: set it aside, move the new one in, remove the old
        old = dest.with_name(f".{dest.name}.replaced")
        if lstat_or_none(old) is not None:
            shutil.rmtree(old)
        os.rename(dest, old)
        rename_new(part, dest)
        shutil.rmtree(old)
    else:
        rename_new(part, dest)
    return summary(dest)


# -- reading back ------------------------------------------------------------------------------------
def summary(dest: Path) -> dict:
    """A written dataset's figures: episodes, steps, size, the mean return, the mean final total
    as a share of the optimum, and the share of the points (two players)."""
    from minari.dataset.minari_storage import MinariStorage

    storage = MinariStorage.read(dest / "data")
    meta = storage.metadata
    g = meta["generala"]
    n = storage.total_episodes
    em = list(storage.get_episode_metadata(range(n)))
    returns = [float(np.sum(e["rewards"])) for e in storage.get_episodes(range(n))]
    totals = np.array([m["total"] for m in em], dtype=float)
    return {
        "id": meta["dataset_id"],
        "policy": g["policy"],
        "rules": g["rules"],
        "players": g["players"],
        "opponent": g["opponent"],
        "episodes": n,
        "steps": storage.total_steps,
        "size_mb": storage.get_size(),
        "mean_return": float(np.mean(returns)) if returns else 0.0,
        "mean_total": float(totals.mean()) if n else 0.0,
        "share_of_optimum": float(totals.mean() / g["optimum"]) if n else 0.0,
        "points": float(np.mean([m["points"] for m in em])) if n and g["players"] > 1 else None,
        "optimum": g["optimum"],
    }


# -- the reference suite ---------------------------------------------------------------------------
# (id, agent, mix, players, opponent, episodes): docs/offline.md gives each one's figures
REFERENCE: tuple[tuple[str, str, tuple[str, float] | None, int, str | None, int], ...] = (
    ("generala/classic/expert-v0", "optimal", None, 1, None, 1000),
    ("generala/classic/medium-v0", "greedy", ("random", 0.05), 1, None, 1000),
    ("generala/classic/random-v0", "random", None, 1, None, 1000),
    ("generala/classic/mixed-v0", "optimal", ("random", 0.3), 1, None, 1000),
    ("generala/classic-vs-greedy/expert-v0", "optimal-2p", None, 2, "greedy", 500),
    ("generala/classic-vs-greedy/medium-v0", "greedy", ("random", 0.05), 2, "greedy", 500),
)
SUITES = {"reference": REFERENCE}


def suite_plans(name: str, seed: int, scale: float = 1.0) -> list[Plan]:
    return [
        Plan(
            dataset_id=i,
            agent=a,
            mix=m,
            rules="classic",
            players=p,
            opponent=o,
            reward="win" if p > 1 else "score",
            episodes=max(1, round(n * scale)),
            seed=seed,
        )
        for i, a, m, p, o, n in SUITES[name]
    ]


def table(rows: list[dict]) -> str:
    """The datasets' figures as a Markdown table."""
    out = [
        "| dataset | policy | players | episodes | steps | size (MB) | mean return | mean total / optimum | share of the points |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        vs = f"2, vs {r['opponent']}" if r["players"] > 1 else "1"
        pts = "" if r["points"] is None else f"{r['points']:.3f}"
        out.append(
            f"| `{r['id']}` | {r['policy']} | {vs} | {r['episodes']:,} | {r['steps']:,} | {r['size_mb']:.1f} | {r['mean_return']:.3f} | {r['share_of_optimum']:.1%} | {pts} |"
        )
    return "\n".join(out)


def default_root() -> Path:
    return Path(os.environ.get("MINARI_DATASETS_PATH") or Path.home() / ".minari" / "datasets")


def parse_args(argv):
    p = parser(PROGRAM, "Write Minari datasets (offline RL) of games played by any agent; see docs/offline.md.")
    p.add_argument("--agent", help="the agent spec that plays: optimal, optimal-2p, td-search, greedy, rules-of-thumb, random, a checkpoint folder ...")
    p.add_argument("--mix", type=str, help="AGENT:SHARE: each step, with probability SHARE, AGENT plays instead (random:0.2)")
    p.add_argument("--rules", default="classic", help="preset name or YAML path (default classic)")
    p.add_argument("--players", type=positive_int, default=1, choices=(1, 2), help="1 or 2 (default 1)")
    p.add_argument("--opponent", help="two players: the opponent's agent name (default greedy)")
    p.add_argument("--reward", choices=("score", "win"), help="the env's reward (default: score at one player, win at two)")
    p.add_argument("--episodes", type=positive_int, default=1000, help="games (default 1000)")
    p.add_argument("--seed", type=seed_int, default=0, help="episode i is reset with game_seed(seed, i) (default 0)")
    p.add_argument("--id", help="the Minari dataset id, NAMESPACE/NAME-vN (default generala/RULES/AGENT-v0)")
    p.add_argument("--suite", choices=tuple(SUITES), help="write a named set of datasets instead (reference: docs/offline.md)")
    p.add_argument("--scale", type=float, default=1.0, help="with --suite: episodes times this (default 1)")
    p.add_argument("--out", help="the Minari datasets root (default $MINARI_DATASETS_PATH or ~/.minari/datasets)")
    p.add_argument("--force", action="store_true", help="replace a dataset this program wrote with other arguments")
    p.add_argument("--json", action="store_true", help="print the datasets' figures as JSON")
    return p.parse_args(argv)


def _plan(args) -> Plan:
    from generala_env.core.rules import load_rules

    if not args.agent:
        raise DatasetError("name the agent that plays (--agent optimal), or a --suite")
    rules = load_rules(args.rules)
    if args.players == 1 and args.opponent:
        raise DatasetError("--opponent is for two players (--players 2)")
    opponent = (args.opponent or "greedy") if args.players > 1 else None
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in args.agent.rstrip("/").split("/")[-1]) or "agent"
    dataset_id = check_id(args.id or f"generala/{rules.name.replace('+', '-')}/{safe}-v0")
    return Plan(
        dataset_id=dataset_id,
        agent=args.agent,
        mix=parse_mix(args.mix) if args.mix else None,
        rules=rules_argument(args.rules),
        players=args.players,
        opponent=opponent,
        reward=args.reward or ("win" if args.players > 1 else "score"),
        episodes=args.episodes,
        seed=args.seed,
    )


def main(argv=None) -> int:
    from .harness import Interrupted, signals_interrupt

    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        require_extra("offline", OFFLINE_MODULES, PROGRAM)
        if not (0 < args.scale <= 100):
            raise DatasetError(f"--scale must be above 0 and at most 100, got {args.scale}")
        plans = suite_plans(args.suite, args.seed, args.scale) if args.suite else [_plan(args)]
        root = Path(args.out) if args.out else default_root()
        rows = []
        with signals_interrupt():
            for plan in plans:
                rows.append(write_dataset(plan, root, force=args.force, quiet=args.json))
                if not args.json:
                    print(f"{dataset_dir(root, plan.dataset_id)}: {rows[-1]['episodes']:,} episodes, {rows[-1]['steps']:,} steps")
    except Interrupted as e:
        print(f"\n{PROGRAM}: interrupted; run the same command again to go on from the last whole chunk", file=sys.stderr)
        return e.exit_status
    except (DatasetError, FileProblem, MissingExtra) as e:
        print(f"{PROGRAM}: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print()
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
