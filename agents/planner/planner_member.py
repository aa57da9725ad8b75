"""Planner and random agents as team members, so teams can mix them with LLM agents.

:class:`PlannerMember` adapts :class:`~orgteams.agents.planner.planner.PlannerAgent` to the
:class:`~orgteams.agents.member.TeamMember` interface the team runner drives.
Its structured messages (claims, found, assign, done, status, correct) travel through
the runner like any other message, along the organization's channels, so an
organization changes what planners know and therefore what they do.

A planner follows the organization's rules (``ctx.rules``, a
:class:`~orgteams.agents.member_rules.MemberRules`): a top leader assigns subgoals
only under ``assign_work: leader``; under ``self`` nobody announces or respects
claims; reports (``found``, ``done``, a ``status`` every round) are sent or not by
``report_when`` and go to ``report_to``; the message budget drops what is over it
(most important kept: orders, corrections, releases and claims, then reports; a
turn's release goes before its claims, so teammates never hear a new claim undone);
members correct a leader only under ``corrections``; ballots follow the election rule
(:func:`~orgteams.agents.member_rules.choose_vote`); with ``allow_abstain`` a planner
with nothing useful to do abstains; with self-chosen roles it claims one of
:data:`~orgteams.agents.member_rules.ROLE_VOCABULARY`.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from dataclasses import replace
from typing import NamedTuple

from orgteams.agents.member import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    DecisionRecord,
    MemberBase,
    TeamMessage,
)
from orgteams.agents.member_rules import MemberRules, choose_vote, within_budget
from orgteams.agents.messages import EVERYONE, Handed, Seen, of_kind, render, unseen
from orgteams.agents.planner.planner import PlannerAgent
from orgteams.agents.shared_context import RoundOutcome, as_claims
from orgteams.agents.view import MemberView

PRIORITY = ("assign", "correct", "release", "claim", "done", "found", "status")
"""Message kinds, most important first: what a budget keeps, and the order a turn
sends them in (a release before a claim: the object given up is free before the
next claim is heard, never after it)."""


def priority(m: TeamMessage) -> float:
    """Where ``m`` ranks under :data:`PRIORITY` (lower is kept first); a room report
    (``done`` with ``room``) ranks after ``found``: where goal objects are matters more."""
    if m.kind == "done" and "room" in m.content:
        return PRIORITY.index("found") + 0.5
    return PRIORITY.index(m.kind) if m.kind in PRIORITY else len(PRIORITY)
_NOT_UNDERSTOOD = frozenset(("text", "action"))  # kinds a planner does not read
_NOT_UNDERSTOOD_NOR_CLAIMS = _NOT_UNDERSTOOD | {"claim", "release"}  # rules without claims
REPORTS = {"found": ("on_new_information", "every_round"),
           "done": ("on_new_information", "every_round", "on_completion"),
           "status": ("every_round",)}
"""Report kinds and the ``report_when`` values under which they are sent."""
_ROLE_OF = {"grab": "gatherer", "put": "placer", "explore": "explorer", "check": "explorer"}


def _progress(planner: PlannerAgent) -> dict[str, tuple[int, int]]:
    """What each agent achieved as far as ``planner`` knows: ``(placed, found)`` goal
    objects (the ``progress`` election rule votes for the most)."""
    agents = set(planner.placed_by) | set(planner.found_by)
    return {a: (planner.placed_by[a], planner.found_by[a]) for a in agents}


def _parsed(m: TeamMessage) -> dict:
    """A planner's message as its decision record shows it."""
    return {"sender": m.sender, "receivers": m.receivers_json(), "kind": m.kind,
            "content": dict(m.content), "text": m.text}


