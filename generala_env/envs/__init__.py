"""The envs: the one env core, the single, vector and PettingZoo drivers over it, and the opponents' registry."""
