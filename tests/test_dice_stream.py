"""Per-game streams in arrays draw what numpy's ``Generator(PCG64)`` draws, bit for bit.

numpy is the oracle: every draw of :mod:`generala_env.compiled.dice_stream` is compared with the numpy
call it stands for, on a generator seeded the same way, over many seeds and long mixed
sequences of draws; the state after is compared too. Each test runs on the compiled module
and on a copy imported with ``GENERALA_NUMBA=0`` (plain Python, on fewer seeds: it is slow),
where numpy's overflow warnings are errors.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from gymnasium.utils import seeding

from generala_env.compiled import dice_stream
from generala_env.core.dice import DiceCup


def _plain_copy():
    """A second copy of the module, imported with GENERALA_NUMBA=0: its functions are Python."""
    saved = os.environ.get("GENERALA_NUMBA")
    os.environ["GENERALA_NUMBA"] = "0"
    try:
        spec = importlib.util.spec_from_file_location("generala_env._dice_stream_plain", dice_stream.__file__)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del os.environ["GENERALA_NUMBA"]
        else:
            os.environ["GENERALA_NUMBA"] = saved
    assert not module.NUMBA
    return module


PLAIN = _plain_copy()
MODES = [
    pytest.param(dice_stream, id="numba", marks=pytest.mark.skipif(not dice_stream.NUMBA, reason="numba is not installed")),
    pytest.param(PLAIN, id="plain", marks=pytest.mark.filterwarnings("error")),
]

BIG_SEEDS = [2**31 - 1, 2**32 - 1, 2**32, 2**32 + 1, 2**62 + 12345, 2**63 - 1, 2**64 - 1]
HUGE_SEEDS = [2**64, 2**96 + 7, 10**40]  # more than two 32-bit words of entropy


def seeds_for(ds) -> list[int]:
    return list(range(201 if ds.NUMBA else 12)) + BIG_SEEDS


def generator(seed: int) -> np.random.Generator:
    """What ``reset(seed=seed)`` makes: gymnasium's ``seeding.np_random``."""
    return seeding.np_random(seed)[0]


def state_of(gen: np.random.Generator) -> tuple[int, int, int, int]:
    st = gen.bit_generator.state
    return st["state"]["state"], st["state"]["inc"], st["has_uint32"], st["uinteger"]


def row_state(row) -> tuple[int, int, int, int]:
    r = [int(x) for x in row]
    return (r[0] << 64) | r[1], (r[2] << 64) | r[3], r[4], r[5]


@pytest.mark.parametrize("ds", MODES)
def test_each_row_is_the_generator_gymnasium_seeds(ds):
    seeds = seeds_for(ds) + HUGE_SEEDS
    pcg = ds.streams_from_seeds(seeds)
    assert pcg.shape == (len(seeds), 6) and pcg.dtype == np.uint64
    for g, s in enumerate(seeds):
        assert row_state(pcg[g]) == state_of(generator(s)), s


@pytest.mark.parametrize("ds", MODES)
def test_raw_draws_and_the_kept_half(ds):
    """``next_uint64`` is ``random_raw()``; ``next_uint32`` is ``integers(2**32, dtype=uint32)``:
    two 32-bit draws from one 64-bit draw, the high half kept in the row between calls (and
    across a 64-bit draw, which leaves it as it is)."""
    for s in seeds_for(ds):
        pcg = ds.streams_from_seeds([s + 1, s, s + 2])
        others = pcg[[0, 2]].copy()
        gen = generator(s)
        script = [64, 32, 64, 32, 32, 32, 64, 64, 32]
        for kind in script:
            if kind == 64:
                assert ds.next_uint64(pcg, 1) == gen.bit_generator.random_raw()
            else:
                assert ds.next_uint32(pcg, 1) == gen.integers(2**32, dtype=np.uint32)
        assert row_state(pcg[1]) == state_of(gen)
        assert np.array_equal(pcg[[0, 2]], others)  # the other games' streams did not move


@pytest.mark.parametrize("ds", MODES)
@pytest.mark.parametrize("count", [0, 1, 3, 4, 5, 7, 64, 1024, 1029])
def test_faces_are_numpys_int8_dice(ds, count):
    for s in seeds_for(ds)[:: 1 if count <= 64 else 10]:
        pcg, gen = ds.streams_from_seeds([s]), generator(s)
        out = np.zeros(count + 9, dtype=np.int8)
        ds.faces_into(pcg, 0, out, 9, count)
        assert np.array_equal(out[9:], gen.integers(1, 7, size=count, dtype=np.int8))
        assert not out[:9].any()
        assert row_state(pcg[0]) == state_of(gen)


