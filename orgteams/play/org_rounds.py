"""``orgteams play --org``: the teammates' rounds under an organization, the player in it.

Without ``--org`` play teammates have no organization (:mod:`orgteams.play.teammates`).
With one, :class:`OrgRounds` keeps one :class:`~orgteams.organizations.rounds.episode.EpisodeState`
per episode under it, over the whole team: the teammates and the player's
:class:`~orgteams.play.voice.PlayerVoice`, on the round loop's phases, so that

* its topology decides who hears whom: every message, the player's too, is routed
  along the organization's channels; a line the player writes to someone their agent
  may not message is dropped (the log's ``dropped``; a line that reaches nobody is
  not sent at all, its record says ``undeliverable``), and teammates' messages reach
  the player only when routed to them (only those, and the player's own, are drawn
  as speech bubbles). The panel's caption names whom the player may message;
* its protocol decides the speaking order: when the player wrote something, their
  agent speaks at its place among this round's stages (``leader_first``: after the
  leaders, ``sequential``: in team order...); its action is always the player's key,
  never asked of the round loop (``acts_outside``). Under ``shared`` everyone's
  messages, the player's included, are heard after the teammates chose. In a vote
  stage the player's agent is a voter that casts no ballot (the window has no way to
  vote); the shared history (``shared``) lists the teammates' choices, not the keys;
* its roles and rules apply: LLM teammates get its instruction and their role in
  every prompt; planners are :class:`~orgteams.agents.planner.planner_member.PlannerMember` s
  as in ``orgteams run --backend planner``, told whether they lead (a planner leader
  assigns work under ``assign_work: leader``), following its rules; leadership
  changes (``round_robin``, ``most_progress``, elections) as in the round loop.

The player's own role is shown beside their agent in the panel's team list (and the
footer, "You: ... (agent_0, leader)") and written in the play log's summary
(``player_role``). When the organization makes the player's agent the leader,
planner teammates get no orders: they read only structured messages, so the
player's free text is not an order to them, and they work as planners without
orders do (each takes the nearest needed object nobody claimed). LLM teammates read
the player's words quoted in their prompts, and their instruction says whom to
follow. A planner leader orders the player as it orders any member; an order the
player does not take up lapses (:func:`~orgteams.agents.planner.lead.free_stale`),
so the object may go to someone else.
"""

from __future__ import annotations

from typing import Any

from orgteams.agents.messages import TeamMessage
from orgteams.agents.team import Team
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.envs.highlevel.space import ActionId
from orgteams.organizations.rounds.episode import EpisodeState, update_leadership
from orgteams.organizations.rounds.phases import communicate_phase, decide_actions, deliver_held
from orgteams.organizations.spec.library import load_organization
from orgteams.organizations.spec.organization import SELF_CHOSEN, Organization
from orgteams.organizations.spec.resolved import ResolvedOrganization
from orgteams.play.voice import PlayerVoice

__all__ = ["OrgRounds", "play_organization"]


def play_organization(org: str | Organization | None) -> Organization | None:
    """The organization of ``orgteams play --org``, loaded as ``orgteams run --org``
    loads it (:func:`~orgteams.organizations.spec.library.load_organization`: a shipped name
    or a YAML path; a bad one is a :class:`~orgteams.errors.UserError` naming file
    and field); None plays without one."""
    if org is None or isinstance(org, Organization):
        return org
    return load_organization(org)