def _known_choices(ctx: CommunicateContext) -> list[TeamMessage]:
    """What the protocol shows of others' actions, as claims: earlier agents' chosen
    actions this round (``sequential``) and the latest round of the shared history
    (``shared``)."""
    me = ctx.agent
    chosen = of_kind(ctx.visible_this_round, "action", _chosen_claims)
    if len({sender for sender, _ in chosen}) == len(chosen):
        # each chosen action's claims, made once for the round's 256 readers (the same
        # messages as_claims makes of them all: one action a sender, in the order chosen)
        out = [c for sender, claims in chosen if sender != me for c in claims]
    else:  # a sender chose twice: its latest action, where it chose first
        out = as_claims({m.sender: m.content["action"]
                         for m in of_kind(ctx.visible_this_round, "action")}, me, tick=-1)
    if ctx.history is not None and ctx.history.rounds:
        out += [m for m in _history_claims(ctx.history.rounds[-1]).claims
                if m.sender != ctx.agent]
    return out


def _chosen_claims(action: TeamMessage) -> tuple[str, list[TeamMessage]]:
    """A chosen action (an ``action`` output) as its sender's claims, decided before
    the reader this round (:func:`as_claims`, whose "" is nobody: the sender's own)."""
    return action.sender, as_claims({action.sender: action.content["action"]}, "", tick=-1)


class _RoundClaims(NamedTuple):
    """A history round's claims (:func:`_history_claims`) and what every reader derives
    alike from them, made once for the team."""

    claims: list[TeamMessage]
    keys: list[object]  # each claim's said_id
    born: float  # the earliest said_id's born (-1: one is not a made said_id)
    at: dict[str, int] | None  # sender -> the place of its claim; None: one says two
    borns: list[float]  # each said_id's born (as ``born``), ascending
    by_born: list[int]  # the places of the claims in that order
    # the said_ids a reader that claimed nothing had heard -> the Handed list of the
    # others (every reader that heard the same ones is handed it)
    unheard: dict[frozenset, Handed]


_last_claims: tuple = (None, None)  # (a round of the shared history, its _RoundClaims)


def _history_claims(last: RoundOutcome) -> _RoundClaims:
    """Every agent's claims of the shared history's round ``last`` (:func:`as_claims`),
    made once for the team: every agent of a 256-agent team reads the same round."""
    global _last_claims
    outcome, made = _last_claims  # one read: episodes in other threads replace it
    if outcome is not last:
        # "" is nobody: all agents; one list handed to every reader that claimed nothing
        claims = Handed(as_claims(last.actions, "", tick=last.tick))
        keys = [m.said_id for m in claims]
        at = {m.sender: i for i, m in enumerate(claims)}
        borns = [getattr(k, "born", -1) for k in keys]
        by_born = sorted(range(len(keys)), key=borns.__getitem__)
        made = _RoundClaims(claims, keys, min(borns, default=math.inf),
                            at if len(at) == len(claims) else None,
                            [borns[j] for j in by_born], by_born, {})
        _last_claims = (last, made)
    return made


def _forget(planner: PlannerAgent, removed: tuple[str, ...]) -> None:
    """Claims and assignments of agents taken out of the team lapse (shocks), and so
    does an order from a removed leader (its successor gives the orders now)."""
    gone = set(removed)
    if planner.assigner in gone:
        planner.assignment = planner.assigner = None
    for obj in [o for o, (who, _) in planner.claims.items() if who in gone]:
        del planner.claims[obj]
    for agent in gone & set(planner.room_claims):
        del planner.room_claims[agent]
    for key in [k for k, who in planner.assigned.items() if who in gone]:
        del planner.assigned[key]