@pytest.mark.parametrize("ds", MODES)
def test_seed_zero_written_out(ds):
    """``reset(seed=0)``'s generator as numpy 2 has it and draws from it (its state, its first
    raw draws, the first dice, a seat of six, an opponent's seed, a uniform), written out."""
    pcg = ds.streams_from_seeds([0, 0])
    state, inc = 35399562948360463058890781895381311971, 87136372517582989555478159403783844777
    assert row_state(pcg[0]) == (state, inc, 0, 0)
    assert [int(x) for x in pcg[0]] == [state >> 64, state & (2**64 - 1), inc >> 64, inc & (2**64 - 1), 0, 0]
    assert [int(ds.next_uint64(pcg, 1)) for _ in range(2)] == [11749869230777074271, 4976686463289251617]
    out = np.zeros(12, dtype=np.int8)
    ds.faces_into(pcg, 0, out, 0, 12)
    assert out.tolist() == [3, 4, 5, 6, 5, 6, 1, 4, 1, 6, 6, 4]
    assert (ds.below(pcg, 0, 6), ds.seed63(pcg, 0), ds.uniform(pcg, 0)) == (1, 377914054924498012, 0.016527635528529094)


@pytest.mark.parametrize("ds", MODES)
def test_below_seed63_uniform_permutation(ds):
    ns = [1, 2, 3, 4, 5, 6, 13, 2**31 + 11, 2**32 - 1, 2**32, 2**32 + 1, 2**40 + 3, 2**63 - 1]
    for s in seeds_for(ds):
        pcg, gen = ds.streams_from_seeds([s]), generator(s)
        for n in ns:
            got = ds.below(pcg, 0, n)
            assert got == gen.integers(n) and 0 <= got < n, (s, n)
        for _ in range(3):
            assert ds.seed63(pcg, 0) == gen.integers(2**63)
            got = ds.uniform(pcg, 0)
            assert got == gen.random() and 0.0 <= got < 1.0
        for n in (0, 1, 2, 5, 13, 40):
            out = np.full(n + 2, -1, dtype=np.int64)
            ds.permutation_into(pcg, 0, out, n)
            assert np.array_equal(out[:n], gen.permutation(n)) and (out[n:] == -1).all()
        assert row_state(pcg[0]) == state_of(gen)


def _script(rng: np.random.Generator, length: int) -> list[tuple[str, int]]:
    kinds = ["faces", "faces", "below", "seed63", "uniform", "uint32", "uint64", "faces64", "between", "permutation"]
    out = []
    for _ in range(length):
        kind = kinds[int(rng.integers(len(kinds)))]
        arg = {"faces": int(rng.choice([1, 2, 3, 4, 5, 6, 7, 1024])), "below": int(rng.integers(1, 7)), "faces64": int(rng.integers(1, 12))}.get(kind, 0)
        out.append((kind, arg or int(rng.integers(1, 14))))
    return out


def _step(ds, pcg, g, gen, kind: str, arg: int) -> None:
    """One draw of the script from both; they must agree."""
    if kind == "faces":
        out = np.zeros(arg, dtype=np.int8)
        ds.faces_into(pcg, g, out, 0, arg)
        assert np.array_equal(out, gen.integers(1, 7, size=arg, dtype=np.int8))
    elif kind == "below":
        assert ds.below(pcg, g, arg) == gen.integers(arg)
    elif kind == "seed63":
        assert ds.seed63(pcg, g) == gen.integers(2**63)
    elif kind == "uniform":
        assert ds.uniform(pcg, g) == gen.random()
    elif kind == "uint32":
        assert ds.next_uint32(pcg, g) == gen.integers(2**32, dtype=np.uint32)
    elif kind == "uint64":
        assert ds.next_uint64(pcg, g) == gen.bit_generator.random_raw()
    elif kind == "faces64":  # prefilled_sheets' faces: integers(1, 7, size=(k, 5)) in int64, one below(6) each
        got = [1 + ds.below(pcg, g, 6) for _ in range(arg * 5)]
        assert got == gen.integers(1, 7, size=(arg, 5)).ravel().tolist()
    elif kind == "between":  # integers(1, L): prefilled_sheets' count of lines
        assert 1 + ds.below(pcg, g, arg) == gen.integers(1, arg + 1)
    else:
        out = np.zeros(arg, dtype=np.int64)
        ds.permutation_into(pcg, g, out, arg)
        assert np.array_equal(out, gen.permutation(arg))


