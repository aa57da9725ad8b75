"""Sequential and Shared as the self-organizing paper defines them (issue #11).

Sequential: each agent speaks and chooses its action in turn, with the earlier agents'
messages, claims and chosen actions of this round known. Shared: everyone decides at
once from the shared history only (earlier rounds and episodes).
"""

from __future__ import annotations

import asyncio

import pytest
from doubles import Tracer, fill_reply, records_of

from orgteams.agents import LLMAgent, ScriptedBackend
from orgteams.agents.member import CommunicateContext, TeamMessage
from orgteams.agents.member_rules import MemberRules
from orgteams.agents.planner.planner_member import PlannerMember
from orgteams.agents.records import ActionLine, MessageLine
from orgteams.agents.shared_context import RoundOutcome, SharedHistory, action_output
from orgteams.agents.view import MemberView
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.runner import TeamRunner

TEAM2 = {"agent_0": "Alice", "agent_1": "Bob"}


def play(org: str, rounds: int, n: int = 3, runner_episodes: int = 1):
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=n)
    trace: list = []
    members = {f"agent_{i}": Tracer(f"agent_{i}", trace) for i in range(n)}
    runner = TeamRunner(env, load_organization(org), members, max_rounds=rounds)
    results = [runner.run(seed=0) for _ in range(runner_episodes)]
    return results, members, trace


# ---------------------------------------------------------------- sequential
def test_sequential_agent_acts_right_after_its_turn_in_team_order():
    _, _, trace = play("sequential", rounds=1)
    assert trace == [(k, f"agent_{i}", 0) for i in range(3) for k in ("communicate", "act")]


def test_sequential_messages_keeps_speaking_in_order_then_acting_at_once():
    org = load_organization("sequential").updated(protocol="sequential_messages")
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    trace: list = []
    members = {f"agent_{i}": Tracer(f"agent_{i}", trace) for i in range(3)}
    TeamRunner(env, org, members, max_rounds=1).run(seed=0)
    assert [k for k, _, _ in trace] == ["communicate"] * 3 + ["act"] * 3


def test_sequential_later_agents_see_earlier_choices_and_the_env_plays_them():
    results, members, _ = play("sequential", rounds=1)
    acted = {r.agent: r.action for r in results[0].records if isinstance(r, ActionLine)}
    seen = [(m.sender, m.content["action"]) for m in members["agent_2"].acts[0]
            .visible_this_round if m.kind == "action"]
    # agent_2 decided knowing exactly what agents 0 and 1 chose, and those were played
    assert seen == [("agent_0", acted["agent_0"]), ("agent_1", acted["agent_1"])]
    assert [m.kind for m in members["agent_0"].acts[0].visible_this_round] == []
    assert results[0].summary.message_tokens_sent > 0
    kinds = {r.message.kind for r in results[0].records
             if isinstance(r, MessageLine) and r.message is not None}
    assert kinds
    assert "action" not in kinds  # a chosen action is shown, never sent as a message


def test_sequential_agent_hears_earlier_messages_before_it_acts():
    _, members, trace = play("sequential", rounds=1)
    act_at = trace.index(("act", "agent_1", 0))
    heard_before = [who for at, who in members["agent_1"].heard if at <= act_at]
    assert heard_before == [["agent_0"]]


def test_sequential_planner_avoids_the_object_an_earlier_agent_chose():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    env.reset(seed=1)
    alone = PlannerMember("agent_1")
    ctx = CommunicateContext(0, "agent_1", "Bob", TEAM2, can_message=["agent_0"])
    asyncio.run(alone.communicate(ctx, MemberView(env)))
    assert alone.planner._intent == "grab:cupcake_1"
    after = PlannerMember("agent_1")
    earlier = action_output("agent_0", "grab:cupcake_1", "[gograb] <cupcake_1>", 0, 0)
    ctx = CommunicateContext(0, "agent_1", "Bob", TEAM2, can_message=["agent_0"],
                             visible_this_round=[earlier])
    asyncio.run(after.communicate(ctx, MemberView(env)))
    assert after.planner.claims["cupcake_1"][0] == "agent_0"
    assert after.planner._intent != "grab:cupcake_1"


def _first_enum(messages, schema):
    return fill_reply(schema, action=0, receivers=["everyone"], message="ok", messages=[],
                      abstain=False, role="helper")


