"""TeamRunner: protocol visibility, routing, elections, abstention, shocks, monitor, log."""

from __future__ import annotations

import json
import re

import pytest
from doubles import Recorder, read_dicts, records_of

from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.monitor import MonitorConfig
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.rounds.shocks import Shock


def make(org, n=3, rounds=2, **kw):
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=n)
    members = {f"agent_{i}": Recorder(f"agent_{i}", **kw) for i in range(n)}
    runner = TeamRunner(env, load_organization(org), members, max_rounds=rounds)
    return runner, members


def test_sequential_speakers_see_earlier_outputs_of_this_round():
    runner, members = make("sequential", rounds=1)
    runner.run(seed=0)
    assert members["agent_0"].seen == [(0, "message", [])]
    # each earlier agent's message, then the action it chose right after its turn
    assert members["agent_1"].seen == [(0, "message", ["agent_0", "agent_0"])]
    assert [(v.sender, v.kind, v.text) for v in members["agent_2"].contexts[0]
            .visible_this_round] == [("agent_0", "text", "hi from agent_0"),
                                     ("agent_0", "action", "[wait]"),
                                     ("agent_1", "text", "hi from agent_1"),
                                     ("agent_1", "action", "[wait]")]


def test_shared_speakers_see_nothing_of_this_round_but_hear_it_after():
    runner, members = make("shared", rounds=2)
    runner.run(seed=0)
    assert all(seen == [(0, "message", []), (1, "message", [])]
               for seen in (m.seen for m in members.values()))
    assert "agent_0:hi from agent_0" in members["agent_2"].heard


def test_broadcast_decision_stage_sees_all_intentions():
    runner, members = make("broadcast", rounds=1)
    runner.run(seed=0)
    assert members["agent_1"].seen == [(0, "intention", []),
                                       (0, "message", ["agent_0", "agent_1", "agent_2"])]


def test_chain_routes_only_to_neighbours_and_records_dropped():
    runner, members = make("chain", n=4, rounds=1)
    result = runner.run(seed=0)
    msg = next(r for r in records_of(result) if r.get("agent") == "agent_0" and r.get("message"))
    assert msg["delivered"] == ["agent_1"]
    assert msg["dropped"] == ["agent_2", "agent_3"]
    assert members["agent_3"].heard == ["agent_2:hi from agent_2"]
    # a broadcast to 1 receiver counts once delivered
    assert result.summary.message_tokens_delivered < 3 * result.summary.message_tokens_sent


def test_broadcast_to_three_counts_three_times_delivered():
    runner, _ = make("none", n=4, rounds=1)
    s = runner.run(seed=0).summary.to_dict()
    assert s["message_tokens_delivered"] == 3 * s["message_tokens_sent"]
    assert s["comm_tokens_per_step"] == pytest.approx(s["message_tokens_sent"] / s["ticks"])
    assert s["delivered_tokens_per_step"] == pytest.approx(
        s["message_tokens_delivered"] / s["ticks"])


def test_election_is_recorded_and_changes_the_leader():
    runner, members = make("elected_leader", rounds=1, vote="agent_2")
    result = runner.run(seed=0)
    election = next(e for e in result.summary.to_dict()["events"] if e["type"] == "election")
    assert election["winner"] == "agent_2"
    assert election["votes"] == {"agent_0": "agent_2", "agent_1": "agent_2",
                                 "agent_2": "agent_2"}
    assert result.summary.election_count == 1
    assert runner.state.resolved.leaders[0] == "agent_2"


