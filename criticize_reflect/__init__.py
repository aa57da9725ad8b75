"""Criticize-Reflect: a Critic assesses each episode, a Coordinator proposes a better
organization, the loop keeps the best (DESIGN.md, "Criticize-Reflect")."""

from orgteams.criticize_reflect.coordinator import (
    Coordinator,
    CoordinatorDecision,
    OrganizationProposal,
    Trial,
)
from orgteams.criticize_reflect.critic import Critic, Critique
from orgteams.criticize_reflect.loop import ReflectResult, episode_cost, reflect
from orgteams.criticize_reflect.summary import summarize_episode

__all__ = ["Coordinator", "CoordinatorDecision", "Critic", "Critique", "OrganizationProposal",
           "ReflectResult", "Trial", "episode_cost", "reflect", "summarize_episode"]