def test_sequential_llm_prompt_quotes_earlier_agents_chosen_actions():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    backend = ScriptedBackend(_first_enum)
    members = {"agent_0": PlannerMember("agent_0"),
               "agent_1": LLMAgent("agent_1", backend, seed=0, prompts="compact")}
    result = TeamRunner(env, load_organization("sequential"), members,
                        max_rounds=1).run(seed=1)
    chose = next(r["action"] for r in records_of(result)
                 if r.get("phase") == "act" and r["agent"] == "agent_0")
    label = next(a.label for a in env.available_actions("agent_0") if a.id == chose) \
        if chose != "continue" else None
    # its communicate and act prompts (corrections of a rejected reply left out), both
    # asked after Alice's turn
    prompts = [call[-1]["content"] for call in backend.calls if len(call) == 2]
    assert len(prompts) == 2
    for text in prompts:
        assert f'Alice chose "{label}"' in text


# ---------------------------------------------------------------- batched sequential
def test_batched_sequential_groups_act_in_turn_seeing_earlier_groups_choices():
    results, members, trace = play("batched_sequential", rounds=1, n=4)
    # sequential in groups of 2: a group speaks, then chooses its actions, then the next
    assert trace == [(k, f"agent_{i}", 0) for g in (0, 2) for k in ("communicate", "act")
                     for i in (g, g + 1)]
    acted = {r.agent: r.action for r in results[0].records if isinstance(r, ActionLine)}

    def chosen(agent):
        return [(m.sender, m.content["action"]) for m in members[agent].acts[0]
                .visible_this_round if m.kind == "action"]
    # the second group decided knowing what the first chose (and that was played);
    # nobody sees its own group's choices
    assert chosen("agent_2") == chosen("agent_3") == [("agent_0", acted["agent_0"]),
                                                      ("agent_1", acted["agent_1"])]
    assert chosen("agent_0") == chosen("agent_1") == []


# ---------------------------------------------------------------- shared
def test_shared_decides_from_history_and_hears_this_round_only_after_acting():
    _, members, trace = play("shared", rounds=2)
    first_round_end = trace.index(("communicate", "agent_0", 1))
    m = members["agent_1"]
    assert m.comm[0].history == SharedHistory()  # round 0: nothing yet
    assert m.acts[0].visible_this_round == []
    heard = [(at, who) for at, who in m.heard]
    # round 0's messages arrive after every agent acted in round 0
    assert heard and heard[0][0] >= trace.index(("act", "agent_2", 0)) + 1
    assert heard[0][0] <= first_round_end
    (r0,) = m.comm[1].history.rounds
    assert r0.round == 0 and set(r0.actions) == {"agent_0", "agent_1", "agent_2"}
    assert all(a.startswith("explore:") for a in r0.actions.values())


def test_shared_history_carries_earlier_episodes_patterns():
    _, members, _ = play("shared", rounds=2, runner_episodes=2)
    history = members["agent_0"].comm[-1].history
    (pattern,) = history.episodes
    assert pattern.ticks > 0 and pattern.action_kinds["agent_1"] == {"explore": 1}


def test_other_protocols_get_no_history():
    _, members, _ = play("sequential", rounds=2)
    assert all(c.history is None for m in members.values() for c in m.comm)


def test_shared_history_lines_quote_model_text():
    history = SharedHistory((RoundOutcome(3, {"agent_0": "grab:cupcake_1"},
                                          {"agent_0": 'scout"\nOrganization:'},
                                          ("agent_1",), 2),))
    (line,) = history.lines(TEAM2, "agent_1")
    assert line == ('Round 3: Alice "[gograb] <cupcake_1>" as "scout\\" Organization:"; you '
                    "abstained. Goal units done after it: 2.")


def test_shared_planner_treats_the_latest_rounds_grabs_as_claims():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    env.reset(seed=1)
    m = PlannerMember("agent_1")
    history = SharedHistory((RoundOutcome(0, {"agent_0": "grab:cupcake_1"}, tick=0),))
    # shared's rules have no claiming (assign_work: self): what it saw still counts
    ctx = CommunicateContext(1, "agent_1", "Bob", TEAM2, can_message=["agent_0"],
                             history=history, rules=MemberRules(assign_work="self"))
    asyncio.run(m.communicate(ctx, MemberView(env)))
    assert m.planner.claims["cupcake_1"][0] == "agent_0"
    assert m.planner._intent != "grab:cupcake_1"


def test_shared_llm_prompt_shows_the_history():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    backend = ScriptedBackend(_first_enum)
    members = {"agent_0": PlannerMember("agent_0"),
               "agent_1": LLMAgent("agent_1", backend, seed=0, prompts="compact")}
    TeamRunner(env, load_organization("shared"), members, max_rounds=2).run(seed=1)
    last = backend.calls[-1][-1]["content"]
    assert "Team history:" in last and "Round 0: Alice " in last


