"""The compiled kernels (numba) over the game's state, and their private disk cache."""
