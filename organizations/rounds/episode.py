"""The one round loop: an episode's state, its hooks, and the loop over decision rounds.

:class:`EpisodeState` is everything an episode knows between rounds (the env, the
organization as resolved now, the members, who was removed, granted roles, the
counters behaviour depends on). :func:`play_rounds` runs rounds until the episode
ends: leadership hand-over, the communicate phase and the act phase
(:mod:`~orgteams.organizations.rounds.phases`, plain functions over the state), then the
round-end hooks. Everything that only watches (the episode log, the replay's tick
lines, video frames, the window overlay, live progress) subscribes to
:class:`RoundHooks` instead of being written into the loop; the things that change
the episode (shocks, the capability monitor) subscribe the same way, from
:class:`~orgteams.organizations.rounds.runner.TeamRunner`.

The same loop plays ``orgteams run`` (:class:`TeamRunner`), the planner teams of
:func:`~orgteams.organizations.rounds.planner_team.run_team` and the LLM teammates of
``orgteams play`` (:mod:`orgteams.play.teammates`, one round per call).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from orgteams.agents.llm.tokens import Tokenizer, default_tokenizer
from orgteams.agents.member import ActDecision, TeamMember
from orgteams.agents.member_rules import MemberRules
from orgteams.agents.messages import TeamMessage
from orgteams.agents.records import DecisionLine
from orgteams.agents.shared_context import (
    HISTORY_EPISODES,
    HISTORY_ROUNDS,
    EpisodePattern,
    RoundOutcome,
    SharedHistory,
)
from orgteams.agents.team import Team
from orgteams.agents.view import MemberView
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.envs.highlevel.space import ActionId
from orgteams.organizations.protocols.facts import PROTOCOL_FACTS
from orgteams.organizations.protocols.schedule import Inboxes, leader_for_round
from orgteams.organizations.rounds.episode_log import EventLine
from orgteams.organizations.rounds.phases import act_phase, communicate_phase
from orgteams.organizations.rounds.status import EpisodeStopped
from orgteams.organizations.spec.organization import SELF_CHOSEN, Organization
from orgteams.organizations.spec.resolved import ResolvedOrganization
from orgteams.organizations.spec.succession import succession_event, successor_of

__all__ = ["AgentFacts", "EpisodeState", "RoundHooks", "check_member", "check_members",
           "play_rounds", "update_leadership"]

StateHook = Callable[["EpisodeState"], None]


@dataclass
class RoundHooks:
    """Who watches (or steers) the loop; each list is called in subscription order.

    Attributes:
        record: Every log line the loop makes: decision lines
            (:class:`~orgteams.agents.records.MessageLine`,
            :class:`~orgteams.agents.records.ActionLine`) and :class:`EventLine` s.
        message: Every routed message (the window overlay draws them).
        phase: ``(state, "communicate" | "act")`` when a phase starts.
        stage: After every communicate stage (the live window redraws).
        role: ``(state, agent)`` right after ``agent`` was granted a role it chose
            other than the one it held (:meth:`EpisodeState.grant_role`; the window
            redraws that one badge).
        called: ``(state, decision record)`` for each member's decision, in the order
            the calls finished, before any of them is used (the stop on failed model
            calls counts them here; a hook that raises
            :class:`~orgteams.organizations.rounds.status.EpisodeStopped` ends the
            episode before the stage's decisions are used, see
            :mod:`~orgteams.organizations.rounds.phases`).
        decided: ``(state, decision records)`` after each communicate stage and act
            phase, in speaking order.
        actions: ``(state, joint high-level actions)`` right before the env steps.
        round_start: Before a round (shocks apply here).
        round_end: After a round (monitor, log flush, live progress).
        tick: ``(before, joint, after, infos)`` after every env tick (replay log, video).
    """

    record: list[Callable[[DecisionLine | EventLine], None]] = field(default_factory=list)
    message: list[Callable[[TeamMessage], None]] = field(default_factory=list)
    phase: list[Callable[[EpisodeState, str], None]] = field(default_factory=list)
    stage: list[StateHook] = field(default_factory=list)
    role: list[Callable[[EpisodeState, str], None]] = field(default_factory=list)
    called: list[Callable[[EpisodeState, Any], None]] = field(default_factory=list)
    decided: list[Callable[[EpisodeState, list[Any]], None]] = field(default_factory=list)
    actions: list[Callable[[EpisodeState, dict[str, ActionId]], None]] = field(
        default_factory=list)
    round_start: list[StateHook] = field(default_factory=list)
    round_end: list[StateHook] = field(default_factory=list)
    tick: list[Callable[..., None]] = field(default_factory=list)


class AgentFacts(NamedTuple):
    """What the organization in force tells one agent, the same in every context it is
    given until the organization is resolved anew or a member is removed
    (:meth:`EpisodeState.agent_facts`).

    Attributes:
        name: Its display name.
        instruction: Its rendered organization prompt.
        role: Its assigned role (None: none, or one it chooses).
        chooses_role: Its role is one it chooses (:data:`SELF_CHOSEN`): its role now is
            the one granted (:attr:`EpisodeState.roles`), read when asked.
        self_chosen_roles: It chooses (or claims) its own role.
        can_message: Whom it may message, removed members left out, in team order
            (every context of the agent is given this one tuple).
        rules: The organization's rules as it is told them.
    """

    name: str
    instruction: str
    role: str | None
    chooses_role: bool
    self_chosen_roles: bool
    can_message: tuple[str, ...]
    rules: MemberRules


@dataclass
class EpisodeState:
    """One episode between rounds.

    Attributes:
        env: The high-level env.
        organization: The organization in force (the monitor may switch it).
        resolved: It, resolved for the team; leaders change with elections.
        members: Agent id -> member.
        hooks: Subscribers.
        round: The current decision round (0-based).
        removed: Agents a shock removed (they stay in the env, idle).
        roles: Self-chosen roles granted so far (granted with :meth:`grant_role`, which
            tells the ``role`` hooks).
        placed: Goal objects each agent placed (``most_progress`` leadership).
        progress: Goal units done after each round (index 0: the start).
        duplicates: ``decisions`` and ``duplicated`` counts of new decisions.
        last_duplicates: ``(duplicated, new decisions)`` of the latest act phase.
        events: Team-level events so far (also sent to ``hooks.record``).
        abstained: Agents that abstained so far this round.
        mid_task_abstained: Those of the latest act phase's abstainers that abstained
            while work was left (an ``abstention`` event with ``mid_task``).
        should_stop: Asked at round boundaries, after each communicate stage's and the
            act phase's decisions (before they are used) and after every env tick; a
            reason (e.g. ``"window closed"``) ends the episode as ``"interrupted"``.
        stop_reason: The reason ``should_stop`` gave, once it gave one.
        view: What members are given instead of the env (read-only queries).
        early_actions: Actions decided in turn this round (``sequential``), by agent:
            ``(action id, decision)``; the act phase plays them.
        undelivered: This round's inboxes held back until after the act phase
            (``shared``), else None.
        outcomes: Every earlier round's new actions, roles and abstentions (the shared
            history; see :mod:`~orgteams.agents.shared_context`).
        patterns: The team's earlier episodes (given by the runner).
        round_tick: The tick this round's actions start at.
        tokenizer: Counts every message token of the episode (records, budgets, the
            summary): the owner's, e.g. its :class:`~orgteams.agents.backends.pool.BackendPool`'s;
            default the module's (:func:`~orgteams.agents.llm.tokens.default_tokenizer`).
        succession_vote: A removed top leader whose seat the team elects at the start of
            this round (``succession: elect``): ``agent`` and ``before`` (the
            organization as resolved before the removal); None when no vote is due.
        acts_outside: Members that speak through the loop but are never asked to act
            (the keyboard player of ``orgteams play --org``: their keys step the env).
    """

    env: HighLevelEnv
    organization: Organization
    resolved: ResolvedOrganization
    members: dict[str, TeamMember]
    hooks: RoundHooks = field(default_factory=RoundHooks)
    round: int = 0
    removed: set[str] = field(default_factory=set)
    roles: dict[str, str] = field(default_factory=dict)
    placed: Counter = field(default_factory=Counter)
    progress: list[int] = field(default_factory=lambda: [0])
    duplicates: Counter = field(default_factory=Counter)
    last_duplicates: tuple[int, int] = (0, 0)
    events: list[EventLine] = field(default_factory=list)
    abstained: set[str] = field(default_factory=set)
    mid_task_abstained: set[str] = field(default_factory=set)
    should_stop: Callable[[], str | None] | None = None
    stop_reason: str | None = None
    early_actions: dict[str, tuple[ActionId, ActDecision]] = field(default_factory=dict)
    undelivered: Inboxes | None = None
    outcomes: list[RoundOutcome] = field(default_factory=list)
    patterns: tuple[EpisodePattern, ...] = ()
    round_tick: int = 0
    tokenizer: Tokenizer = field(default_factory=default_tokenizer, repr=False)
    succession_vote: dict[str, Any] | None = None
    acts_outside: frozenset[str] = frozenset()
    view: MemberView = field(init=False, repr=False)
    # agent_facts()' cache: (resolution, organization, removed set, its size, it sorted,
    # facts by agent, routes by (sender, receivers)), made anew when any of the first
    # four changed
    _facts: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.view = MemberView(self.env)

    @property
    def team(self) -> tuple[str, ...]:
        """Agent ids in speaking order."""
        return self.resolved.team

    @property
    def roster(self) -> Team:
        """Ids and display names."""
        return self.resolved.roster

    def active(self) -> list[str]:
        """Agents not removed, in team order."""
        return [a for a in self.team if a not in self.removed]

    def role(self, agent: str) -> str | None:
        """The agent's role now: assigned by the organization, else chosen and granted
        (None for none, also when the organization's role is empty)."""
        assigned = self.resolved.role_of(agent)
        return self.roles.get(agent) if assigned == SELF_CHOSEN else assigned or None

    def role_in(self, fact: AgentFacts, agent: str) -> str | None:
        """:meth:`role` of ``agent`` read from its ``fact`` (:meth:`agent_fact`)."""
        return self.roles.get(agent) if fact.chooses_role else fact.role

    def agent_facts(self) -> dict[str, AgentFacts]:
        """Each agent's :class:`AgentFacts` under the organization in force, filled as
        agents are asked for (:meth:`agent_fact`); do not mutate.

        They are what every context of every round tells an agent: at 256 agents,
        looking each up again (its receivers less the removed: 255 names) for each of
        256 speakers a round cost more than the loop's other work per speaker. They are
        made anew whenever they could change: the organization resolved anew (a leader
        change, an election, a removal, a switch all replace :attr:`resolved`), another
        organization, or a member removed. A granted role is read when asked
        (:attr:`AgentFacts.chooses_role`), never kept.
        """
        return self._facts_now()[5]

    def agent_fact(self, agent: str) -> AgentFacts:
        """``agent``'s :class:`AgentFacts` (see :meth:`agent_facts`).

        Raises:
            ValueError: ``agent`` is not on the team.
        """
        facts = self._facts_now()[5]
        fact = facts.get(agent)
        if fact is None:
            r, org = self.resolved, self.organization
            receivers = r.receivers_of(agent)  # raises for an unknown agent
            assigned = r.role_of(agent)
            fact = facts[agent] = AgentFacts(
                name=self.roster.name(agent), instruction=r.instruction_for(agent),
                role=None if assigned == SELF_CHOSEN else assigned or None,
                chooses_role=assigned == SELF_CHOSEN,
                self_chosen_roles=org.self_chosen_roles or assigned == SELF_CHOSEN,
                can_message=tuple(b for b in receivers if b not in self.removed)
                if self.removed else receivers,
                rules=r.member_rules(agent))
        return fact

    def sorted_removed(self) -> tuple[str, ...]:
        """The removed agents, sorted (what contexts tell members; kept with
        :meth:`agent_facts`)."""
        return self._facts_now()[4]

    def _facts_now(self) -> tuple:
        cache, removed = self._facts, self.removed
        if (cache is None or cache[0] is not self.resolved or cache[1] is not self.organization
                or cache[2] is not removed or cache[3] != len(removed)):  # it only grows
            cache = self._facts = (self.resolved, self.organization, removed, len(removed),
                                   tuple(sorted(removed)), {}, {})
        return cache

    def routes(self) -> dict[tuple[str, Any], tuple[tuple[str, ...], tuple[str, ...]]]:
        """The round loop's routes of messages to named receivers under the organization
        in force: ``(sender, receivers) -> (delivered, dropped)`` (see
        :func:`~orgteams.organizations.rounds.phases._routed`), dropped with
        :meth:`agent_facts`."""
        return self._facts_now()[6]

    def grant_role(self, agent: str, role: str) -> None:
        """Grant ``agent`` the role it chose (its claim was settled in its favour) and,
        unless it held that role already (most claims of a round after the first), tell
        the ``role`` hooks."""
        if self.roles.get(agent) == role:
            return
        self.roles[agent] = role
        for hook in self.hooks.role:
            hook(self, agent)

    def shared_history(self) -> SharedHistory | None:
        """What members decide from under a ``from_history`` protocol (``shared``): the
        last rounds' outcomes and the earlier episodes' patterns; None otherwise."""
        if not PROTOCOL_FACTS[self.organization.protocol].from_history:
            return None
        return SharedHistory(tuple(self.outcomes[-HISTORY_ROUNDS:]),
                             self.patterns[-HISTORY_EPISODES:])

    def remember_round(self, actions: dict[str, ActionId], abstained: set[str]) -> None:
        """Record this round's outcome for the shared history (after the env step)."""
        new = {a: act for a, act in actions.items()
               if act not in ("continue", "wait") and a not in abstained}
        roles = {a: r for a in new if (r := self.role(a))}
        self.outcomes.append(RoundOutcome(self.round, new, roles, tuple(sorted(abstained)),
                                          sum(self.env.world.progress), self.round_tick))

    def pattern(self) -> EpisodePattern:
        """This episode as an :class:`EpisodePattern` (the runner keeps them)."""
        return EpisodePattern.of(bool(self.env.world.success), self.env.ticks,
                                 self.outcomes)

    def stop_requested(self) -> bool:
        """Whether ``should_stop`` gave a reason (asked until it does; also after every
        tick of the act phase's env step)."""
        if self.stop_reason is None and self.should_stop is not None:
            self.stop_reason = self.should_stop()
        return self.stop_reason is not None

    def ticked(self, before: Any, joint: dict[str, int], after: Any, infos: Any) -> None:
        """Call the ``tick`` hooks (the act phase's env step calls it after every tick)."""
        for hook in self.hooks.tick:
            hook(before, joint, after, infos)

    def check_stop(self) -> None:
        """End the episode here, before anything more is used, when asked to stop.

        Raises:
            EpisodeStopped: ``"interrupted"`` with ``should_stop``'s reason.
        """
        if self.stop_requested():
            raise EpisodeStopped("interrupted", self.stop_reason)

    def set_leaders(self, leaders: list[str]) -> None:
        """Put ``leaders`` in the top tier (only that tier: vice leaders stay where they
        are) and tell members whether they hold a leader's seat (any tier but the last:
        a vice leader leads its members; whom each orders is its ``rules.reports``)."""
        if list(leaders) != list(self.resolved.top_leaders):
            self.resolved = self.resolved.with_leaders(leaders)
        seats = set(self.resolved.leaders)
        for agent, member in self.members.items():
            member.set_leader(agent in seats)

    def switch(self, organization: Organization) -> None:
        """Put ``organization`` in force for the same team (the monitor's fallback, a
        regulate shock), resolved once for it; the members shocks removed stay out
        (their seats taken under its ``succession``).

        Raises:
            ValueError: It cannot be resolved for this team (the episode keeps the
                organization in force).
        """
        resolved = organization.resolve(self.roster, removed=self.resolved.removed)
        self.organization, self.resolved = organization, resolved  # both, or neither
        self.set_leaders(list(self.resolved.top_leaders))

    def remove(self, agent: str) -> None:
        """Take ``agent`` out of the team (a remove shock). Under the rules'
        ``succession`` its seat is taken now (``next``, and a mid leader's under
        ``elect``) and recorded as a ``succession`` event, or (``elect``, a top
        leader) the team votes at the start of this round."""
        before = self.resolved
        self.removed.add(agent)
        self.resolved = before.with_removed(agent)
        self.set_leaders(list(self.resolved.top_leaders))
        if (self.organization.rules.succession == "elect" and agent in before.top_leaders
                and self.active()):
            self.succession_vote = {"agent": agent, "before": before}
            return
        event = succession_event(before, self.resolved, agent, successor_of(before, agent),
                                 shock="remove")
        if event:
            self.event("succession", **event)

    def substitute(self, agent: str, member: TeamMember) -> None:
        """Another member plays ``agent`` from now on (a substitute shock)."""
        member.reset()
        self.members[agent] = member

    def succeed_substitute(self, agent: str) -> None:
        """Unless the rules' ``succession`` is ``none``, ``agent``'s substitute takes its
        seat: it is told whether it leads, and a leader's seat is a ``succession`` event."""
        if self.organization.rules.succession == "none":
            return
        member = self.members[agent]
        member.set_leader(agent in self.resolved.leaders)
        if agent in self.resolved.leaders:
            self.event("succession", agent=agent, role=self.resolved.role_of(agent),
                       successor=agent, member=member.model or None,
                       rule=self.organization.rules.succession, shock="substitute",
                       leaders=list(self.resolved.top_leaders), roles={}, channels={})

    def elected_successor(self, winner: str) -> None:
        """The succession vote's ``winner`` takes the removed top leader's place."""
        vote, self.succession_vote = self.succession_vote, None
        before = vote["before"]  # as resolved before the removal
        top = [winner if a == vote["agent"] else a for a in before.top_leaders]
        self.set_leaders([a for a in dict.fromkeys(top) if a not in self.removed])
        event = succession_event(before, self.resolved, vote["agent"], winner,
                                 shock="remove")
        if event:
            self.event("succession", **event)

    def emit(self, line: DecisionLine | EventLine) -> None:
        """Send one log line to the ``record`` subscribers."""
        for hook in self.hooks.record:
            hook(line)

    def event(self, type_: str, **data: Any) -> None:
        """Record a team-level event of this round (an :class:`EventLine`)."""
        event = EventLine(round=self.round, tick=self.env.ticks, type=type_, data=data)
        self.events.append(event)
        self.emit(event)


def check_members(team: list[str] | tuple[str, ...], members: dict[str, Any]) -> None:
    """Members must cover exactly ``team`` and implement :class:`TeamMember`.

    Raises:
        ValueError: A missing or extra agent, or a member missing part of the protocol.
    """
    if sorted(members) != sorted(team):
        raise ValueError(f"members must cover exactly the env's agents {list(team)}, "
                         f"got {sorted(members)}")
    for agent, member in members.items():
        check_member(agent, member)


def check_member(agent: str, member: Any) -> None:
    """``member`` implements :class:`TeamMember` (the one place a member is probed).

    Raises:
        ValueError: What it misses, in one line.
    """
    missing = [n for n in TeamMember.__annotations__.keys() | _METHODS if not hasattr(member, n)]
    if missing:
        raise ValueError(f"member {agent} ({type(member).__name__}) does not implement "
                         f"TeamMember: missing {', '.join(sorted(missing))}")


_METHODS = frozenset({"reset", "observe", "receive", "communicate", "act", "set_leader"})


def update_leadership(state: EpisodeState) -> None:
    """Leadership at the start of a round: round 0 tells members who leads; under
    ``round_robin`` / ``most_progress`` the leader changes (a ``leader_change`` event)."""
    org, resolved = state.organization, state.resolved
    if state.round == 0:  # the top tier as resolved: tells members who leads
        state.set_leaders(list(resolved.top_leaders))
    if org.leadership_rule in ("round_robin", "most_progress") and len(state.team) > 1:
        current = state.resolved.leaders[0] if state.resolved.leaders else None
        leader = leader_for_round(state.resolved, state.round, current=current,
                                  progress=dict(state.placed))
        if leader != current:
            state.set_leaders([leader])
            state.event("leader_change", leader=leader, rule=org.leadership_rule)


async def play_round(state: EpisodeState) -> None:
    """One decision round: round-start hooks, leadership, communicate, act, round-end hooks."""
    for hook in state.hooks.round_start:
        hook(state)
    update_leadership(state)
    abstained = await communicate_phase(state)
    state.mid_task_abstained = set()
    await act_phase(state, abstained)
    state.progress.append(sum(state.env.world.progress))
    for hook in state.hooks.round_end:
        hook(state)


async def play_rounds(state: EpisodeState, max_rounds: int | None = None) -> None:
    """Play rounds until the env ends the episode or ``max_rounds`` rounds were played.

    Each act phase steps the env with the ``tick`` hooks (called after the env's own
    ``on_tick``) and ``state.should_stop`` for that step alone: the env's own hooks are
    never replaced.

    Raises:
        EpisodeStopped: ``state.should_stop`` gave a reason (``"interrupted"``).
    """
    env = state.env
    while env.agents and (max_rounds is None or state.round < max_rounds):
        state.check_stop()
        await play_round(state)
        state.round += 1