class PlannerMember(MemberBase):
    """A :class:`PlannerAgent` on a team. ``leader=True`` makes it assign subgoals
    (when the organization's rules say the leader assigns work)."""

    model = "planner"
    acts_every_round = True  # it may drop a plan whose object a teammate claimed first
    decides_at_once = True  # scripted: nothing to await

    def __init__(self, agent_id: str, leader: bool = False):
        self.agent_id = agent_id
        self.planner = PlannerAgent(agent_id, role="leader" if leader else "member")
        self._seen = Seen()  # said_id of every message it took in, and its latest cuts
        self._status: tuple[int, str] | None = None  # (round, status) last reported
        self._spent = (-1, 0, 0)  # (round, messages, tokens) sent that round

    @property
    def claims(self) -> bool:
        """It announces and respects claims (the rules' ``assign_work`` is not ``self``)."""
        return self.planner.rules.claims

    def reset(self) -> None:
        """Starts a new episode: a fresh planner in the same role, nothing seen or sent yet."""
        self.planner = PlannerAgent(self.agent_id, role=self.planner.role)
        self._seen.clear()
        self._status = None
        self._spent = (-1, 0, 0)

    def set_leader(self, leader: bool) -> None:
        """Called by the runner when leadership changes (elections, dynamic rules)."""
        self.planner.role = "leader" if leader else "member"

    def _fresh(self, messages: list[TeamMessage], observed: bool = False
                ) -> list[TeamMessage]:
        """Messages not seen before; ``observed``: claims derived from actions the
        protocol showed it (kept even when the rules have no claiming: seen, not said)."""
        return self._unseen(messages, () if observed or self.claims else ("claim", "release"))

    def _fresh_known(self, ctx: CommunicateContext) -> list[TeamMessage]:
        """:meth:`_fresh` of :func:`_known_choices` (observed). Under ``shared`` (nothing
        of this round shown: the others' claims of the latest history round) each of
        256 planners reads the same ~30 claims a round, all of them new: when every one
        was made after its set of what it heard last grew, none can be in it and each
        is said once (one a sender), so all the others' are fresh, found without a
        lookup and without copying the list claim by claim. When some were made before
        (an agent claiming again what it claimed before says the same said_id), only
        those are looked up."""
        history, seen = ctx.history, self._seen
        if ctx.visible_this_round or history is None or not history.rounds \
                or type(seen) is not Seen:
            return self._fresh(_known_choices(ctx), observed=True)
        made = _history_claims(history.rounds[-1])
        claims, keys, born, at = made[:4]
        if at is None:
            return self._fresh(_known_choices(ctx), observed=True)
        i = at.get(ctx.agent)  # its own claim, left out
        # one that claimed nothing is handed the list itself, one that did the list less
        # its own claim, which knows it (either way its intake is shared)
        others = Handed.less(claims[:i] + claims[i + 1:], claims, ctx.agent) \
            if i is not None else claims
        if born < seen.grown:  # some may be in its set
            return self._fresh_of_old(made, i, others)
        seen.update(keys[:i] + keys[i + 1:] if i is not None else keys)
        return others

    def _fresh_of_old(self, made: _RoundClaims, i: int | None, others: list[TeamMessage]
                      ) -> list[TeamMessage]:
        """:meth:`_fresh` of ``others`` (the claims of ``made`` less its own, the
        ``i``-th), looking up only those whose said_id was made before its set of what
        it heard last grew (a said_id made later cannot be in it): most of a round's
        claims are new, a few said again. Readers that claimed nothing and had heard
        the same ones are handed one list."""
        seen, claims, keys = self._seen, made.claims, made.keys
        cut = bisect_left(made.borns, seen.grown)
        old = [claims[j] for j in made.by_born[:cut] if j != i]
        fresh = self._fresh(old, observed=True)  # looked up, and marked heard
        later = [keys[j] for j in made.by_born[cut:] if j != i]  # made since: not heard
        if later:
            seen.update(later)
        if len(fresh) == len(old):  # none heard before
            return others
        fresh_ids = set(map(id, fresh))
        heard = frozenset(m.said_id for m in old if id(m) not in fresh_ids)
        if i is not None:
            return [m for m in others if m.said_id not in heard]
        out = made.unheard.get(heard)
        if out is None:
            out = made.unheard[heard] = Handed(m for m in others if m.said_id not in heard)
        return out

    def _fresh_structured(self, messages: list[TeamMessage]) -> list[TeamMessage]:
        """The structured messages a planner understands (free text is ignored) among
        ``messages``, as :meth:`_fresh` keeps them, in one pass: under ``shared`` each
        of 256 planners reads 256 status reports a round, most of them repeats."""
        return self._unseen(messages, _NOT_UNDERSTOOD if self.claims
                            else _NOT_UNDERSTOOD_NOR_CLAIMS, structured=True)

    def _unseen(self, messages: list[TeamMessage], skip, structured: bool = False
                ) -> list[TeamMessage]:
        """``messages`` of no kind in ``skip`` (and, ``structured``, with content) not
        seen before, in order; marks them seen (:func:`unseen`: a cut of a broadcast
        is read from keys the team's readers share)."""
        if not messages and type(messages) is list:
            return []  # nothing shown (under shared: every planner, every turn)
        return unseen(messages, self._seen, skip, structured)

    def receive(self, messages: list[TeamMessage]) -> None:
        """Hands the structured messages delivered to this member to its planner."""
        self.planner.receive(self._fresh_structured(messages))

    async def communicate(self, ctx: CommunicateContext, env: MemberView) -> CommunicateDecision:
        """The planner's structured messages for this stage, or its ballot in a vote."""
        start = time.perf_counter()
        record = DecisionRecord.fresh("communicate", self.agent_id, ctx.round, self.model)
        rules = self.planner.rules = ctx.rules
        if ctx.stage_kind == "vote":
            vote = choose_vote(rules, self.agent_id, ctx.candidates or [self.agent_id],
                               ctx.round, _progress(self.planner))
            record.parsed = {"vote": vote, "rule": rules.vote}
            record.wall = time.perf_counter() - start
            return CommunicateDecision([], None, False, vote, "", record)
        if ctx.removed:
            _forget(self.planner, ctx.removed)
        fresh = self._fresh_structured(ctx.visible_this_round)
        known = self._fresh_known(ctx)
        if fresh:  # taken in as handed, before what it knows of others' choices: a list
            self.planner.receive(fresh)  # handed alike to many is read alike (intake)
        heard = self.planner.communicate(env, known, ctx.can_message)  # updates its claims
        said = self._by_rules(heard, rules, env, ctx)
        if not ctx.can_message and said:  # nobody to tell: silent, and the record says so
            record.notes.append(f"no teammate may be messaged: {len(said)} message(s) not "
                                "said: " + ", ".join(m.kind for m in said))
            said = []
        spent = self._spent if self._spent[0] == ctx.round else (ctx.round, 0, 0)
        if rules.max_messages is None and rules.max_tokens is None:
            over: list[TeamMessage] = []  # no budget (most teams): all of it is said
        else:
            said, over = within_budget(said, rules, lambda m: ctx.count_tokens(m.text),
                                       spent[1:])
        self._spent = (ctx.round, spent[1] + len(said),  # tokens matter only under a budget
                       spent[2] + (sum(ctx.count_tokens(m.text) for m in said)
                                   if rules.max_tokens is not None else 0))
        abstain = self.planner.abstaining and ctx.allow_abstain
        role = self._role(env, abstain) if ctx.self_chosen_roles else ctx.role
        record.parsed = {"messages": [_parsed(m) for m in said], "abstain": abstain,
                         "role": role, "rules": {"assign_work": rules.assign_work,
                                                 "report_when": rules.report_when}}
        if over:
            record.notes.append(f"budget: {len(over)} message(s) not sent: "
                                + ", ".join(m.kind for m in over))
        record.wall = time.perf_counter() - start
        return CommunicateDecision(said, role, abstain, None, "", record)

    def _by_rules(self, messages: list[TeamMessage], rules: MemberRules, env: MemberView,
                  ctx: CommunicateContext) -> list[TeamMessage]:
        """The planner's messages as the rules allow: claims only when claiming, reports
        by ``report_when`` to ``report_to``, a status every round when the rules ask,
        most important first; each stamped with the round and its text rendered with
        the team's names, in one copy (a 256-agent team says hundreds a round)."""
        every_round = rules.report_when == "every_round"
        if not messages and not every_round:
            return []  # nothing to say (most of a 256-agent team, most rounds)
        to = rules.report_to if rules.report_to is not None else EVERYONE
        round, names = ctx.round, ctx.team
        out = []
        for m in messages:
            if m.kind in ("claim", "release") and not rules.claims:
                continue
            receivers = m.receivers
            if m.kind in REPORTS:
                if rules.report_when not in REPORTS[m.kind]:
                    continue
                if "by" not in m.content:  # a relay to peer leaders keeps its receivers
                    receivers = to
            text = render(m.kind, m.content, m.text, names)
            # what replace() makes, made unchecked where the receivers are of the form
            # the constructor keeps (its own, the rules' tuple, or everyone)
            out.append(TeamMessage.unchecked(m.sender, receivers, text, m.kind, round, m.stage,
                                             m.content, m.delivered, m.role, m.abstained)
                       if type(m) is TeamMessage and (receivers == EVERYONE
                                                      or type(receivers) is tuple)
                       else replace(m, receivers=receivers, round=round, text=text))
        if every_round:
            doing = self.planner.status(env)
            if self._status != (ctx.round, doing):  # once a round, again if it changed
                self._status = (ctx.round, doing)
                held = tuple(sorted(env.memory(self.agent_id).held))
                content = {"doing": doing, "holding": held}
                text = render("status", content)
                # 256 statuses a round: made unchecked where the receivers are of the
                # form the constructor keeps (the rules' tuple, or everyone)
                out.append(TeamMessage.unchecked(self.agent_id, to, text, "status", round, 0,
                                                 content, None, None, False)
                           if to == EVERYONE or type(to) is tuple else
                           TeamMessage(self.agent_id, to, text, "status", round,
                                       content=content))
        # one message (a status, most of a 256-agent team's turns) is in order already
        return sorted(out, key=priority) if len(out) > 1 else out

    def _role(self, env: MemberView, abstain: bool) -> str:
        """Its self-chosen role, from what it will do (:data:`ROLE_VOCABULARY`)."""
        if abstain:
            return "standby"
        if self.planner.role == "leader" and self.planner.rules.assigns:
            return "coordinator"
        doing = self.planner.status(env)
        return _ROLE_OF.get(doing.partition(":")[0], "standby")

    async def act(self, env: MemberView, round: int, ctx: ActContext | None = None) -> ActDecision:
        """The planner's next high-level action for this round, as an :class:`ActDecision`."""
        start = time.perf_counter()
        action = self.planner.act(env)
        parsed: dict = {"action": action}
        if self.planner.depends_on:  # whose order or claim it acts on (dependency_graph)
            parsed["depends_on"] = dict(self.planner.depends_on)
        record = DecisionRecord.fresh("act", self.agent_id, round, self.model, parsed)
        record.wall = time.perf_counter() - start
        return ActDecision(action, "", record)


