"""Playing seeded games between agents on shared dice (common random numbers).

Each game seed fixes a table of dice: for every seat, turn and roll, five fresh faces.
A turn's first roll is the five faces of roll 0; a reroll of ``n`` dice takes the first
``n`` faces of the next roll. So every agent in a solitaire evaluation meets the same
first rolls and the same fresh dice, and in a tournament the seats can be swapped on the
same dice ("duplicate" play). Results depend only on the seeds, never on how the games
were split between worker processes.
"""

from __future__ import annotations

import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from generala_env.core.dice import DICE, HOLD_KEEP, KEEP_SIZE, NUM_MASKS
from generala_env.core.encoding import Encoder
from generala_env.core.game import OPEN, Game
from generala_env.core.rules import load_rules
from generala_env.envs.env import make_info


class SharedDice:
    """The dice of one seeded game: ``table[seat, turn, roll]`` holds five faces."""

    def __init__(self, seed: int, num_players: int, num_lines: int):
        rng = np.random.default_rng([0x6E6E, int(seed)])
        self.table = rng.integers(1, 7, size=(num_players, num_lines, 3, DICE), dtype=np.int8)

    def faces_for(self, game: Game, action: int) -> np.ndarray:
        """The faces ``game.apply(action, faces)`` needs for this action."""
        seat = game.player
        if action < NUM_MASKS:
            n = DICE - int(KEEP_SIZE[HOLD_KEEP[game.roll, action]])
            return self.table[seat, game.turn, 3 - game.rolls_left, :n]
        nxt = (seat + 1) % game.num_players
        turn = int((game.sheets[nxt] != OPEN).sum()) + (1 if nxt == seat else 0)
        return self.table[nxt, min(turn, game.num_lines - 1), 0]


class _Faces:
    """A stand-in generator that hands out given faces (to start a game on shared dice)."""

    def __init__(self, faces):
        self.faces = faces

    def integers(self, low, high, size=None, dtype=None):
        return np.asarray(self.faces[:size], dtype=dtype)


def start_game(rules, num_players: int, seed: int) -> tuple[Game, SharedDice]:
    """A game at its first roll on the shared dice of ``seed``, and those dice."""
    game = Game(rules, num_players)
    dice = SharedDice(seed, num_players, rules.num_lines)
    game.reset(_Faces(dice.table[0, 0, 0]))
    return game, dice


@dataclass
class GameRecord:
    seed: int
    seats: tuple[str, ...]  # agent name in each seat
    sheets: np.ndarray  # final sheets, players x lines
    totals: np.ndarray
    winners: tuple[int, ...]
    served_generala_win: bool
    served_bonus_writes: np.ndarray  # per seat: served straights/full houses/fours written
    decisions: np.ndarray = field(default_factory=lambda: np.zeros(0))


def game_seed(base_seed: int, index: int) -> int:
    return int(np.random.SeedSequence([int(base_seed), int(index)]).generate_state(1)[0])


def play_game(agents, rules, seed: int, names=None) -> GameRecord:
    """One game, agents by seat (objects with ``act``), on the shared dice of ``seed``."""
    rules = load_rules(rules)
    P = len(agents)
    enc = Encoder(rules, P)
    game, dice = start_game(rules, P, seed)
    for seat, agent in enumerate(agents):
        if hasattr(agent, "reset"):
            agent.reset(seed=game_seed(seed, seat))
    served = np.zeros(P, dtype=np.int64)
    decisions = np.zeros(P, dtype=np.int64)
    while not game.over:
        seat = game.player
        info = make_info(game, seat)
        a = agents[seat].act(enc.encode(game, seat), info)
        why = game.why_illegal(a)
        if why is not None:
            raise RuntimeError(f"agent {getattr(agents[seat], 'name', seat)} in seat {seat} played illegal action {a!r}: {why}")
        out = game.apply(int(a), dice.faces_for(game, int(a)))
        decisions[seat] += 1
        if out.bonus:
            served[seat] += 1
    return GameRecord(
        seed=seed,
        seats=tuple(names or [getattr(a, "name", str(a)) for a in agents]),
        sheets=game.sheets.copy(),
        totals=game.totals(),
        winners=game.winners(),
        served_generala_win=game.served_generala_winner is not None,
        served_bonus_writes=served,
        decisions=decisions,
    )


