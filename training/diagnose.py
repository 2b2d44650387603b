"""Where a one-player agent loses points against perfect play, measured with the exact solver.

    python -m generala_training.diagnose ppo-classic --games 2000
    python -m generala_training.diagnose runs/RUN/best_model.zip --games 2000 --json diag.json
    python -m generala_training.diagnose --run runs/RUN --games 300       # every saved checkpoint of a run

The solver is used here as a yardstick only: it judges the agent's moves, it never trains
anything. At each decision of the agent (on the shared seeded dice of ``generala_training.harness``)
the solver gives the expected final total after every legal action, so each move has a
*regret*: the best action's value minus the chosen one's. By the performance-difference
lemma the regrets of a game add up, in expectation, to the optimal expected score minus the
agent's: the report splits that gap into hold decisions and write decisions, by turn, and
shows how often the agent picks the optimal action, how sure it is (the entropy of its
policy over the legal actions, for PPO policies), and which lines it crosses out compared
with the optimal player on the same dice.

An ``AGENT`` is any name or checkpoint folder that ``agents.load`` takes, or an SB3
``.zip`` of a run you made with ``--trust-zip`` (a pickle: loading one runs any code inside it,
so it is opened only when asked for at that use; ``--run`` reads the run's ``step_N.zip`` files
and needs it too).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from generala_env.files import OutputFolder

from .harness import game_seed, play_game

HOLD, WRITE = 0, 1


@dataclass
class Decisions:
    """One row per decision of the diagnosed agent."""

    kind: list[int] = field(default_factory=list)  # HOLD or WRITE
    turn: list[int] = field(default_factory=list)  # lines filled before this turn (0-based turn)
    regret: list[float] = field(default_factory=list)  # best value minus the chosen action's value
    optimal: list[bool] = field(default_factory=list)  # the chosen action is a best one
    entropy: list[float] = field(default_factory=list)  # of the policy over legal actions (nan if unknown)


def judged_values(solver, info) -> np.ndarray:
    """The one-player solver's expected points still to come after each action of the seat
    to move (``-inf`` for an illegal one): what every judgement of a move here is made of
    (a move's regret is the best value minus its own)."""
    from generala_agents.base import SeatView
    from generala_env.core.scoring import generala_scored

    v = SeatView.from_info(info)
    vals = solver.action_values(v.filled_mask, generala_scored(solver.rules, v.sheet), v.roll, v.rolls_left, v.locked)
    return np.where(v.mask, vals, -np.inf)


class Watched:
    """Wraps an agent: plays its moves, handing each to :meth:`record` (what a subclass keeps of it)."""

    def __init__(self, agent):
        self.agent = agent
        self.name = getattr(agent, "name", "agent")

    def reset(self, seed=None):
        if hasattr(self.agent, "reset"):
            self.agent.reset(seed=seed)

    def act(self, obs, info):
        a = int(self.agent.act(obs, info))
        self.record(a, obs, info)
        return a

    def record(self, action: int, obs, info) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class Judged(Watched):
    """Wraps an agent: plays its moves and records what the solver thinks of each."""

    def __init__(self, agent, solver, record: Decisions):
        super().__init__(agent)
        self.solver, self.rec = solver, record

    def record(self, a: int, obs, info) -> None:
        from generala_agents.base import SeatView

        v = SeatView.from_info(info)
        vals = judged_values(self.solver, info)
        best = float(vals.max())
        self.rec.kind.append(HOLD if a < 32 else WRITE)
        self.rec.turn.append(int((v.sheet >= 0).sum()))
        self.rec.regret.append(best - float(vals[a]))
        self.rec.optimal.append(bool(vals[a] >= best - 1e-9))
        self.rec.entropy.append(self._entropy(obs, v.mask))

    def _entropy(self, obs, mask) -> float:
        net = getattr(self.agent, "net", None)
        if net is None:
            return float("nan")
        z = net.logits(np.asarray(obs, np.float32))[mask]
        z = z - z.max()
        p = np.exp(z) / np.exp(z).sum()
        return float(-(p * np.log(np.maximum(p, 1e-30))).sum())


def load_agent(spec: str, rules, trust_zip: bool = False):
    """An agent from a name, a checkpoint folder, or an SB3 ``.zip`` (``trust_zip`` only:
    loading one unpickles it); the zip's policy is read into a :class:`generala_agents.ppo.PolicyAgent`
    so that its entropy can be measured."""
    import generala_agents as agents
    from generala_agents.specs import is_zip, require_trusted_zip

    if is_zip(spec):
        require_trusted_zip(spec, agents.Trust.PROGRAM.with_zip(trust_zip))
        from sb3_contrib import MaskablePPO

        from generala_agents.policy_net import PolicyNet
        from generala_agents.ppo import PolicyAgent

        from .export_metadata import network_of

        model = MaskablePPO.load(spec, device="cpu")
        tensors = {k: t.detach().cpu().numpy() for k, t in model.policy.state_dict().items()}
        return PolicyAgent(PolicyNet(network_of(model), tensors, spec), rules, name=Path(spec).name)
    return agents.load(spec, rules=rules, trust_zip=trust_zip)


def diagnose(spec: str, rules="classic", games: int = 1000, seed: int = 0, trust_zip: bool = False) -> dict:
    """The report as a mapping (see the module docstring)."""
    import generala_agents as agents
    from generala_agents.solver import load_or_solve
    from generala_env.core.rules import load_rules

    rules = load_rules(rules)
    solver = load_or_solve(rules)[0]
    rec = Decisions()
    judged = Judged(load_agent(spec, rules, trust_zip), solver, rec)
    optimal = agents.load("optimal", rules=rules)
    seeds = [game_seed(seed, i) for i in range(games)]
    ours = [play_game([judged], rules, s) for s in seeds]
    theirs = [play_game([optimal], rules, s) for s in seeds]

    kind, turn = np.array(rec.kind), np.array(rec.turn)
    regret, best, ent = np.array(rec.regret), np.array(rec.optimal), np.array(rec.entropy)
    totals = np.array([r.totals[0] for r in ours], float)
    opt_totals = np.array([r.totals[0] for r in theirs], float)

    def part(sel):
        return {
            "decisions": int(sel.sum()),
            "optimal_share": float(best[sel].mean()) if sel.any() else float("nan"),
            "regret_per_game": float(regret[sel].sum() / games),
            "mean_entropy": float(np.nanmean(ent[sel])) if sel.any() and not np.isnan(ent[sel]).all() else None,
        }

    L = rules.num_lines
    crossed = {line: [float((np.array([r.sheets[0, l] for r in rs]) == 0).mean()) for rs in (ours, theirs)] for l, line in enumerate(rules.lines)}
    return {
        "agent": spec,
        "rules": rules.name,
        "games": games,
        "seed": seed,
        "mean_score": float(totals.mean()),
        "optimal_mean_same_dice": float(opt_totals.mean()),
        "optimal_expected": solver.expected_score,
        "share_of_optimal": float(totals.mean() / solver.expected_score),
        "regret_per_game": float(regret.sum() / games),
        "hold": part(kind == HOLD),
        "write": part(kind == WRITE),
        "regret_by_turn": {
            "hold": [float(regret[(kind == HOLD) & (turn == t)].sum() / games) for t in range(L)],
            "write": [float(regret[(kind == WRITE) & (turn == t)].sum() / games) for t in range(L)],
        },
        "crossed_out": {line: {"agent": a, "optimal": o} for line, (a, o) in crossed.items()},
    }


def markdown(d: dict) -> str:
    h, w = d["hold"], d["write"]

    def ent(x):
        return "–" if x is None else f"{x:.3f}"

    lines = [
        f"**{d['agent']}** on `{d['rules']}`, {d['games']} games (seed {d['seed']}): mean {d['mean_score']:.2f} = "
        f"{d['share_of_optimal']:.1%} of the optimal {d['optimal_expected']:.2f} (optimal on the same dice: {d['optimal_mean_same_dice']:.2f}); "
        f"regret {d['regret_per_game']:.2f} points a game",
        "",
        "| decisions | count | optimal action | regret / game | policy entropy |",
        "|---|---:|---:|---:|---:|",
        f"| holds | {h['decisions']:,} | {h['optimal_share']:.1%} | {h['regret_per_game']:.2f} | {ent(h['mean_entropy'])} |",
        f"| writes | {w['decisions']:,} | {w['optimal_share']:.1%} | {w['regret_per_game']:.2f} | {ent(w['mean_entropy'])} |",
        "",
        "| turn | " + " | ".join(str(t + 1) for t in range(len(d["regret_by_turn"]["hold"]))) + " |",
        "|---|" + "---:|" * len(d["regret_by_turn"]["hold"]),
        "| hold regret | " + " | ".join(f"{x:.2f}" for x in d["regret_by_turn"]["hold"]) + " |",
        "| write regret | " + " | ".join(f"{x:.2f}" for x in d["regret_by_turn"]["write"]) + " |",
        "",
        "| line | crossed out (agent) | crossed out (optimal, same dice) |",
        "|---|---:|---:|",
    ]
    lines += [f"| {line} | {v['agent']:.1%} | {v['optimal']:.1%} |" for line, v in d["crossed_out"].items()]
    return "\n".join(lines) + "\n"


def tensorboard_scalars(run: Path, tags=("train/explained_variance", "train/value_loss", "train/entropy_loss")) -> dict[str, list[tuple[int, float]]]:
    """The run's TensorBoard scalars ``tag -> [(step, value), ...]`` (empty where there are none)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out: dict[str, list[tuple[int, float]]] = {t: [] for t in tags}
    for folder in sorted(p for p in (run / "tb").glob("*") if p.is_dir()):
        ea = EventAccumulator(str(folder), size_guidance={"scalars": 0})
        ea.Reload()
        for t in tags:
            if t in ea.Tags()["scalars"]:
                out[t] += [(e.step, e.value) for e in ea.Scalars(t)]
    return {t: sorted(v) for t, v in out.items()}


def _near(series: list[tuple[int, float]], step: int) -> float | None:
    before = [v for s, v in series if s <= step]
    return before[-1] if before else None


def over_training(run: Path, rules="classic", games: int = 300, seed: int = 0, trust_zip: bool = False) -> list[dict]:
    """One row per saved ``checkpoints/step_N.zip`` of a run (SB3 pickles: ``trust_zip`` only):
    the diagnosis and the training scalars then."""
    import re

    from generala_agents import Trust
    from generala_agents.specs import require_trusted_zip

    steps = sorted((int(m.group(1)), p) for p in (run / "checkpoints").glob("step_*.zip") if (m := re.fullmatch(r"step_(\d+)\.zip", p.name)))
    if not steps:
        raise SystemExit(f"{run / 'checkpoints'} holds no step_N.zip")
    require_trusted_zip(steps[0][1], Trust.PROGRAM.with_zip(trust_zip))
    scalars = tensorboard_scalars(run)
    rows = []
    for step, path in steps:
        d = diagnose(str(path), rules, games, seed, trust_zip)
        rows.append({
            "step": step,
            "share_of_optimal": d["share_of_optimal"],
            "hold_optimal": d["hold"]["optimal_share"], "hold_regret": d["hold"]["regret_per_game"], "hold_entropy": d["hold"]["mean_entropy"],
            "write_optimal": d["write"]["optimal_share"], "write_regret": d["write"]["regret_per_game"], "write_entropy": d["write"]["mean_entropy"],
            "explained_variance": _near(scalars["train/explained_variance"], step),
            "value_loss": _near(scalars["train/value_loss"], step),
        })  # fmt: skip
    return rows


def curve_markdown(rows: list[dict]) -> str:
    def f(x, fmt):
        return "–" if x is None else format(x, fmt)

    lines = [
        "| step | % of optimal | holds optimal | hold regret | hold entropy | writes optimal | write regret | write entropy | explained variance | value loss |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['step']:,} | {r['share_of_optimal']:.1%} | {r['hold_optimal']:.1%} | {r['hold_regret']:.2f} | {f(r['hold_entropy'], '.3f')} | "
            f"{r['write_optimal']:.1%} | {r['write_regret']:.2f} | {f(r['write_entropy'], '.3f')} | {f(r['explained_variance'], '.3f')} | {f(r['value_loss'], '.4f')} |"
        )
    return "\n".join(lines) + "\n"


def _write_json(path, value) -> None:
    """``--json``: atomically, never through a link or over a file this program did not write."""
    path = Path(path)
    OutputFolder(path.parent, "python -m generala_training.diagnose").write(path.name, json.dumps(value, indent=2))


def main(argv=None) -> int:
    from generala_agents.specs import TRUST_ZIP_HELP

    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m generala_training.diagnose", description=__doc__.split("\n\n")[0])
    p.add_argument("agent", help="agent name, checkpoint folder, a run's SB3 .zip, or with --run a run folder")
    p.add_argument(
        "--run", action="store_true", help="AGENT is a run folder: diagnose each checkpoints/step_N.zip, with TensorBoard's explained variance and value loss"
    )
    p.add_argument("--rules", default="classic")
    p.add_argument("--games", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="also write the report as JSON to this file")
    p.add_argument("--trust-zip", action="store_true", help=TRUST_ZIP_HELP)
    args = p.parse_args(argv)
    if args.games < 1:
        p.error("argument --games: must be at least 1")
    if args.seed < 0:
        p.error("argument --seed: must be 0 or more")
    if args.run:
        rows = over_training(Path(args.agent), args.rules, args.games, args.seed, args.trust_zip)
        print(curve_markdown(rows), end="")
        if args.json:
            _write_json(args.json, rows)
        return 0
    d = diagnose(args.agent, args.rules, args.games, args.seed, args.trust_zip)
    print(markdown(d), end="")
    if args.json:
        _write_json(args.json, d)
    return 0


def run(argv=None) -> int:
    """:func:`main` as a program: a bad agent, file or rule set is one line on stderr (status 2)."""
    try:
        return main(argv)
    except (ValueError, OSError) as e:
        print(f"python -m generala_training.diagnose: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run())