class OrgRounds:
    """The rounds of play teammates under ``organization``, the player's agent in them.

    Args:
        organization: The organization the team plays under.
    """

    def __init__(self, organization: Organization) -> None:
        self.organization = organization
        self.state: EpisodeState | None = None
        self.undelivered = 0  # the player's lines that reached nobody (latest round)
        self._played: tuple[dict[str, ActionId], set[str]] | None = None  # to remember
        self._resolved: ResolvedOrganization | None = None  # for the latest roster

    def _resolve(self, env: HighLevelEnv) -> ResolvedOrganization:
        """The organization resolved for ``env``'s team, once per roster (a session's
        episodes share it; the round loop resolves again only when it changes)."""
        roster, known = _roster(env), self._resolved
        if known is None or (known.roster.ids, known.roster.names) != (roster.ids,
                                                                       roster.names):
            self._resolved = known = self.organization.resolve(roster)
        return known

    def show(self, env: HighLevelEnv, player: str) -> str | None:
        """A new episode (``env`` just reset): the organization, the roles as resolved
        and whom the player may message, in the window's panel; the next round builds
        the episode's state. Returns the player's role (None for none)."""
        self.state = None
        resolved = self._resolve(env)
        roles = {a: r for a in resolved.team if (r := resolved.role_of(a)) not in ('', SELF_CHOSEN)}
        return self._draw(env, player, roles, resolved.receivers_of(player))

    def start(self, env: HighLevelEnv, members: dict[str, Any], voice: PlayerVoice,
              round_index: int = 0, tokenizer: Any = None) -> EpisodeState:
        """The episode's state over ``members`` (the teammates) and ``voice`` (the
        player's agent, which speaks through the loop and acts outside it)."""
        org = self.organization
        extra = {} if tokenizer is None else {"tokenizer": tokenizer}
        state = EpisodeState(env, org, self._resolve(env),
                             {**members, voice.agent_id: voice}, round=round_index,
                             acts_outside=frozenset({voice.agent_id}), **extra)
        self.state, self._played = state, None
        return state

    def tick(self, before: Any, joint: dict[str, int], after: Any, infos: Any) -> None:
        """After every tick of the play env (the teammates call it): objects placed, which
        ``most_progress`` leadership counts, and the last round's outcome once stepped."""
        state = self.state
        if state is None:
            return
        for agent, info in infos.items():
            state.placed[agent] += sum(e.get("type") == "placed"
                                       for e in info.get("events", []))
        if self._played is not None:  # the round's outcome, after its step (shared)
            state.remember_round(*self._played)
            state.progress.append(sum(after.progress))
            self._played = None

    async def play(self, state: EpisodeState, voice: PlayerVoice, speakers: list[str],
                   deciders: list[str]) -> tuple[dict[str, ActionId], dict[str, Any]]:
        """One round: leadership, the communicate stages of ``speakers`` (and of the
        player's agent when they wrote something), then ``deciders`` choose (those
        that chose in turn under ``sequential`` keep that). Returns ``(actions,
        decisions)``; an abstainer that must decide waits."""
        update_leadership(state)
        said = len(voice.outbox)
        heard: list[TeamMessage] = []
        state.hooks.message.append(heard.append)
        try:
            if said:
                speakers = [*speakers, voice.agent_id]
            abstained = await communicate_phase(state, speakers=speakers)
        finally:
            state.hooks.message.remove(heard.append)
        self.undelivered = said - sum(m.sender == voice.agent_id for m in heard)
        early, state.early_actions = state.early_actions, {}
        rest = [a for a in deciders if a not in early and a not in abstained]
        actions, chosen = await decide_actions(state, abstained, rest) if rest else ({}, {})
        for agent, (action, decision) in early.items():
            actions[agent], chosen[agent] = action, decision
        for agent in abstained & set(deciders):
            if state.env.needs_decision(agent):
                actions[agent] = ActionId("wait")
        deliver_held(state)
        state.round_tick = state.env.ticks
        self._played = (actions, abstained)
        return actions, chosen

    def shown(self, state: EpisodeState, player: str) -> str | None:
        """After a round: the roles now (elections, claims, hand-overs) in the panel.
        Returns the player's role."""
        roles = {a: r for a in state.team if (r := state.role(a))}
        return self._draw(state.env, player, roles, state.resolved.receivers_of(player))

    def _draw(self, env: HighLevelEnv, player: str, roles: dict[str, str],
              reach: tuple[str, ...]) -> str | None:
        overlay = env.overlay
        overlay.organization, overlay.roles = self.organization.name, roles
        names = _roster(env)
        if len(reach) > 3 and len(reach) == len(env.possible_agents) - 1:
            who = f"everyone ({len(reach)})"  # not 63 names cut off after the ninth
        else:
            who = ", ".join(names.name(a) for a in reach) or "nobody"
        lost = (f"; {self.undelivered} of your messages reached nobody"
                if self.undelivered else "")
        overlay.caption = f"you may message: {who}{lost}"
        return roles.get(player)


def _roster(env: HighLevelEnv) -> Team:
    ids = list(env.possible_agents)
    return Team.of(ids, list(env.display_names or ids))
