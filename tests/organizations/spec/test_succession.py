"""Succession: a shock removes a member holding a seat (a leader, a chain link) and the
rules' ``succession`` says who takes it over, in the running episode (docs/shocks.md)."""

from __future__ import annotations

import re

import pytest
from doubles import read_dicts, records_of
from pydantic import ValidationError

from orgteams.agents.team import Team
from orgteams.criticize_reflect.rule_edits import RulesEdit, merged_rules
from orgteams.errors import UserError
from orgteams.organizations import Organization, load_organization
from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.organizations.rounds.shocks import recovery_summary, regulated
from orgteams.run import run_episode

REPORTS = ("found", "done", "status")


def with_succession(name: str, succession: str) -> Organization:
    org = load_organization(name)
    return org.updated(rules={**org.model_dump(mode="json")["rules"], "succession": succession})


def play(org, agents: int, *shocks: str, seed: int = 0):
    return run_episode(organization=org, layout="house", backend="planner", agents=agents,
                       seed=seed, shocks=list(shocks), log_path=None)


def messages(result, kind=None):
    return [r for r in records_of(result) if r.get("phase") == "communicate" and r.get("message")
            and (kind is None or r.get("message_kind") == kind)]


def assigners(result, since: int) -> tuple[set[str], set[str]]:
    """Who sent orders before round ``since`` and from it on."""
    orders = messages(result, "assign")
    return ({r["agent"] for r in orders if r["round"] < since},
            {r["agent"] for r in orders if r["round"] >= since})


def followed(result, leader: str, since: int) -> int:
    """Orders from ``leader`` (round >= ``since``) that their receiver acted on that round."""
    acts = {(r["round"], r["agent"]): r["action"] for r in records_of(result)
            if r.get("phase") == "act"}
    n = 0
    for r in messages(result, "assign"):
        if r["agent"] == leader and r["round"] >= since:
            order = r["message"].split(": ", 1)[1].split(" -> ")[0].replace(" ", ":", 1)
            n += sum(acts.get((r["round"], to)) == order for to in r["delivered"])
    return n


@pytest.mark.parametrize("agents", [5, 9])
@pytest.mark.parametrize("org", ["leader", "pyramid"])
def test_the_next_member_leads_from_the_shock_round(org, agents):
    now = load_organization(org).resolve(Team.of_size(agents), removed=("agent_0",))
    reports_to_1 = now.members_of("agent_1")  # agent_0's seat: agent_1 leads them now
    assert reports_to_1 and "agent_0" not in reports_to_1
    result = play(org, agents, "remove:agent_0@5")
    s = result.summary.to_dict()
    assert s["success"]
    (event,) = s["successions"]
    assert (event["round"], event["agent"], event["successor"], event["rule"]) == (
        5, "agent_0", "agent_1", "next")
    assert event["leaders"] == ["agent_1"] and event["role"] == "leader"
    roles = s["roles_by_round"]
    assert roles["4"]["agent_0"] == "leader" and roles["4"]["agent_1"] != "leader"
    after = [roles[r] for r in roles if int(r) >= 5]
    assert after and all(r["agent_1"] == "leader" and "agent_0" not in r for r in after)
    # who assigns work in the running episode: agent_0 before, agent_1 from round 5 on
    # (and in a pyramid every vice leader seat, each to its own members)
    before = load_organization(org).resolve(Team.of_size(agents))
    assert assigners(result, 5) == (set(before.leaders), set(now.leaders))
    assert "agent_0" in before.leaders and "agent_0" not in now.leaders
    assert followed(result, "agent_1", 5) > 0  # members carry out the successor's orders
    # channels: the reports agent_0 got reach agent_1 now; nothing goes to agent_0
    late = [r for r in messages(result) if r["round"] >= 5]
    assert not any("agent_0" in r["delivered"] for r in late)
    assert any(r["agent"] in reports_to_1 and r["delivered"] == ["agent_1"]
               for r in late if r.get("message_kind") in REPORTS)


def test_pyramid_mid_leader_is_succeeded_by_its_first_member():
    result = play("pyramid", 9, "remove:agent_1@5")
    (event,) = result.summary.to_dict()["successions"]
    assert (event["agent"], event["role"], event["successor"]) == (
        "agent_1", "vice_leader", "agent_3")
    assert event["roles"] == {"agent_3": ["member", "vice_leader"]}
    # agent_3 now leads agent_1's other members and reports to agent_0
    assert event["channels"]["agent_3"] == ["agent_0", "agent_4", "agent_5"]
    late = [r for r in messages(result) if r["round"] >= 5]
    assert any(r["agent"] == "agent_3" and r["delivered"] == ["agent_0"]
               for r in late if r.get("message_kind") in REPORTS)
    assert all(r["agent_3"] == "vice_leader" for k, r in result.summary.roles_by_round.items()
               if int(k) >= 5)


