"""`generala play`: moves typed as people say them, whole games driven through stdin."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers import ScriptedDice
from hypothesis import given, settings
from hypothesis import strategies as st

import generala_agents as agents
from generala_env import Encoder, Game, load_rules
from generala_env.core.dice import HOLD_KEEP, KEEPS_LIST, NUM_MASKS
from generala_env.envs.env import make_info
from generala_env.rendering.render import line_label
from generala_play import terminal as play
from generala_play.terminal import MoveError, parse_move


def game_with(dice, rules="classic", players=1) -> Game:
    g = Game(rules, players)
    g.reset(ScriptedDice(dice))
    return g


def kept(g: Game, move) -> list[int]:
    assert move.action < NUM_MASKS
    return list(KEEPS_LIST[HOLD_KEEP[g.roll, move.action]])


def run(monkeypatch, capsys, argv, stdin, dice=None):
    """main(argv) with ``stdin`` (text or a file-like) and optional scripted dice; (rc, out, err, table)."""
    made = []
    init = play.Table.__init__

    def spy(self, *a, **k):
        init(self, *a, **k)
        if dice is not None:
            self.rng = ScriptedDice(*dice)
        made.append(self)

    monkeypatch.setattr(play.Table, "__init__", spy)
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin) if isinstance(stdin, str) else stdin)
    rc = play.main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err, (made[0] if made else None)


# -- reading moves -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, keep",
    [
        ("keep 4 4 4", [4, 4, 4]),
        ("hold 4 4 4", [4, 4, 4]),
        ("hold 444", [4, 4, 4]),
        ("Keep 4, 4 and 4", [4, 4, 4]),
        ("keep the fours", [4, 4, 4]),
        ("keep 4s", [4, 4, 4]),
        ("keep two fours", [4, 4]),
        ("keep one 6", [6]),
        ("k 2 6", [2, 6]),
        ("4 4", [4, 4]),
        ("keep all but 2", [4, 4, 4, 6]),
        ("keep 4 4 4 and roll the rest", [4, 4, 4]),
        ("keep nothing", []),
        ("roll all", []),
        ("reroll", []),
        ("roll again", []),
        ("re-roll 2 6", [4, 4, 4]),
        ("reroll the 2", [4, 4, 4, 6]),
    ],
)
def test_keep_phrases(text, keep):
    g = game_with([4, 4, 4, 2, 6])  # sorted: 2 4 4 4 6
    assert kept(g, parse_move(text, g)) == keep


@pytest.mark.parametrize(
    "text, line",
    [
        ("write fours", "fours"),
        ("fours", "fours"),
        ("4s", "fours"),
        ("write 4", "fours"),
        ("Write Fours!", "fours"),
        ("score sixes", "sixes"),
        ("put it on the sixes", "sixes"),
        ("cross out ones", "ones"),
        ("scratch the generala", "generala"),
        ("x straight", "straight"),
        ("cross off full-house", "full_house"),
        ("cross out poker", "four_of_a_kind"),
        ("cross out 4 of a kind", "four_of_a_kind"),
        ("cross out four of a kind", "four_of_a_kind"),
    ],
)
def test_write_phrases(text, line):
    g = game_with([4, 4, 4, 2, 6])
    move = parse_move(text, g)
    assert move.action == NUM_MASKS + g.rules.lines.index(line)


def test_writing_zero_asks_first_unless_crossing_out():
    g = game_with([4, 4, 4, 2, 6])
    assert "crosses it out" in parse_move("straight", g).confirm
    assert parse_move("cross out straight", g).confirm is None
    assert parse_move("fours", g).confirm is None
    note = parse_move("cross out fours", g).note  # it scores, so the points go down
    assert "12 goes down" in note


@pytest.mark.parametrize(
    "text, why",
    [
        ("keep 5", "you have no 5 to keep"),
        ("keep 6 6", "you have only one 6 to keep"),
        ("keep 4 4 4 4", "you have only three 4s"),
        ("keep the fives", "you have no 5 to keep"),
        ("reroll 1", "you have no 1 to reroll"),
        ("keep all", "holding all five dice is not a reroll"),
        ("keep 2 4 4 4 6", "holding all five dice is not a reroll"),
        ("keep", "keep which dice"),
        ("keep banana", "which dice 'banana' means"),
        ("write", "write which line"),
        ("write banana", "no line called 'banana'"),
        ("three of a kind", "no three of a kind line in these rules"),
        ("double generala", "no double generala line"),
        ("4", "could mean 'keep 4' or 'write fours'"),
        ("banana", "I don't understand 'banana'"),
        ("", "type a move"),
    ],
)
def test_rejected_moves_are_explained(text, why):
    g = game_with([4, 4, 4, 2, 6])
    with pytest.raises(MoveError, match=why):
        parse_move(text, g)


def test_filled_line_no_rolls_left_and_served_generala():
    g = Game("classic", 2)
    g.reset(ScriptedDice([6, 6, 6, 3, 3], [1, 2, 3, 4, 5]))
    g.apply(NUM_MASKS + 5, [1, 2, 3, 4, 5])  # P0: sixes 18
    g.apply(NUM_MASKS + 0, [6, 6, 6, 1, 2])  # P1: ones 1
    with pytest.raises(MoveError, match=r"sixes is already filled \(you wrote 18 there\)"):
        parse_move("write sixes", g)
    g.apply(0, [1, 1, 1, 1, 1])
    g.apply(0, [3, 3, 3, 3, 4])
    with pytest.raises(MoveError, match="no rolls left"):
        parse_move("keep 3 3 3 3", g)
    served = game_with([2, 2, 2, 2, 2], players=2)
    for text in ("keep 2 2 2 2", "write twos", "roll all"):
        with pytest.raises(MoveError, match="served generala must be written on the generala line"):
            parse_move(text, served)
    assert parse_move("generala", served).action == NUM_MASKS + 9


def test_locked_holds_keep_what_was_kept():
    g = Game(load_rules({"locked_holds": True}), 1)
    g.reset(ScriptedDice([4, 4, 1, 2, 6]))
    g.apply(parse_move("keep 4 4", g).action, [4, 1, 3])  # now 1 3 4 4 4, the two 4s locked
    move = parse_move("keep 4 4 4", g)
    assert kept(g, move) == [4, 4, 4] and move.note is None
    move = parse_move("keep 3", g)
    assert kept(g, move) == [3, 4, 4] and "stay held" in move.note
    with pytest.raises(MoveError, match="cannot go back in the cup"):
        parse_move("reroll 4 4", g)
    assert kept(g, parse_move("roll all", g)) == [4, 4]  # everything that may go back


# -- whole games through stdin -------------------------------------------------------------
SOLO_DICE = [
    [4, 4, 4, 2, 6],
    [4, 1],  # 1: keep 4 4 4 -> 1 4 4 4 4, write fours 16
    [2, 3, 4, 5, 6],  # 2: served straight 25
    [5, 5, 5, 3, 3],  # 3: served full house 35
    [6, 6, 6, 6, 1],  # 4: served poker 45
    [1, 1, 2, 3, 5],
    [1, 1, 1],  # 5: reroll 2 3 5 -> generala 50 (not served)
    [1, 2, 2, 3, 6],
    [2, 2, 2, 5, 6],
    [2, 3],  # 6: roll all, keep the twos -> 2 2 2 2 3, twos 8
    [3, 3, 1, 1, 6],  # 7: threes 6
    [5, 5, 5, 5, 2],  # 8: fives 20
    [6, 6, 1, 2, 3],  # 9: sixes 12
    [1, 2, 3, 4, 6],  # 10: ones 1
    [1, 1, 1, 1, 1],  # drawn by the last write, unused
]
SOLO_SCRIPT = """\
keep 6 6
keep 5
keep all
banana

