"""The team runner: plays an episode in decision rounds under an organization.

Each round: shocks due this round are applied; the communicate phase runs the
organization's stages (:func:`~orgteams.organizations.protocols.schedule`) in order,
the speakers of a stage concurrently (``asyncio.gather``), each seeing only what the
protocol shows it; messages are routed along allowed channels and delivered at the
end of the phase; then the act phase asks, concurrently, every agent that must
decide (and planners, who may drop a plan a teammate claimed first) for one
high-level action, and the env runs ticks until someone needs a new decision.

Every decision is a record in the JSONL episode log (flushed every round); the
summary adds :class:`~orgteams.organizations.metrics.EpisodeMetrics` and the
team-level facts (elections, organization switches, shocks and recovery).

The summary's ``episode_status`` is ``"complete"``, or ``"error"`` when
``max_transport_failures`` model calls in a row failed (see
:mod:`~orgteams.organizations.episode_status`), with a ``stop_reason``.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orgteams.agents.agent_base import ActContext, CommunicateContext, ReceivedMessage
from orgteams.envs.highlevel import HighLevelEnv
from orgteams.envs.overlay import SpokenMessage
from orgteams.organizations import team_log
from orgteams.organizations.episode_status import (
    DEFAULT_MAX_TRANSPORT_FAILURES,
    EpisodeStopped,
    TransportFailures,
)
from orgteams.organizations.metrics import episode_metrics
from orgteams.organizations.monitor import CapabilityMonitor, MonitorConfig
from orgteams.organizations.protocols import (
    Output,
    leader_for_round,
    record_election,
    resolve_claims,
    route,
    schedule,
    visible_outputs,
)
from orgteams.organizations.shocks import Shock, recovery_rounds
from orgteams.organizations.spec import SELF_CHOSEN, Organization, display_names
from orgteams.organizations.team_log import EpisodeLog, decision_fields

TRACKED = ("grab", "explore", "check")  # kinds whose targets two agents should not share


@dataclass
class EpisodeResult:
    """What :meth:`TeamRunner.run` returns."""

    summary: dict[str, Any]
    records: list[dict] = field(repr=False)
    log_path: Path | None = None


class TeamRunner:
    """Plays episodes of a team (any mix of members) under an organization.

    Args:
        env: The high-level-action env.
        organization: The organization (its protocol sets the communicate phase).
        members: Agent id -> team member (LLM, planner, human, random...).
        names: Display names (default Alice, Bob, ...).
        max_rounds: Stop after this many decision rounds (the tick limit also applies).
        log_path: JSONL episode log to write (None: keep records in memory only).
        shocks: Agent removals / model substitutions at given rounds.
        monitor: Capability-threshold monitor thresholds (None: no monitor).
        member_factory: Builds a member from a spec for substitution shocks.
        on_round: Called after every round as ``on_round(round, round_records)`` (live
            progress in the CLI).
        max_transport_failures: Stop with status ``error`` after this many model calls
            in a row failed after their retries (None: never stop).
        should_stop: Asked at round and tick boundaries (and before decisions taken
            meanwhile are used); a reason (e.g. ``"window closed"``) ends the episode
            there, with ``episode_status`` ``"interrupted"`` and that ``stop_reason``.
    """

    def __init__(self, env: HighLevelEnv, organization: Organization, members: dict[str, Any],
                 *, names: dict[str, str] | None = None, max_rounds: int | None = None,
                 log_path: str | Path | None = None, shocks: list[Shock] | tuple = (),
                 monitor: MonitorConfig | None = None, member_factory=None, on_round=None,
                 max_transport_failures: int | None = DEFAULT_MAX_TRANSPORT_FAILURES,
                 should_stop: Callable[[], str | None] | None = None):
        team = list(env.possible_agents)
        TransportFailures(max_transport_failures)  # validate before the episode
        self.max_transport_failures = max_transport_failures
        if sorted(members) != sorted(team):
            raise ValueError(f"members must cover exactly the env's agents {team}, "
                             f"got {sorted(members)}")
        self.env, self.organization, self.members = env, organization, dict(members)
        self.team = team
        resolved = organization.resolve(team)  # bad templates fail here, before any file
        for a in team:
            resolved.instruction_for(a)
        self.names = names or dict(zip(team, display_names(len(team))))
        self.max_rounds = max_rounds
        self.log_path = Path(log_path) if log_path else None
        self.shocks = sorted(shocks, key=lambda s: s.round)
        for s in self.shocks:
            s.validate(team, member_factory)
        self.monitor_config = monitor
        self.member_factory = member_factory
        self.on_round = on_round
        self.should_stop = should_stop

    def run(self, seed: int | None = None) -> EpisodeResult:
        """Play one episode (blocking)."""
        return asyncio.run(self.arun(seed))

    async def arun(self, seed: int | None = None) -> EpisodeResult:
        """Play one episode."""
        env, start = self.env, time.perf_counter()
        env.reset(seed=seed)
        env.base.display_names = [self.names[a] for a in self.team]
        for m in self.members.values():
            m.reset()
        self.org = self.organization
        self.resolved = self.org.resolve(self.team)
        self.removed: set[str] = set()
        self.roles: dict[str, str] = {}
        self.events: list[dict] = []
        self.progress_by_round: list[int] = [0]
        self.placed: Counter = Counter()
        self.dup = Counter()
        self._failures = TransportFailures(self.max_transport_failures)
        status, reason = "complete", None
        monitor = CapabilityMonitor(self.monitor_config) if self.monitor_config else None
        log = EpisodeLog(self.log_path)
        outer_hook = env.on_tick
        if self.log_path is not None:
            team_log.start_replay_log(log, env, seed=seed, organization=self.org.name,
                                      team=self.team, names=[self.names[a] for a in self.team],
                                      current_round=lambda: self._round)
        self.stop_reason: str | None = None
        env.should_stop = self._stop_requested
        try:
            round_ = self._round = 0
            try:
                while env.agents and (self.max_rounds is None or round_ < self.max_rounds):
                    self._round = round_
                    self._check_stop()
                    first = len(log.records)
                    self._apply_shocks(round_, log)
                    self._update_leadership(round_, log)
                    self._show_roles()
                    abstained = await self._communicate(round_, log)
                    await self._act(round_, abstained, log)
                    self.progress_by_round.append(sum(env.base.world.progress))
                    if monitor is not None:
                        self._check_monitor(monitor, round_, abstained, log)
                    log.flush()
                    if self.on_round is not None:
                        self.on_round(round_, log.records[first:])
                    round_ += 1
            except EpisodeStopped as stop:
                status, reason = stop.status, stop.reason
                self._event(log, round_, "stopped", status=status, reason=reason)
            summary = self._summary(log.records, seed, time.perf_counter() - start)
            summary.update(episode_status=status, stop_reason=reason)
            if self.log_path is not None:
                team_log.end_replay_log(log, env.base.world)
                log.write({"record": "summary", **summary})
        finally:
            env.on_tick = outer_hook
            env.should_stop = None
            log.close()
            await self._close_async_clients()
        return EpisodeResult(summary, log.records, self.log_path)

    async def _close_async_clients(self) -> None:
        """Async HTTP clients belong to this episode's event loop: close them with it."""
        backends = {id(b): b for m in self.members.values()
                    if (b := getattr(m, "backend", None)) is not None}
        for backend in backends.values():
            await backend.aclose()

    # ---- rounds ----
    def _stop_requested(self) -> bool:
        if self.stop_reason is None and self.should_stop is not None:
            self.stop_reason = self.should_stop()
        return self.stop_reason is not None

    def _check_stop(self) -> None:
        """End the episode here (before anything more is used) when asked to stop."""
        if self._stop_requested():
            raise EpisodeStopped("interrupted", self.stop_reason)

    def _event(self, log: EpisodeLog, round_: int, type_: str, **data: Any) -> None:
        event = {"record": "event", "round": round_, "tick": self.env.ticks, "type": type_, **data}
        self.events.append(event)
        log.write(event)

    def _active(self) -> list[str]:
        return [a for a in self.team if a not in self.removed]

    def _apply_shocks(self, round_: int, log: EpisodeLog) -> None:
        for shock in (s for s in self.shocks if s.round == round_):
            if shock.kind == "remove":
                self.removed.add(shock.agent)
                self.env.set_idle(shock.agent, True)
                self.env.base.overlay.markers[shock.agent] = "idle"
            else:
                member = shock.build(self.member_factory)
                member.reset()
                self.members[shock.agent] = member
            self._event(log, round_, "shock", kind=shock.kind, agent=shock.agent,
                        member=getattr(self.members[shock.agent], "model", None))

    def _top_tier(self) -> list[str]:
        """The first tier's agents (``resolved.leaders`` holds every tier but the last:
        handing all of those to ``with_leaders`` would make vice leaders leaders)."""
        tiers = self.resolved.tiers
        return list(tiers[0][1]) if len(tiers) > 1 else []

    def _set_leaders(self, leaders: list[str]) -> None:
        self.resolved = self.resolved.with_leaders(leaders)
        top = set(self.resolved.tiers[0][1]) if len(self.resolved.tiers) > 1 else set()
        for a, m in self.members.items():
            if hasattr(m, "set_leader"):  # planners: only the top tier assigns work
                m.set_leader(a in top)

    def _update_leadership(self, round_: int, log: EpisodeLog) -> None:
        if round_ == 0:
            self._set_leaders(self._top_tier())
        if self.org.leadership_rule in ("round_robin", "most_progress") and len(self.team) > 1:
            current = self.resolved.leaders[0] if self.resolved.leaders else None
            leader = leader_for_round(self.resolved, round_, current=current,
                                      progress=dict(self.placed))
            if leader != current:
                self._set_leaders([leader])
                self._event(log, round_, "leader_change", leader=leader,
                            rule=self.org.leadership_rule)

    def _role(self, agent: str) -> str | None:
        """The agent's role now: assigned by the organization, else chosen and granted."""
        assigned = self.resolved.role_of(agent)
        return self.roles.get(agent) if assigned == SELF_CHOSEN else assigned

    def _context(self, agent: str, round_: int, stage, visible: list[dict]) -> CommunicateContext:
        r = self.resolved
        assigned = r.role_of(agent)
        role = self._role(agent)
        return CommunicateContext(
            round=round_, agent=agent, name=self.names[agent], team=dict(self.names),
            instruction=r.instruction_for(agent, self.names), role=role,
            allow_abstain=self.org.allow_abstain,
            self_chosen_roles=self.org.self_chosen_roles or assigned == SELF_CHOSEN,
            can_message=[b for b in self._active() if b != agent and r.can_message(agent, b)],
            visible_this_round=visible, stage_kind=stage.kind,
            candidates=self._active() if stage.kind == "vote" else None)

    async def _communicate(self, round_: int, log: EpisodeLog) -> set[str]:
        env, active = self.env, self._active()
        env.base.overlay.caption = f"round {round_} - communicate"
        stages = schedule(self.resolved, active, round_)
        outputs: list[Output] = []
        extra: dict[int, dict] = {}
        inbox: dict[str, list[ReceivedMessage]] = {a: [] for a in self.team}
        abstained: set[str] = set()
        for m in self.members.values():
            m.observe(env)
        si = 0
        while si < len(stages):
            stage = stages[si]
            ctxs = {a: self._context(a, round_, stage, [
                extra[id(o)] for o in visible_outputs(stages, si, a, outputs)])
                for a in stage.speakers}
            decisions = await asyncio.gather(
                *(self.members[a].communicate(ctxs[a], env) for a in stage.speakers))
            self._check_stop()  # e.g. a person's window closed while they were asked
            votes, claims = {}, {}
            for agent, d in zip(stage.speakers, decisions):
                if d.abstain and self.org.allow_abstain:
                    abstained.add(agent)
                if d.role and (self.org.self_chosen_roles or ctxs[agent].self_chosen_roles):
                    claims[agent] = d.role
                if stage.kind == "vote" and d.vote in active:
                    votes[agent] = d.vote
                self._record_communicate(log, round_, si, stage, agent, d, ctxs[agent], outputs,
                                         extra, inbox)
            self._failures.count(d.record for d in decisions)
            if stage.kind == "vote" and votes:
                incumbent = self.resolved.leaders[0] if self.resolved.leaders else None
                election = record_election(round_, votes, order=self.team, incumbent=incumbent)
                self._set_leaders([election.winner])
                self._event(log, round_, "election", **asdict(election))
                stages = stages[:si + 1] + schedule(self.resolved, active, round_,
                                                    with_election=False)
            if claims:
                granted = resolve_claims(claims, order=self.team) if stage.kind == "claim" \
                    else claims
                for agent, role in granted.items():
                    if role is None:
                        self._event(log, round_, "claim_refused", agent=agent,
                                    role=claims[agent])
                    else:
                        self.roles[agent] = role
            self._live_update(abstained)
            si += 1
        for agent, messages in inbox.items():
            if messages and agent not in self.removed:
                self.members[agent].receive(messages)
        return abstained

    def _record_communicate(self, log, round_, si, stage, agent, d, ctx, outputs, extra,
                            inbox) -> None:
        from orgteams.agents.tokens import count_tokens

        base = {"round": round_, "tick": self.env.ticks, "agent": agent, "phase": "communicate",
                "stage": si, "kind": stage.kind, "role": d.role or ctx.role,
                "abstained": d.abstain if self.org.allow_abstain else None, "vote": d.vote,
                "thoughts": d.thoughts, **decision_fields(d.record)}
        if not d.messages:
            out = Output(si, agent, stage.kind, "", None)
            outputs.append(out)
            extra[id(out)] = {"sender": agent, "receivers": [], "text": "", "role": d.role,
                              "abstained": d.abstain, "kind": "text", "content": {}}
            log.write({**base, "message": None, "receivers": [], "delivered": [],
                       "message_tokens": 0})
            return
        for i, m in enumerate(d.messages):
            delivered, dropped = route(agent, m.receivers, self.resolved)
            delivered = [b for b in delivered if b not in self.removed]
            out = Output(si, agent, stage.kind, m.text, tuple(delivered))
            outputs.append(out)
            receivers = m.receivers if isinstance(m.receivers, str) else list(m.receivers)
            extra[id(out)] = {"sender": agent, "receivers": receivers, "text": m.text,
                              "role": d.role, "abstained": d.abstain, "kind": m.kind,
                              "content": dict(m.content)}
            for b in delivered:
                inbox[b].append(ReceivedMessage(agent, m.receivers, m.text, round_, m.kind,
                                                dict(m.content)))
            rec = base if i == 0 else {k: v for k, v in base.items() if k not in (
                "usage", "cached_usage", "prompt", "replies", "attempts")}
            log.write({**rec, "message": m.text, "message_kind": m.kind,
                       "receivers": receivers, "delivered": delivered, "dropped": dropped,
                       "message_tokens": count_tokens(m.text)})
            self.env.base.overlay.say(SpokenMessage(agent, tuple(delivered), m.text, round_))

    async def _act(self, round_: int, abstained: set[str], log: EpisodeLog) -> None:
        env = self.env
        env.base.overlay.caption = f"round {round_} - act"
        deciders = [a for a in self._active() if a not in abstained and (
            env.needs_decision(a) or getattr(self.members[a], "acts_every_round", False))]
        ctxs = {a: ActContext(round_, a, self.names[a], dict(self.names),
                              self.resolved.instruction_for(a, self.names), self._role(a))
                for a in deciders}
        decisions = await asyncio.gather(*(self.members[a].act(env, round_, ctxs[a])
                                           for a in deciders))
        self._check_stop()
        actions: dict[str, str] = {}
        chosen: dict[str, Any] = {}
        for agent, d in zip(deciders, decisions):
            valid = {x.id for x in env.available_actions(agent)}
            action = d.action_id
            if action not in valid:
                d.record.fallback = d.record.fallback or f"runner: {action!r} not available"
                action = "continue" if "continue" in valid else "wait"
            actions[agent] = action
            chosen[agent] = d
        for agent in abstained:
            if agent not in self.removed and env.needs_decision(agent):
                actions[agent] = "wait"
        self._count_duplicates(actions)
        _, _, _, _, infos = env.step(actions)
        for agent, d in chosen.items():
            info = infos.get(agent, {})
            events = info.get("events", [])
            self.placed[agent] += sum(1 for e in events if e.get("type") == "placed")
            log.write({"round": round_, "tick": env.ticks, "agent": agent, "phase": "act",
                       "kind": "action", "action": actions[agent], "thoughts": d.thoughts,
                       "status": info.get("status"), "failure_reason": info.get("failure_reason"),
                       "events": [e.get("type") for e in events],
                       "ticks_elapsed": info.get("ticks_elapsed"),
                       **decision_fields(d.record)})
        self._failures.count(d.record for d in decisions)

    def _count_duplicates(self, actions: dict[str, str]) -> None:
        """Count new decisions whose target another agent already pursues (duplicated work)."""
        pursuing = {}
        for a in self._active():
            current = self.env.current(a)
            act = actions.get(a)
            if act and act not in ("continue", "wait"):
                pursuing[a] = tuple(act.split(":", 1))
            elif current is not None and act != "wait":
                pursuing[a] = (current.kind, current.target)
        targets = Counter(t for t in pursuing.values() if t[0] in TRACKED)
        new = [a for a, act in actions.items() if act not in ("continue", "wait")]
        self.dup["decisions"] += len(new)
        self.dup["duplicated"] += sum(1 for a in new if targets[pursuing[a]] > 1)
        self._last_dup = (sum(1 for a in new if targets[pursuing[a]] > 1), len(new))

    def _check_monitor(self, monitor, round_, abstained, log) -> None:
        eligible = len(self._active()) if self.org.allow_abstain else 0
        monitor.update(len(abstained), eligible, *self._last_dup)
        reason = monitor.should_switch(self.org.protocol)
        if reason:
            from orgteams.organizations.library import load_organization

            old = self.org.name
            self.org = load_organization(monitor.config.fallback)
            self.resolved = self.org.resolve(self.team)
            self._set_leaders(self._top_tier())
            monitor.switched = True
            self._event(log, round_, "org_switch", from_org=old, to_org=self.org.name,
                        reason=reason)

    def _show_roles(self) -> None:
        """Role badges in the window and videos (roles change with elections and claims)."""
        self.env.base.overlay.roles = {a: r for a in self.team if (r := self._role(a))}

    def _live_update(self, abstained: set[str]) -> None:
        self._show_roles()
        overlay = self.env.base.overlay
        for a in abstained:
            overlay.markers[a] = "abstained"
        if self.env.base.render_mode == "human":
            self.env.base.render()

    # ---- summary ----
    def _summary(self, records: list[dict], seed, wall: float) -> dict[str, Any]:
        from orgteams.agents.tokens import tokenizer_name

        env, world = self.env, self.env.base.world
        decisions = [r for r in records if r.get("phase") in ("communicate", "act")]
        metrics = episode_metrics(decisions, success=world.success, ticks=env.ticks,
                                  agents=self.team, leaders=list(self.resolved.leaders) or None)
        dup = self.dup
        return {
            **asdict(metrics),
            "rounds": env.rounds, "seed": seed, "task": world.scene.task,
            "layout": world.scene.layout.name, "organization": self.organization.name,
            "final_organization": self.org.name, "protocol": self.organization.protocol,
            "num_agents": len(self.team), "step_limit": world.scene.step_limit,
            "goal": [str(p) for p in world.scene.goal],
            "units_done": sum(world.progress),
            "units_total": sum(p.count for p in world.scene.goal),
            "members": {a: getattr(m, "model", type(m).__name__) for a, m in self.members.items()},
            "llm_settings": {a: m.settings for a, m in self.members.items()
                             if hasattr(m, "settings")},
            "cache_hits": sum(r.get("cached_calls") or 0 for r in decisions),
            "duplicate_decisions": dup["duplicated"], "new_decisions": dup["decisions"],
            "duplicate_rate": dup["duplicated"] / dup["decisions"] if dup["decisions"] else 0.0,
            "events": self.events,
            "shocks": [{**s.to_dict(), "recovery_rounds": recovery_rounds(
                self.progress_by_round, s.round)} for s in self.shocks],
            "org_switches": [e for e in self.events if e["type"] == "org_switch"],
            **team_log.fault_counts(decisions),
            "tokenizer": tokenizer_name(), "wall_seconds": wall,
            "log_path": str(self.log_path) if self.log_path else None,
        }

