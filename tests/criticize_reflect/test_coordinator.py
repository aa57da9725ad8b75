"""The Coordinator validates candidates, enforces governance, records rejections, picks."""

from __future__ import annotations

from orgteams.agents.backends import ScriptedBackend
from orgteams.criticize_reflect.coordinator import Coordinator, Trial
from orgteams.organizations.library import load_organization

TEAM = ["agent_0", "agent_1", "agent_2"]


def decide(*replies, k: int = 3, approved: bool = False, org=None, retries: int = 1):
    org = org or load_organization("leader")
    backend = ScriptedBackend(list(replies))
    coordinator = Coordinator(backend, k=k, max_retries=retries)
    history = [Trial(0, org, 60.0, {"ticks": 50}), Trial(1, org.updated(name="b"), 40.0)]
    return coordinator.propose(history, org, approved=approved, team=TEAM, iteration=2), backend


def test_governance_violation_and_invalid_spec_are_rejected_with_reasons():
    decision, _ = decide({"candidates": [
        {"name": "abstainers", "allow_abstain": True},                  # human-only
        {"name": "typo", "protocol": "sequental"},                      # invalid
        {"name": "nobody", "leader": "agent_7"},                        # not in the team
        {"name": "Bob leads", "leader": "agent_1", "rules": ["Report to the leader only."]},
    ], "pick": 0}, k=4)
    rows = decision.candidates
    assert [r["valid"] for r in rows] == [False, False, False, True]
    assert rows[0]["reason"] == "governance: changes human-only field(s) allow_abstain"
    assert rows[1]["reason"].startswith("invalid:") and "Did you mean 'sequential'" in (
        rows[1]["reason"])
    assert "agent_7" in rows[2]["reason"]
    assert decision.pick == 3 and decision.pick_reason == "first valid (model pick 0 invalid)"
    org = decision.organization
    assert org.name == "bob_leads" and org.rules.notes == ("Report to the leader only.",)
    assert org.topology.tiers[0].agents == ["agent_1"]
    assert org.allow_abstain is False and decision.fallback is None


def test_needs_approval_fields_change_only_when_approved():
    org = load_organization("leader")
    org = org.updated(governance={**org.governance.model_dump(), "needs_approval": ["protocol"]})
    reply = {"candidates": [{"protocol": "free", "topology": {"kind": "flat"}}], "pick": 0}
    refused, _ = decide(reply, reply, org=org)
    assert refused.fallback and refused.organization == org  # current kept
    assert refused.candidates[0]["reason"].startswith("needs approval: changes field(s) protocol")
    accepted, _ = decide(reply, org=org, approved=True)
    assert accepted.fallback is None and accepted.organization.protocol == "free"
    assert accepted.organization.name == "leader_r2_0"  # unnamed: <base>_r<iteration>_<i>


def test_no_valid_candidate_gets_a_correction_naming_the_reasons_then_retry():
    bad = {"candidates": [{"mission": "Win."}], "pick": 0}
    good = {"candidates": [{"name": "terse", "rules": ["Be brief."]}], "pick": 0}
    decision, backend = decide(bad, good)
    assert decision.organization.name == "terse" and decision.pick_reason == "model pick"
    assert "governance: changes human-only field(s) mission" in backend.calls[1][-1]["content"]
    assert [r["attempt"] for r in decision.candidates] == [1, 2]


def test_unusable_replies_keep_the_current_organization_recorded():
    org = load_organization("leader")
    decision, backend = decide("no idea", {"candidates": []}, org=org)
    assert len(backend.calls) == 2 and decision.organization == org
    assert decision.fallback.startswith("invalid reply after 2 attempt(s)")
    assert decision.pick is None and decision.pick_reason.startswith("fallback:")
    assert decision.to_dict()["organization"]["name"] == "leader"


def test_extra_candidates_beyond_k_are_ignored_and_history_is_sorted_by_cost():
    decision, backend = decide({"candidates": [{"name": "a"}, {"name": "b"}], "pick": 1}, k=1)
    assert decision.organization.name == "a"
    assert decision.candidates[1]["reason"] == "ignored: more than k=1 candidates"
    prompt = backend.calls[0][1]["content"]
    assert prompt.index("Iteration 1: cost 40.0") < prompt.index("Iteration 0: cost 60.0")
    assert "Never change mission, allow_abstain, governance" in prompt


def test_schemas_stay_grammar_friendly():
    """A long ``maxLength`` becomes a grammar too deep for llama.cpp (the server dies)."""
    from orgteams.criticize_reflect.coordinator import (
        CoordinatorReply,
        OrganizationProposal,
        build_candidate,
    )
    from orgteams.criticize_reflect.critic import CritiqueReply

    def lengths(node):
        if isinstance(node, dict):
            yield from ([node["maxLength"]] if "maxLength" in node else [])
            for v in node.values():
                yield from lengths(v)
        elif isinstance(node, list):
            for v in node:
                yield from lengths(v)

    for model in (CoordinatorReply, CritiqueReply):
        assert max(lengths(model.model_json_schema()), default=0) <= 600
    org, reason = build_candidate(load_organization("leader"),
                                  OrganizationProposal(instruction="x" * 3001), name="long")
    assert org is None and "longer than 3000" in reason
