"""The decision-round loop: an episode's state and hooks, the two phases, the runner,
the episode log and status, shocks, the capability monitor and planner teams.
"""
