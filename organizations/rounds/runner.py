"""The team runner: plays an episode in decision rounds under an organization.

:class:`TeamRunner` builds the episode's
:class:`~orgteams.organizations.rounds.episode.EpisodeState`,
subscribes what watches it (the JSONL episode log and its replay lines, the window
overlay, live progress) and what steers it (shocks, the capability monitor) to the
round loop's hooks, and plays :func:`~orgteams.organizations.rounds.episode.play_rounds`.
The phases themselves are in :mod:`~orgteams.organizations.rounds.phases`.

Every decision is a record in the JSONL episode log (flushed every round); the
summary adds :class:`~orgteams.organizations.metrics.episode_metrics.EpisodeMetrics` and the
team-level facts (elections, organization switches, shocks, successions and recovery).

The summary's ``episode_status`` is ``"complete"``, or ``"error"`` when
``max_transport_failures`` model calls in a row failed or ``max_invalid_replies`` in a
row gave no valid reply, or ``"interrupted"``; ``stop_reason`` says why it ended (``goal
met``, ``max ticks``, ``max rounds``, ``transport failures``, ``invalid replies`` or the
interruption's reason) and ``stop_detail`` the sentence behind an early stop (see
:mod:`~orgteams.organizations.rounds.status`).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgteams.agents.llm.tokens import Tokenizer, approximate_note, default_tokenizer
from orgteams.agents.records import DecisionLine
from orgteams.agents.shared_context import EpisodePattern
from orgteams.agents.team import Team
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations.metrics.episode_metrics import episode_metrics, roles_by_round
from orgteams.organizations.rounds import episode_log as team_log
from orgteams.organizations.rounds.episode import (
    EpisodeState,
    RoundHooks,
    check_members,
    play_rounds,
)
from orgteams.organizations.rounds.episode_log import EpisodeLog, EventLine
from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.organizations.rounds.monitor import CapabilityMonitor, MonitorConfig
from orgteams.organizations.rounds.shocks import (
    Shock,
    apply_shock,
    check_priority_shifts,
    check_shocks,
    pre_shock_rate,
    recovery_rounds,
    recovery_ticks,
    take_over,
)
from orgteams.organizations.rounds.status import (
    DEFAULT_MAX_INVALID_REPLIES,
    DEFAULT_MAX_TRANSPORT_FAILURES,
    CallFailures,
    EpisodeStopped,
    end_reason,
)
from orgteams.organizations.spec.organization import Organization
from orgteams.organizations.spec.resolved import ResolvedOrganization

_gc_lock = threading.Lock()
# episodes playing; whether they freeze; the collector's thresholds before they did
_gc_state: dict[str, Any] = {"episodes": 0, "freezing": False, "threshold": None}
YOUNG_THRESHOLD = 20_000
"""The cyclic collector's first threshold while episodes freeze their rounds (Python's
default: 700): above what a 256-agent round keeps (about 10,000 new records, messages
and decisions), so young collections seldom run before the round's end freezes them."""


@contextmanager
def _frozen_rounds() -> Iterator[None]:
    """While episodes play, what exists at their start and at the end of each round is
    moved out of reach of the cyclic garbage collector (``gc.freeze()``); it is put back
    when the last one ends (``gc.unfreeze()``).

    The collector's full passes otherwise walk the whole heap, the episode's records
    among them, again and again as they grow: about a fifth of a 256-agent round under
    ``shared``. Nothing changes but when garbage cycles are found: those made during an
    episode (a few dozen objects a round) wait for its end. A process that froze
    objects of its own before is left alone (nothing is frozen or unfrozen here).

    While they freeze, young collections wait for :data:`YOUNG_THRESHOLD` allocations
    (the thresholds are put back with the unfreeze): at 700 a 256-agent round ran 11 to
    18 of them, each walking what the round had made so far (5-8% of the round).
    """
    with _gc_lock:
        if _gc_state["episodes"] == 0:
            _gc_state["freezing"] = gc.get_freeze_count() == 0
            if _gc_state["freezing"]:
                _gc_state["threshold"] = threshold = gc.get_threshold()
                gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), *threshold[1:])
        _gc_state["episodes"] += 1
    try:
        _freeze_round()
        yield
    finally:
        with _gc_lock:
            _gc_state["episodes"] -= 1
            if _gc_state["episodes"] == 0 and _gc_state["freezing"]:
                _gc_state["freezing"] = False
                gc.unfreeze()
                gc.set_threshold(*_gc_state["threshold"])


