"""The scripted planner: a competent teammate, its leader's side (who does what),
and planner and random agents as team members.
"""
