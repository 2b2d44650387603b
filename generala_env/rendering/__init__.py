"""The game's picture, its text, and videos of it."""
