"""The game itself: the rule set, dice, scoring, the engine's rule functions, a game's state, its encoding."""
