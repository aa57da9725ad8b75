"""The communicate phase's routing shortcuts equal :func:`route`, the one routing rule."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from orgteams.agents.messages import EVERYONE
from orgteams.organizations.protocols.schedule import route
from orgteams.organizations.rounds.phases import _reaches, _routed
from orgteams.organizations.spec.library import load_organization

TEAM = [f"agent_{i}" for i in range(9)]


@pytest.mark.parametrize("name", ["shared", "leader", "pyramid", "chain", "none"])
def test_whether_a_message_reaches_anyone_is_what_route_delivers_less_the_removed(name):
    resolved = load_organization(name).resolve(TEAM)
    rng = random.Random(name)
    routes: dict = {}  # kept across the draws, as an episode keeps them per resolution
    for _ in range(400):
        removed = set(rng.sample(TEAM, rng.choice([0, 0, 1, 3, 8])))
        state = SimpleNamespace(resolved=resolved, removed=removed, routes=lambda: routes)
        agent = rng.choice(TEAM)
        receivers = rng.choice([EVERYONE, tuple(rng.choices(TEAM[:4] + ["agent_99"],
                                                            k=rng.randint(0, 4)))])
        delivered, dropped = route(agent, receivers, resolved)
        assert list(_routed(state, agent, receivers)[0]) == delivered
        assert list(_routed(state, agent, receivers)[1]) == dropped
        assert _reaches(state, agent, receivers) == any(b not in removed for b in delivered)
    assert len(routes) > 10  # named receivers were routed from the kept routes too
    for unknown in (EVERYONE, ("agent_1",)):
        with pytest.raises(ValueError, match="unknown agent 'agent_99'"):
            _reaches(SimpleNamespace(resolved=resolved, removed=set(), routes=lambda: routes),
                     "agent_99", unknown)


def test_a_chosen_actions_label_is_that_of_the_action_offered_with_its_id():
    # _label reads it from the id; the plain rule looks it up among the offered actions
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
    from orgteams.envs.highlevel.space import ActionId
    from orgteams.organizations.rounds.phases import _label

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    env.reset(seed=3)
    rng = random.Random(3)
    checked = 0
    for _ in range(12):
        every = sorted({x.id for a in env.agents for x in env.available_actions(a)})
        for a in env.agents:
            offered = env.available_actions(a)
            for ident in every + ["primitive:3", "grab:nothing_9", "explore:attic", "wait"]:
                plain = next((x.label for x in offered if x.id == ident), ident)
                assert _label(env, a, ActionId(ident)) == plain
                checked += 1
        env.step({a: rng.choice(env.available_actions(a)).id for a in env.agents})
    assert checked > 500


def test_the_round_loops_contexts_hold_what_the_member_is_told():
    # the communicate and act contexts the loop makes for a speaker, field by field
    import asyncio

    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
    from orgteams.organizations.protocols.schedule import RoundOutputs, schedule
    from orgteams.organizations.rounds.episode import EpisodeState
    from orgteams.organizations.rounds.phases import _contexts, _Told, decide_actions
    from orgteams.run import build_team

    org = load_organization("sequential")
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    env.reset(seed=0)
    members = build_team("planner", 3, org)
    state = EpisodeState(env, org, org.resolve(list(env.possible_agents)), members)
    state.round = 2
    stages = schedule(state.resolved, state.active(), state.round)
    team = dict(state.roster.by_id)
    ctx = _contexts(state, stages, 1, RoundOutputs(state.team), _Told(team, (), None))["agent_1"]
    fact = state.agent_fact("agent_1")
    assert (ctx.round, ctx.agent, ctx.name, ctx.team, ctx.instruction) == (
        2, "agent_1", fact.name, team, fact.instruction)
    assert (ctx.allow_abstain, ctx.self_chosen_roles, ctx.can_message, ctx.stage_kind,
            ctx.candidates, ctx.removed, ctx.history, ctx.rules, ctx.tokenizer) == (
        org.allow_abstain, fact.self_chosen_roles, fact.can_message, "message", None, (),
        None, fact.rules, state.tokenizer)
    seen = []
    members["agent_1"].act = lambda view, rnd, c: _record(seen, c)
    asyncio.run(decide_actions(state, deciders=["agent_1"], visible={"agent_1": ["x"]},
                               team=team))
    act = seen[0]
    assert (act.round, act.agent, act.name, act.team, act.instruction, act.abstained,
            act.visible_this_round, act.history) == (
        2, "agent_1", fact.name, team, fact.instruction, False, ["x"], None)


async def _record(seen: list, ctx):
    from orgteams.agents.member import ActDecision, DecisionRecord

    seen.append(ctx)
    return ActDecision("wait", "", DecisionRecord("act", ctx.agent, ctx.round))


def test_an_action_output_is_the_message_the_checked_constructor_makes():
    # made unchecked (one per decider of a sequential round): equal, same hash, same
    # fields in the same order as TeamMessage's own constructor gives
    from orgteams.agents.messages import TeamMessage
    from orgteams.agents.shared_context import action_output

    got = action_output("agent_1", "grab:cup_1", "[gograb] <cup_1>", 3, 4)
    want = TeamMessage("agent_1", "everyone", "[gograb] <cup_1>", "action", round=3, stage=4,
                       content={"agent": "agent_1", "action": "grab:cup_1"})
    assert got == want and hash(got) == hash(want)
    assert list(vars(got).items()) == list(vars(want).items())
