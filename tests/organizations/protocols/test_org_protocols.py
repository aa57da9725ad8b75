"""Turn-taking schedules, visibility, routing, claims, elections and leader hand-over."""

import dataclasses
import random
import re

import pytest

from orgteams.agents.messages import TeamMessage
from orgteams.organizations import (
    ElectionRecord,
    Organization,
    Stage,
    election_due,
    leader_for_round,
    load_organization,
    record_election,
    resolve_claims,
    route,
    schedule,
    tally,
    visible_outputs,
)
from orgteams.organizations.protocols.schedule import Inboxes, RoundOutputs


def turn(stage, agent, text, delivered=None):
    """One speaker's turn in ``stage`` (its kind is the stage's kind)."""
    return TeamMessage(agent, (), text, stage=stage, delivered=delivered)


T3 = ("agent_0", "agent_1", "agent_2")
T5 = tuple(f"agent_{i}" for i in range(5))


def resolved(name, team=T5):
    return load_organization(name).resolve(list(team))


def test_sequential_one_speaker_per_stage_sees_earlier_outputs():
    stages = schedule(resolved("sequential", T3), list(T3), 0)
    assert stages == [Stage((a,), "all_prior", "message", acts=True) for a in T3]
    outs = [turn(0, "agent_0", "I take the kitchen")]
    assert visible_outputs(stages, 1, "agent_1", outs) == outs
    outs.append(turn(1, "agent_1", "I abstain"))
    assert visible_outputs(stages, 2, "agent_2", outs) == outs
    assert visible_outputs(stages, 1, "agent_1", outs) == outs[:1]


def test_round_outputs_show_each_agent_what_a_scan_of_every_output_shows():
    rng = random.Random(0)
    kinds = ("message", "plan", "intention", "claim")
    sees = ("all_prior", "none_this_round", "intentions", "plan", "claims")
    stages = [Stage(T5, rng.choice(sees), rng.choice(kinds)) for _ in range(12)]
    outs, indexed = [], RoundOutputs(T5)
    for si in range(len(stages)):
        for a in T5:  # as a speaker of stage si sees them: every output said before it
            assert visible_outputs(stages, si, a, indexed) == visible_outputs(stages, si, a, outs)
        for a in rng.sample(T5, 3):  # public, to some (the sender among them or not), to none
            delivered = rng.choice([None, tuple(rng.sample(T5, rng.randint(0, 5))), ()])
            said = [turn(si, a, f"{a} at {si}", delivered) for _ in range(rng.randint(1, 2))]
            outs += said
            indexed += said
        for a in T5 + ("agent_9",):  # agent_9 is no member: scanned, as before
            assert visible_outputs(stages, si, a, indexed) == visible_outputs(stages, si, a, outs)
    assert list(indexed) == outs and indexed.seen_by("agent_9") is None
    late = [turn(0, "agent_1", "said late, in stage 0", None)]  # out of stage order
    outs += late
    indexed += late
    for si in range(len(stages)):
        for a in T5:
            assert visible_outputs(stages, si, a, indexed) == visible_outputs(stages, si, a, outs)


def test_inboxes_give_each_receiver_what_lists_by_receiver_give():
    # Messages to everyone else are kept once; each receiver still takes what it was
    # sent, in the order routed, also mixed with messages to some and taken mid-round.
    rng = random.Random(1)
    for _ in range(20):
        inboxes, lists = Inboxes(T5), {a: [] for a in T5}
        for i in range(rng.randint(0, 30)):
            sender = rng.choice(T5)
            others = [b for b in T5 if b != sender]
            delivered = rng.choice([others, rng.sample(others, rng.randint(1, 3))])
            message = turn(0, sender, f"{sender} {i}", tuple(delivered))
            inboxes.add(message, delivered)
            for b in delivered:
                lists[b].append(message)
            if rng.random() < 0.2:  # a speaker of sequential takes its own before acting
                a = rng.choice(T5)
                assert inboxes.take(a) == lists[a]
                lists[a] = []
        for a in T5:
            assert inboxes.take(a) == lists[a]
            assert inboxes.take(a) == []


def test_sequential_messages_keeps_the_concurrent_act_phase():
    org = load_organization("sequential").updated(protocol="sequential_messages")
    stages = schedule(org.resolve(list(T3)), list(T3), 0)
    assert stages == [Stage((a,), "all_prior", "message") for a in T3]


def test_shared_sees_nothing_of_this_round():
    stages = schedule(resolved("shared", T3), list(T3), 4)
    assert stages == [Stage(T3, "none_this_round", "message")]
    outs = [turn(0, "agent_0", "x")]
    assert visible_outputs(stages, 0, "agent_1", outs) == []


