"""Random playouts per second: python_generala (OpenSpiel, Python) against OpenSpiel's C++ ``yacht``.

Each playout is a whole game through the pyspiel API from ``new_initial_state()``: at a
chance node an outcome drawn from ``chance_outcomes()`` by its probability, at a decision a
uniform legal action, ``apply_action`` for both. Contestants:

* ``yacht (C++)``: OpenSpiel's ``yacht``, its default two players (12 categories; chance over
  the ordered throws, up to 7,776 outcomes a node). ``yacht (C++), uniform``: the same game, its
  chance drawn as a uniform pick among the chance node's actions (exact for yacht, whose
  outcomes are equally likely), which spares building the list of probabilities.
* ``python_generala P=2`` and ``P=1``: this project's game, classic rules (10 lines; chance over
  the distinct sorted rolls).
* ``Model P=2``: the same playouts straight through :class:`generala_env.planning.model.Model`, no pyspiel.

Each contestant plays for ``--seconds`` (after one warm-up game); the rate is playouts over
wall-clock, on one core.

    python benchmarks/openspiel_speed.py              # about 50 seconds
    python benchmarks/openspiel_speed.py --seconds 2  # quicker
"""

from __future__ import annotations

import argparse
import platform
import random
import time


def pyspiel_playout(game, rnd: random.Random) -> int:
    state, decisions = game.new_initial_state(), 0
    while not state.is_terminal():
        if state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(rnd.choices(actions, probs)[0])
        else:
            state.apply_action(rnd.choice(state.legal_actions()))
            decisions += 1
    return decisions


def uniform_chance_playout(game, rnd: random.Random) -> int:
    """yacht's chance outcomes are equally likely (ordered throws): a uniform pick among the
    chance node's actions is its exact draw, without building the probability list."""
    state, decisions = game.new_initial_state(), 0
    while not state.is_terminal():
        if not state.is_chance_node():
            decisions += 1
        state.apply_action(rnd.choice(state.legal_actions()))
    return decisions


def model_playout(model, rnd: random.Random) -> int:
    state, decisions = model.initial_state(), 0
    while not state.over:
        if state.is_chance:
            rolls, probs = zip(*model.chance_indices(state), strict=True)
            state = model.land(state, rnd.choices(rolls, probs)[0])
        else:
            state = model.decide(state, rnd.choice(model.legal_actions(state)))[0]
            decisions += 1
    return decisions


def rate(play, seconds: float) -> tuple[float, float]:
    play()  # warm-up
    games = decisions = 0
    t0 = time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        decisions += play()
        games += 1
    return games / elapsed, decisions / elapsed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="per contestant (default 10)")
    args = ap.parse_args(argv)
    try:
        import pyspiel
    except ImportError:
        from generala_env.extras import how_to_install

        raise SystemExit(f"benchmarks/openspiel_speed.py needs OpenSpiel, which is not installed; {how_to_install('openspiel')}") from None
    import generala_env.adapters.openspiel  # noqa: F401
    from generala_env.planning.model import Model

    rnd = random.Random(0)
    yacht, two, one, model = (
        pyspiel.load_game("yacht"),
        pyspiel.load_game("python_generala", {"players": 2}),
        pyspiel.load_game("python_generala"),
        Model("classic", 2),
    )
    contestants = {
        "yacht (C++)": lambda: pyspiel_playout(yacht, rnd),
        "yacht (C++), uniform": lambda: uniform_chance_playout(yacht, rnd),
        "python_generala P=2": lambda: pyspiel_playout(two, rnd),
        "python_generala P=1": lambda: pyspiel_playout(one, rnd),
        "Model P=2 (no pyspiel)": lambda: model_playout(model, rnd),
    }
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, pyspiel {getattr(pyspiel, '__version__', '?')}")
    print(f"{'contestant':<24} {'playouts/s':>11} {'decisions/s':>12}")
    rows = {}
    for name, play in contestants.items():
        rows[name] = rate(play, args.seconds)
        print(f"{name:<24} {rows[name][0]:>11.1f} {rows[name][1]:>12.0f}", flush=True)
    for other in ("yacht (C++)", "yacht (C++), uniform"):
        print(f"python_generala P=2 plays {rows['python_generala P=2'][0] / rows[other][0]:.2f}x the playouts per second of {other}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
