"""Generala in JAX: a Pgx env over the engine's tables and rule functions."""