def test_broadcast_decision_sees_all_intentions_only():
    stages = schedule(resolved("broadcast", T3), list(T3), 0)
    assert stages == [
        Stage(T3, "none_this_round", "intention"),
        Stage(T3, "intentions", "message"),
    ]
    intents = [turn(0, a, f"{a} plans") for a in T3]
    decisions = [turn(1, "agent_0", "done")]
    assert visible_outputs(stages, 1, "agent_2", intents + decisions) == intents
    assert visible_outputs(stages, 0, "agent_2", intents) == []


def test_coordinator_plans_first_then_others_see_the_plan():
    stages = schedule(resolved("coordinator"), list(T5), 0)
    assert stages == [
        Stage(("agent_0",), "none_this_round", "plan"),
        Stage(T5[1:], "plan", "message"),
    ]
    plan = turn(0, "agent_0", "agent_1 kitchen, agent_2 fridge")
    assert visible_outputs(stages, 1, "agent_3", [plan]) == [plan]


def test_batched_sequential_groups_of_k():
    stages = schedule(resolved("batched_sequential", [f"agent_{i}" for i in range(9)]), [], 0)
    assert stages == []
    team = [f"agent_{i}" for i in range(9)]
    library = schedule(resolved("batched_sequential", team), team, 0)
    assert [s.speakers for s in library] == [tuple(team[i:i + 2]) for i in range(0, 9, 2)]
    four = load_organization("batched_sequential").updated(batch_size=4)
    stages = schedule(four.resolve(team), team, 0)
    assert [s.speakers for s in stages] == [tuple(team[:4]), tuple(team[4:8]), (team[8],)]
    assert {s.sees for s in stages} == {"all_prior"}
    assert all(s.acts for s in stages)  # sequential in groups: each group acts in turn
    outs = [turn(0, a, a) for a in team[:4]] + [turn(1, "agent_4", "")]
    assert visible_outputs(stages, 1, "agent_5", outs) == outs[:4]
    assert visible_outputs(stages, 2, "agent_8", outs) == outs


def test_claim_shared_claims_then_decides_seeing_claims():
    stages = schedule(resolved("claim_shared", T3), list(T3), 0)
    assert stages == [Stage(T3, "none_this_round", "claim"), Stage(T3, "claims", "message")]


def test_leader_first_and_pyramid_order():
    stages = schedule(resolved("leader"), ["agent_3", "agent_0", "agent_1"], 0)
    assert [s.speakers for s in stages] == [("agent_0",), ("agent_1",), ("agent_3",)]
    team9 = [f"agent_{i}" for i in range(9)]
    order = [s.speakers[0] for s in schedule(resolved("pyramid", team9), team9[::-1], 0)]
    assert order == team9
    led = resolved("leader").with_leaders(["agent_3"])
    assert schedule(led, list(T5), 0)[0].speakers == ("agent_3",)


def test_free_visibility_follows_delivery():
    stages = schedule(resolved("chain", T3), list(T3), 0)
    outs = [turn(0, "agent_0", "hi Bob", delivered=("agent_1",))]
    assert visible_outputs(stages, 1, "agent_1", outs) == outs
    assert visible_outputs(stages, 2, "agent_2", outs) == []
    assert visible_outputs(stages, 2, "agent_0", outs) == outs


def test_schedule_and_visibility_errors():
    with pytest.raises(ValueError, match=re.escape("schedule(): agents not in the team: agent_7")):
        schedule(resolved("shared", T3), ["agent_7"], 0)
    with pytest.raises(ValueError, match=re.escape("stage_index 3 out of range for 1 stages")):
        visible_outputs([Stage(T3, "none_this_round", "message")], 3, "agent_0", [])


def test_route_along_channels():
    chain = resolved("chain")
    assert route("agent_2", "everyone", chain) == (["agent_1", "agent_3"], ["agent_0", "agent_4"])
    receivers = ["agent_3", "agent_0", "agent_0", "agent_2", "agent_9"]
    assert route("agent_2", receivers, chain) == (["agent_3"], ["agent_0", "agent_2", "agent_9"])
    assert route("agent_0", "everyone", resolved("decentralized")) == (list(T5[1:]), [])
    with pytest.raises(ValueError, match=re.escape("unknown agent 'agent_8'.")):
        route("agent_8", "everyone", chain)