def test_abstaining_agents_step_aside_and_count_in_the_abstention_rate():
    runner, members = make("sequential", rounds=2, abstain=True,
                           action=lambda valid: valid[0])
    result = runner.run(seed=0)
    acts = [r for r in records_of(result) if r.get("phase") == "act"]
    assert acts == []  # nobody was asked to act: everyone abstained
    assert result.summary.abstention_rate == 1.0
    fresh = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    fresh.reset(seed=0)
    # everyone stepped out of the way: one standing off a room cell (a doorway, beside
    # furniture) walked into the room, the others stayed put
    before, after = fresh.base.world.agent_pos, runner.env.base.world.agent_pos
    roomy = runner.env.nav.roomy_cells
    assert all(b == a or a in roomy for b, a in zip(before, after))
    assert [b in roomy for b in before] == [b == a for b, a in zip(before, after)]
    assert runner.env.ticks == 2


def test_remove_shock_idles_the_agent_and_substitute_swaps_the_member():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    members = {f"agent_{i}": Recorder(f"agent_{i}") for i in range(3)}
    new = Recorder("agent_2")
    new.model = "replacement"
    runner = TeamRunner(env, load_organization("none"), members, max_rounds=3,
                        shocks=[Shock(1, "remove", "agent_1"),
                                Shock(2, "substitute", "agent_2", new)])
    result = runner.run(seed=0)
    speakers = {(r["round"], r["agent"]) for r in records_of(result) if r.get("phase") ==
                "communicate"}
    assert (0, "agent_1") in speakers and (1, "agent_1") not in speakers
    assert result.summary.members["agent_2"] == "replacement"
    kinds = [(e.get("kind"), e.get("agent")) for e in result.summary.events
             if e.type == "shock"]
    assert kinds == [("remove", "agent_1"), ("substitute", "agent_2")]
    assert env.base.overlay.markers["agent_1"] == "idle"


def test_abstainers_are_marked_after_every_stage_and_a_removed_agent_stays_idle():
    # sequential at 12 planners in a studio: one stage per speaker, many abstain; after
    # each stage the overlay marks exactly every agent that abstained so far (a removed
    # agent idle)
    from orgteams.run import build_team

    org = load_organization("sequential")
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=12)
    runner = TeamRunner(env, org, build_team("planner", 12, org), max_rounds=8,
                        shocks=[Shock(3, "remove", "agent_5")])
    ever: set[str] = set()
    checked = []

    def check(state):
        ever.update(state.abstained)
        markers = env.base.overlay.markers
        assert {a for a, m in markers.items() if m == "abstained"} == ever - {"agent_5"}
        assert all(markers.get(a) == "abstained" for a in state.abstained)
        checked.append(len(state.abstained))

    def on_round(r, lines):
        if r == 0:
            runner.state.hooks.stage.append(check)

    runner.on_round = on_round
    runner.run(seed=0)
    assert env.base.overlay.markers["agent_5"] == "idle"
    assert len(checked) > 50 and max(checked) >= 3  # stages of rounds 1-7, some abstaining


def test_shock_parse_and_errors():
    assert Shock.parse("remove:agent_1@5") == Shock(5, "remove", "agent_1")
    assert Shock.parse("substitute:agent_0=planner@2") == Shock(2, "substitute", "agent_0",
                                                                "planner")
    with pytest.raises(ValueError, match=re.escape("malformed shock 'kill:agent_1'")):
        Shock.parse("kill:agent_1")
    runner_env = HighLevelEnv(layout="studio", num_agents=2)
    members = {f"agent_{i}": Recorder(f"agent_{i}") for i in range(2)}
    with pytest.raises(ValueError, match=r"shock agent 'agent_7' is not in the team"):
        TeamRunner(runner_env, load_organization("none"), members,
                   shocks=[Shock(1, "remove", "agent_7")])


def test_monitor_switches_self_organizing_team_that_duplicates_work():
    def same_target(valid):
        rooms = sorted(v for v in valid if v.startswith("explore:"))
        return rooms[0] if rooms else "wait"

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    members = {f"agent_{i}": Recorder(f"agent_{i}", action=same_target) for i in range(3)}
    runner = TeamRunner(env, load_organization("shared"), members, max_rounds=8,
                        monitor=MonitorConfig(window=2, max_duplicates=0.3))
    result = runner.run(seed=0)
    switch = result.summary.to_dict()["org_switches"]
    assert len(switch) == 1 and switch[0]["to_org"] == "coordinator"
    assert "duplicate work" in switch[0]["reason"]
    assert result.summary.final_organization == "coordinator"


