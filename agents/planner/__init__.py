"""The scripted planner: a competent teammate, its leader's side (who does what),
and planner and random agents as team members.

>>> from orgteams.agents.planner import PlannerAgent
"""

from orgteams.agents.planner.planner import PlannerAgent
from orgteams.agents.planner.planner_member import PlannerMember, RandomMember

__all__ = ["PlannerAgent", "PlannerMember", "RandomMember"]
