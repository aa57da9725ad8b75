"""What an agent sees: array, flat and image observations (and their plain oracle),
text views, per-agent memory, and the global state for centralized critics.
"""
