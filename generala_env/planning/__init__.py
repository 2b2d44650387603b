"""The dice model (decisions, afterstates, chance outcomes) and the rule facts a planner reads."""
