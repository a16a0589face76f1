"""The simulated worlds (a registry of values), their drivers and recorders, and closed-loop
rollouts with their figures."""