# -- running many games, on every core ----------------------------------------------
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the games; ``played`` of them had come back.

    A ``KeyboardInterrupt``, so that no ``except Exception`` on the way swallows it.
    """

    def __init__(self, signum: int, played: int = 0):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum, self.played = signum, played

    @property
    def exit_status(self) -> int:
        """128 + the signal's number, as a shell reports a process that signal ended."""
        return 128 + self.signum


@contextmanager
def signals_interrupt():
    """Within, the first SIGINT or SIGTERM raises ``Interrupted``; later ones are ignored.

    A signal this process was started ignoring (a background job's SIGINT) stays ignored.
    """

    def raise_interrupted(signum, frame):
        for s in STOP_SIGNALS:
            if signal.getsignal(s) is raise_interrupted:
                signal.signal(s, signal.SIG_IGN)  # let the first one's cleanup finish
        raise Interrupted(signum)

    old = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s, h in old.items():
        if h is not signal.SIG_IGN:
            signal.signal(s, raise_interrupted)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, signal.SIG_DFL if h is None else h)


_WORKER_AGENTS: dict = {}
# what each lineup name stands for in this call of play_many (a spec or an agent object);
# forked workers inherit it, so agents defined in the caller's process play there too
_TABLE: dict = {}


def _agent(name: str, rules, trust_zip: bool = False):
    import generala_agents as agents_pkg

    entry = _TABLE.get(name, name)
    key = (name, entry if isinstance(entry, str) else id(entry), load_rules(rules).fingerprint())
    if key not in _WORKER_AGENTS:
        agent = agents_pkg.load(entry, rules=rules, trust_zip=trust_zip)
        _WORKER_AGENTS[key] = agent
        if _IN_WORKER and "torch" in sys.modules:  # one thread per worker: the workers fill the cores
            sys.modules["torch"].set_num_threads(1)
    return _WORKER_AGENTS[key]


_IN_WORKER = False


def worker_init() -> None:
    """Mark this process a worker: it ignores SIGINT (Ctrl-C reaches the whole process
    group, and the parent stops its workers) and SIGTERM ends it at once."""
    global _IN_WORKER
    _IN_WORKER = True
    if "torch" in sys.modules:  # before any torch op: a forked child must not start OpenMP's pool
        sys.modules["torch"].set_num_threads(1)
    _end_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # held while play_many started it


def _end_with_parent() -> None:
    """On Linux, have the kernel send this worker SIGTERM when its parent dies (even by kill -9),
    so that no worker outlives the program that started it; elsewhere a no-op."""
    import multiprocessing as mp

    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = mp.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # the parent died before prctl
        os._exit(1)


def _run_chunk(job):
    rules, lineups, seeds, trust_zip = job
    out = []
    for lineup, seed in zip(lineups, seeds, strict=True):
        out.append(play_game([_agent(n, rules, trust_zip) for n in lineup], rules, seed, names=lineup))
    return out


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel the chunks not started and end the workers now, not waiting for their games."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # no public handle before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(5)