def test_log_survives_an_interrupted_run(tmp_path):
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    members = {"agent_0": Recorder("agent_0"), "agent_1": Recorder("agent_1", fail_round=3)}
    path = tmp_path / "ep.jsonl"
    runner = TeamRunner(env, load_organization("none"), members, max_rounds=10, log_path=path)
    with pytest.raises(RuntimeError, match="member crashed"):
        runner.run(seed=0)
    records = list(read_dicts(path))
    assert records[0]["record"] == "episode"  # the replay header comes first
    assert {r["round"] for r in records if "round" in r} == {0, 1, 2, 3}
    assert max(r["round"] for r in records if r.get("phase") == "act") == 2
    # a torn final line (power cut mid-write) is skipped, earlier lines are kept
    with path.open("a") as fh:
        fh.write('{"round": 4, "agent"')
    assert len(list(read_dicts(path))) == len(records)
    json.loads(path.read_text().splitlines()[0])


def test_members_must_match_the_team():
    env = HighLevelEnv(layout="studio", num_agents=2)
    with pytest.raises(ValueError, match=r"members must cover exactly the env's agents"):
        TeamRunner(env, load_organization("none"), {"agent_0": Recorder("agent_0")})


def test_a_member_missing_part_of_the_protocol_is_one_clear_line():
    class Mute:
        agent_id, model = "agent_1", "mute"

        def reset(self):
            pass

    env = HighLevelEnv(layout="studio", num_agents=2)
    with pytest.raises(ValueError, match=re.escape(
            "member agent_1 (Mute) does not implement TeamMember: missing act, "
            "acts_every_round, backend, communicate, observe, receive, set_leader")):
        TeamRunner(env, load_organization("none"), {"agent_0": Recorder("agent_0"),
                                                    "agent_1": Mute()})


def test_live_view_shows_the_round_messages():
    pytest.importorskip("pygame")
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3,
                       render_mode="rgb_array")
    members = {f"agent_{i}": Recorder(f"agent_{i}") for i in range(3)}
    TeamRunner(env, load_organization("none"), members, max_rounds=1).run(seed=0)
    overlay = env.base.overlay
    assert [(m.sender, m.audience) for m in overlay.log][:2] == [
        ("agent_0", ("agent_1", "agent_2")), ("agent_1", ("agent_0", "agent_2"))]
    assert overlay.latest["agent_2"].text == "hi from agent_2"
    with_speech = env.render()
    overlay.clear()
    assert (env.render() != with_speech).any()
    env.close()


def test_act_phase_sees_the_same_role_as_the_communicate_phase():
    # The leader's act prompt says it leads, as its communicate prompt does (the two
    # prompts then share their long prefix, which the local server's cache reuses).
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    members = {f"agent_{i}": Recorder(f"agent_{i}") for i in range(3)}
    TeamRunner(env, load_organization("leader"), members, max_rounds=2).run(seed=0)
    for agent, member in members.items():
        said = {c.role for c in member.contexts}
        acted = {c.role for c in member.act_contexts}
        assert acted and acted == said, agent
    assert {c.role for c in members["agent_0"].act_contexts} == {"leader"}


def test_custom_names_reach_the_organization_instruction():
    """One name scheme: the instruction and the context name the same people."""
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    members = {f"agent_{i}": Recorder(f"agent_{i}") for i in range(3)}
    names = {"agent_0": "Zed", "agent_1": "Yan", "agent_2": "Xia"}
    TeamRunner(env, load_organization("leader"), members, names=names, max_rounds=1).run(0)
    ctx = members["agent_1"].contexts[0]
    assert ctx.name == "Yan" and ctx.team == names
    assert "You are Yan" in ctx.instruction and "Zed" in ctx.instruction
    assert "Alice" not in ctx.instruction and "Bob" not in ctx.instruction