def _freeze_round(*_: object) -> None:
    """A round ended (or an episode starts): freeze what exists (:func:`_frozen_rounds`)."""
    if _gc_state["freezing"]:
        gc.freeze()


@dataclass
class EpisodeResult:
    """What :meth:`TeamRunner.run` returns.

    Attributes:
        summary: The episode's :class:`EpisodeSummary` (``summary.to_dict()``: its JSON
            object, the log's summary line).
        records: Its decision and event lines, as the log holds them.
        log_path: The JSONL episode log, or None.
    """

    summary: EpisodeSummary
    records: list[DecisionLine | EventLine] = field(repr=False)
    log_path: Path | None = None


class TeamRunner:
    """Plays episodes of a team (any mix of members) under an organization.

    Args:
        env: The high-level-action env.
        organization: The organization (its protocol sets the communicate phase).
        members: Agent id -> team member (LLM, planner, human, random...), each a
            :class:`~orgteams.agents.member.TeamMember`.
        names: Display names by agent id, or a :class:`~orgteams.agents.team.Team`
            (default Alice, Bob, ...).
        max_rounds: Stop after this many decision rounds (the tick limit also applies).
        log_path: JSONL episode log to write (None: keep records in memory only).
        shocks: Agent removals / model substitutions at given rounds.
        monitor: Capability-threshold monitor thresholds (None: no monitor).
        member_factory: Builds a member from a spec for substitution shocks.
        on_round: Called after every round as ``on_round(round, round_records)`` (live
            progress in the CLI).
        on_tick: Called after every env tick as ``on_tick(before, joint, after, infos)``
            (video frames).
        max_transport_failures: Stop with status ``error`` after this many model calls
            in a row failed after their retries (None: never stop).
        max_invalid_replies: Stop with status ``error`` after this many model calls in a
            row gave no valid reply (None: never stop).
        should_stop: Asked at round and tick boundaries (and before decisions taken
            meanwhile are used); a reason (e.g. ``"window closed"``) ends the episode
            there, with ``episode_status`` ``"interrupted"`` and that ``stop_reason``.
        tokenizer: Counts the episode's message tokens (records, budgets, metrics; its
            name is the summary's ``tokenizer``): the owner's, e.g. the
            :class:`~orgteams.agents.backends.pool.BackendPool`'s; None: the module's default.
        resolved: ``organization`` as the caller resolved it for this team (``run_episode``
            resolves it once for the members and the runner); None: resolved here. Every
            episode of the runner starts from it; the round loop resolves again only
            when the organization changes (an election, a removal, a switch).
    """

    def __init__(self, env: HighLevelEnv, organization: Organization, members: dict[str, Any],
                 *, names: dict[str, str] | Team | None = None, max_rounds: int | None = None,
                 log_path: str | Path | None = None, shocks: list[Shock] | tuple = (),
                 monitor: MonitorConfig | None = None, member_factory=None, on_round=None,
                 on_tick: Callable[..., None] | None = None,
                 max_transport_failures: int | None = DEFAULT_MAX_TRANSPORT_FAILURES,
                 should_stop: Callable[[], str | None] | None = None,
                 tokenizer: Tokenizer | None = None,
                 max_invalid_replies: int | None = DEFAULT_MAX_INVALID_REPLIES,
                 resolved: ResolvedOrganization | None = None):
        team = list(env.possible_agents)
        CallFailures(max_transport_failures, max_invalid_replies)  # validate them now
        self.max_transport_failures = max_transport_failures
        self.max_invalid_replies = max_invalid_replies
        check_members(team, members)
        self.env, self.organization, self.members = env, organization, dict(members)
        self.team = team
        self.roster = Team.of(team, names)
        self.names = self.roster.by_id
        # once, for every episode: bad templates fail here, before any file
        self.resolved = _resolved_for(organization, self.roster, resolved)
        self.max_rounds = max_rounds
        self.log_path = Path(log_path) if log_path else None
        self.shocks = sorted(shocks, key=lambda s: s.round)
        check_shocks(self.shocks, team, member_factory, organization, self.roster)
        self.monitor_config = monitor
        self.member_factory = member_factory
        self.on_round = on_round
        self.on_tick = on_tick
        self.state: EpisodeState | None = None  # the latest episode's, once one ran
        # Patterns of the episodes this runner played, oldest first: the part of the
        # shared history (protocol ``shared``) that spans episodes.
        self.patterns: list[EpisodePattern] = []
        self.should_stop = should_stop
        self.tokenizer = tokenizer if tokenizer is not None else default_tokenizer()

    def run(self, seed: int | None = None) -> EpisodeResult:
        """Play one episode (blocking)."""
        return asyncio.run(self.arun(seed))

    async def arun(self, seed: int | None = None) -> EpisodeResult:
        """Play one episode."""
        env, start = self.env, time.perf_counter()
        env.reset(seed=seed)
        check_priority_shifts(self.shocks, env)  # needs this episode's goal
        env.display_names = list(self.roster.names)
        for m in self.members.values():
            m.reset()
        state = self.state = EpisodeState(
            env, self.organization, self.resolved, self.members,
            should_stop=self.should_stop, patterns=tuple(self.patterns),
            tokenizer=self.tokenizer)
        log = self._log = EpisodeLog(self.log_path)
        self._shock_data: dict[int, dict[str, Any]] = {}
        self._start_scene = env.world.scene  # a priority shift replaces the scene
        self._subscribe(state, log, seed)
        small = self.organization.size_warning(len(self.team))
        if small:
            state.event("small_team", message=small)
        failures = CallFailures(self.max_transport_failures, self.max_invalid_replies)
        state.hooks.called.append(lambda s, record: failures.count(record))
        status, detail = "complete", None
        state.hooks.round_end.append(_freeze_round)
        try:
            try:
                with _frozen_rounds():
                    await play_rounds(state, self.max_rounds)
                failures.check_end()
                reason = end_reason(bool(env.world.success), not env.agents)
            except EpisodeStopped as stop:
                status, reason, detail = stop.status, stop.reason, stop.detail
                state.event("stopped", status=status, reason=reason, detail=detail)
            if status == "complete":
                self.patterns.append(state.pattern())  # the shared history's episodes
            summary = self._summary(state, log.records, seed, time.perf_counter() - start,
                                    episode_status=status, stop_reason=reason,
                                    stop_detail=detail)
            if self.log_path is not None:
                team_log.end_replay_log(log, env.world)
                log.write(summary)
        finally:
            log.close()
            await self._close_async_clients(state)
        return EpisodeResult(summary, log.records, self.log_path)

    def _subscribe(self, state: EpisodeState, log: EpisodeLog, seed: int | None) -> None:
        """Hook the log, the overlay, shocks, the monitor and progress to the loop."""
        hooks: RoundHooks = state.hooks
        hooks.record.append(log.write)
        if self.log_path is not None:
            hooks.tick.append(team_log.start_replay_log(
                log, self.env, seed=seed, organization=self.organization.name,
                team=self.team, names=list(self.roster.names),
                current_round=lambda: state.round))
        if self.on_tick is not None:
            hooks.tick.append(self.on_tick)
        if self.shocks:
            hooks.round_start.append(self._apply_shocks)
        self._ticks = [self.env.ticks]  # env ticks before each round (recovery in ticks)
        hooks.round_end.append(lambda s: self._ticks.append(self.env.ticks))
        _subscribe_overlay(hooks, self.env)
        if self.monitor_config is not None:
            monitor = CapabilityMonitor(self.monitor_config)
            hooks.round_end.append(lambda s: _check_monitor(monitor, s))
        first = [0]
        hooks.round_start.insert(0, lambda s: first.__setitem__(0, len(log.records)))
        hooks.round_end.append(lambda s: log.flush())
        if self.on_round is not None:
            hooks.round_end.append(lambda s: self.on_round(s.round, log.records[first[0]:]))

    async def _close_async_clients(self, state: EpisodeState) -> None:
        """Async HTTP clients belong to this episode's event loop: close them with it."""
        backends = {id(m.backend): m.backend for m in state.members.values()
                    if m.backend is not None}
        for backend in backends.values():
            await backend.aclose()

    def _apply_shocks(self, state: EpisodeState) -> None:
        units = sum(self.env.world.progress)
        for i, shock in enumerate(self.shocks):
            if i not in self._shock_data and shock.due(state.round, units):
                before = self.env.world
                data = {"hit_round": state.round,
                        **apply_shock(state, shock, self.member_factory)}
                self._shock_data[i] = data
                if self.log_path is not None and self.env.world is not before:
                    # the world changed outside the dynamics: the replay loads it here
                    team_log.log_world_edit(self._log, before, self.env.world)
                who = {"agent": shock.agent} if shock.agent is not None else {}
                state.event("shock", kind=shock.kind, **who, **data)
                take_over(state, shock)  # the rules' succession, after the shock event

    def _shock_summary(self, state: EpisodeState) -> list[dict[str, Any]]:
        """Each shock with what it changed and its recovery (docs/shocks.md)."""
        success = bool(self.env.world.success)
        out = []
        for i, s in enumerate(self.shocks):
            data = self._shock_data.get(i)
            hit = s.round if data is None else data["hit_round"]
            rounds = recovery_rounds(state.progress, hit, success=success,
                                     baseline=None if data is None else data["units_after"])
            out.append({**s.to_dict(), "applied": data is not None, **(data or {}),
                        "pre_shock_rate": None if data is None else pre_shock_rate(
                            state.progress, hit),
                        "recovery_rounds": rounds,
                        "recovery_ticks": recovery_ticks(self._ticks, hit, rounds)})
        return out

    def _summary(self, state: EpisodeState, records: list[DecisionLine | EventLine], seed,
                 wall: float, **ending: Any) -> EpisodeSummary:
        env, world = self.env, self.env.world
        decisions = [r for r in records if isinstance(r, DecisionLine)
                     and r.phase in ("communicate", "act")]
        metrics = episode_metrics(decisions, success=world.success, ticks=env.ticks,
                                  agents=self.team, tokenizer=state.tokenizer,
                                  leaders=list(state.resolved.top_leaders) or None,
                                  events=state.events,
                                  protocol=self.organization.protocol,
                                  first_leader=next(iter(self.resolved.top_leaders), None))
        dup = state.duplicates
        return EpisodeSummary.of(
            metrics,
            rounds=env.rounds, seed=seed, task=self._start_scene.task,
            layout=world.scene.layout.name, organization=self.organization.name,
            final_organization=state.organization.name, protocol=self.organization.protocol,
            final_protocol=state.organization.protocol,
            num_agents=len(self.team), step_limit=world.scene.step_limit,
            goal=[str(p) for p in self._start_scene.goal],
            final_task=world.scene.task,
            final_goal=[str(p) for p in world.scene.goal],
            units_done=sum(world.progress),
            units_total=sum(p.count for p in world.scene.goal),
            members={a: m.model for a, m in state.members.items()},
            llm_settings={a: m.settings for a, m in state.members.items()
                          if m.settings is not None},
            cache_hits=sum(r.call.cached_calls or 0 for r in decisions),
            duplicate_decisions=dup["duplicated"], new_decisions=dup["decisions"],
            duplicate_rate=dup["duplicated"] / dup["decisions"] if dup["decisions"] else 0.0,
            events=state.events,
            shocks=self._shock_summary(state),
            org_switches=[e for e in state.events if e.type == "org_switch"],
            successions=[e for e in state.events if e.type == "succession"],
            warnings=[e.get("message") for e in state.events if e.type == "small_team"],
            roles_by_round=roles_by_round(decisions),
            **team_log.fault_counts(decisions),
            tokenizer=state.tokenizer.name,
            tokens_approximate=approximate_note(state.tokenizer.name),
            wall_seconds=wall,
            log_path=str(self.log_path) if self.log_path else None,
            **ending)


