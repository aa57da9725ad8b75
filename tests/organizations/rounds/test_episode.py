"""The one round loop: EpisodeState, its hooks, and run_team's turn taking on it."""

from __future__ import annotations

import asyncio

import pytest

from orgteams.agents.messages import TeamMessage
from orgteams.agents.planner.planner_member import PlannerMember
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.episode import EpisodeState, play_rounds
from orgteams.organizations.rounds.episode_log import line_dict
from orgteams.organizations.rounds.planner_team import run_team
from orgteams.organizations.rounds.shocks import Shock
from orgteams.organizations.spec.organization import SELF_CHOSEN


def _state(n=3, org="leader"):
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=n)
    env.reset(seed=0)
    organization = load_organization(org)
    members = {a: PlannerMember(a) for a in env.possible_agents}
    return EpisodeState(env, organization, organization.resolve(list(env.possible_agents)),
                        members)


def test_hooks_see_every_record_message_round_and_tick():
    state = _state()
    records, messages, rounds, ticks, actions = [], [], [], [], []
    state.hooks.record.append(lambda line: records.append(line_dict(line)))
    state.hooks.message.append(messages.append)
    state.hooks.round_end.append(lambda s: rounds.append(s.round))
    state.hooks.tick.append(lambda *args: ticks.append(args[2].tick))
    state.hooks.actions.append(lambda s, joint: actions.append(dict(joint)))

    order = []

    def outer(*args):
        order.append(("env", args[2].tick))

    state.hooks.tick.append(lambda *args: order.append(("hook", args[2].tick)))
    state.env.on_tick = outer
    asyncio.run(play_rounds(state, 3))
    assert rounds == [0, 1, 2] and state.round == 3
    assert ticks == list(range(1, state.env.ticks + 1))
    assert state.env.on_tick is outer  # the env's own hook is never replaced, and runs first
    assert order == [(who, t) for t in range(1, state.env.ticks + 1) for who in ("env", "hook")]
    assert len(actions) == 3 and all(set(a) == set(state.team) for a in actions)
    said = [r for r in records if r.get("message")]
    assert [(m.sender, m.text) for m in messages] == [(r["agent"], r["message"]) for r in said]
    assert all(isinstance(m, TeamMessage) and m.delivered is not None for m in messages)
    assert all(r["round"] in (0, 1, 2) for r in records)


def test_max_rounds_zero_plays_nothing():
    state = _state()
    asyncio.run(play_rounds(state, 0))
    assert state.round == 0 and state.env.ticks == 0


class Echo:
    """A run_team agent that says its round number and remembers what it heard."""

    def __init__(self, agent_id):
        self.agent_id, self.heard, self.turn = agent_id, [], 0

    def communicate(self, env, inbox):
        self.heard.append([m.text for m in inbox])
        self.turn += 1
        return [TeamMessage(self.agent_id, "everyone", f"{self.agent_id}@{self.turn}")]

    def act(self, env):
        return "wait"


def test_run_team_hears_each_message_once_in_the_order_said():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    a, b, c = (Echo(f"agent_{i}") for i in range(3))
    result = run_team(env, [a, b, c], seed=0, max_rounds=3)
    assert result["rounds"] == 3 and result["messages"] == 9
    assert result["message_words"] == 9
    # Later speakers hear this round's earlier ones at once; earlier ones hear the later
    # speakers of the previous round at their next turn; nothing twice.
    assert a.heard == [[], ["agent_1@1", "agent_2@1"], ["agent_1@2", "agent_2@2"]]
    assert b.heard == [["agent_0@1"], ["agent_2@1", "agent_0@2"], ["agent_2@2", "agent_0@3"]]
    assert c.heard == [["agent_0@1", "agent_1@1"], ["agent_0@2", "agent_1@2"],
                       ["agent_0@3", "agent_1@3"]]


def test_members_get_a_read_only_view_not_the_env():
    from orgteams.agents.view import MemberView

    state = _state(n=2, org="none")
    seen = []

    class Peeker(PlannerMember):
        async def act(self, env, round, ctx=None):
            seen.append(env)
            with pytest.raises(AttributeError):
                env.step({})  # no levers
            with pytest.raises(AttributeError, match="read-only"):
                env.ticks = 0
            assert env.available_actions(self.agent_id) == state.env.available_actions(
                self.agent_id)
            assert env.describe(self.agent_id) == state.env.base.describe(self.agent_id)
            assert env.world is state.env.base.world
            with pytest.raises(AttributeError):
                env.base  # noqa: B018 - the household underneath is not a member's
            with pytest.raises(AttributeError):
                env.overlay  # noqa: B018 - nor the window's overlay
            return await super().act(env, round, ctx)

    state.members["agent_1"] = Peeker("agent_1")
    asyncio.run(play_rounds(state, 1))
    assert seen and all(isinstance(v, MemberView) for v in seen)


