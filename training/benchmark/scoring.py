"""Scoring any policy on the suite's evaluation games, as a built-in run's final evaluation is scored.

    from generala_training.benchmark import score_policy
    score_policy("greedy", task="classic")["normalized_score"]          # an agent spec
    score_policy(my_act_batch, task="classic")                          # act_batch(observations, masks) -> actions

The games are the suite's own: game ``i`` on the shared dice of ``game_seed(evaluation.seed,
i)``, ``evaluation.final_games`` of them, from every seat when the task has opponents (then
scored as the share of the points: a win 1, a win shared by k players 1/k). An illegal action
ends its game where it stands (a loss with opponents), as in the built-in runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generala_env.core.checks import is_whole

from .suite import BenchmarkError, load_suite


def _policy(policy: Any, rules, trust_zip: bool):
    """``("batch", act_batch)`` or ``("agent", agent)`` for what ``score_policy`` was given."""
    import generala_agents as agents
    from generala_agents.base import AgentError

    if isinstance(policy, str) or hasattr(policy, "__fspath__"):
        try:
            policy = agents.load(policy, rules=rules, trust_zip=trust_zip)
        except AgentError as e:
            raise BenchmarkError(str(e)) from None
    batch = getattr(policy, "act_batch", None)
    if callable(batch):
        return "batch", batch
    if callable(getattr(policy, "act", None)):
        return "agent", policy
    if callable(policy):
        return "batch", policy
    raise BenchmarkError(
        f"score_policy takes an agent spec, an agent (act(observation, info)) or act_batch(observations, masks) -> actions; got {type(policy).__name__}"
    )


def score_policy(
    policy: Any,
    task: str = "classic",
    *,
    games: int | None = None,
    config_dir: str | Path | None = None,
    trust_zip: bool = False,
) -> dict:
    """The normalised score of ``policy`` on ``task``'s evaluation games.

    ``policy``: an agent spec (see :mod:`generala_agents.specs`; an SB3 ``.zip`` with ``trust_zip``),
    an agent object, or a batched callable ``act_batch(observations, action_masks) ->
    actions`` (NumPy in and out; the suite's observations, one row per unfinished game). An
    object with an ``act_batch`` method is played through it, else through ``act``.
    ``games`` defaults to the suite's ``final_games``: the games whose score is a run's score.

    Returns ``normalized_score`` (one player: mean total / exact optimum; with opponents:
    the share of the points, a win 1 and a win shared by k players 1/k, beside ``fair_share``,
    1/players), ``score``, ``mean_total``, ``illegal_stops`` (the share of games an illegal
    action ended), the task, the suite's name and version, the games and the evaluation seed.
    """
    from .run import task_evaluator

    suite = load_suite(Path(config_dir) if config_dir else None)
    if task not in suite.tasks:
        raise BenchmarkError(f"unknown task id {task}; known: {', '.join(suite.tasks)}")
    n = suite.evaluation.final_games if games is None else games
    if not is_whole(n) or n < 1:
        raise BenchmarkError(f"games must be a whole number of at least 1, got {n!r}")
    the_task = suite.tasks[task]
    evaluator = task_evaluator(the_task, suite.evaluation.seed, n)
    kind, how = _policy(policy, evaluator.rules, trust_zip)
    result = evaluator(how) if kind == "batch" else evaluator.play_agent(how)
    if the_task.fair_share is not None:
        result["fair_share"] = the_task.fair_share
    return {
        "task": task,
        "suite": {"name": suite.name, "version": suite.version},
        "games": n,
        "seed": suite.evaluation.seed,
        **result,
    }


__all__ = ["score_policy"]
