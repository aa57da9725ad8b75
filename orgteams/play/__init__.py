"""Glue for `orgteams play`: keyboard play beside LLM and planner teammates, inside
an organization, the player's voice and the play log; the same teammates for an RL
learner (``make_teammates`` for ``household_v0.single_agent_env``).

>>> from orgteams.play import play_with
"""

from orgteams.lazy import lazy_exports

__all__ = ["MemberTeammates", "PlannerTeammates", "PlayLog", "make_teammates", "play_with"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "MemberTeammates": "orgteams.play.teammates",
    "PlannerTeammates": "orgteams.play.teammates",
    "PlayLog": "orgteams.play.play_log",
    "make_teammates": "orgteams.play.teammates",
    "play_with": "orgteams.play.teammates",
})
