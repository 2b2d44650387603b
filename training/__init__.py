"""Training and evaluation programs: PPO training, evaluation, tournaments."""
