"""Glue for `orgteams play`: keyboard play beside LLM and planner teammates, inside
an organization, the player's voice and the play log.
"""