def _resolved_for(organization: Organization, roster: Team,
                  resolved: ResolvedOrganization | None) -> ResolvedOrganization:
    """``organization`` resolved for ``roster``: ``resolved`` when it is that, else now.

    Raises:
        ValueError: ``resolved`` is another organization's or another team's.
    """
    if resolved is None:
        return organization.resolve(roster)
    mine = (resolved.roster.ids, resolved.roster.names)
    if resolved.organization is not organization or mine != (roster.ids, roster.names):
        raise ValueError(f"resolved= is {resolved.organization.name!r} for "
                         f"{list(resolved.roster.ids)}, not {organization.name!r} for "
                         f"{list(roster.ids)} with names {list(roster.names)}")
    return resolved


def _subscribe_overlay(hooks: RoundHooks, env: HighLevelEnv) -> None:
    """The window overlay: captions per phase, speech bubbles, abstention markers and
    role badges (roles change with hand-overs, elections and claims).

    The badges (``overlay.roles``) are every agent's role now, in team order, after
    every phase start and stage, also with no window. They are drawn in full only when
    the organization was resolved anew (an election, a removal, a switch) or someone
    else replaced them; a granted role redraws its one badge. Under ``sequential`` at
    256 agents a round has 256 stages, each granting a role: redrawing or comparing
    every badge after each made a round's overlay cost grow with the square of the team.
    """
    overlay = env.overlay
    drawn: list = [None, None]  # the resolution and the badges last drawn in full

    def draw_all(state: EpisodeState) -> None:
        overlay.roles = {a: r for a in state.team if (r := state.role(a))}
        drawn[:] = state.resolved, overlay.roles

    def stale(state: EpisodeState) -> bool:
        return drawn[0] is not state.resolved or overlay.roles is not drawn[1]

    def show_roles(state: EpisodeState) -> None:
        if stale(state):
            draw_all(state)

    def role_granted(state: EpisodeState, agent: str) -> None:
        if stale(state):
            draw_all(state)
            return
        badges, role = overlay.roles, state.role(agent)
        if not role:
            badges.pop(agent, None)
        elif agent in badges or not badges or (
                state.roster.index(agent) > state.roster.index(next(reversed(badges)))):
            badges[agent] = role  # in place, or added after the last badge: team order
        else:
            draw_all(state)  # a new badge before others: drawn in team order

    def phase(state: EpisodeState, name: str) -> None:
        overlay.caption = f"round {state.round} - {name}"
        show_roles(state)

    def mark_abstainers(state: EpisodeState, records: list) -> None:
        # a communicate stage's deciders are the only ones that can have joined the
        # phase's abstainers since the last stage: marking those (one a stage under
        # sequential) keeps every abstainer so far marked by the stage's end, where
        # finding the new ones among all of them after each of 256 stages grew with
        # the square of the team. Act decisions are never an abstainer's.
        abstained, markers = state.abstained, overlay.markers
        for record in records:
            if record.agent in abstained:
                markers[record.agent] = "abstained"

    def stage(state: EpisodeState) -> None:
        show_roles(state)
        if env.render_mode == "human":
            env.render()

    hooks.phase.append(phase)
    hooks.message.append(overlay.say)
    hooks.role.append(role_granted)
    hooks.decided.append(mark_abstainers)
    hooks.stage.append(stage)


def _check_monitor(monitor: CapabilityMonitor, state: EpisodeState) -> None:
    """Feed the monitor this round's rates (mid-task abstention only: abstaining with
    nothing left to do is healthy); switch to its fallback when it says so."""
    eligible = len(state.active()) if state.organization.allow_abstain else 0
    monitor.update(len(state.mid_task_abstained), eligible, *state.last_duplicates)
    reason = monitor.should_switch(state.organization.protocol)
    if reason:
        from orgteams.organizations.spec.library import load_organization

        old = state.organization.name
        state.switch(load_organization(monitor.config.fallback))
        monitor.switched = True
        state.event("org_switch", from_org=old, to_org=state.organization.name,
                    to_protocol=state.organization.protocol, reason=reason)
