"""Generala for other frameworks: stable-baselines3's VecEnv and OpenSpiel."""
