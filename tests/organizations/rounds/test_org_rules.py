"""Organization rules: the spec, what each member kind is told, and what running
episodes actually did under them (decision records, not only the resolver)."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from itertools import combinations

import pytest
from doubles import fill_reply, records_of

from orgteams.agents import LLMAgent, ScriptedBackend
from orgteams.agents.member_rules import ROLE_VOCABULARY, MemberRules, choose_vote
from orgteams.agents.planner.planner_member import PlannerMember, RandomMember
from orgteams.assets import asset_dir
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.errors import UserError
from orgteams.organizations import Organization, load_organization
from orgteams.organizations.protocols.schedule import record_election
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.spec.library import list_organizations
from orgteams.run import run_episode

NAMED = list_organizations()


def episode(org, seed=0, agents=4, layout="apartment", **kw):
    return run_episode(task="prepare_afternoon_tea", layout=layout, organization=org,
                       agents=agents, backend="planner", seed=seed, log_path=None, **kw)


def sent(result, kind=None):
    return [r for r in records_of(result) if r.get("phase") == "communicate" and r.get("message")
            and (kind is None or r.get("message_kind") == kind)]


# ------------------------------------------------------------------------------- spec
def test_every_named_organization_declares_its_rules():
    import yaml

    for name in NAMED:
        data = yaml.safe_load((asset_dir("organizations") / f"{name}.yaml").read_text())
        assert isinstance(data.get("rules"), dict), name
        assert {"assign_work", "report_when", "report_to"} <= set(data["rules"]), name


@pytest.mark.parametrize(("rules", "message"), [
    ({"assign_wrk": "leader"}, "x.yaml: field 'rules': unknown rule 'assign_wrk'. Did you "
                               "mean 'assign_work'?"),
    ({"assign_work": "boss"}, "x.yaml: field 'rules.assign_work': Input should be 'leader', "
                              "'self' or 'claim'"),
    ({"budget": {"messages": "3"}}, "x.yaml: field 'rules.budget.messages': Input should be "
                                    "a valid integer"),
    ({"budget": {"tokens": 10**6}}, "x.yaml: field 'rules.budget.tokens': Input should be "
                                    "less than or equal to 5000"),
    ({"corrections": "yes"}, "x.yaml: field 'rules.corrections': Input should be a valid "
                             "boolean"),
    ({"election": {"vote": "best"}}, "x.yaml: field 'rules.election.vote': Input should be "
                                     "'progress', 'round_robin', 'lowest_id', 'random' or "
                                     "'self'"),
])
def test_bad_rules_get_one_line_naming_file_and_field(rules, message):
    with pytest.raises(UserError, match=re.escape(message)):
        Organization.from_dict({"name": "x", "rules": rules}, source="x.yaml")


def test_rules_default_and_a_list_is_free_text_notes():
    org = Organization(name="x", rules=["Be brief."])
    assert org.rules.notes == ("Be brief.",) and org.rules.assign_work == "claim"
    assert Organization.from_yaml(org.to_yaml()) == org


# ----------------------------------------------------------------- told per member
def test_members_are_told_their_rules_and_report_receivers():
    pyramid = load_organization("pyramid").resolve([f"agent_{i}" for i in range(9)])
    assert pyramid.member_rules("agent_5").report_to == ("agent_1",)  # its vice leader
    assert pyramid.member_rules("agent_0").report_to == ("agent_1", "agent_2")
    # every leader tier assigns, each to its own reports (never across or past a tier)
    assert [(a, pyramid.member_rules(a).assigns, pyramid.member_rules(a).reports)
            for a in ("agent_0", "agent_1", "agent_5")] == [
        ("agent_0", True, ("agent_1", "agent_2")),
        ("agent_1", True, ("agent_3", "agent_4", "agent_5")),
        ("agent_5", False, ())]
    assert pyramid.member_rules("agent_5").boss == "agent_1"
    dual = load_organization("dual_leader").resolve([f"agent_{i}" for i in range(6)])
    assert [(dual.member_rules(a).reports, dual.member_rules(a).peers)
            for a in ("agent_0", "agent_1")] == [
        (("agent_2", "agent_3"), ("agent_1",)), (("agent_4", "agent_5"), ("agent_0",))]
    # a leader's reports go to its half and to the other leader (they coordinate)
    assert dual.member_rules("agent_0").report_to == ("agent_2", "agent_3", "agent_1")
    chain = load_organization("chain").resolve([f"agent_{i}" for i in range(4)])
    assert chain.member_rules("agent_1").report_to == ("agent_0", "agent_2")
    flat = load_organization("decentralized").resolve(["agent_0", "agent_1"])
    assert flat.member_rules("agent_0").report_to is None  # everyone
    correct = load_organization("leader_with_correction").resolve(["agent_0", "agent_1"])
    assert correct.member_rules("agent_1").corrections
    text = correct.instruction_for("agent_1")
    assert "- You may correct the leader: if an order is wrong or unnecessary, say what the " \
           "leader missed." in text


def test_llm_members_read_the_rules_in_their_prompt():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    backend = ScriptedBackend(lambda messages, schema: {"thoughts": "", "message": "",
                                                        "receivers": ["everyone"]})
    org = load_organization("decentralized").updated(
        rules={"assign_work": "claim", "budget": {"messages": 1, "tokens": 30}})
    members = {"agent_0": LLMAgent("agent_0", backend, seed=0), "agent_1": PlannerMember("agent_1")}
    TeamRunner(env, org, members, max_rounds=1).run(seed=0)
    prompt = "\n".join(m["content"] for m in backend.calls[0])
    assert "> - Send at most 1 message and 30 tokens per round; more is not delivered." in prompt
    assert "> - Before you go for an object or a room, claim it" in prompt


# ------------------------------------------------------------- what episodes did
def test_a_leader_assigns_and_members_report_to_it_only():
    result = episode("leader")
    assigns = sent(result, "assign")
    assert assigns and {r["agent"] for r in assigns} == {"agent_0"}
    reports = [r for r in sent(result) if r["message_kind"] in ("found", "done")
               and r["agent"] != "agent_0"]
    assert reports and all(r["receivers"] == ["agent_0"] for r in reports)
    assert not sent(result, "status")
    # the same team where the rules say each claims its own work: nobody assigns
    claiming = load_organization("leader").updated(rules={"assign_work": "claim"})
    assert not sent(episode(claiming), "assign") and sent(episode(claiming), "claim")


def test_self_assigned_work_sends_no_claims_and_every_round_sends_status():
    none = episode("none")
    assert not sent(none, "claim") and not sent(none, "status") and sent(none, "found")
    shared = episode("shared")
    status = sent(shared, "status")
    rounds = {r["round"] for r in records_of(shared) if r.get("phase") == "act"}
    assert not sent(shared, "claim")
    assert {r["round"] for r in status} == rounds  # a status every round
    done_only = episode(load_organization("decentralized").updated(
        rules={"report_when": "on_completion"}))
    assert not sent(done_only, "found") and sent(done_only, "done")


def test_the_budget_caps_what_each_member_sends_per_round():
    capped = load_organization("broadcast").updated(rules={"assign_work": "self",
                                                           "report_when": "every_round",
                                                           "budget": {"messages": 1}})
    result = episode(capped)
    per_round = Counter((r["agent"], r["round"]) for r in sent(result))
    assert per_round and max(per_round.values()) == 1
    free = Counter((r["agent"], r["round"]) for r in sent(episode("broadcast")))
    assert max(free.values()) > 1
    assert result.summary.comm_tokens_per_step < episode("broadcast").summary \
        .comm_tokens_per_step


def test_members_correct_the_leader_only_when_the_rules_allow_it():
    corrected = [r for s in range(4) for r in sent(episode("leader_with_correction", s),
                                                     "correct")]
    assert corrected and all(r["receivers"] == ["agent_0"] for r in corrected)
    assert all(r["agent"] != "agent_0" for r in corrected)
    assert not [r for s in range(4) for r in sent(episode("leader", s), "correct")]


def test_planners_abstain_with_nothing_useful_and_claim_roles_from_the_vocabulary():
    result = episode("sequential")
    comm = [r for r in records_of(result) if r.get("phase") == "communicate"]
    abstained = [r for r in comm if r.get("abstained")]
    assert abstained and all(r["role"] == "standby" for r in abstained)
    assert {r["role"] for r in comm} <= set(ROLE_VOCABULARY)
    assert len({r["role"] for r in comm}) >= 3
    acted = {(r["agent"], r["round"]) for r in records_of(result) if r.get("phase") == "act"}
    assert not {(r["agent"], r["round"]) for r in abstained} & acted  # they were not asked
    assert result.summary.abstention_rate > 0 and result.summary.unique_roles >= 3
    assert episode("decentralized").summary.abstention_rate == 0  # no right to abstain


# ------------------------------------------------------------------------ elections
def test_ballots_follow_the_election_rule():
    rules = MemberRules(vote="progress", leaders=("agent_0",))
    team = ["agent_0", "agent_1", "agent_2"]
    assert choose_vote(rules, "agent_2", team, 5, {"agent_1": (1, 0), "agent_2": (0, 3)}) \
        == "agent_1"
    assert choose_vote(rules, "agent_2", team, 5, {}) == "agent_0"  # tie: the incumbent
    assert choose_vote(MemberRules(vote="round_robin", leaders=("agent_2",)), "agent_1",
                       team, 5) == "agent_0"
    assert choose_vote(MemberRules(vote="self"), "agent_1", team, 0) == "agent_1"
    rand = [choose_vote(MemberRules(vote="random", vote_seed=3), a, team, r)
            for a in team for r in range(6)]
    assert rand == [choose_vote(MemberRules(vote="random", vote_seed=3), a, team, r)
                    for a in team for r in range(6)] and len(set(rand)) > 1
    rec = record_election(0, {"agent_0": "agent_0", "agent_1": "agent_0", "agent_2": "agent_2"},
                          order=team)
    assert rec.self_votes == 2 and rec.winner == "agent_0"


def elected(vote, reelect="every"):
    return load_organization("elected_leader").updated(
        rules={**load_organization("elected_leader").rules.model_dump(mode="json"),
               "election": {"vote": vote, "reelect": reelect}})


def test_elections_are_outcomes_of_the_ballots_in_running_episodes():
    rr = episode(elected("round_robin"), seed=0)
    winners = [e["winner"] for e in rr.summary.to_dict()["events"] if e["type"] == "election"]
    assert winners[:3] == ["agent_1", "agent_2", "agent_3"]  # not always the lowest index
    assert rr.summary.leader_tenure < rr.summary.rounds
    own = episode(elected("self"), seed=0).summary.to_dict()
    assert own["self_vote_rate"] == 1.0
    once = episode(elected("progress", "once"), seed=0).summary.to_dict()
    assert once["election_count"] == 1 and once["leader_tenure"] == once["rounds"]
    ballots = [r for r in records_of(episode("elected_leader", seed=2)) if r.get("kind") == "vote"]
    assert ballots and all(r["parsed"]["rule"] == "progress" for r in ballots)
    assert {r["vote"] for r in ballots} != {"agent_0"}  # they vote by progress


def test_random_members_vote_by_the_rule_too():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    members = {a: RandomMember(a, seed=1) for a in env.possible_agents}
    result = TeamRunner(env, elected("self"), members, max_rounds=6).run(seed=0)
    assert result.summary.self_vote_rate == 1.0


# --------------------------------------------------------------- every pair differs
def test_planner_teams_differ_between_every_pair_of_named_organizations():
    seeds = range(3)
    means = {}
    for org in NAMED:
        rows = [episode(org, s).summary for s in seeds]
        means[org] = (statistics.mean(r.ticks for r in rows),
                      round(statistics.mean(r.comm_tokens_per_step for r in rows), 9))
    same = [(a, b) for a, b in combinations(NAMED, 2) if means[a] == means[b]]
    assert not same, same


def test_the_leader_reads_the_rules_from_its_side():
    r = load_organization("leader_with_correction").resolve(["agent_0", "agent_1", "agent_2"])
    leader, member = r.instruction_for("agent_0"), r.instruction_for("agent_1")
    assert "- Report only new information (goal objects found, subgoals done) to the agents " \
           "you lead." in leader
    assert "- Teammates may correct your orders: accept a correction that states a fact you " \
           "missed." in leader
    assert "to your leader." in member and "You may correct the leader" in member
    assert "You may correct the leader" not in leader


def test_the_runner_keeps_llm_members_within_the_budget():
    def talkative(messages, schema):
        if "messages" in schema["properties"]:  # the budget caps the schema too
            assert schema["properties"]["messages"]["maxItems"] == 1
        said = "I will look in the kitchen and then the fridge."
        return fill_reply(schema, action=0, message=said,
                          messages=[{"receivers": ["everyone"], "message": said}],
                          abstain=False, role="scout")

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    org = load_organization("broadcast").updated(
        rules={"assign_work": "self", "report_when": "every_round", "budget": {"messages": 1}})
    members = {a: LLMAgent(a, ScriptedBackend(talkative), seed=0) for a in env.possible_agents}
    result = TeamRunner(env, org, members, max_rounds=2).run(seed=0)
    said = [r for r in records_of(result) if r.get("phase") == "communicate" and r.get("message")]
    per_round = Counter((r["agent"], r["round"]) for r in said)
    assert set(per_round.values()) == {1}  # intention stage spoke; the message stage is cut
    cut = [r for r in records_of(result) if r.get("phase") == "communicate"
           and any(n.startswith("budget: 1 message(s)") for n in r.get("notes") or ())]
    assert {(r["agent"], r["round"]) for r in cut} == set(per_round)
