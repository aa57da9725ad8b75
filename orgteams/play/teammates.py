"""Keyboard play beside high-level teammates: the glue between ``envs.play`` and agents.

:mod:`orgteams.envs.play.keyboard` knows only the :class:`~orgteams.envs.play.keyboard.Teammates`
protocol (envs never import agents); this module supplies planner and LLM
teammates and the ``orgteams play --others ...`` entry point::

    from orgteams.play.teammates import play_with
    play_with("planner", layout="studio", num_agents=3)   # you are agent_0
    play_with("local", layout="studio", num_agents=2)     # beside the embedded model

Planners talk among themselves as in :func:`orgteams.organizations.rounds.planner_team.run_team`
(claims, found, done; the person sees them as speech bubbles). LLM teammates (any
member spec: ``local``, ``openai:<model>``, ``scripted``) talk among themselves and
then choose their next high-level action whenever their plan ends, as in the team
runner's rounds. The person writes to either kind from the window (T; see
:mod:`orgteams.play.voice`): their line is a message of their agent at the
teammates' next round, routed, logged and delivered as any member's. LLM teammates
read it quoted in their prompts; planners read only structured messages, so they
ignore it. ``log_path`` writes each episode as ``orgteams run --log`` does
(:mod:`orgteams.play.play_log`). With ``organization`` (``orgteams play --org``) both
kinds, and the player's agent, play under it instead (:mod:`orgteams.play.org_rounds`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from orgteams.agents.messages import EVERYONE, TeamMessage
from orgteams.agents.planner.planner import PlannerAgent
from orgteams.agents.planner.planner_member import PlannerMember
from orgteams.agents.team import Team, display_names
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.envs.play.chat import ChatLine
from orgteams.envs.play.keyboard import play
from orgteams.errors import UserError, unknown_name
from orgteams.organizations.rounds.episode import EpisodeState
from orgteams.organizations.rounds.phases import communicate_phase, decide_actions, deliver_held
from orgteams.organizations.rounds.planner_team import EVERYONE_HEARS_EVERYONE, TurnTaker
from orgteams.organizations.spec.organization import Organization, Topology
from orgteams.organizations.spec.resolved import ResolvedOrganization
from orgteams.play.org_rounds import OrgRounds, play_organization
from orgteams.play.play_log import PlayLog
from orgteams.play.voice import PlayerVoice, player_speaks

OTHERS = ("random", "planner")  # plus any LLM member spec: local, openai:<model>, scripted
LLM_KINDS = ("local", "openai", "scripted")


# Teammates in play have no organization: no instruction and no roles; they speak at once.
UNORGANIZED = Organization(name="play", description="orgteams play: teammates, no organization",
                           protocol="shared", topology=Topology(member_role=""),
                           rules={"in_prompt": False})  # nothing agreed, nothing told


class _Listening:
    """What both kinds of teammates share: the player's voice, the optional log and
    the optional organization (its rounds: :attr:`rounds`)."""

    def __init__(self, log: PlayLog | None, organization: Organization | None = None) -> None:
        self.log = log
        self.voice: PlayerVoice | None = None
        self.messages = 0  # what the teammates said (the player's: player_messages)
        self.rounds = OrgRounds(organization) if organization is not None else None
        self.player_role: str | None = None  # under an organization, the latest shown
        self._resolutions: dict[tuple, ResolvedOrganization] = {}

    def _resolved(self, organization: Organization, team: Team) -> ResolvedOrganization:
        """``organization`` resolved for ``team``, once per team (rounds and episodes of a
        session share it; the round loop resolves again only when it changes)."""
        key = (organization.name, team.ids, team.names)
        if key not in self._resolutions:
            self._resolutions[key] = organization.resolve(team)
        return self._resolutions[key]

    @property
    def player_messages(self) -> int:
        """Messages the player sent so far."""
        return self.voice.sent if self.voice is not None else 0

    def hear(self, line: ChatLine) -> None:
        """A line the player wrote (sender: their agent): spoken at the next round, as a
        team message to the agents it names (none: everyone)."""
        if self.voice is None:
            self.voice = PlayerVoice(line.sender)
        self.voice.say(TeamMessage(line.sender, line.receivers or EVERYONE, line.text))

    def _start(self, env: HighLevelEnv, seed: int, current_round: Callable[[], int]) -> None:
        if self.voice is not None:
            self.voice.reset()
        if self.log is not None or self.rounds is not None:
            env.on_tick = self._tick  # the play env's one tick hook: the session owns it
        if self.log is not None:
            self.log.start(env, seed, current_round)
        if self.rounds is not None:  # the player's agent is a member from the start
            player = env.overlay.you
            if player is None:
                raise ValueError("teammates under an organization need the player's agent: "
                                 "set env.overlay.you (PlaySession does)")
            if self.voice is None:
                self.voice = PlayerVoice(player)
            self._shown(self.rounds.show(env, player))

    def _tick(self, before: Any, joint: dict[str, int], after: Any, infos: Any) -> None:
        """After every tick: the log's tick line, then the organization's bookkeeping."""
        if self.log is not None:
            self.log.tick(before, joint, after, infos)
        if self.rounds is not None:
            self.rounds.tick(before, joint, after, infos)

    def _shown(self, role: str | None) -> None:
        """The player's role as the window shows it now (:attr:`player_role`; the log's
        summary)."""
        self.player_role = role
        if self.log is not None:
            self.log.player_role = role

    def _watch(self, state: EpisodeState, on_message: Callable[[TeamMessage], None]) -> None:
        state.hooks.message.append(on_message)
        if self.log is not None:
            state.hooks.record.append(self.log.write)

    def _heard(self, env: HighLevelEnv, message: TeamMessage) -> None:
        """A bubble in the window for what the player hears: everything without an
        organization; under one, only their own lines and messages routed to them."""
        player = self.voice.agent_id if self.voice is not None else None
        if self.rounds is None or message.sender == player or player in message.delivered:
            env.overlay.say(message)
        self._count(message)

    def _count(self, message: TeamMessage) -> None:
        if self.voice is None or message.sender != self.voice.agent_id:
            self.messages += 1


class PlannerTeammates(_Listening):
    """:class:`~orgteams.envs.play.keyboard.Teammates` made of :class:`PlannerAgent` s.

    One planner per teammate, created when first asked; every tick (a decision round)
    each one speaks (everyone hears everyone, the player included; the player sees
    speech bubbles, as in ``orgteams run``) and then acts, on the round loop's phases
    as in :func:`~orgteams.organizations.rounds.planner_team.run_team`. What the player
    writes is delivered to them first; planners ignore free text. :attr:`messages`
    counts what they said. With ``organization`` they are instead
    :class:`~orgteams.agents.planner.planner_member.PlannerMember` s under it, the player's
    agent in it (:mod:`orgteams.play.org_rounds`).
    """

    def __init__(self, log: PlayLog | None = None,
                 organization: Organization | None = None) -> None:
        super().__init__(log, organization)
        self.planners: dict[str, PlannerAgent] = {}
        self._state: EpisodeState | None = None
        self._decided = 0

    def reset(self, env: HighLevelEnv, seed: int) -> None:
        """A new episode: new planners next time."""
        self.planners.clear()
        self._state = None
        self._decided = 0  # the round whose decisions the next ticks play (tick lines)
        self._start(env, seed, lambda: self._decided)

    def __call__(self, env: HighLevelEnv, agents: list[str]) -> dict[str, str]:
        if self.rounds is not None:
            return self._organized(env, agents)
        state = self._state
        if state is None or state.env is not env or set(state.members) != set(agents):
            for a in agents:
                self.planners.setdefault(a, PlannerAgent(a))
            members = {a: TurnTaker(self.planners[a]) for a in agents}
            if state is not None:  # same planners, same pending messages
                members.update({a: m for a, m in state.members.items() if a in members})
            team = Team.of(env.possible_agents)  # the player too: they may be talked to
            state = EpisodeState(env, EVERYONE_HEARS_EVERYONE,
                                 self._resolved(EVERYONE_HEARS_EVERYONE, team), members,
                                 round=state.round if state is not None else 0)
            self._state = state
            self._watch(state, self._said)

        async def decide() -> dict[str, str]:
            if self.voice is not None:
                await player_speaks(state, self.voice)
            await communicate_phase(state, speakers=list(agents))
            return (await decide_actions(state))[0]

        actions = asyncio.run(decide())
        self._decided = state.round
        state.round += 1
        return actions

    def _organized(self, env: HighLevelEnv, agents: list[str]) -> dict[str, str]:
        """A round under the organization: planners as in ``orgteams run``."""
        state = self._state
        if state is None or state.env is not env:
            state = self.rounds.start(env, {a: PlannerMember(a) for a in agents}, self.voice)
            self._state = state
            self._watch(state, self._said)
        else:
            state.round += 1
        actions, _ = asyncio.run(self.rounds.play(state, self.voice, list(agents),
                                                  list(agents)))
        self._decided = state.round
        self._shown(self.rounds.shown(state, self.voice.agent_id))
        return actions

    def _said(self, message: TeamMessage) -> None:
        """A bubble for the player (decisions run on this thread, which owns the window)."""
        self._heard(self._state.env, message)


class MemberTeammates(_Listening):
    """:class:`~orgteams.envs.play.keyboard.Teammates` built from one member spec (LLM agents).

    Each tick, the teammates whose plan has ended decide together (concurrently), on
    the round loop's phases: first the player's stage when they wrote something (it
    is delivered at once, so they read it quoted in their prompts), with ``talk`` one
    communicate stage among them (each may message anyone, the player included; what
    they say appears as speech bubbles and reaches the others after they chose), then
    the act phase; the others keep their plans. An id that is not
    available becomes the safe action (counted in :attr:`fallbacks`). The decisions
    run on a background event loop; meanwhile :attr:`waiting`, which the play session
    sets, keeps the window drawn and responsive (a local model takes seconds per
    decision on a CPU; talking doubles that). With ``organization`` the rounds
    (0-based) follow it instead, the player's agent in them (:mod:`orgteams.play.org_rounds`).
    """

    def __init__(self, spec: str, *, seed: int | None = 0, cache: str | None = None,
                 talk: bool = True, log: PlayLog | None = None,
                 organization: Organization | None = None):
        super().__init__(log, organization)
        kind = spec.split(":", 1)[0]
        if kind not in LLM_KINDS:
            raise unknown_name("LLM teammate kind", kind, LLM_KINDS)
        self.spec, self.seed, self.cache, self.talk = spec, seed, cache, talk
        self.members: dict[str, Any] = {}
        from orgteams.agents.backends.pool import BackendPool

        self.pool = BackendPool()  # owns the members' backends; closed by close()
        self.round = 0
        self.decisions = 0
        self.fallbacks = 0
        self.waiting: Callable[[], None] | None = None
        self._spoken: list[TeamMessage] = []
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, daemon=True,
                         name="orgteams-teammates").start()

    def reset(self, env: HighLevelEnv, seed: int) -> None:
        """A new episode: the same members, their memories cleared."""
        for member in self.members.values():
            member.reset()
        self.round = 0
        if self.rounds is not None:  # the organization's rounds count from 0, as in run
            self._start(env, seed, lambda: max(self.round - 1, 0))
        else:
            self._start(env, seed, lambda: self.round)

    def __call__(self, env: HighLevelEnv, agents: list[str]) -> dict[str, str]:
        from orgteams import run as team_module  # looked up per call: tests replace it

        for a in agents:
            if a not in self.members:
                self.members[a] = team_module.build_member(a, self.spec, seed=self.seed,
                                                    cache=self.cache, pool=self.pool)
        deciders = [a for a in agents if env.needs_decision(a)]
        self.round += 1
        voice = self.voice if self.voice is not None and self.voice.outbox else None
        if not deciders and voice is None:
            return {}
        spoken = self._spoken = []  # this round's messages (the hooks append to it)
        if self.rounds is not None:
            state = self.rounds.state
            if state is None or state.env is not env:
                state = self.rounds.start(env, {a: self.members[a] for a in agents},
                                          self.voice, tokenizer=self.pool.tokenizer)
                self._watch(state, lambda m: self._spoken.append(m))
            state.round = self.round - 1  # counted from 0 under an organization, as in run
            decide = self.rounds.play(state, self.voice, deciders if self.talk else [],
                                      deciders)
        else:
            state = self._unorganized(env, agents)
            decide = self._decide(state, voice, deciders)
        future = asyncio.run_coroutine_threadsafe(decide, self._loop)
        while not future.done():
            if self.waiting is not None:
                self.waiting()
            else:
                time.sleep(0.01)
        actions, decisions = future.result()
        for message in spoken:  # drawn here: the main thread owns the window
            self._heard(env, message)
        if self.rounds is not None:
            self._shown(self.rounds.shown(state, self.voice.agent_id))
        self.fallbacks += sum(actions[a] != decisions[a].action_id for a in deciders
                              if a in decisions)
        self.decisions += len(deciders)
        return actions

    def _unorganized(self, env: HighLevelEnv, agents: list[str]) -> EpisodeState:
        """This round's state without an organization (nothing carries over)."""
        ids = list(env.possible_agents)
        team = Team.of(ids, list(env.display_names or ids))
        state = EpisodeState(env, UNORGANIZED, self._resolved(UNORGANIZED, team),
                             {a: self.members[a] for a in agents}, round=self.round,
                             tokenizer=self.pool.tokenizer)
        self._watch(state, lambda m: self._spoken.append(m))
        return state

    async def _decide(self, state: EpisodeState, voice: PlayerVoice | None,
                      deciders: list[str]) -> tuple[dict[str, str], dict[str, Any]]:
        """The player's stage, the deciders' talk, their choices (no organization)."""
        if voice is not None:
            await player_speaks(state, voice)
        if not deciders:
            return {}, {}
        if self.talk:
            await communicate_phase(state, speakers=deciders)
        chosen = await decide_actions(state, deciders=deciders)
        deliver_held(state)  # what they said to each other: heard after choosing
        return chosen

    def close(self) -> None:
        """Stop the background loop and close the members' backends (a local server stops)."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self.pool.close()


def make_teammates(spec: str, organization: str | Organization | None = None, *,
                   cache: str | None = None, talk: bool = True, seed: int | None = 0,
                   log_path: str | None = None) -> PlannerTeammates | MemberTeammates:
    """High-level teammates for ``household_v0.single_agent_env(teammates=...)`` (or a
    keyboard player): ``"planner"`` or an LLM member spec (``local``, ``openai:<model>``,
    ``scripted``), under ``organization`` (a name, YAML path or
    :class:`Organization`; None: none), the learner's agent in it as the player is.
    ``cache``, ``talk`` and ``seed``: LLM members' response cache, whether they talk,
    their sampling seed; ``log_path``: write each episode's log (as ``orgteams play``).
    Close LLM teammates with ``close()`` (the env's ``close()`` does).

    Raises:
        UserError: An unknown spec, or a bad organization (one line naming it).
    """
    if spec != "planner" and spec.split(":", 1)[0] not in LLM_KINDS:
        raise unknown_name("teammates", spec, ("planner", *LLM_KINDS))
    org = play_organization(organization)
    log = PlayLog(log_path, **({"organization": org.name} if org else {})) \
        if log_path is not None else None
    if spec == "planner":
        return PlannerTeammates(log=log, organization=org)
    return MemberTeammates(spec, seed=seed, cache=cache, talk=talk, log=log, organization=org)


def _name_the_team(play_kwargs: dict[str, Any]) -> None:
    """Agents are Alice, Bob, ... in play as in ``orgteams run`` (so ``@Bob`` works);
    ``human_agent`` may be given by that name (``--agent Bob``)."""
    n = play_kwargs.get("num_agents", 3)
    names = play_kwargs.setdefault("display_names", display_names(n))
    agent = play_kwargs.get("human_agent", "agent_0")
    by_name = {name.casefold(): f"agent_{i}" for i, name in enumerate(names)}
    if agent in {f"agent_{i}" for i in range(n)}:
        return
    if agent.casefold() not in by_name:  # else the env's "human_agent 'Zed' is not one of"
        raise UserError(f"--agent {agent!r} is not one of the {n} agents: agent_0 to "
                        f"agent_{n - 1}, or their names ({', '.join(names[:3])}"
                        f"{', ...' if n > 3 else ''})")
    play_kwargs["human_agent"] = by_name[agent.casefold()]


def play_with(others: str = "random", *, cache: str | None = None, talk: bool = True,
              log_path: str | None = None, organization: str | Organization | None = None,
              **play_kwargs: Any) -> dict[str, Any]:
    """:func:`orgteams.envs.play.keyboard.play` beside ``others``: ``"random"`` (primitive
    actions), ``"planner"``, or an LLM member spec (``local``, ``openai:<model>``,
    ``scripted``; ``cache`` is their response cache, ``talk`` False keeps them silent).
    ``log_path``: write each episode's log there (not with ``"random"``).
    ``organization``: a name, YAML path or :class:`Organization` the team, the
    player's agent included, plays under (:mod:`orgteams.play.org_rounds`; not with
    ``"random"``); None: no organization. Agents are named Alice, Bob, ... as in
    ``orgteams run`` (``display_names`` overrides it) and ``human_agent`` may be one
    of those names; ``reveal=True`` shows the whole house (recorded in the log)."""
    for option, given in (("--log", log_path), ("--org", organization)):
        if others == "random" and given is not None:
            raise UserError(f"{option} needs teammates that play in rounds: --others planner "
                            "or an LLM (local, openai:<model>, scripted)")
    _name_the_team(play_kwargs)
    if others == "random":
        return play(others="random", **play_kwargs)
    if others != "planner" and others.split(":", 1)[0] not in LLM_KINDS:
        raise unknown_name("others", others, OTHERS + LLM_KINDS)
    org = play_organization(organization)  # before any window: a bad file is one line
    reveal = bool(play_kwargs.get("reveal", False))
    log = PlayLog(log_path, reveal=reveal, **({"organization": org.name} if org else {})) \
        if log_path is not None else None
    teammates: PlannerTeammates | MemberTeammates
    if others == "planner":
        teammates = PlannerTeammates(log=log, organization=org)
    else:
        teammates = MemberTeammates(others, seed=play_kwargs.get("seed", 0), cache=cache,
                                    talk=talk, log=log, organization=org)
    summary: dict[str, Any] = {}
    try:
        summary = play(teammates=teammates, **play_kwargs)
    finally:
        if log is not None:  # the last episode: interrupted when the player quit in it
            log.end(summary.get("stop_reason") or "stopped")
        if isinstance(teammates, MemberTeammates):
            teammates.close()
    out = {**summary, "teammate_messages": teammates.messages,
           "player_messages": teammates.player_messages}
    if isinstance(teammates, MemberTeammates):
        out.update(teammate_decisions=teammates.decisions,
                   teammate_fallbacks=teammates.fallbacks)
    if org is not None:
        out.update(organization=org.name, player_role=teammates.player_role)
    if log is not None:
        out["logs"] = [str(p) for p in log.paths]
    return out


__all__ = ["LLM_KINDS", "OTHERS", "MemberTeammates", "PlannerTeammates", "make_teammates",
           "play_with"]