def play_many(
    lineups: list[tuple[str, ...]],
    seeds: list[int],
    rules,
    workers: int | None = None,
    progress: bool = True,
    desc: str = "games",
    agents: dict | None = None,
    trust_zip: bool = False,
) -> list[GameRecord]:
    """Play ``lineups[i]`` (agent names by seat) on the dice of ``seeds[i]``, in order.

    ``agents`` maps a name of the lineups to what it stands for: an agent spec or an agent
    object (default: each name is its own spec). ``trust_zip`` lets SB3 ``.zip`` specs load.
    ``workers``: processes to use (default: every core); results are identical for any
    number of workers. The workers are forked where the system can fork, so agents defined
    in the caller's process (a notebook, ``python -c``) play in them; elsewhere such agents
    play in this process, said once. On ``Interrupted`` (see ``signals_interrupt``) or any
    other error the workers are stopped before it propagates; ``Interrupted.played`` counts
    the games whose results had come back.
    """
    import multiprocessing as mp

    from generala_agents.specs import portable

    rules = load_rules(rules)
    n = len(lineups)
    workers = max(1, min(workers or os.cpu_count() or 1, n))
    table = dict(agents or {})
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    if workers > 1 and ctx.get_start_method() != "fork" and not all(portable(table.get(x, x)) for lineup in lineups for x in lineup):
        _say_once("agents defined in this process cannot reach spawned workers: their games are played here, in one process (the results are the same)")
        workers = 1
    chunk = max(1, min(50, n // (workers * 4) or 1))
    jobs = [(rules, lineups[i : i + chunk], seeds[i : i + chunk], trust_zip) for i in range(0, n, chunk)]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n, desc=desc, unit="game", leave=False, dynamic_ncols=True)
    results: list[GameRecord] = []
    global _TABLE
    saved, _TABLE = _TABLE, table
    try:
        if workers == 1:
            for job in jobs:
                results.extend(_run_chunk(job))
                if bar:
                    bar.update(len(job[1]))
        else:
            _play_in_pool(jobs, workers, results, bar, ctx)
    except Interrupted as e:
        e.played = len(results)
        raise
    finally:
        _TABLE = saved
        if bar:
            bar.close()
    return results


_SAID: set = set()


def _say_once(text: str) -> None:
    if text not in _SAID:
        _SAID.add(text)
        print(f"note: {text}", file=sys.stderr)


def _play_in_pool(jobs, workers: int, results: list, bar, ctx) -> None:
    """Play ``jobs`` in worker processes, adding their games to ``results`` in order. Where the
    workers fork, the first job is played here first: the loops it compiles and the tables it
    loads are then made once, and every worker has them."""
    if ctx.get_start_method() == "fork":
        results.extend(_run_chunk(jobs[0]))
        if bar:
            bar.update(len(jobs[0][1]))
        jobs = jobs[1:]
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=worker_init)
    try:
        # the workers start (on submit) with SIGINT and SIGTERM held until worker_init
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            futures = [pool.submit(_run_chunk, job) for job in jobs]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        for f in futures:
            part = f.result()
            results.extend(part)
            if bar:
                bar.update(len(part))
    except BaseException:
        stop_workers(pool)
        raise
    pool.shutdown()


def play_lockstep(act_batch, rules, seeds: list[int]) -> list[GameRecord]:
    """One-player games on the dice of ``seeds``, all advanced together.

    ``act_batch(observations (n, obs), masks (n, A)) -> actions (n,)`` decides for every
    unfinished game at once (one batched forward pass of a policy network).
    """
    rules = load_rules(rules)
    enc = Encoder(rules, 1)
    games, tables = [], []
    for s in seeds:
        g, d = start_game(rules, 1, s)
        games.append(g)
        tables.append(d)
    served = np.zeros(len(seeds), dtype=np.int64)
    active = list(range(len(games)))
    while active:
        obs = np.stack([enc.encode(games[i], 0) for i in active])
        masks = np.stack([games[i].legal_mask() for i in active])
        actions = act_batch(obs, masks)
        still = []
        for i, a in zip(active, actions, strict=True):
            g = games[i]
            out = g.apply(int(a), tables[i].faces_for(g, int(a)))
            served[i] += out.bonus > 0
            if not g.over:
                still.append(i)
        active = still
    return [
        GameRecord(
            seed=s,
            seats=("policy",),
            sheets=g.sheets.copy(),
            totals=g.totals(),
            winners=g.winners(),
            served_generala_win=False,
            served_bonus_writes=served[i : i + 1],
        )
        for i, (s, g) in enumerate(zip(seeds, games, strict=True))
    ]