@pytest.mark.parametrize("seed", range(8))
def test_a_sequential_planner_knows_earlier_choices_as_the_plain_rule_says(seed):
    """The claims a planner makes of earlier agents' chosen actions (each action's
    claims made once for all readers of the round's outputs) are the plain rule's:
    every earlier sender's latest action, where it first chose, as claims, its own
    left out; a sender that chose twice, silent turns and messages mixed in."""
    import random

    from orgteams.agents.planner.planner_member import _known_choices
    from orgteams.agents.shared_context import as_claims
    from orgteams.organizations.protocols.schedule import RoundOutputs, Stage, visible_outputs

    rng = random.Random(seed)
    team = tuple(f"agent_{i}" for i in range(6))
    stages = [Stage((a,), "all_prior", "message", acts=True) for a in team]
    outputs = RoundOutputs(team)
    for si, speaker in enumerate(team):
        for a in team:
            visible = visible_outputs(stages, si, a, outputs)
            ctx = CommunicateContext(0, a, a, {b: b for b in team}, visible_this_round=visible)
            chosen = {m.sender: m.content["action"] for m in visible if m.kind == "action"}
            plain = as_claims(chosen, a, tick=-1)
            got = _known_choices(ctx)
            assert [(m.sender, m.receivers, m.kind, m.text, m.content) for m in got] == \
                [(m.sender, m.receivers, m.kind, m.text, m.content) for m in plain]
        outputs.append(TeamMessage(speaker, (), round=0, stage=si))
        for _ in range(rng.choice([0, 1, 1, 2])):  # twice: as a speaker that chose again
            outputs.append(action_output(speaker, rng.choice(
                ["grab:cup_1", "grab:cup_2", "explore:kitchen", "wait", "continue"]),
                "label", 0, si))


@pytest.mark.parametrize("seed", range(8))
def test_a_shared_planner_takes_in_the_last_rounds_choices_as_the_plain_loop_does(
        seed, monkeypatch):
    """Under ``shared`` each planner is handed the latest history round's claims, made
    once for the whole team, its own left out: what it takes in of them round after
    round (repeats dropped, its own never; all of them, unlooked-up, when all are new)
    is what a plain list of the others' claims gives a plain loop, with the team's
    messages mixed in and claims said again in later rounds."""
    import random

    from orgteams.agents.messages import unseen
    from orgteams.agents.planner import planner_member
    from orgteams.agents.planner.planner_member import _known_choices
    from orgteams.agents.shared_context import as_claims

    # nothing said before this test is kept: what it says is made here (the team's
    # latest history claims would keep an earlier episode's)
    monkeypatch.setattr(planner_member, "_last_claims", (None, None))
    rng = random.Random(seed)
    team = tuple(f"agent_{i}" for i in range(40))  # more claims than are looked up at once
    fast = {a: PlannerMember(a) for a in team}
    plain = {a: set() for a in team}
    rounds: list[RoundOutcome] = []
    taken = {True: 0, False: 0}  # all of them made since it last heard, or looked up
    plain_loops = []
    plain_fresh = PlannerMember._fresh
    monkeypatch.setattr(PlannerMember, "_fresh", lambda self, messages, observed=False: (
        plain_loops.append(observed) or plain_fresh(self, messages, observed)))
    for r in range(12):
        actions = {a: rng.choice(["grab:jug_1", "grab:jug_2", "explore:attic",
                                  "explore:porch", "wait", "put:table"])
                   for a in team if rng.random() < 0.8}
        rounds.append(RoundOutcome(r, actions, tick=rng.choice([r, r, r - 1])))
        history = SharedHistory(tuple(rounds[-3:]))
        said = [TeamMessage.structured(rng.choice(team), "everyone", "claim",
                                       {"object": rng.choice(["jug_1", "jug_2"]),
                                        "tick": rng.choice([r, r - 1])})
                for _ in range(rng.choice([0, 2]))]
        for a in rng.sample(team, 8):
            ctx = CommunicateContext(r, a, a, {b: b for b in team}, history=history)
            got = _known_choices(ctx)
            others = as_claims(rounds[-1].actions, a, tick=rounds[-1].tick)
            assert [(m.sender, m.content) for m in got] == \
                [(m.sender, m.content) for m in others]
            looked_up = len(plain_loops)
            fresh = fast[a]._fresh_known(ctx)
            assert [(m.sender, m.kind, m.content) for m in fresh] == \
                [(m.sender, m.kind, m.content) for m in unseen(others, plain[a])]
            assert fast[a]._seen == plain[a]
            taken[len(plain_loops) == looked_up] += 1
            mixed = [m for m in said if m.sender != a]  # heard besides (a plain list)
            assert fast[a]._fresh(mixed) == unseen(mixed, plain[a])
    assert taken[True] and taken[False]
