"""Organization spec: validation messages, resolution, channels, YAML round trip, diff."""

import re

import pytest

from orgteams.organizations import Organization, load_organization

TEAM3 = ["agent_0", "agent_1", "agent_2"]


def test_unknown_protocol_names_field_and_suggests():
    msg = (
        "<text>: field 'protocol': unknown protocol 'sequental'. Did you mean 'sequential'? "
        "Known: free, leader_first, coordinator,"
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        Organization.from_yaml("name: x\nprotocol: sequental\n")


def test_malformed_file_names_file_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nprotocl: free\n")
    msg = f"{path}: field 'protocl': unknown field. Did you mean 'protocol'?"
    with pytest.raises(ValueError, match=re.escape(msg)):
        Organization.from_yaml(path)
    path.write_text("name: bad\nelection_every: 0\n")
    msg = f"{path}: field 'election_every': Input should be greater than or equal to 1"
    with pytest.raises(ValueError, match=re.escape(msg)):
        Organization.from_yaml(str(path))


def test_yaml_syntax_and_shape_errors(tmp_path):
    with pytest.raises(ValueError, match=re.escape("<text>: not valid YAML:")):
        Organization.from_yaml("name: [\n")
    msg = "<text>: expected a mapping of organization fields, got list"
    with pytest.raises(ValueError, match=re.escape(msg)):
        Organization.from_yaml("- a\n")
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ValueError, match=re.escape(f"{missing}: no such organization file")):
        Organization.from_yaml(missing)


