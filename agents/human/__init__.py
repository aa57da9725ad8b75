"""A person as a team member: answering the two decisions in a terminal or in the
env's pygame window.
"""

from orgteams.agents.human.human_agent import HumanAgent
from orgteams.lazy import lazy_exports

__all__ = ["HumanAgent", "WindowInput"]

# The window's side is imported on first use: a terminal player needs no renderer.
__getattr__, __dir__ = lazy_exports(__name__, {"WindowInput": "orgteams.agents.human.window_input"})
