"""High-level actions over several ticks: the options env, its discrete slots and
spaces, the plans behind each option, crowding, removal and goal shifts.
"""