@pytest.mark.parametrize("ds", MODES)
def test_long_interleavings(ds):
    """Random mixes of every kind of draw, several games drawn in turn from one array: each
    game's row follows its own generator, and a kept 32-bit half is used by the next draw that
    takes 32 bits, whatever its kind."""
    games = [0, 1, 2, 2**63 - 1, 977, 2**40] if ds.NUMBA else [0, 5]
    length = 300 if ds.NUMBA else 60
    plan = np.random.default_rng(2024)
    pcg = ds.streams_from_seeds(games)
    gens = [generator(s) for s in games]
    scripts = [_script(plan, length) for _ in games]
    carried = 0  # 32-bit draws that found a half kept from the draw before
    for t in range(length):
        for g in plan.permutation(len(games)):
            kind, arg = scripts[g][t]
            carried += kind in ("faces", "below", "uint32", "faces64", "between", "permutation") and int(pcg[g, dice_stream.HAS_UINT32]) == 1
            _step(ds, pcg, int(g), gens[g], kind, arg)
            assert row_state(pcg[g]) == state_of(gens[g])
    assert carried >= 10


@pytest.mark.parametrize("ds", MODES)
def test_round_trip_between_rows_and_generators(ds):
    pcg = ds.streams_from_seeds([3, 2**63 - 1])
    ds.next_uint32(pcg, 0)  # a half kept
    assert int(pcg[0, ds.HAS_UINT32]) == 1
    for g in range(2):
        row = pcg[g].copy()
        gen = ds.generator_from_stream(row)
        assert np.array_equal(row, pcg[g])  # handing a row over leaves it as it was
        assert np.array_equal(ds.stream_from_generator(gen), row)
        # the generator goes on as the row would: a slow path can take a game over and give it back
        out = np.zeros(10, dtype=np.int8)
        ds.faces_into(pcg, g, out, 0, 10)
        assert np.array_equal(out, gen.integers(1, 7, size=10, dtype=np.int8))
        assert ds.below(pcg, g, 5) == gen.integers(5)
        assert np.array_equal(ds.stream_from_generator(gen), pcg[g])
        gen.random()
        pcg[g] = ds.stream_from_generator(gen)
        assert ds.seed63(pcg, g) == gen.integers(2**63)


@pytest.mark.parametrize("ds", MODES)
def test_seeded_row_is_default_rng(ds):
    seeds = [*range(201 if ds.NUMBA else 12), *BIG_SEEDS, *np.random.default_rng(5).integers(2**63, size=20 if ds.NUMBA else 3).tolist()]
    pcg = ds.streams_from_seeds([1, 2])
    first = pcg[0].copy()
    for s in seeds:
        ds.seeded_row(pcg, 1, np.uint64(s))
        assert row_state(pcg[1]) == state_of(np.random.default_rng(s)), s
        assert np.array_equal(pcg[0], first)
    # a random opponent reseeded with the seed an env draws for it picks as it would
    ds.seeded_row(pcg, 1, ds.seed63(pcg, 0))
    opp = np.random.default_rng(int(ds.generator_from_stream(first).integers(2**63)))
    legal = [3, 8, 21, 40]
    assert [legal[ds.below(pcg, 1, 4)] for _ in range(20)] == [legal[opp.integers(len(legal))] for _ in range(20)]


def held(at, g) -> int:
    """The faces cup ``g`` holds: what is left of its row."""
    return int(at[g, 1]) - int(at[g, 0])


@pytest.mark.parametrize("ds", MODES)
def test_cup_deals_what_a_dice_cup_deals(ds):
    """Cups of several games in one array, each given a random sequence of throws of 1 to 5
    dice, deal what a DiceCup on the same generator deals, refills included, and leave each
    game's stream where the DiceCup leaves its generator, after every throw."""
    seeds = [0, 7, 2**63 - 1] if ds.NUMBA else [4]
    throws = 2500 if ds.NUMBA else 700  # several refills of 1024 faces (about 340 throws each)
    plan = np.random.default_rng(11)
    pcg = ds.streams_from_seeds(seeds)
    faces, at = ds.empty_cups(len(seeds))
    assert faces.shape == (len(seeds), ds.CUP_FACES) and faces.dtype == np.int8 and at.shape == (len(seeds), 2)
    dice_cups = [DiceCup(generator(s)) for s in seeds]
    refills = spares = 0
    for _ in range(throws):
        for g in plan.permutation(len(seeds)):
            n = int(plan.integers(1, 6))
            before = held(at, g)
            ds.cup_fill(pcg, faces, at, int(g), n)
            refills += held(at, g) != before
            spares += 0 < before < n
            assert [int(ds.cup_face(faces, at, int(g))) for _ in range(n)] == dice_cups[g].throw(n)
            assert held(at, g) == len(dice_cups[g].faces) - int(dice_cups[g].at[0])
            assert row_state(pcg[g]) == state_of(dice_cups[g].rng)
    assert refills >= 2 * len(seeds) and spares >= 1  # blocks drawn, and faces of an old block dealt before a new one's