def test_pyramid_seats_move_down_the_tiers():
    r = with_succession("pyramid", "next").resolve(Team.of_size(9), removed=("agent_0",))
    assert r.tiers == (("leader", ("agent_1",)), ("vice_leader", ("agent_2", "agent_3")),
                       ("member", ("agent_4", "agent_5", "agent_6", "agent_7", "agent_8")))
    assert r.members_of("agent_3") == ["agent_4", "agent_5"]
    assert r.members_of("agent_2") == ["agent_6", "agent_7", "agent_8"]
    assert r.receivers_of("agent_0") == () and r.reports_to["agent_0"] is None


@pytest.mark.parametrize("agents", [5, 9])
def test_chain_closes_around_a_removed_link_and_its_head_passes_on(agents):
    result = play("chain", agents, "remove:agent_2@5")
    (event,) = result.summary.to_dict()["successions"]
    assert (event["agent"], event["successor"]) == ("agent_2", "agent_3")
    assert event["channels"] == {"agent_1": ["agent_3"], "agent_3": ["agent_1"]}
    bridged = [r["round"] for r in messages(result) if r["agent"] == "agent_1"
               and "agent_3" in r["delivered"]]
    assert bridged and min(bridged) >= 5  # agent_1 reaches agent_3 only once the chain closed
    kept = play(with_succession("chain", "none"), agents, "remove:agent_2@5")
    assert kept.summary.to_dict()["successions"] == []
    assert not any(r["agent"] == "agent_1" and "agent_3" in r["delivered"]
                   for r in messages(kept))
    head = play("chain", agents, "remove:agent_0@5")
    (event,) = head.summary.to_dict()["successions"]
    assert (event["agent"], event["successor"]) == ("agent_0", "agent_1")
    assert not any("agent_0" in r["delivered"] for r in messages(head) if r["round"] >= 5)
    resolved = load_organization("chain").resolve(Team.of_size(agents), removed=("agent_0",))
    assert resolved.instruction_for("agent_1").startswith(
        "You are Bob. The team is a chain")
    assert "neighbours (Charlie)" in resolved.instruction_for("agent_1")


def test_succession_none_keeps_the_removed_leaders_seat():
    result = play(with_succession("leader", "none"), 5, "remove:agent_0@5")
    s = result.summary.to_dict()
    assert s["successions"] == []
    assert assigners(result, 5) == ({"agent_0"}, set())  # nobody gives orders any more
    assert all(r["agent_1"] == "member" for k, r in s["roles_by_round"].items())
    early = [r for r in messages(result) if r["round"] < 5 and r.get("message_kind") in REPORTS
             and r["agent"] != "agent_0"]
    assert early and all(r["receivers"] == ["agent_0"] for r in early)  # they report to it
    late = [r for r in messages(result) if r["round"] >= 5 and r.get("message_kind") in REPORTS
            and r["agent"] != "agent_0"]
    assert late == []  # reports to the removed leader reach nobody: not sent, noted
    unsent = [r for r in records_of(result) if r.get("round", 0) >= 5 and any(
        n.startswith("undeliverable: ") for n in r.get("notes") or ())]
    assert unsent and {r["agent"] for r in unsent} <= {"agent_1", "agent_2", "agent_3",
                                                       "agent_4"}


def test_elect_holds_a_vote_at_the_shock_round_without_the_removed_member():
    result = play("elected_leader", 5, "remove:agent_0@2")
    s = result.summary.to_dict()
    elections = [e for e in s["events"] if e["type"] == "election"]
    vote = next(e for e in elections if e["round"] == 2)  # not an election round (every 5)
    assert sorted(vote["votes"]) == ["agent_1", "agent_2", "agent_3", "agent_4"]
    (event,) = s["successions"]
    assert (event["round"], event["rule"], event["successor"]) == (2, "elect", vote["winner"])
    assert vote["winner"] != "agent_0"
    orders = {r["agent"] for r in messages(result, "assign") if 2 <= r["round"] < 5}
    assert orders == {vote["winner"]}
    assert all(e["winner"] != "agent_0" for e in elections if e["round"] >= 2)


def test_substitute_takes_the_leaders_seat_unless_succession_is_none():
    result = play("leader", 5, "substitute:agent_0=planner@5")
    (event,) = result.summary.to_dict()["successions"]
    assert (event["agent"], event["successor"], event["shock"]) == (
        "agent_0", "agent_0", "substitute")
    assert assigners(result, 5) == ({"agent_0"}, {"agent_0"})  # the substitute gives orders
    kept = play(with_succession("leader", "none"), 5, "substitute:agent_0=planner@5")
    assert kept.summary.to_dict()["successions"] == [] and assigners(kept, 5)[1] == set()