4
write three of a kind
keep 4 4 4
write fours
write fours
straight
generala
n
full house
four of a kind
reroll 2 3 5
generala
roll all
keep the twos
twos
fives
threes
hint
fives
help
sixes
ones
"""


def test_scripted_solo_game_with_bad_input_in_the_middle(monkeypatch, capsys):
    rc, out, err, t = run(monkeypatch, capsys, ["--opponents", "none", "--seed", "1"], SOLO_SCRIPT, dice=SOLO_DICE)
    assert rc == 0 and err == ""
    assert t.game.over and list(t.game.sheets[0]) == [1, 8, 6, 16, 20, 12, 25, 35, 45, 50]
    assert "Your final score: 218" in out
    for why in (
        "you have only one 6 to keep",
        "you have no 5 to keep",
        "holding all five dice is not a reroll",
        "I don't understand 'banana'",
        "type a move",
        "could mean 'keep 4' or 'write fours'",
        "no three of a kind line in these rules",
        "fours is already filled (you wrote 16 there)",
        "score 0 on generala: that crosses it out",
        "not written; your move",
    ):
        assert why in out
    assert "P0 you: kept 4 4 4, rerolled 2 → 1 4 4 4 4" in out
    assert "P0 you: wrote 25 on straight (served, +5)" in out
    assert "P0 you: wrote 45 on four of a kind (served, +5)" in out
    assert "P0 you: wrote 6 on threes" in out  # typed instead of answering the question about fives
    # fives, sixes and ones left: chasing a fifth 5 beats writing 20 now
    assert "hint: the optimal player would keep 5 5 5 5, reroll 1: expected final total 223.5" in out
    assert "next best: write 20 on fives (222.0)" in out
    assert re.search(r"write ones +1\n *write sixes +12\n", out)  # help lists the moves with their points


def test_agents_moves_in_words_and_a_served_generala_win(monkeypatch, capsys):
    dice = [[2, 3, 4, 5, 6], [3, 3, 3, 3, 3], [1, 1, 1, 1, 1]]
    rc, out, _, t = run(monkeypatch, capsys, ["--opponents", "greedy", "--seed", "2"], "straight\n", dice=dice)
    assert rc == 0
    assert "P0 you: wrote 25 on straight (served, +5)" in out
    assert "P1 greedy rolls 3 3 3 3 3" in out and "served generala!" in out
    assert "P1 greedy: wrote 50 on generala (served generala: wins the game)" in out
    assert "P1 greedy wins with a served generala!" in out
    assert t.game.served_generala_winner == 1


def test_your_served_generala(monkeypatch, capsys):
    script = "keep 6 6 6 6\nhelp\nhint\nsixes\ngenerala\n"
    rc, out, _, _ = run(monkeypatch, capsys, ["--seats", "human,optimal"], script, dice=[[6] * 5, [1] * 5])
    assert rc == 0
    assert out.count("a served generala must be written on the generala line") == 2
    assert "the only move: write generala" in out
    assert "hint: write generala: a served generala wins the game" in out
    assert "You win with a served generala!" in out


class Player(io.TextIOBase):
    """Stdin that plays for the people: reads the game, types a bad line, then a legal move.

    The move comes from an agent and is typed in words, so the parser must read back
    every kind of move; the game records what it was given, to check it was that move.
    """

    BAD = ["banana", "keep all", "keep 7", "write nothing", "", "4", "keep", "write"]

    def __init__(self, tables, seed):
        self.tables, self.rng = tables, np.random.default_rng(seed)
        self.queue: list[str] = []
        self.expected: list[tuple[int, int, tuple]] = []
        self.asked = 0

    def readline(self, *a):
        self.asked += 1
        assert self.asked < 5000, "the game is not moving on"
        if self.queue:
            return self.queue.pop(0)
        t = self.tables[0]
        g = t.game
        agent = agents.load("random", rules=g.rules, seed=int(self.rng.integers(1 << 30)))
        a = agent.act(Encoder(g.rules, g.num_players).encode(g, g.player), make_info(g, g.player))
        self.expected.append((g.player, g.roll, self.what(g, a)))
        bad = self.BAD[len(self.expected) % len(self.BAD)]
        self.queue = [self.say(g, a) + "\n"]
        return bad + "\n"

    @staticmethod
    def what(g, a):
        return ("keep", tuple(KEEPS_LIST[HOLD_KEEP[g.roll, a]])) if a < NUM_MASKS else ("write", a)

    def say(self, g, a) -> str:
        if a < NUM_MASKS:
            held = [int(d) for i, d in enumerate(g.dice) if a >> i & 1]
            rest = [int(d) for i, d in enumerate(g.dice) if not a >> i & 1]
            if not held:
                return str(self.rng.choice(["roll all", "reroll", "roll again"]))
            form = self.rng.integers(3)
            if form == 0:
                return "keep " + " ".join(map(str, held))
            if form == 1:
                return "hold " + "".join(map(str, held))
            return "reroll " + " ".join(map(str, rest))
        line = g.rules.lines[a - NUM_MASKS]
        pts, _ = play.points_if_written(g, a - NUM_MASKS)
        name = line_label(line)
        if pts == 0:
            return f"cross out {name}"
        return str(self.rng.choice([f"write {name}", name, f"score {name}", f"put it on {name}"]))


@pytest.mark.parametrize(
    "argv",
    [
        ["--opponents", "greedy", "--seed", "5"],
        ["--seats", "human,rules-of-thumb,human", "--rules", "double", "--seed", "11"],
        ["--seats", "greedy,human", "--rules", "sixty", "--seed", "3"],
    ],
)
def test_whole_games_typed_in_words_with_bad_lines_between(monkeypatch, capsys, argv):
    tables = []
    player = Player(tables, seed=0)
    played = []
    step = Game.step

    def record(self, action, rng):
        played.append((self.player, self.roll, Player.what(self, action)))
        return step(self, action, rng)

    monkeypatch.setattr(Game, "step", record)
    init = play.Table.__init__

    def spy(self, *a, **k):
        init(self, *a, **k)
        tables.append(self)

    monkeypatch.setattr(play.Table, "__init__", spy)
    monkeypatch.setattr(sys, "stdin", player)
    rc = play.main(argv)
    out = capsys.readouterr().out
    g = tables[0].game
    assert rc == 0 and g.over and "Game over." in out and "Final:" in out
    humans = [s for s, who in enumerate(tables[0].seats) if who == "human"]
    assert [p for p in played if p[0] in humans] == player.expected  # every typed move was the one meant
    assert (g.sheets[humans] >= 0).all() or g.served_generala_winner is not None
    assert "I don't understand 'banana'" in out and "holding all five dice" in out


def test_quit_and_end_of_input_end_cleanly(monkeypatch, capsys):
    rc, out, _, t = run(monkeypatch, capsys, ["--seed", "4"], "keep 4 4 4\nquit\n", dice=[[4, 4, 4, 2, 6], [1, 1]])
    assert rc == 0 and "You quit. The sheets as they stand:" in out and not t.game.over
    rc, out, _, _ = run(monkeypatch, capsys, ["--seed", "4"], "keep 4 4 4\n", dice=[[4, 4, 4, 2, 6], [1, 1]])
    assert rc == 0 and "Input ended: the game stops here." in out
    rc, out, _, _ = run(monkeypatch, capsys, ["--seed", "4"], "straight\n", dice=[[4, 4, 4, 2, 6]])  # EOF at the question
    assert rc == 0 and "Cross out straight? (y/n)" in out and "Input ended" in out
    rc, out, _, _ = run(monkeypatch, capsys, ["--seed", "4"], "", dice=[[4, 4, 4, 2, 6]])
    assert rc == 0 and "Input ended" in out


def test_unknown_agent_lists_the_known_ones(monkeypatch, capsys):
    rc, out, err, _ = run(monkeypatch, capsys, ["--opponents", "ppo-no-such-agent"], "")
    assert rc == 2 and out == ""
    assert "unknown agent 'ppo-no-such-agent'; known agents: " + ", ".join(agents.names()) in err
    rc, _, err, _ = run(monkeypatch, capsys, ["--seats", ",".join(["human"] * 7)], "")
    assert rc == 2 and "1 to 6 seats" in err
    rc, _, err, _ = run(monkeypatch, capsys, ["--rules", "no-such-rules"], "")
    assert rc == 2 and "unknown rule set" in err


def test_a_failing_agent_is_replaced_not_fatal(monkeypatch, capsys):
    class Broken:
        def act(self, obs, info):
            raise RuntimeError("checkpoint wants another observation size")

    real = agents.load
    monkeypatch.setattr(agents, "load", lambda name, **k: Broken() if name == "broken" else real(name, **k))
    rc, out, _, t = run(monkeypatch, capsys, ["--seats", "broken,greedy", "--seed", "6"], "")
    assert rc == 0 and t.game.over
    assert "P0 broken failed: RuntimeError: checkpoint wants another observation size; greedy plays this seat" in out


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch, capsys):
    dice = [[4, 4, 4, 2, 6]]
    _, out, _, _ = run(monkeypatch, capsys, ["--seed", "1"], "", dice=dice)
    assert "\033[" not in out  # captured output is no terminal
    _, out, _, _ = run(monkeypatch, capsys, ["--seed", "1", "--color", "always"], "", dice=dice)
    assert "\033[1m" in out
    for no_color, want in (("1", False), ("", True)):
        monkeypatch.setenv("NO_COLOR", no_color)
        monkeypatch.setenv("TERM", "xterm")
        term = Terminal()
        monkeypatch.setattr(sys, "stdout", term)
        run(monkeypatch, capsys, ["--seed", "1"], "", dice=dice)
        assert ("\033[" in term.getvalue()) is want


def test_cli_dispatches_to_play(monkeypatch, capsys):
    from generala_training.cli import main as cli_main

    monkeypatch.setattr(sys, "stdin", io.StringIO("quit\n"))
    assert cli_main(["play", "--opponents", "random", "--seed", "0"]) == 0
    assert "You quit" in capsys.readouterr().out


# -- a real terminal -----------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_in_a_real_terminal_through_tmux(tmp_path):
    name = f"generala-test-{os.getpid()}"
    cmd = f"{sys.executable} -m generala_play.terminal --opponents greedy --seed 3; sleep 30"
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TMUX")}
    env["TERM"] = "xterm-256color"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "60", cmd], check=True, env=env)

    def screen(want, timeout=20.0):
        end = time.time() + timeout
        while time.time() < end:
            text = subprocess.run(["tmux", "capture-pane", "-p", "-e", "-t", name, "-S", "-200"], capture_output=True, text=True).stdout
            if want in text:
                return text
            time.sleep(0.2)
        raise AssertionError(f"{want!r} never showed on the screen:\n{text}")

    def keys(*k):
        subprocess.run(["tmux", "send-keys", "-t", name, *k], check=True)

    try:
        screen("P0 you >")
        keys("help", "Enter")
        screen("other: hint")
        keys("keep 9", "Enter")
        screen("I don't know which dice")
        keys("roll all", "Enter")
        text = screen("roll 2 of 3")
        assert "\033[" in text  # colour on a terminal
        keys("quit", "Enter")
        screen("You quit.")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


# -- nothing typed breaks it ---------------------------------------------------------------
WORDS = [
    "keep",
    "hold",
    "reroll",
    "roll",
    "write",
    "cross",
    "out",
    "all",
    "but",
    "the",
    "fours",
    "4s",
    "three",
    "of",
    "a",
    "kind",
    "full",
    "house",
    "generala",
    "double",
    "1",
    "4",
    "6",
    "7",
    "0",
    "444",
    "none",
    "everything",
    "except",
    "help",
    "hint",
    "and",
    "x",
]


def test_a_digit_that_is_no_number_is_explained():
    """``"²"`` is a digit to ``str.isdigit`` but no number to ``int``: one sentence, no traceback."""
    g = Game("classic")
    g.reset(np.random.default_rng(0))
    for text in ("\u00b2", "keep \u00b2", "write \u00b2 on fours", "\u0663"):
        with pytest.raises(MoveError):
            parse_move(text, g)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    steps=st.integers(0, 40),
    rules=st.sampled_from(["classic", "double", {"locked_holds": True, "lines": list(load_rules("classic").lines) + ["three_of_a_kind"]}]),
    words=st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=4)), max_size=6),
)
def test_any_text_is_a_legal_move_a_command_or_an_explanation(seed, steps, rules, words):
    g = Game(load_rules(rules), 2)
    rng = np.random.default_rng(seed)
    g.reset(rng)
    for _ in range(steps):
        if g.over:
            return
        g.step(int(rng.choice(g.legal_actions())), rng)
    text = " ".join(words)
    try:
        got = parse_move(text, g)
    except MoveError as e:
        assert str(e)
        return
    assert got in ("help", "hint", "quit", "show") if isinstance(got, str) else g.legal_mask()[got.action]


def test_two_player_hint_gives_the_chance_to_win(monkeypatch, capsys, tmp_path):
    import generala_agents as agents
    from generala_training.harness import make_info

    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rules_file = tmp_path / "five.yaml"
    rules_file.write_text("lines: [ones, fives, sixes, full_house, generala]\n")
    rc, out, _, t = run(monkeypatch, capsys, ["--rules", str(rules_file), "--opponents", "optimal-2p", "--seed", "3"], "hint\nquit\n", dice=[[5, 5, 5, 6, 1]])
    assert rc == 0
    m = re.search(r"to win, the two-player optimum would (.+): chance to win ([0-9.]+)%", out)
    assert m, out
    # the chance shown is optimal-2p's best value at that state, and the move it names is that move
    best = agents.load("optimal-2p", rules=t.rules).action_values(make_info(t.game, 0))
    best[~t.game.legal_mask()] = -np.inf
    assert float(m.group(2)) == pytest.approx(100 * best.max(), abs=0.051)
    assert m.group(1) == play.describe(t.game, int(np.argmax(best)))
    assert "next best for winning:" in out
    one = run(monkeypatch, capsys, ["--rules", str(rules_file), "--opponents", "none", "--seed", "3"], "hint\nquit\n", dice=[[5, 5, 5, 6, 1]])[1]
    assert "chance to win" not in one  # one player: there is no one to beat


@pytest.mark.parametrize("rules", ["classic", "double"])
def test_every_hint_is_accepted_as_typed(rules):
    # what the hint says ("write 40 on four of a kind", "keep 6 6, reroll 3", "roll all five
    # again", "cross out ones", "... (served, +5)") is read back as that very move
    rng = np.random.default_rng(0)
    g = Game(rules, 1)
    for _ in range(300):
        if g.over:
            g.reset(rng)
        if g.rolls_left == 2 and g.turn == 0:
            g.set_state(dice=rng.integers(1, 7, 5).tolist())
        for a in g.legal_actions():
            words = play.describe(g, a)
            got = play.parse_move(words, g)
            assert not isinstance(got, str) and got.confirm is None, words
            if a < 32:  # hold masks that keep the same dice are the same move
                assert sorted(g.dice[[i for i in range(5) if got.action >> i & 1]]) == sorted(g.dice[[i for i in range(5) if a >> i & 1]]), words
            else:
                assert got.action == a, words
        g.step(int(rng.choice(g.legal_actions())), rng)


def test_a_write_that_names_wrong_points_is_refused():
    g = Game("classic", 1)
    g.reset(np.random.default_rng(0))
    g.set_state(dice=[4, 4, 4, 2, 1], rolls_left=0)
    assert play.parse_move("write 12 on fours", g).action == 32 + 3
    with pytest.raises(MoveError, match="score 12 on fours, not 16: type 'write fours' to write 12"):
        play.parse_move("write 16 on fours", g)


def test_a_two_player_hint_without_a_cached_table_answers_at_once(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("GENERALA_CACHE", str(tmp_path))
    rc, out, _, _ = run(monkeypatch, capsys, ["--opponents", "greedy", "--seed", "3"], "hint\nquit\n", dice=[[5, 5, 5, 6, 1]])
    assert rc == 0
    assert re.search(r"the optimal player would .+: expected final total [0-9.]+", out), out
    assert "no chance-to-win hint: the two-player table of the 'classic' rules is not in the cache" in out
    assert "generala solve --players 2 --rules classic" in out
    assert not list(tmp_path.glob("solve2p-*"))  # nothing was solved


def test_a_negative_seed_names_the_option(capsys):
    from generala_play.terminal import main as play_main

    with pytest.raises(SystemExit) as e:
        play_main(["--seed", "-5"])
    assert e.value.code == 2 and "argument --seed: must be 0 or more, got -5" in capsys.readouterr().err