@pytest.mark.parametrize("ds", MODES)
def test_a_cup_then_other_draws_as_a_dice_cup_then_its_generator(ds):
    """A refill moves the game's stream past the whole block at once: draws after it (a seat,
    an opponent's seed) are what the DiceCup's generator gives after its refill, and the
    block's faces handed out later are unchanged by them."""
    pcg, (faces, at) = ds.streams_from_seeds([5]), ds.empty_cups(1)
    cup = DiceCup(generator(5))
    ds.cup_fill(pcg, faces, at, 0, 5)
    first = cup.throw(5)  # the DiceCup draws its block here
    assert (ds.below(pcg, 0, 6), ds.seed63(pcg, 0)) == (cup.rng.integers(6), cup.rng.integers(2**63))
    assert [int(ds.cup_face(faces, at, 0)) for _ in range(5)] == first
    assert [int(ds.cup_face(faces, at, 0)) for _ in range(3)] == cup.throw(3)


def test_cup_in_a_compiled_loop_without_reference_counts():
    """The loops of :mod:`generala_env.compiled.batched` run without numba's reference counts
    (``_nrt=False``): the cup, the draws and a reseed compile and deal the same there."""
    if not dice_stream.NUMBA:
        pytest.skip("numba is not installed")
    from numba import njit

    ds = dice_stream

    @njit(error_model="numpy", _nrt=False)
    def play(faces, at, pcg, needs, out, seeds):
        for g in range(pcg.shape[0]):
            k = 0
            for t in range(needs.shape[0]):
                ds.cup_fill(pcg, faces, at, np.uint64(g), needs[t])
                for d in range(needs[t]):
                    out[g, k + d] = ds.cup_face(faces, at, np.uint64(g))
                k += needs[t]
            seeds[g] = ds.seed63(pcg, np.uint64(g))
            ds.seeded_row(pcg, np.uint64(g), seeds[g])
        return 0

    needs = np.random.default_rng(3).integers(1, 6, size=700)
    pcg = ds.streams_from_seeds([10, 11])
    faces, at = ds.empty_cups(2)
    out, seeds = np.zeros((2, int(needs.sum())), dtype=np.int8), np.zeros(2, dtype=np.int64)
    play(faces, at, pcg, needs, out, seeds)
    for g, s in enumerate([10, 11]):
        cup = DiceCup(generator(s))
        assert out[g].tolist() == [f for n in needs for f in cup.throw(int(n))]
        assert seeds[g] == cup.rng.integers(2**63)
        assert row_state(pcg[g]) == state_of(np.random.default_rng(int(seeds[g])))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: dice_stream.streams_from_seeds([1, -1]), "a seed is a whole number from 0 up, got -1"),
        (lambda: dice_stream.streams_from_seeds([True]), "got True"),
        (lambda: dice_stream.streams_from_seeds([1.5]), "got 1.5"),
        (lambda: dice_stream.stream_from_generator(np.random.Generator(np.random.MT19937(0))), "a numpy Generator on PCG64, got MT19937"),
        (lambda: dice_stream.stream_from_generator(np.random.RandomState(0)), "got RandomState"),
        (lambda: dice_stream.generator_from_stream(np.zeros(5, dtype=np.uint64)), "got shape (5,) of uint64"),
        (lambda: dice_stream.generator_from_stream(np.zeros(6, dtype=np.int64)), "got shape (6,) of int64"),
        (lambda: dice_stream.generator_from_stream(np.array([0, 0, 0, 1, 2, 0], dtype=np.uint64)), "has_uint32 0 or 1"),
    ],
)
def test_bad_input_is_one_line(call, message):
    with pytest.raises(ValueError, match="^[^\n]*$") as e:
        call()
    assert message in str(e.value)