@pytest.mark.parametrize("asked_after, ticks, rounds, acted", [
    ("communicate", 0, 0, False),  # after the first stage's decisions: none is used
    ("act", 0, 0, False),  # after the act decisions: the env does not step
    ("tick", 1, 1, True),  # the env's per-tick check ends the step after one tick
])
def test_should_stop_ends_the_episode_where_it_is_asked(asked_after, ticks, rounds, acted):
    from orgteams.organizations.rounds.status import EpisodeStopped

    state = _state()
    records, phase, ticked = [], [], []
    state.hooks.record.append(lambda line: records.append(line_dict(line)))
    state.hooks.phase.append(lambda s, name: phase.append(name))
    state.hooks.tick.append(lambda *args: ticked.append(1))

    def stop():
        if asked_after == "tick":
            return "window closed" if ticked else None
        if asked_after == "communicate":
            return "window closed" if phase else None
        return "window closed" if "act" in phase else None

    state.should_stop = stop
    with pytest.raises(EpisodeStopped, match="window closed") as caught:
        asyncio.run(play_rounds(state, 3))
    assert caught.value.status == "interrupted" and state.stop_reason == "window closed"
    assert (state.env.ticks, state.round) == (ticks, rounds)
    assert state.env.should_stop is None  # the env's own check is never replaced
    if asked_after == "communicate":
        assert not records  # the stage's decisions were not routed or logged
    assert bool([r for r in records if r.get("phase") == "act"]) == acted


def test_a_pyramid_starts_with_one_leader_not_every_upper_tier():
    state = _state(n=9, org="pyramid")
    asyncio.run(play_rounds(state, 1))
    # one top leader; the vice leaders hold leader seats too (each leads its members)
    assert state.resolved.top_leaders == ("agent_0",)
    leaders = [a for a, m in state.members.items() if m.planner.role == "leader"]
    assert leaders == ["agent_0", "agent_1", "agent_2"]
    assert [state.role(a) for a in ("agent_0", "agent_1", "agent_2", "agent_3")] == [
        "leader", "vice_leader", "vice_leader", "member"]


def test_members_that_decide_at_once_are_run_in_order_without_tasks():
    # planners never await: the loop runs their calls one after another (a task each
    # cost more than 256 decisions); one that awaits after all is our bug, said so
    state = _state(n=3, org="shared")
    order = []

    class Orderly(PlannerMember):
        async def communicate(self, ctx, env):
            order.append((self.agent_id, asyncio.current_task()))
            return await super().communicate(ctx, env)

    class Sleeper(PlannerMember):
        async def act(self, env, round, ctx=None):
            await asyncio.sleep(0)
            return await super().act(env, round, ctx)

    state.members = {a: Orderly(a) for a in state.team}
    asyncio.run(play_rounds(state, 1))
    # in team order, all inside the episode's own task (no task of their own)
    assert [a for a, _ in order] == list(state.team)
    assert len({id(task) for _, task in order}) == 1
    state = _state(n=3, org="shared")
    state.members["agent_2"] = Sleeper("agent_2")
    with pytest.raises(RuntimeError, match="Sleeper.act awaited, but its member "
                                           "decides_at_once"):
        asyncio.run(play_rounds(state, 1))


def test_role_badges_follow_grants_in_any_order_new_resolutions_and_replacements():
    # The window's badges are redrawn one at a time as roles are granted: a new badge
    # before others, a new resolution (a switch) and badges someone else replaced are
    # drawn in full; after each, they are every agent's role now, in team order.
    from orgteams.organizations.rounds.runner import _subscribe_overlay

    state = _state(4, org="sequential")  # self-chosen roles
    _subscribe_overlay(state.hooks, state.env)
    overlay = state.env.overlay

    def badges():
        assert list(overlay.roles.items()) == [
            (a, r) for a in state.team if (r := state.role(a))]
        return dict(overlay.roles)

    state.hooks.phase[0](state, "communicate")
    assert badges() == {}
    state.grant_role("agent_2", "cook")
    state.grant_role("agent_3", "scout")  # after the last badge
    state.grant_role("agent_0", "cleaner")  # before the others
    state.grant_role("agent_2", "runner")  # in place
    assert badges() == {"agent_0": "cleaner", "agent_2": "runner", "agent_3": "scout"}
    overlay.roles = {"agent_1": "drawn by someone else"}
    state.grant_role("agent_1", "fetcher")
    assert badges() == {"agent_0": "cleaner", "agent_1": "fetcher", "agent_2": "runner",
                        "agent_3": "scout"}
    state.switch(load_organization("leader"))  # roles assigned now: redrawn at the stage
    state.hooks.stage[0](state)
    assert badges() == {"agent_0": "leader", "agent_1": "member", "agent_2": "member",
                        "agent_3": "member"}