def test_resolve_claims_earliest_agent_wins():
    claims = {"agent_10": "Scout", "agent_2": " scout ", "agent_1": "cook", "agent_3": "Cook"}
    assert resolve_claims(claims) == {
        "agent_10": None,
        "agent_2": " scout ",
        "agent_1": "cook",
        "agent_3": None,
    }
    assert resolve_claims({"agent_0": "abstain", "agent_1": None, "agent_2": ""}) == {
        "agent_0": None,
        "agent_1": None,
        "agent_2": None,
    }
    order = ["agent_3", "agent_1"]
    assert resolve_claims({"agent_1": "cook", "agent_3": "cook"}, order) == {
        "agent_1": None,
        "agent_3": "cook",
    }


def test_elections_due_every_k_rounds():
    r = resolved("elected_leader")
    assert [election_due(r, i) for i in range(7)] == [True, False, False, False, False, True, False]
    assert schedule(r, list(T5), 0)[0] == Stage(T5, "none_this_round", "vote")
    assert schedule(r, list(T5), 0, with_election=False)[0].kind == "message"
    assert schedule(r, list(T5), 1)[0].kind == "message"
    assert not election_due(resolved("leader"), 0)


def test_tally_tie_breaks():
    votes = {"agent_0": "agent_2", "agent_1": "agent_1", "agent_2": "agent_1", "agent_3": "agent_2"}
    assert tally(votes) == "agent_1"
    assert tally(votes, incumbent="agent_2") == "agent_2"
    assert tally(votes, order=["agent_2", "agent_1"]) == "agent_2"
    assert tally({"agent_0": "agent_10", "agent_1": "agent_9"}) == "agent_9"
    assert tally({"agent_0": "Zed"}, order=list(T3)) == "agent_0"
    assert tally({}, incumbent="agent_4") == "agent_4"
    with pytest.raises(ValueError, match=re.escape("tally() needs at least one valid vote")):
        tally({})


def test_record_election():
    rec = record_election(5, {"agent_0": "agent_1", "agent_1": "ghost"}, order=list(T3))
    assert rec == ElectionRecord(
        5, {"agent_0": "agent_1", "agent_1": "ghost"}, {"agent_1": 1}, "agent_1"
    )


def test_leader_for_round_rules():
    rr = Organization.from_dict(
        {
            "name": "rr",
            "protocol": "leader_first",
            "leadership_rule": "round_robin",
            "leadership_every": 2,
            "topology": {"kind": "tiers", "tiers": [{"role": "l"}, {"role": "m", "count": "rest"}]},
        }
    ).resolve(list(T3))
    got = [leader_for_round(rr, i, current="agent_x") for i in range(7)]
    assert got == ["agent_0", "agent_x", "agent_1", "agent_x", "agent_2", "agent_x", "agent_0"]
    dyn = resolved("dynamic", T3)
    progress = {"agent_0": 1, "agent_1": 3, "agent_2": 3}
    assert leader_for_round(dyn, 3, current="agent_2", progress=progress) == "agent_2"
    assert leader_for_round(dyn, 3, current="agent_0", progress=progress) == "agent_1"
    assert leader_for_round(dyn, 4, current="agent_0", progress=progress) == "agent_0"
    assert leader_for_round(dyn, 0) == "agent_0"
    assert leader_for_round(resolved("leader"), 3) == "agent_0"


def test_protocol_facts_are_the_one_registry():
    from orgteams.organizations.protocols.facts import PROTOCOL_FACTS, PROTOCOLS, SELF_ORGANIZING
    from orgteams.organizations.rounds.monitor import CapabilityMonitor, MonitorConfig

    assert PROTOCOLS == tuple(PROTOCOL_FACTS)
    monitor = CapabilityMonitor(MonitorConfig(window=1))
    monitor.update(0, 3, 3, 3)  # nobody abstains, everyone duplicates
    for name, facts in PROTOCOL_FACTS.items():
        tiers = {"kind": "tiers", "tiers": [{"role": "leader", "count": 1},
                                            {"role": "member", "count": "rest"}]}
        org = Organization(name=f"t_{name}", protocol=name, batch_size=2,
                           **({"topology": tiers} if facts.needs_leader else {}))
        stages = schedule(org.resolve(list(T3)), list(T3), 0)
        assert {a for s in stages for a in s.speakers} == set(T3), name
        assert (monitor.should_switch(name) is not None) == facts.self_organizing, name
        assert (name in SELF_ORGANIZING) == facts.self_organizing
    with pytest.raises(ValueError, match=re.escape(
            "protocol 'coordinator' with leadership_rule 'fixed' needs a leader")):
        Organization(name="x", protocol="coordinator")