def test_rotation_never_hands_the_lead_to_a_removed_member():
    org = load_organization("dynamic").updated(leadership_rule="round_robin",
                                               leadership_every=1)
    result = play(org, 3, "remove:agent_1@0")
    changes = [e.get("leader") for e in result.summary.events if e.type == "leader_change"]
    assert changes and "agent_1" not in changes


def test_bad_succession_is_one_line_naming_file_and_field(tmp_path):
    path = tmp_path / "org.yaml"
    path.write_text("name: x\ntopology: {kind: tiers, tiers: [{role: leader, count: 1}, "
                    "{role: member, count: rest}]}\nrules: {succession: nxt}\n")
    with pytest.raises(UserError) as err:
        Organization.from_yaml(path)
    assert str(err.value) == (f"{path}: field 'rules.succession': Input should be 'next', "
                              "'elect' or 'none'")
    path.write_text("name: x\ntopology: {kind: chain}\nrules: {succession: elect}\n")
    with pytest.raises(UserError) as err:
        Organization.from_yaml(path)
    assert str(err.value) == (f"{path}: field 'rules.succession': 'elect' needs a leader to "
                              "elect: use topology kind 'tiers'")
    with pytest.raises(UserError) as err:
        regulated(load_organization("leader"), "rules.succession", "nxt")
    assert str(err.value) == ("regulate shock rules.succession='nxt': organization 'leader': "
                              "field 'rules.succession': Input should be 'next', 'elect' or "
                              "'none'")


def test_named_organizations_declare_their_succession():
    got = {n: load_organization(n).rules.succession for n in (
        "leader", "leader_with_correction", "pyramid", "dual_leader", "dynamic", "chain",
        "elected_leader", "coordinator", "none")}
    assert got == {"leader": "next", "leader_with_correction": "next", "pyramid": "next",
                   "dual_leader": "next", "dynamic": "next", "chain": "next",
                   "elected_leader": "elect", "coordinator": "none", "none": "none"}


def test_coordinators_may_edit_succession_within_the_closed_list():
    edit = RulesEdit.model_validate({"succession": "elect"})
    merged = merged_rules(load_organization("leader").rules, edit)
    assert merged["succession"] == "elect" and merged["assign_work"] == "leader"
    with pytest.raises(ValidationError, match=re.escape("Input should be 'next', 'elect' or "
                                                        "'none'")):
        RulesEdit.model_validate({"succession": "agent_1"})


def test_recovery_summary_counts_successions():
    shock = {"round": 5, "kind": "remove", "applied": True, "recovery_rounds": 2}
    rec = recovery_summary([EpisodeSummary.from_dict(
        {"shocks": [shock], "successions": [{"type": "succession", "successor": "agent_1"}]}),
        EpisodeSummary.from_dict({"shocks": [shock], "successions": []})])
    assert rec["successions"] == 1 and rec["recovered"] == 2


def test_cli_run_shows_the_successor_in_summary_log_and_output(capsys, tmp_path):
    from orgteams.cli.main import main

    log = tmp_path / "ep.jsonl"
    argv = ["run", "--backend", "planner", "--layout", "house", "--org", "leader",
            "--agents", "5", "--seed", "0", "--shock", "remove:agent_0@5", "--log", str(log),
            "--quiet"]
    assert main(argv) == 0
    assert "round 5: agent_1 took agent_0's seat (leader, succession next)" in (
        capsys.readouterr().out)
    records = list(read_dicts(log))
    (event,) = [r for r in records if r.get("type") == "succession"]
    assert (event["round"], event["successor"]) == (5, "agent_1")
    summary = records[-1]
    assert summary["successions"] == [event]
    assert {r["agent"] for r in records if r.get("message_kind") == "assign"
            and r["round"] >= 5} == {"agent_1"}


def test_llm_members_are_told_the_new_structure_from_the_shock_round():
    result = run_episode(organization="pyramid", layout="house", backend="scripted", agents=5,
                         seed=0, shocks=["remove:agent_0@2"], max_rounds=3, log_path=None)
    prompts = {r["round"]: str(r["prompt"]) for r in records_of(result)
               if r.get("phase") == "communicate" and r["agent"] == "agent_1"
               and r.get("prompt")}
    assert "Alice is the primary leader; vice leaders: Bob;" in prompts[1]
    assert "Bob is the primary leader; vice leaders: Charlie; members: David, Eve." in (
        prompts[2])
    assert "You lead Charlie:" in prompts[2] and "You report to" not in prompts[2]