def _plain_facts(state, agent):
    """What the contexts told ``agent`` before the round loop kept its facts."""
    r = state.resolved
    return (state.roster.name(agent), r.instruction_for(agent), state.role(agent),
            state.organization.self_chosen_roles or r.role_of(agent) == SELF_CHOSEN,
            tuple(b for b in r.receivers_of(agent) if b not in state.removed),
            r.member_rules(agent),
            tuple(sorted(state.removed)))


def test_kept_agent_facts_follow_leader_changes_grants_and_removals():
    state = _state(4, org="leader")

    def facts(agent):
        f = state.agent_fact(agent)
        return (f.name, f.instruction, state.role_in(f, agent), f.self_chosen_roles,
                f.can_message, f.rules, state.sorted_removed())

    before = facts("agent_1")
    assert before == _plain_facts(state, "agent_1") and before[5].boss == "agent_0"
    state.set_leaders(["agent_2"])  # a new resolution: agent_1 reports to agent_2 now
    assert facts("agent_1") == _plain_facts(state, "agent_1") != before
    assert facts("agent_1")[5].boss == "agent_2" and "Charlie" in facts("agent_1")[1]
    assert before[4] == ("agent_0", "agent_2", "agent_3")
    state.remove("agent_2")  # its seat taken (succession: next)
    assert facts("agent_1") == _plain_facts(state, "agent_1")
    assert facts("agent_1")[4] == ("agent_0", "agent_3")
    assert state.sorted_removed() == ("agent_2",)
    state.switch(load_organization("sequential"))  # self-chosen roles: read when asked
    assert facts("agent_3")[2] is None
    state.grant_role("agent_3", "scout")
    assert facts("agent_3") == _plain_facts(state, "agent_3") and facts("agent_3")[2] == "scout"
    with pytest.raises(ValueError, match="unknown agent 'agent_9'"):
        state.agent_fact("agent_9")


@pytest.mark.parametrize("org, shocks", [("leader", ["remove:agent_0@2"]),
                                         ("sequential", ["remove:agent_3@3"]),
                                         ("dynamic", [])])
def test_every_context_tells_what_the_organization_says_when_it_is_given(org, shocks):
    # The running episode's contexts, checked against the facts looked up again when
    # each member is asked: across hand-overs, removals and granted roles.
    from orgteams.organizations.rounds.runner import TeamRunner

    told: list = []

    class Checked(PlannerMember):
        async def communicate(self, ctx, env):
            state = runner.state
            assert (ctx.name, ctx.instruction, ctx.role, ctx.self_chosen_roles,
                    ctx.can_message, ctx.rules, ctx.removed) == _plain_facts(state, ctx.agent)
            told.append((ctx.agent, ctx.role, ctx.rules.leaders, tuple(ctx.can_message)))
            return await super().communicate(ctx, env)

        async def act(self, env, round, ctx=None):
            plain = _plain_facts(runner.state, ctx.agent)
            assert (ctx.name, ctx.instruction, ctx.role) == plain[:3]
            return await super().act(env, round, ctx)

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=5)
    members = {a: Checked(a) for a in env.possible_agents}
    runner = TeamRunner(env, load_organization(org), members, max_rounds=8,
                        shocks=[Shock.parse(s) for s in shocks])
    runner.run(seed=1)
    assert len(told) > 20
    if org == "leader":  # the leader removed: agent_1 leads, nobody messages agent_0
        assert {t[2] for t in told} == {("agent_0",), ("agent_1",)}
        assert not any("agent_0" in t[3] for t in told if t[2] == ("agent_1",))
    if org == "sequential":  # roles granted as claimed, told from the next stage on
        assert len({t[1] for t in told}) > 2