@pytest.mark.parametrize(
    ("yaml_text", "msg"),
    [
        (
            "name: x\ntopology: {kind: tiers, tiers: [{role: leader}]}\n",
            "<text>: field 'topology': the last tier must have count 'rest' so every agent "
            "has a place",
        ),
        (
            "name: x\nprotocol: batched_sequential\n",
            "<text>: protocol 'batched_sequential' needs batch_size (agents per group)",
        ),
        (
            "name: x\nprotocol: leader_first\n",
            "<text>: protocol 'leader_first' with leadership_rule 'fixed' needs a leader: "
            "use topology kind 'tiers'",
        ),
        (
            "name: x\nleadership_rule: elected\n",
            "<text>: field 'leadership_rule': unknown leadership rule 'elected'. Did you mean "
            "'election'?",
        ),
        (
            "name: x\ninstruction: '{% if %}'\n",
            "<text>: field 'instruction': template syntax error at line 1:",
        ),
        (
            "name: x\ngovernance: {human_only: [misson]}\n",
            "<text>: field 'governance.human_only': unknown organization field 'misson'. "
            "Did you mean 'mission'?",
        ),
    ],
)
def test_validation_messages(yaml_text, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        Organization.from_yaml(yaml_text)


def test_undefined_template_variable_is_an_error():
    org = Organization.from_yaml("name: x\ninstruction: '{{ nope }}'\n")
    msg = "organization 'x': field 'instruction': 'nope' is undefined"
    with pytest.raises(ValueError, match=re.escape(msg)):
        org.resolve(TEAM3).instruction_for("agent_0")


def test_resolve_errors():
    leader = load_organization("leader")
    with pytest.raises(ValueError, match=re.escape("organization 'leader': team has duplicate")):
        leader.resolve(["agent_0", "agent_0"])
    msg = "organization 'leader': tier 'leader' names agent_7, not in the team of 3"
    with pytest.raises(ValueError, match=re.escape(msg)):
        leader.resolve(TEAM3, leaders=["agent_7"])
    r = leader.resolve(TEAM3)
    with pytest.raises(ValueError, match=re.escape("unknown agent 'agent_9'.")):
        r.role_of("agent_9")
    msg = "organization 'decentralized' has no leader tier to replace"
    with pytest.raises(ValueError, match=re.escape(msg)):
        load_organization("decentralized").resolve(TEAM3, leaders=["agent_1"])


def test_with_leaders_replaces_top_tier():
    r = load_organization("leader").resolve(TEAM3).with_leaders(["agent_2"])
    assert r.leaders == ("agent_2",)
    assert r.tiers == (("leader", ("agent_2",)), ("member", ("agent_0", "agent_1")))
    assert r.instruction_for("agent_0").startswith("You are Alice. Charlie is the leader")


def test_channels_all_topology_none_explicit():
    assert load_organization("decentralized").resolve(TEAM3).can_message("agent_2", "agent_0")
    chain = load_organization("chain").resolve(TEAM3)
    assert chain.can_message("agent_1", "agent_0") and chain.can_message("agent_0", "agent_1")
    assert not chain.can_message("agent_0", "agent_2")
    assert not chain.can_message("agent_0", "agent_0")
    none = Organization(name="quiet", channels="none").resolve(TEAM3)
    assert not none.can_message("agent_0", "agent_1")
    explicit = Organization.from_dict(
        {
            "name": "up",
            "topology": {
                "kind": "tiers",
                "tiers": [{"role": "boss"}, {"role": "member", "count": "rest"}],
            },
            "channels": [{"from": "member", "to": "boss"}, {"from": "agent_0", "to": "*"}],
        }
    ).resolve(TEAM3)
    assert explicit.can_message("agent_1", "agent_0")
    assert explicit.can_message("agent_0", "agent_2")
    assert not explicit.can_message("agent_1", "agent_2")
    bad = Organization.from_dict({"name": "b", "channels": [{"from": "bos", "to": "*"}]})
    msg = "organization 'b': field 'channels': unknown role or agent 'bos'."
    with pytest.raises(ValueError, match=re.escape(msg)):
        bad.resolve(TEAM3).can_message("agent_0", "agent_1")


def test_roles_override_and_tier_agents():
    org = Organization.from_dict(
        {
            "name": "custom",
            "topology": {
                "kind": "tiers",
                "tiers": [
                    {"role": "leader", "agents": ["agent_2"]},
                    {"role": "m", "count": "rest"},
                ],
            },
            "roles": {"agent_0": "scout", "agent_99": "ignored"},
        }
    )
    r = org.resolve(TEAM3)
    assert r.leaders == ("agent_2",)
    assert r.roles == {"agent_0": "scout", "agent_1": "m", "agent_2": "leader"}


@pytest.mark.parametrize("name", ["pyramid", "elected_leader", "none", "batched_sequential"])
def test_yaml_round_trip(name):
    org = load_organization(name)
    text = org.to_yaml()
    assert Organization.from_yaml(text) == org
    assert Organization.from_yaml(text).to_yaml() == text


def test_instruction_stays_a_block_in_yaml():
    assert "instruction: |\n  You are {{ me }}." in load_organization("leader").to_yaml()


def test_model_copy_and_diff():
    base = load_organization("leader")
    brief = base.rules.model_copy(update={"corrections": True})
    new = base.model_copy(update={"rules": brief, "allow_abstain": True})
    assert base.diff(new) == {"rules": (base.rules.model_dump(mode="json"),
                                        brief.model_dump(mode="json")),
                              "allow_abstain": (False, True)}
    assert base.diff(base) == {}
    assert base.governance_violations(new) == ["allow_abstain"]
    strict = base.model_copy(
        update={"governance": base.governance.model_copy(update={"needs_approval": ["rules"]})}
    )
    assert strict.governance_violations(new) == ["allow_abstain", "governance", "rules"]
    assert strict.governance_violations(new, approved=True) == ["allow_abstain", "governance"]


def test_updated_validates():
    base = load_organization("leader")
    assert base.updated(rules=["Be brief."]).rules.notes == ("Be brief.",)  # a list: notes
    assert base.updated(rules={"report_when": "never"}).rules.report_when == "never"
    msg = "organization 'leader': field 'protocol': unknown protocol 'sequental'."
    with pytest.raises(ValueError, match=re.escape(msg)):
        base.updated(protocol="sequental")


@pytest.mark.parametrize("name", ["leader", "pyramid", "chain", "dynamic", "coordinator"])
def test_a_teams_instructions_and_reports_are_those_of_the_plain_lookups(name):
    # build renders every instruction from names and reports kept for the resolution,
    # with the fragments read once; each agent rendered alone, its reports scanned
    from orgteams.agents.team import Team

    resolved = load_organization(name).resolve(Team.of_size(11))
    for r in (resolved, resolved.with_removed("agent_4")):
        names = {a: r.display_name(a) for a in r.team}  # the team's own, looked up each
        for a in r.team:
            assert r.instructions[a] == r._render_instruction(a, names)
            assert r.members_of(a) == [b for b in r.team if r.reports_to[b] == a]


@pytest.mark.parametrize("name", ["shared", "leader", "chain", "pyramid", "coordinator"])
def test_who_may_message_whom_is_what_the_allowed_pairs_say(name):
    # channels "all" are answered without the pairs (a 256-agent team has 65,000)
    from orgteams.agents.team import Team

    resolved = load_organization(name).resolve(Team.of_size(7))
    for r in (resolved, resolved.with_removed("agent_2")):
        allowed = r._allowed
        for a in r.team:
            others = [b for b in r.team if b != a]
            assert r.receivers_of(a) == tuple(b for b in r.team if (a, b) in allowed)
            assert r.to_everyone(a) == (tuple(b for b in others if (a, b) in allowed),
                                        tuple(b for b in others if (a, b) not in allowed))
            assert [r.can_message(a, b) for b in r.team] == [(a, b) in allowed for b in r.team]
    with pytest.raises(ValueError, match="unknown agent 'agent_9'"):
        resolved.can_message("agent_0", "agent_9")


@pytest.mark.parametrize(
    ("count", "msg"),
    [
        ("-1", "must be a number of agents (0 or more), 'rest' or a share such as "
               "{fraction: 0.5}, got -1"),
        ("abc", "must be a number of agents (0 or more), 'rest' or a share such as "
                "{fraction: 0.5}, got 'abc'"),
        ("true", "must be a number of agents (0 or more), 'rest' or a share such as "
                 "{fraction: 0.5}, got True"),
        ("{fraction: 2}", "share field 'fraction': Input should be less than or equal to 1"),
    ],
)
def test_a_tier_count_that_is_not_a_size_is_one_line(count, msg):
    # a negative count used to slice from the end: -1 of 6 agents made 5 leaders
    text = ("name: x\nprotocol: leader_first\ntopology: {kind: tiers, tiers: "
            f"[{{role: leader, count: {count}}}, {{role: member, count: rest}}]}}\n")
    with pytest.raises(ValueError) as info:
        Organization.from_yaml(text)
    assert str(info.value) == f"<text>: field 'topology.tiers.0.count': {msg}"


def test_tier_counts_place_that_many_agents():
    team = [f"agent_{i}" for i in range(6)]
    for count, leaders in (("0", ()), ("2", ("agent_0", "agent_1")),
                           ("{fraction: 0.5}", ("agent_0", "agent_1", "agent_2"))):
        org = Organization.from_yaml(
            "name: x\nprotocol: leader_first\ntopology: {kind: tiers, tiers: "
            f"[{{role: boss, count: {count}}}, {{role: member, count: rest}}]}}\n")
        assert org.resolve(team).tiers[0] == ("boss", leaders)


@pytest.mark.parametrize(("topology", "field", "least"), [
    ("{kind: tiers, tiers: [{role: ROLE, count: 1}, {role: member, count: rest}]}",
     "topology.tiers.0.role", 1),
    ("{kind: flat, member_role: ROLE}", "topology.member_role", 0),  # "": no role
])
@pytest.mark.parametrize("role", ["x" * 5000, '"a\\nb"', '""'])
def test_a_role_name_is_one_short_line(topology, field, least, role):
    # a role is said in every prompt and log line of its agents: a 5,000-character or
    # two-line role went into them unchecked
    protocol = "leader_first" if least else "shared"  # a flat team has no leader
    text = f"name: x\nprotocol: {protocol}\ntopology: {topology.replace('ROLE', role)}\n"
    if role == '""' and least == 0:
        assert Organization.from_yaml(text).topology.member_role == ""
        return
    with pytest.raises(ValueError) as info:
        Organization.from_yaml(text)
    got = {"x" * 5000: "'" + "x" * 40 + "...'", '"a\\nb"': "'a\\nb'", '""': "''"}[role]
    assert str(info.value) == (f"<text>: field '{field}': must be {least} to 40 printable "
                               f"characters on one line, got {got}")