def _plain_unseen(messages, seen, skip, structured):
    """A reader's filter message by message, as planners read a plain list."""
    out = []
    for m in messages:
        if m.kind in skip or (structured and not m.content):
            continue
        if m.said_id not in seen:
            seen.add(m.said_id)
            out.append(m)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_a_speakers_view_of_a_growing_round_reads_as_the_plain_list(seed):
    """Under all_prior each speaker is handed every earlier output of the round (a cut
    of the round's public outputs): it is the list a scan gives, element for element,
    to any list use (an LLM member's), and a planner's reading of it (unseen, of_kind,
    with derived values) gives what the plain loop gives over that list, as it grows
    stage by stage, mixed with private outputs, with messages delivered between
    stages (Inboxes cuts), repeats from earlier rounds and said_ids forgotten."""
    from orgteams.agents.messages import Heard, Seen, of_kind, unseen
    from orgteams.agents.shared_context import action_output

    rng = random.Random(seed)
    team = tuple(f"agent_{i}" for i in range(8))
    stages = [Stage((a,), "all_prior", "message", acts=True) for a in team]
    readers = {a: (Seen(), set()) for a in team}
    earlier: list[TeamMessage] = []
    derived = 0
    for round_ in range(4):
        outs, indexed, inbox = [], RoundOutputs(team), Inboxes(team)
        for si, speaker in enumerate(team):
            for a in team:  # what it would be handed at this stage, and its reading
                view, plain = (visible_outputs(stages, si, a, indexed),
                               visible_outputs(stages, si, a, outs))
                assert view == plain and len(view) == len(plain) and view[:] == plain[:]
                assert [id(m) for m in view] == [id(m) for m in plain]
                seen, mine = readers[a]
                if rng.random() < 0.05 and mine:  # forgotten: the cuts are forgotten too
                    gone = rng.choice(sorted(mine, key=id))
                    seen.discard(gone)
                    mine.discard(gone)
                skip = rng.choice([frozenset(("text", "action")), ("claim", "release"), ()])
                structured = rng.random() < 0.7
                expected = _plain_unseen(plain, mine, skip, structured)
                assert [id(m) for m in unseen(view, seen, skip, structured)] == \
                    [id(m) for m in expected]
                assert seen == mine
                actions = [m for m in plain if m.kind == "action"]
                assert [id(m) for m in of_kind(view, "action")] == [id(m) for m in actions]
                got = of_kind(view, "action", _sender_and_action)
                assert got == [_sender_and_action(m) for m in actions]
                derived += type(view) is Heard and view.source is not None
                if a == speaker and rng.random() < 0.3:  # a list use: changed, then plain
                    view.append(plain[0] if plain else TeamMessage(a, ()))
                    assert getattr(view, "source", None) is None
                    assert of_kind(view, "action") == [m for m in view if m.kind == "action"]
            said = []
            for _ in range(rng.choice([0, 0, 1, 2])):  # silent, or messages to all or some
                others = [b for b in team if b != speaker]
                to = rng.choice([others, others, rng.sample(others, 2)])
                content = rng.choice([{"room": f"room_{rng.randrange(3)}"},
                                      {"object": f"cup_{rng.randrange(4)}"}, {}])
                m = TeamMessage(speaker, "everyone", "said", rng.choice(["claim", "found", "text"]),
                                round=round_, stage=si, content=content,
                                delivered=tuple(to))
                if earlier and rng.random() < 0.2:  # said again, as in an earlier round
                    m = dataclasses.replace(rng.choice(earlier), stage=si, delivered=tuple(to))
                said.append(m)
                inbox.add(m, to)
            if not said:
                said.append(TeamMessage(speaker, (), round=round_, stage=si))
            outs += said
            indexed += said
            if rng.random() < 0.8:  # its chosen action, public
                chosen = action_output(speaker, rng.choice(["grab:cup_1", "explore:room_0",
                                                            "wait"]), "label", round_, si)
                outs.append(chosen)
                indexed.append(chosen)
            if rng.random() < 0.5:  # delivered before it acts (sequential)
                _read_inbox(inbox, speaker, readers[speaker], rng)
            earlier += [m for m in said if m.content]
        for a in team:  # the rest, at the end of the phase
            _read_inbox(inbox, a, readers[a], rng)
    assert derived  # the cuts were read from their broadcast's index


def _sender_and_action(m):
    return m.sender, m.content["action"]


def _read_inbox(inbox, agent, reader, rng):
    from orgteams.agents.messages import unseen

    seen, mine = reader
    messages = inbox.take(agent)
    skip, structured = frozenset(("text", "action")), rng.random() < 0.7
    expected = _plain_unseen(list(messages), mine, skip, structured)
    assert [id(m) for m in unseen(messages, seen, skip, structured)] == \
        [id(m) for m in expected]
    assert seen == mine
