"""The PettingZoo AEC environment: PettingZoo's own checks, scripted games, rewards."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from helpers import ScriptedDice
from pettingzoo.test import api_test, seed_test  # noqa: E402
from pettingzoo.utils.conversions import aec_to_parallel  # noqa: E402

from generala_env import Encoder, IllegalActionError, load_rules, observation_layout  # noqa: E402
from generala_env.envs.multiagent import env, raw_env  # noqa: E402

# Dict observations always draw these two remarks from api_test (tictactoe's too).
DICT_OBS_REMARKS = ("Observation space for each agent probably should be", "Observation is not a NumPy array")

LINES = load_rules("classic").lines
W = {line: 32 + l for l, line in enumerate(LINES)}  # write actions of the classic sheet


class ConstantDice(ScriptedDice):
    """Every die drawn shows the next face of a fixed cycle."""

    def __init__(self, cycle):
        self.cycle, self.i = list(cycle), 0

    def integers(self, low, high, size=None, dtype=np.int64):
        n = 1 if size is None else int(size)
        out = [self.cycle[(self.i + k) % len(self.cycle)] for k in range(n)]
        self.i += n
        return np.array(out, dtype=dtype)


def scripted(num_players=2, reward="score", rules="classic", dice=()):
    e = raw_env(rules=rules, num_players=num_players, reward=reward)
    e.np_random = ScriptedDice(*dice)
    e.reset()
    return e


def hold(dice, faces) -> int:
    """The hold mask keeping ``faces`` out of the sorted ``dice``."""
    want, mask = list(faces), 0
    for i, d in enumerate(dice):
        if d in want:
            want.remove(d)
            mask |= 1 << i
    assert not want
    return mask


def finish(e):
    """Step every terminated agent with None; return the reward each saw in last()."""
    seen = {}
    for agent in e.agent_iter():
        _, reward, term, trunc, _ = e.last()
        assert term or trunc
        seen[agent] = reward
        e.step(None)
    assert e.agents == []
    return seen


# -- PettingZoo's own checks ---------------------------------------------------------------
@pytest.mark.parametrize("rules", ["classic", "double"])
@pytest.mark.parametrize("num_players", [2, 3])
def test_pettingzoo_api_and_seed(rules, num_players):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for remark in DICT_OBS_REMARKS:
            warnings.filterwarnings("ignore", message=remark)
        api_test(env(rules=rules, num_players=num_players), num_cycles=1000)
        api_test(raw_env(rules=rules, num_players=num_players), num_cycles=300)
        seed_test(lambda: env(rules=rules, num_players=num_players), num_cycles=500)


def test_no_parallel_version():
    # a turn is 1-3 actions by the same agent, so agents do not act once per cycle
    assert raw_env.metadata["is_parallelizable"] is False
    with pytest.raises(AssertionError, match="is_parallelizable"):
        aec_to_parallel(raw_env())


def test_importing_the_package_does_not_import_pettingzoo():
    code = "import sys, generala_env; assert 'pettingzoo' not in sys.modules, 'pettingzoo imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- a scripted game -----------------------------------------------------------------------
def test_scripted_turns_from_each_seat():
    e = scripted(
        dice=[
            [4, 4, 4, 2, 6],  # P0 first roll
            [4, 1],  # P0 rerolls the 2 and the 6
            [5, 5, 5, 3, 3],  # P1 first roll: a served full house
            [1, 2, 3, 4, 5],  # P0's second turn
        ]
    )
    L, lay = len(LINES), observation_layout(load_rules("classic"), 2)
    p0, p1 = e.possible_agents
    assert e.agent_selection == p0
    obs0, obs1 = e.observe(p0), e.observe(p1)
    assert np.array_equal(e.infos[p0]["dice"], [2, 4, 4, 4, 6])
    assert obs0["action_mask"].dtype == np.int8 and obs0["action_mask"].sum() == 31 + L  # 31 holds, every line
    assert not obs1["action_mask"].any()  # not P1's move
    assert obs0["observation"][lay["dice_counts"]][3] == pytest.approx(3 / 5)  # three fours, both see them
    assert obs1["observation"][lay["dice_counts"]][3] == pytest.approx(3 / 5)
    # what the dice would take now, from the mover's sheet: fours 12 (of max 20 on fours)
    assert obs0["observation"][lay["points_now"]][W["fours"] - 32] == pytest.approx(12 / 20)

    e.step(hold([2, 4, 4, 4, 6], [4, 4, 4]))
    assert e.agent_selection == p0 and e.rewards == {p0: 0.0, p1: 0.0}
    assert np.array_equal(e.infos[p0]["dice"], [1, 4, 4, 4, 4]) and e.infos[p0]["rolls_left"] == 1
    assert e.infos[p1]["last_move"].tolist() == [0, 14, 0]

    e.step(W["four_of_a_kind"])  # not served: 40
    assert e.rewards == {p0: 40.0, p1: 0.0}
    assert e.agent_selection == p1
    assert np.array_equal(e.infos[p1]["dice"], [3, 3, 5, 5, 5]) and e.infos[p1]["rolls_left"] == 2

    e.step(W["full_house"])  # served: 30 + 5
    assert e.rewards == {p0: 0.0, p1: 35.0}
    assert e.agent_selection == p0
    _, r0, *_ = e.last()
    assert r0 == 40.0  # P0 sees its own write when it is next to move

    # each seat sees its own sheet first, the other as opponent 1
    enc = Encoder(load_rules("classic"), 2)
    for seat, agent in enumerate(e.possible_agents):
        assert np.array_equal(e.observe(agent)["observation"], enc.encode(e.game, seat))
    o0, o1 = e.observe(p0)["observation"], e.observe(p1)["observation"]
    fk, fh = W["four_of_a_kind"] - 32, W["full_house"] - 32
    assert o0[lay["own_points"]][fk] == pytest.approx(40 / 45) and o0[lay["own_open"]][fk] == 0
    assert o0[lay["opponent_1_points"]][fh] == pytest.approx(35 / 35) and o0[lay["opponent_1_open"]][fh] == 0
    assert o1[lay["own_points"]][fh] == pytest.approx(1.0) and o1[lay["opponent_1_points"]][fk] == pytest.approx(40 / 45)
    assert o0[lay["score_lead"]][0] > 0 > o1[lay["score_lead"]][0]
    assert e.infos[p1]["sheets"][0, fk] == 40 and list(e.infos[p0]["totals"]) == [40, 35]


@pytest.mark.parametrize("rules, n", [("classic", 2), ("double", 3), ("sixty", 4), ("classic", 5), ("double", 6)])
def test_score_return_is_final_total_and_masks_never_empty(rules, n):
    e = env(rules=rules, num_players=n, reward="score")
    e.reset(seed=n)
    returns = dict.fromkeys(e.possible_agents, 0.0)
    rng = np.random.default_rng(n)
    for agent in e.agent_iter():
        obs, reward, term, trunc, info = e.last()
        returns[agent] += reward
        if term or trunc:
            e.step(None)
            continue
        mask = obs["action_mask"]
        assert mask.any(), f"{rules} {n}p: empty mask for the acting agent"
        assert "action_mask" not in info  # one place for the mask: the observation
        assert np.array_equal(mask, e.unwrapped.seat_info(agent)["action_mask"])
        for other in e.agents:
            if other != agent:
                assert not e.observe(other)["action_mask"].any()
        e.step(int(rng.choice(np.flatnonzero(mask))))
    totals = e.unwrapped.game.totals()
    assert [returns[a] for a in e.possible_agents] == [float(t) for t in totals]


# -- rewards at the end --------------------------------------------------------------------
@pytest.mark.parametrize("num_players", [2, 3])
def test_served_generala_ends_the_game_at_once(num_players):
    e = scripted(num_players, reward="win", dice=[[2, 3, 4, 5, 6], [6, 6, 6, 6, 6], [1, 1, 1, 1, 1]])
    p0, p1 = e.possible_agents[:2]
    e.step(W["straight"])  # P0: served straight, 25
    assert e.rewards[p0] == 0.0  # win mode: nothing until the end
    obs = e.observe(p1)
    assert e.infos[p1]["served_generala_pending"]
    assert np.flatnonzero(obs["action_mask"]).tolist() == [W["generala"]]  # the only move
    e.step(W["generala"])
    assert all(e.terminations.values()) and not any(e.truncations.values())
    info = e.infos[p0]
    assert np.flatnonzero(info["winners"]).tolist() == [1] and info["winner"] == 1 and info["served_generala_win"]
    assert not e.observe(e.agent_selection)["action_mask"].any()
    expected = {a: -1.0 for a in e.possible_agents}
    expected[p1] = 1.0
    assert e.rewards == expected
    assert finish(e) == expected  # every seat sees its reward in last()
    assert list(e.game.totals()[:2]) == [25, 50]


def test_served_generala_in_score_mode_gives_its_points():
    e = scripted(2, reward="score", dice=[[3, 3, 3, 3, 3], [1, 1, 1, 1, 1]])
    e.step(W["generala"])
    assert all(e.terminations.values())
    assert e.rewards == {"player_0": 50.0, "player_1": 0.0}
    assert finish(e) == {"player_0": 50.0, "player_1": 0.0}


def test_shared_win_is_zero_and_a_loss_minus_one():
    def play(cycle):
        e = raw_env(num_players=2, reward="win")
        e.np_random = ConstantDice(cycle)
        e.reset()
        seen = {}
        for agent in e.agent_iter():
            obs, reward, term, trunc, _ = e.last()
            if term or trunc:
                seen[agent] = reward
                e.step(None)
                continue
            e.step(32 + int(np.flatnonzero(obs["action_mask"][32:])[0]))  # first open line, first roll
        return e, seen

    # both seats always roll 1 2 3 4 6 and write the same lines: a tie
    e, seen = play([1, 2, 3, 4, 6])
    assert e.game.winners() == (0, 1) and seen == {"player_0": 0.0, "player_1": 0.0}
    assert e.infos == {} and e.agents == []
    # rolls of five dice alternate between the two halves of the cycle: P0 always 6 6 6 5 5
    e, seen = play([6, 6, 6, 5, 5, 1, 1, 2, 2, 3])
    assert list(e.game.totals()) == [10 + 18 + 35, 2 + 4 + 3]  # fives, sixes, served full house
    assert seen == {"player_0": 1.0, "player_1": -1.0}


def test_win_rewards_at_the_end_of_a_full_game():
    for seed in range(3):
        e = env(num_players=3, reward="win")
        e.reset(seed=seed)
        seen = {}
        for agent in e.agent_iter():
            obs, reward, term, trunc, info = e.last()
            if term or trunc:
                seen[agent] = reward
                winners = np.flatnonzero(info["winners"]).tolist()
                e.step(None)
                continue
            assert reward == 0.0
            e.step(int(np.flatnonzero(obs["action_mask"])[-1]))  # always write the last open line
        for seat, agent in enumerate(e.possible_agents):
            want = (1.0 if len(winners) == 1 else 0.0) if seat in winners else -1.0
            assert seen[agent] == want


# -- illegal actions, arguments, rendering -------------------------------------------------
def test_illegal_action_raw_raises_wrapped_terminates():
    e = scripted(dice=[[1, 2, 3, 4, 5]])
    with pytest.raises(IllegalActionError, match="holding all five"):
        e.step(31)
    w = env(num_players=2)
    w.reset(seed=1)
    w.step(31)  # PettingZoo logs "Illegal move made"
    assert all(w.terminations.values())
    assert finish(w) == {"player_0": -1.0, "player_1": 0.0}  # the offender moved first


@pytest.mark.parametrize(
    "kwargs, match",
    [({"num_players": 1}, "Generala-v0"), ({"num_players": 7}, "2 to 6"), ({"reward": "points"}, "score, win")],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        raw_env(**kwargs)


def test_render_and_pickle(capsys):
    e = raw_env(num_players=3, render_mode="ansi")
    e.reset(seed=0)
    text = e.render()
    assert "Player 0 to move" in text and "P2" in text
    h = raw_env(num_players=2, render_mode="human")
    h.reset(seed=0)
    h.step(32)
    assert "Player 1 to move" in capsys.readouterr().out
    clone = pickle.loads(pickle.dumps(raw_env(rules="double", num_players=4, reward="win")))
    assert clone.num_players == 4 and clone.reward_mode == "win" and clone.rules.name == "double"


def play_trace(e, seed):
    """A whole game from ``reset(seed=seed)``, actions a fixed function of the masks: each move's agent, observation bytes and reward."""
    e.reset(seed=seed)
    trace = []
    for agent in e.agent_iter():
        obs, reward, term, trunc, info = e.last()
        trace.append((agent, obs["observation"].tobytes(), reward))
        e.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[len(trace) % int(obs["action_mask"].sum())]))
    return trace


def test_same_seed_same_game_bit_for_bit():
    def run(seed):
        return play_trace(env(rules="double", num_players=4), seed)

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_reseeding_replays_the_game_whatever_dice_were_left_over():
    """Dice are drawn in blocks; reset(seed=...) must start from a fresh block."""
    e = env(rules="classic", num_players=2)
    first = play_trace(e, 5)
    e.reset()  # part of a block used by another game
    for _ in range(3):
        e.step(int(np.flatnonzero(e.last()[0]["action_mask"])[0]))
    assert play_trace(e, 5) == first


def test_step_after_the_game_has_ended_is_a_clear_error():
    import numpy as np

    from generala_env.envs.multiagent import raw_env

    e = raw_env(num_players=2)
    e.reset(seed=0)
    while e.agents:
        obs, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(RuntimeError, match="after the game has ended"):
        e.step(0)
