"""orgteams: teams of agents that organize."""
__version__ = "0.1.0"
