"""The two phases of a decision round, as plain functions over an :class:`EpisodeState`.

:func:`communicate_phase` runs the organization's stages
(:func:`~orgteams.organizations.protocols.schedule.schedule`) in order, the speakers of a stage
concurrently (``asyncio.gather``), each seeing only what the protocol shows it; each
message is routed along allowed channels, indexed by receiver, and delivered at the
end of the phase. :func:`act_phase` asks, concurrently, every agent that must decide
(and members that act every round) for one high-level action, replaces an
unavailable one by the one fallback rule
(:func:`~orgteams.agents.member.safe_action`) and steps the env.

Neither writes a file or draws: they send log lines (typed:
:class:`~orgteams.agents.records.MessageLine`, :class:`~orgteams.agents.records.ActionLine`),
messages and stage ends to the state's hooks.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from orgteams.agents.member import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    TeamMessage,
    safe_action,
)
from orgteams.agents.member_rules import within_budget
from orgteams.agents.messages import EVERYONE
from orgteams.agents.records import ActionLine, DecisionLine, MessageLine
from orgteams.agents.shared_context import SharedHistory, action_output
from orgteams.envs.highlevel.highlevel_env import HighLevelAction, HighLevelEnv
from orgteams.envs.highlevel.space import ActionId, is_primitive
from orgteams.organizations.protocols.facts import PROTOCOL_FACTS
from orgteams.organizations.protocols.schedule import (
    Inboxes,
    RoundOutputs,
    Stage,
    record_election,
    resolve_claims,
    route,
    schedule,
    visible_outputs,
)
from orgteams.organizations.rounds.status import EpisodeStopped

if TYPE_CHECKING:  # the loop (episode.py) calls the phases; they only read its state
    from orgteams.organizations.rounds.episode import EpisodeState

__all__ = ["act_phase", "communicate_phase", "decide_actions", "deliver_held"]

TRACKED = ("grab", "explore", "check")  # kinds whose targets two agents should not share


async def _all(state: EpisodeState, agents: Sequence[str], calls,
               line: type[DecisionLine], **fields: Any) -> list:
    """The members' decisions, asked concurrently (one call is awaited without a task).

    Each decision's record goes to the ``called`` hooks in the order the calls finished,
    so a stop on failed calls counts them exactly however many ran at once. When a hook
    stops the episode (:class:`~orgteams.organizations.rounds.status.EpisodeStopped`),
    nothing more is used or started: every decision of these calls is written to the
    log as it is (an unused ``line`` with ``fields``, which give its phase, kind and
    stage; a note says it was not used, and, for one that finished after the stop's
    call, that it was not counted), then the stop goes on. Calls already running are
    let finish so that every request they made is on record. (The line's class and
    fields, not a ``partial`` of it: one was made per stage, 256 a round.)
    """
    calls = list(calls)
    finished: list[int] = []  # indexes of the calls, in the order they finished
    if len(calls) == 1:
        results = [await calls[0]]
        finished.append(0)
    elif all(getattr(state.members.get(a), "decides_at_once", False) for a in agents):
        # members that never await (planners): each call runs to its end at once, in
        # order, as their tasks would; 256 tasks a phase cost more than the decisions
        results = _at_once(calls)
        finished.extend(range(len(calls)))
    else:
        tasks = [asyncio.ensure_future(c) for c in calls]
        for i, task in enumerate(tasks):  # done callbacks run in the order tasks finish
            task.add_done_callback(lambda _t, i=i: finished.append(i))
        results = list(await asyncio.gather(*tasks))
    if not state.hooks.called:
        return results
    for n, i in enumerate(finished):
        try:
            for hook in state.hooks.called:
                hook(state, results[i].record)
        except EpisodeStopped as stop:
            for j in finished[n + 1:]:
                results[j].record.notes.append(f"not counted: finished after the call "
                                               f"that stopped the episode ({stop.reason})")
            for agent, d in zip(agents, results):
                d.record.notes.append(f"not used: the episode stopped ({stop.reason})")
                state.emit(line(round=state.round, agent=agent, call=d.record,
                                tick=state.env.ticks, thoughts=d.thoughts, unused=True,
                                **fields))
            raise
    return results


def _at_once(calls: list) -> list:
    """The results of coroutines that never await (``decides_at_once`` members), run
    one after another to their end; one that awaits is our bug, and says so.

    They are awaited in one coroutine run by one ``send``: a coroutine sent to its end
    raises :class:`StopIteration`, and catching one per call (256 a phase) cost more
    than awaiting them, which ends none with an exception."""
    results: list = []

    async def in_turn() -> None:
        for call in calls:
            results.append(await call)

    runner = in_turn()
    try:
        runner.send(None)
    except StopIteration:
        return results
    else:
        raise RuntimeError(f"{calls[len(results)].__qualname__} awaited, but its member "
                           "decides_at_once")
    finally:
        runner.close()
        for call in calls[len(results):]:
            call.close()


# A record the loop makes per speaker or decision (256 of each a round at 256 agents) is
# made as ``line = _blank(Cls); line.__init__(field=..., ...)``: what ``Cls(field=...)``
# makes, but its keywords reach the generated ``__init__`` as they are, where a class
# called with keywords first packs them into a dict (CPython 3.11): that took half the
# cost of making a context or a log line of a dozen and more fields.
_blank = object.__new__


class _Told(NamedTuple):
    """What every communicate context of a phase is told alike, read once for the phase
    (under ``sequential`` at 256 agents a phase has 256 stages): the phase's id -> name
    copy, the removed (sorted) and the shared history. None of them changes during a
    phase: members are removed and the organization switched only between rounds, and
    the history grows after the act phase."""

    team: dict[str, str]
    removed: tuple[str, ...]
    history: SharedHistory | None


def _contexts(state: EpisodeState, stages: list[Stage], si: int, outputs: RoundOutputs,
              told: _Told) -> dict[str, CommunicateContext]:
    """What each speaker of ``stages[si]`` is told. What is the same for all of them (a
    vote's candidates) is made once for the stage, what is the same for the phase
    (``told``) once for the phase: a 256-agent stage made 256 of each; what the
    organization tells each speaker (its name, instruction, receivers, rules) is read
    from :meth:`EpisodeState.agent_facts`, kept until the organization is resolved anew."""
    org, stage = state.organization, stages[si]
    team, removed, history = told
    candidates = state.active() if stage.kind == "vote" else None
    facts, fact = state.agent_facts(), state.agent_fact
    ctxs = {}
    for agent in stage.speakers:
        f = facts.get(agent) or fact(agent)
        ctx = ctxs[agent] = _blank(CommunicateContext)  # see _blank
        ctx.__init__(
            round=state.round, agent=agent, name=f.name,
            team=team, instruction=f.instruction,
            role=state.role_in(f, agent), allow_abstain=org.allow_abstain,
            self_chosen_roles=f.self_chosen_roles,
            can_message=f.can_message,
            visible_this_round=visible_outputs(stages, si, agent, outputs),
            stage_kind=stage.kind, candidates=None if candidates is None else list(candidates),
            removed=removed, history=history, rules=f.rules,
            tokenizer=state.tokenizer)
    return ctxs


async def communicate_phase(state: EpisodeState, speakers: list[str] | None = None
                            ) -> set[str]:
    """Run this round's communicate stages; returns the agents that abstained.

    Args:
        state: The episode.
        speakers: Who speaks this round (default: every active agent).
    """
    org, active = state.organization, state.active()
    for hook in state.hooks.phase:
        hook(state, "communicate")
    stages = schedule(state.resolved, active if speakers is None else speakers, state.round)
    if state.succession_vote is not None and not (stages and stages[0].kind == "vote"):
        # succession: elect - the team elects the removed leader's successor first
        stages.insert(0, Stage(tuple(active), "none_this_round", "vote"))
    outputs = RoundOutputs(state.team)  # keeps what each agent may see
    inbox = Inboxes(state.team)  # messages by receiver, delivered at the end of the phase
    abstained: set[str] = set()
    state.abstained = abstained
    team = dict(state.roster.by_id)  # one copy per phase, shared by the contexts
    told = _Told(team, state.sorted_removed(), state.shared_history())
    view = state.view  # members read the episode through it, never the env
    for member in state.members.values():
        member.observe(view)
    spent: dict[str, tuple[int, int]] = {}  # messages and tokens each sent this round
    members, allow = state.members, org.allow_abstain
    si = 0
    while si < len(stages):  # leader_first, sequential at 256 agents: 256 stages a round
        stage = stages[si]
        speakers = stage.speakers
        ctxs = _contexts(state, stages, si, outputs, told)
        decisions = await _all(state, speakers,
                               [members[a].communicate(ctxs[a], view) for a in speakers],
                               MessageLine, phase="communicate", stage=si, kind=stage.kind)
        state.check_stop()  # e.g. a person's window closed while they were asked
        votes, claims = {}, {}
        for agent, d in zip(speakers, decisions):
            ctx = ctxs[agent]
            if d.abstain and allow:
                abstained.add(agent)
            if d.role and (org.self_chosen_roles or ctx.self_chosen_roles):
                claims[agent] = d.role
            if stage.kind == "vote" and d.vote in active:
                votes[agent] = d.vote
            if d.messages:
                _drop_undeliverable(state, agent, d)
                _budget(d, ctx, spent)
            outputs += _route(state, si, stage, agent, d, ctx, inbox)
        for hook in state.hooks.decided:
            hook(state, [d.record for d in decisions])
        if stage.kind == "vote" and (votes or state.succession_vote is not None):
            leaders = [a for a in state.resolved.leaders if a not in state.removed]
            incumbent = leaders[0] if leaders and state.succession_vote is None else None
            election = record_election(state.round, votes, order=active, incumbent=incumbent)
            state.event("election", **asdict(election))
            if state.succession_vote is not None:
                state.elected_successor(election.winner)
            else:
                state.set_leaders([election.winner])
            stages = stages[:si + 1] + schedule(state.resolved, active, state.round,
                                                with_election=False)
        if claims:
            granted = resolve_claims(claims, order=state.team) if stage.kind == "claim" \
                else claims
            for agent, role in granted.items():
                if role is None:
                    state.event("claim_refused", agent=agent, role=claims[agent])
                else:
                    state.grant_role(agent, role)
        if stage.acts:  # after its role was granted: it acts in the role it chose
            outputs += await _act_in_turn(state, si, stage, abstained, ctxs, inbox, team)
        for hook in state.hooks.stage:
            hook(state)
        si += 1
    if PROTOCOL_FACTS[org.protocol].from_history:
        state.undelivered = inbox  # decisions from history only: heard after acting
    else:
        _deliver(state, inbox)
    return abstained


def deliver_held(state: EpisodeState) -> None:
    """Deliver the messages a ``from_history`` protocol held back this round (``shared``:
    heard after acting); nothing when none are held. :func:`act_phase` calls it after
    the env step; callers that decide with :func:`decide_actions` alone call it after."""
    if state.undelivered is not None:
        _deliver(state, state.undelivered)
        state.undelivered = None


def _deliver(state: EpisodeState, inbox: Inboxes, agents: Sequence[str] | None = None
             ) -> None:
    """Each of ``agents`` (default: the team, in team order) receives what was routed
    to it and not yet delivered."""
    for agent in state.team if agents is None else agents:
        messages = inbox.take(agent)
        if messages and agent not in state.removed and agent in state.members:
            state.members[agent].receive(messages)  # a player beside the team has none


async def _act_in_turn(state: EpisodeState, si: int, stage: Stage, abstained: set[str],
                       ctxs: dict[str, CommunicateContext], inbox: Inboxes,
                       team: dict[str, str]) -> list[TeamMessage]:
    """The speakers of an ``acts`` stage decide their actions now, each seeing what it
    saw when it spoke; returns their chosen actions as public outputs (kind ``action``).

    What was delivered to them so far is delivered before they decide (the rest of the
    round's messages come at the end of the phase). ``ctxs``: the stage's communicate
    contexts, whose ``visible_this_round`` is what each saw (the same list, not found
    again: a stage's own outputs are never visible to it); ``team``: the phase's
    id -> name copy, shared by its contexts.
    """
    env = state.env
    deciders = [a for a in stage.speakers if a not in abstained and _may_act(state, a)]
    _deliver(state, inbox, deciders)
    visible = {a: ctxs[a].visible_this_round for a in deciders}
    actions, chosen = await decide_actions(state, abstained, deciders, visible, team=team) \
        if deciders else ({}, {})  # one stage a speaker (sequential): often nobody to ask
    for hook in state.hooks.decided:
        hook(state, [d.record for d in chosen.values()])
    state.check_stop()
    out = []
    for a in deciders:
        state.early_actions[a] = (actions[a], chosen[a])
        if actions[a] != "continue":
            out.append(action_output(a, actions[a], _label(env, a, actions[a]), state.round,
                                     si))
    return out


def _label(env: HighLevelEnv, agent: str, action: ActionId) -> str:
    """The label of ``agent``'s chosen ``action``: that of the action offered to it with
    this id, else (a primitive, never offered) the id itself.

    An offered action is ``HighLevelAction.make(kind, target)`` of its id's kind and
    target, so its label is read from the id (an id has one label whoever is offered
    it) once :meth:`~HighLevelEnv.is_available` says it is offered: listing the ~100
    offered actions to find it cost more than the rest of a ``sequential`` turn."""
    if not env.is_available(agent, action):
        return action
    kind, _, target = action.partition(":")
    return HighLevelAction.make(kind, target).label


def _may_act(state: EpisodeState, agent: str) -> bool:
    """Whether the round loop asks ``agent`` for an action now: a member (not one that
    acts outside the loop) whose plan ended or that acts every round."""
    member = state.members.get(agent)
    return member is not None and agent not in state.acts_outside and (
        state.env.needs_decision(agent) or member.acts_every_round)


def _drop_undeliverable(state: EpisodeState, agent: str, d: CommunicateDecision) -> None:
    """Messages no receiver can get (no channel, or every receiver removed) are not
    sent, by any member kind: they would count as sent tokens that nobody heard. The
    decision record says what was dropped."""
    if not d.messages:
        return
    reach = [_reaches(state, agent, m.receivers) for m in d.messages]
    if not all(reach):
        gone = [m.kind for m, ok in zip(d.messages, reach) if not ok]
        d.messages = [m for m, ok in zip(d.messages, reach) if ok]
        d.record.notes.append(f"undeliverable: {len(gone)} message(s) no teammate can "
                              "receive not sent: " + ", ".join(gone))


def _routed(state: EpisodeState, agent: str, receivers) -> tuple[Sequence[str], Sequence[str]]:
    """:func:`route` of a message of ``agent`` to ``receivers``, ``(delivered, dropped)``,
    read only: to everyone, the resolution's own tuples, not copies of them (under
    ``shared`` at 256 agents every member says something to everyone, each a copy of
    255 names, twice); to named receivers, kept per resolution
    (:meth:`~orgteams.organizations.rounds.episode.EpisodeState.routes`: at 256 agents
    hundreds of reports a round go to the same leader). A route is a function of the
    sender, the receivers and the resolution alone, so a kept one is the one
    :func:`route` gives; the cache is emptied when it grows past
    :data:`_ROUTES_KEPT` (receivers named in ever new ways)."""
    if receivers == EVERYONE:
        return state.resolved.to_everyone(agent)  # an unknown sender raises
    routes = state.routes()
    key = (agent, receivers)
    got = routes.get(key)
    if got is None:
        delivered, dropped = route(agent, receivers, state.resolved)
        if len(routes) >= _ROUTES_KEPT:
            routes.clear()
        got = routes[key] = (tuple(delivered), tuple(dropped))
    return got


_ROUTES_KEPT = 4096  # named-receiver routes kept per resolution (a team of 256: ~600)


def _reaches(state: EpisodeState, agent: str, receivers) -> bool:
    """Whether a message of ``agent`` to ``receivers`` reaches anyone not removed."""
    delivered = _routed(state, agent, receivers)[0]
    removed = state.removed
    return any(b not in removed for b in delivered) if removed else bool(delivered)


def _budget(d: CommunicateDecision, ctx: CommunicateContext,
            spent: dict[str, tuple[int, int]]) -> None:
    """Keep a member's messages within the rules' per-round budget (any member kind),
    counted with the episode's tokenizer; what is over it is not sent, and its
    decision record says so."""
    rules = ctx.rules
    if rules.max_messages is None and rules.max_tokens is None or not d.messages:
        return
    kept, over = within_budget(d.messages, rules, lambda m: ctx.count_tokens(m.text),
                               spent.get(ctx.agent, (0, 0)))
    before = spent.get(ctx.agent, (0, 0))
    spent[ctx.agent] = (before[0] + len(kept),
                        before[1] + sum(ctx.count_tokens(m.text) for m in kept))
    if over:
        d.messages = kept
        d.record.notes.append(f"budget: {len(over)} message(s) over the organization's "
                              "budget not sent")


def _route(state: EpisodeState, si: int, stage: Stage, agent: str, d: CommunicateDecision,
           ctx: CommunicateContext, inbox: Inboxes) -> list[TeamMessage]:
    """Stamp, route and record one speaker's turn (message tokens counted with the
    episode's tokenizer); returns what later stages may see.

    Every speaker of a 256-agent round passes here (under ``leader_first`` and
    ``sequential`` once per stage), so lines and stamped messages are made with their
    constructors, field by field, not copied with :func:`dataclasses.replace` (what
    made them before, and what a message of a subclass still gets)."""
    recording = bool(state.hooks.record)  # lines cost: build them only for a reader
    rnd, role = state.round, d.role or ctx.role
    abstained = d.abstain if state.organization.allow_abstain else None
    if not d.messages:
        if recording:
            line = _blank(MessageLine)
            line.__init__(round=rnd, agent=agent, phase="communicate", call=d.record,
                          tick=state.env.ticks, kind=stage.kind, thoughts=d.thoughts,
                          stage=si, role=role, abstained=abstained, vote=d.vote,
                          message_tokens=0)
            state.emit(line)
        return [TeamMessage.silent_turn(agent, rnd, si, d.role, d.abstain)]
    said = []
    removed = state.removed
    for i, m in enumerate(d.messages):
        delivered, dropped = _routed(state, agent, m.receivers)
        if removed:
            delivered = [b for b in delivered if b not in removed]
        if type(m) is TeamMessage:  # what replace() makes, without its field walk
            out = m.stamped(agent, rnd, si, tuple(delivered), d.role, d.abstain)
        else:
            out = replace(m, sender=agent, round=rnd, stage=si, delivered=tuple(delivered),
                          role=d.role, abstained=d.abstain)
        said.append(out)
        inbox.add(out, delivered)
        if recording:  # the turn's first line carries its call, the others not (sent())
            line = _blank(MessageLine)
            line.__init__(round=rnd, agent=agent, phase="communicate",
                          call=d.record if i == 0 else MessageLine.later_call(d.record),
                          tick=state.env.ticks, stage=si, kind=stage.kind, role=role,
                          abstained=abstained, vote=d.vote, thoughts=d.thoughts,
                          message=out, dropped=list(dropped),
                          message_tokens=state.tokenizer.count(m.text), first=i == 0)
            state.emit(line)
        for hook in state.hooks.message:
            hook(out)
    return said


async def decide_actions(state: EpisodeState, abstained: set[str] = frozenset(),
                         deciders: list[str] | None = None,
                         visible: dict[str, list[TeamMessage]] | None = None, *,
                         team: dict[str, str] | None = None
                         ) -> tuple[dict[str, ActionId], dict[str, ActDecision]]:
    """Ask the deciders, concurrently, for one action each; an unavailable one becomes
    the safe action (the decision record says so).

    Args:
        state: The episode.
        abstained: Agents that abstained this round (they are not asked).
        deciders: Who decides (default: active members that need a decision or act
            every round).
        visible: This round's outputs each decider may see (``sequential``).
        team: Agent id -> display name, the copy the contexts share (default: a copy
            of the roster's; ``sequential`` asks once per speaker and shares its
            communicate phase's copy).

    Returns:
        ``(actions, decisions)`` by agent id.
    """
    env = state.env
    if deciders is None:
        deciders = [a for a in state.active() if a not in abstained and _may_act(state, a)]
    if team is None:
        team = dict(state.roster.by_id)  # one copy per phase, shared by the contexts
    history, facts, fact = state.shared_history(), state.agent_facts(), state.agent_fact
    ctxs = {}
    for a in deciders:
        f = facts.get(a) or fact(a)
        ctxs[a] = ActContext(state.round, a, f.name, team, f.instruction, state.role_in(f, a),
                             visible_this_round=(visible or {}).get(a, []), history=history)
    decisions = await _all(state, deciders,
                           (state.members[a].act(state.view, state.round, ctxs[a])
                            for a in deciders), ActionLine, phase="act")
    actions: dict[str, ActionId] = {}
    chosen: dict[str, ActDecision] = {}
    for agent, d in zip(deciders, decisions):
        action = d.action_id
        # a policy member plays primitive ticks, never listed as available
        if not env.is_available(agent, action) and not is_primitive(action):
            d.record.fallback = d.record.fallback or f"runner: {action!r} not available"
            action = safe_action(env.available_actions(agent))[0]
        actions[agent] = action
        chosen[agent] = d
    return actions, chosen


async def act_phase(state: EpisodeState, abstained: set[str]) -> None:
    """Ask the deciders for actions, apply the fallback rule, step the env, record."""
    env = state.env
    for hook in state.hooks.phase:
        hook(state, "act")
    early, state.early_actions = state.early_actions, {}
    deciders = [a for a in state.active() if a not in abstained and a not in early
                and _may_act(state, a)]
    actions, chosen = await decide_actions(state, abstained, deciders)
    state.check_stop()
    for agent, (action, decision) in early.items():  # decided in turn (sequential)
        actions[agent], chosen[agent] = action, decision
    chosen = {a: chosen[a] for a in state.team if a in chosen}  # records in team order
    # an abstainer with no running plan steps out of the way for this round's step, as a
    # removed member does (idle, pushable, off doorways and corridors), so it never
    # blocks a teammate; it decides again next round
    aside = [a for a in state.team if a in abstained and a not in state.removed
             and env.needs_decision(a)]
    if abstained:
        _record_abstention(state, abstained, aside, actions)
    state.round_tick = env.ticks
    _count_duplicates(state, actions)
    for hook in state.hooks.actions:
        hook(state, actions)
    for agent in aside:
        env.set_idle(agent, True, obstacle=False)
    try:
        _, _, _, _, infos = env.step(
            actions, on_tick=state.ticked if state.hooks.tick else None,
            should_stop=state.stop_requested if state.should_stop is not None else None,
            observe=False)  # members read the view; nobody reads observations here
    finally:
        for agent in aside:
            env.set_idle(agent, False)
    recording, placed, none = bool(state.hooks.record), state.placed, {}
    for agent, d in chosen.items():
        info = infos.get(agent, none)
        kinds = [e.get("type") for e in info.get("events", ())]
        placed[agent] += kinds.count("placed")  # a Counter: every decider gets a key
        if recording:
            line = _blank(ActionLine)
            line.__init__(round=state.round, agent=agent, phase="act", call=d.record,
                          tick=env.ticks, action=actions[agent], thoughts=d.thoughts,
                          status=info.get("status"), failure_reason=info.get("failure_reason"),
                          events=kinds, ticks_elapsed=info.get("ticks_elapsed"))
            state.emit(line)
    for hook in state.hooks.decided:
        hook(state, [d.record for a, d in chosen.items() if a not in early])
    deliver_held(state)
    state.remember_round(actions, abstained)


def _record_abstention(state: EpisodeState, abstained: set[str], aside: list[str],
                       actions: dict[str, ActionId]) -> None:
    """An ``abstention`` event: who abstained this round, and whether work was left
    (mid-task) or not (end of task): ``units_unattended`` goal units that no teammate
    still working holds or goes to grab (by the actions decided now or running)."""
    env = state.env
    world = env.world
    scene = world.scene
    need: Counter = Counter()
    for p, have in zip(scene.goal, world.progress):
        need[p.cls] += p.count - have
    covered: set[str] = set()
    stepping_aside = set(aside)  # a set: at 256 agents a hundred may step aside
    for a in state.active():
        if a in stepping_aside:
            continue  # it steps aside: what it holds waits with it
        covered.update(scene.objects[o] for o in world.hands[env.agent_index[a]])
        act = actions.get(a)
        if act in (None, "continue", "wait"):
            current = env.current(a)
            act = None if current is None else ActionId(current.id)
        if act is not None and act.kind == "grab":
            covered.add(act.target)
    for name in covered:
        need[name.rpartition("_")[0]] -= 1
    goal = {p.cls for p in scene.goal}
    left = sum(n for cls, n in need.items() if n > 0 and cls in goal)
    who = [a for a in state.team if a in abstained]
    state.mid_task_abstained = set(who) if left else set()
    state.event("abstention", agents=who, mid_task=left > 0, units_unattended=left)


def _count_duplicates(state: EpisodeState, actions: dict[str, ActionId]) -> None:
    """Count new decisions whose target another agent already pursues (duplicated work)."""
    env, pursuing = state.env, {}
    for a in state.active():
        act = actions.get(a)
        if act and act not in ("continue", "wait"):
            kind, _, target = act.partition(":")  # its kind and target, in one split
            pursuing[a] = (kind, target)
        elif act != "wait" and (current := env.current(a)) is not None:
            pursuing[a] = (current.kind, current.target)
    targets = Counter(t for t in pursuing.values() if t[0] in TRACKED)
    new = [a for a, act in actions.items() if act not in ("continue", "wait")]
    duplicated = sum(1 for a in new if targets[pursuing[a]] > 1)
    state.duplicates["decisions"] += len(new)
    state.duplicates["duplicated"] += duplicated
    state.last_duplicates = (duplicated, len(new))