def test_the_organization_is_resolved_once_per_change(monkeypatch):
    """Once for ``run_episode`` (its members and runner share it), once for all episodes
    of a runner, and once per change in the episode: a regulate shock is resolved when
    checked before the episode and when applied, never again."""
    from orgteams.organizations.spec.resolved import ResolvedOrganization
    from orgteams.run import run_episode

    builds = []
    real = ResolvedOrganization.build.__func__

    def counting(cls, organization, *args, **kwargs):
        builds.append(organization.name)
        return real(cls, organization, *args, **kwargs)

    monkeypatch.setattr(ResolvedOrganization, "build", classmethod(counting))
    result = run_episode(layout="studio", organization="leader", backend="planner", seed=0,
                         log_path=None, max_rounds=3)
    assert result.summary.rounds == 3 and builds == ["leader"]
    builds.clear()
    runner, _ = make("leader", rounds=2)
    runner.run(seed=0)
    runner.run(seed=1)
    assert builds == ["leader"]
    builds.clear()
    result = run_episode(layout="studio", organization="leader", backend="planner", seed=0,
                         log_path=None, max_rounds=3, shocks=["regulate:protocol=shared@1"])
    assert builds == ["leader", "leader", "leader"]  # the start, the shock checked, applied
    assert result.summary.final_protocol == "shared"


def test_a_resolution_of_another_organization_or_team_is_refused():
    from orgteams.agents.team import Team

    env = HighLevelEnv(layout="studio", num_agents=3)
    members = {f"agent_{i}": Recorder(f"agent_{i}") for i in range(3)}
    leader = load_organization("leader")
    with pytest.raises(ValueError, match=re.escape(
            "resolved= is 'none' for ['agent_0', 'agent_1', 'agent_2'], not 'leader' for "
            "['agent_0', 'agent_1', 'agent_2'] with names ['Alice', 'Bob', 'Charlie']")):
        TeamRunner(env, leader, members,
                   resolved=load_organization("none").resolve(Team.of_size(3)))
    with pytest.raises(ValueError, match=re.escape("not 'leader' for")):
        TeamRunner(env, leader, members, names=["Ann", "Ben", "Cid"],
                   resolved=leader.resolve(Team.of_size(3)))
    runner = TeamRunner(env, leader, members, resolved=(given := leader.resolve(
        Team.of_size(3))))
    assert runner.resolved is given


def test_rounds_are_frozen_out_of_the_garbage_collector_only_while_the_episode_plays():
    # gc.freeze() at the start and after each round (the cyclic collector's full passes
    # over the growing records were a fifth of a 256-agent round), unfrozen at the end
    import gc

    from orgteams.organizations.rounds.runner import YOUNG_THRESHOLD

    frozen, thresholds, before = [], [], gc.get_threshold()
    runner, _ = make("shared", rounds=3)
    runner.on_round = lambda r, lines: (frozen.append(gc.get_freeze_count()),
                                        thresholds.append(gc.get_threshold()))
    gc.unfreeze()
    runner.run(seed=0)
    assert len(frozen) == 3 and min(frozen) > 0
    assert gc.get_freeze_count() == 0
    # young collections wait for more allocations while it freezes, as set before after
    assert thresholds == [(max(before[0], YOUNG_THRESHOLD), *before[1:])] * 3
    assert gc.get_threshold() == before
    # a process that froze objects of its own is left alone: nothing frozen or unfrozen
    # (the count only drops, as frozen objects are freed)
    gc.freeze()
    mine = gc.get_freeze_count()
    frozen.clear()
    try:
        runner.run(seed=0)
        assert len(frozen) == 3 and max(frozen) <= mine
        assert set(thresholds[3:]) == {before} and gc.get_threshold() == before
        assert 0 < gc.get_freeze_count() <= mine
    finally:
        gc.unfreeze()
