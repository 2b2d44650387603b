"""Agents: one interface, legal play for every preset and seat, the expected order of strength."""

import gymnasium as gym
import numpy as np
import pytest

import generala_agents as agents
import generala_env  # noqa: F401
from generala_agents.base import AgentError
from generala_env.envs.env import opponent_moves
from generala_training.harness import game_seed, play_game, play_many

BASELINES = ["random", "greedy", "turn-optimal", "rules-of-thumb", "optimal"]


@pytest.mark.parametrize(
    "rules",
    [
        "classic",
        "double",
        "sixty",
        {
            "locked_holds": True,
            "lines": ["ones", "fives", "sixes", "straight", "full_house", "four_of_a_kind", "generala", "double_generala", "three_of_a_kind"],
        },
    ],
)
@pytest.mark.parametrize("players", [1, 2])
def test_every_agent_plays_complete_legal_games(rules, players):
    for name in BASELINES:
        env = gym.make("Generala-v0", rules=rules, num_players=players, opponents=name if players > 1 else None, illegal_action="raise")
        me = agents.load(name, rules=rules, seed=1)
        for g in range(2):
            obs, info = env.reset(seed=g)
            done = False
            writes = 0
            while not done:
                a = me.act(obs, info)
                assert info["action_mask"][a] == 1
                obs, r, done, _, info = env.step(a)
                writes += a >= 32
            assert info["served_generala_win"] or writes == env.unwrapped.rules.num_lines


def test_agents_from_any_seat_of_a_three_player_game():
    lineup = [agents.load(n, rules="double") for n in ("optimal", "rules-of-thumb", "greedy")]
    rec = play_game(lineup, "double", seed=3)
    assert rec.sheets.shape == (3, 11)
    assert rec.served_generala_win or (rec.sheets >= 0).all()


def test_registry_lists_and_refuses_unknown_names():
    assert set(BASELINES) <= set(agents.names())
    with pytest.raises(AgentError, match="unknown agent 'nobody'.*known agents"):
        agents.load("nobody")


def test_env_accepts_agent_names_as_opponents():
    env = gym.make("Generala-v0", num_players=3, opponents=["greedy", "optimal"])
    obs, info = env.reset(seed=0)
    obs, r, *_, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
    assert {s for s, *_ in opponent_moves(info)} == {1, 2}  # the agent wrote: both opponents played


def test_greedy_takes_the_best_line_and_crosses_out_the_cheapest():
    g = agents.load("greedy")
    info = {"dice": np.array([2, 3, 4, 5, 6]), "rolls_left": 2, "locked": [], "seat": 0, "sheets": np.full((1, 10), -1), "action_mask": np.ones(42, np.int8)}
    info["action_mask"][31] = 0
    assert g.act(None, info) == 32 + 6  # a made straight is written at once (25 served)
    info = {**info, "dice": np.array([1, 2, 2, 4, 6]), "rolls_left": 0, "action_mask": np.r_[np.zeros(32, np.int8), np.ones(10, np.int8)]}
    info["sheets"] = np.array([[-1, 4, 9, 12, 15, -1, 20, 30, 40, 50]])
    info["action_mask"][32 + np.array([1, 2, 3, 4, 6, 7, 8, 9])] = 0
    assert g.act(None, info) == 32 + 5  # sixes (6) beats ones (1)
    # no combination scores, a roll left: hold every die of the most common face, the higher on ties
    info = {**info, "dice": np.array([1, 3, 3, 5, 5]), "rolls_left": 1, "sheets": np.full((1, 10), -1), "action_mask": np.ones(42, np.int8)}
    info["action_mask"][31] = 0
    assert g.act(None, info) == 0b11000  # the two fives (dice 3 and 4 of the sorted roll)
    # nothing scores on the open lines, no roll left: the zero goes on the cheapest line
    info = {**info, "dice": np.array([1, 2, 3, 4, 6]), "rolls_left": 0, "sheets": np.array([[1, 2, 3, 4, 0, 6, 20, -1, -1, -1]])}
    info["action_mask"] = np.r_[np.zeros(32, np.int8), (info["sheets"][0] == -1).astype(np.int8)]
    assert g.act(None, info) == 32 + 7  # full house (at most 35) before four of a kind (45) and generala (50)


def test_turn_optimal_keeps_four_in_a_row_for_an_open_straight():
    t = agents.load("turn-optimal")
    sheets = np.array([[0, 0, 0, 0, 0, 0, -1, 0, 0, 0]])  # only the straight is open
    mask = np.r_[np.ones(31, np.int8), [0], np.zeros(10, np.int8)]
    mask[32 + 6] = 1
    info = {"dice": np.array([2, 3, 4, 5, 5]), "rolls_left": 2, "locked": [], "seat": 0, "sheets": sheets, "action_mask": mask}
    a = t.act(None, info)
    held = sorted(int(d) for i, d in enumerate(info["dice"]) if a >> i & 1)
    assert held == [2, 3, 4, 5]


def test_strength_order_on_shared_dice():
    """optimal > turn-optimal and rules-of-thumb > greedy > random, on 2000 seeded games each."""
    seeds = [game_seed(2024, i) for i in range(2000)]
    totals = {}
    for name in BASELINES:
        recs = play_many([(name,)] * len(seeds), seeds, "classic", workers=2, progress=False)
        totals[name] = np.array([r.totals[0] for r in recs], dtype=float)

    def paired_margin(a, b):  # mean difference and its standard error on the same dice
        d = totals[a] - totals[b]
        return d.mean(), d.std(ddof=1) / np.sqrt(len(d))

    for a, b in [("optimal", "turn-optimal"), ("optimal", "rules-of-thumb"), ("turn-optimal", "greedy"), ("rules-of-thumb", "greedy"), ("greedy", "random")]:
        m, se = paired_margin(a, b)
        assert m > 4 * se and m > 2.0, (a, b, m, se)


def test_random_agent_is_seeded_per_game():
    a, b = agents.load("random", seed=7), agents.load("random", seed=8)
    r1 = play_game([a], "classic", seed=11)
    r2 = play_game([b], "classic", seed=11)  # reset(seed=...) per game makes the agent's own seed irrelevant
    assert np.array_equal(r1.sheets, r2.sheets)