class RandomMember(MemberBase):
    """A :class:`RandomAgent` on a team: silent, uniformly random high-level actions."""

    model = "random"
    acts_every_round = False
    decides_at_once = True

    def __init__(self, agent_id: str, seed: int | None = None):
        from orgteams.agents.random_agent import RandomAgent

        self.agent_id = agent_id
        self.agent = RandomAgent(agent_id, seed)

    async def communicate(self, ctx: CommunicateContext, env: MemberView) -> CommunicateDecision:
        """Says nothing; in a vote, casts a ballot by the organization's election rule."""
        record = DecisionRecord.fresh("communicate", self.agent_id, ctx.round, self.model)
        vote = None
        if ctx.stage_kind == "vote" and ctx.candidates:  # ballots follow the election rule
            vote = choose_vote(ctx.rules, self.agent_id, ctx.candidates, ctx.round)
            record.parsed = {"vote": vote, "rule": ctx.rules.vote}
        return CommunicateDecision([], None, False, vote, "", record)

    async def act(self, env: MemberView, round: int, ctx: ActContext | None = None) -> ActDecision:
        """A uniformly random action among those available to this member."""
        action = self.agent.act(env)
        record = DecisionRecord.fresh("act", self.agent_id, round, self.model,
                                      {"action": action})
        return ActDecision(action, "", record)
