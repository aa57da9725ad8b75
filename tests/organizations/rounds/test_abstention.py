"""Abstention that never blocks a teammate, and mid-task abstention told apart from
end-of-task abstention (issue #27), read from the running episode."""

from __future__ import annotations

import asyncio

from doubles import Recorder, log_dicts

from orgteams.agents.team import Team
from orgteams.envs.core.layout import Layout
from orgteams.envs.core.state import HouseholdState, Scene
from orgteams.envs.core.tasks import Predicate
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.episode import EpisodeState
from orgteams.organizations.rounds.episode_log import EventLine, read_log
from orgteams.organizations.rounds.monitor import MonitorConfig
from orgteams.organizations.rounds.phases import act_phase
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.run import run_episode

# A room whose row 3 runs on as a dead end to the fridge at (3, 6): (3, 5) is the only
# cell from which the fridge can be reached.
DEAD_END = ["########",
            "#kkk####",
            "#kkk####",
            "#kkkkkF#",
            "########"]


def dead_end_state(held: int) -> tuple[HighLevelEnv, Layout]:
    """agent_0 in the room, agent_1 in front of the fridge holding ``held`` of the
    goal's cupcakes (the goal: 2 in the fridge)."""
    layout = Layout.from_grid(DEAD_END, {"k": "kitchen"}, {"F": "fridge"},
                              require_rooms=False)
    w = layout.width
    objects = tuple(f"cupcake_{i}" for i in range(held))
    goal = (Predicate("inside", "cupcake", "fridge", 2),)
    scene = Scene(layout, "inline", goal, objects, 2, 100)
    state = HouseholdState(scene=scene, tick=0, agent_pos=[1 * w + 1, 3 * w + 5],
                           hands=[(), tuple(range(held))], contents=[()],
                           container_open=[False], door_open=[])
    env = HighLevelEnv(layout=layout, task="put_fridge", num_agents=2)
    env.load_state(state)
    return env, layout


def one_act_phase(env: HighLevelEnv) -> EpisodeState:
    org = load_organization("shared")
    members = {"agent_0": Recorder("agent_0", action=lambda valid: "check:fridge"),
               "agent_1": Recorder("agent_1", abstain=True)}
    state = EpisodeState(env, org, org.resolve(Team.of(list(env.possible_agents))), members)
    asyncio.run(act_phase(state, {"agent_1"}))
    return state


def test_an_abstainer_in_a_dead_end_steps_out_of_the_teammates_way():
    env, layout = dead_end_state(0)
    state = one_act_phase(env)
    # agent_1 abstained standing in front of the fridge: it walked back into the room,
    # as a removed member does, and agent_0 reached the fridge
    pos = env.base.world.agent_pos
    assert pos[0] == 3 * layout.width + 5 and env.memory("agent_0").furniture["fridge"].open
    assert pos[1] in env.nav.roomy_cells
    assert env.needs_decision("agent_1")  # it decides again next round, not idle for good
    (event,) = [e for e in state.events if e.type == "abstention"]
    assert event.get("agents") == ["agent_1"]


def test_abstaining_while_work_is_left_is_mid_task():
    env, _ = dead_end_state(2)  # it abstains holding both cupcakes the goal needs
    state = one_act_phase(env)
    (event,) = [e for e in state.events if e.type == "abstention"]
    assert (event.get("mid_task"), event.get("units_unattended")) == (True, 2)
    assert state.mid_task_abstained == {"agent_1"}


def test_competent_sequential_teams_abstain_at_the_end_of_the_task_and_are_not_switched(
        tmp_path):
    """``--org sequential --layout house --monitor``, planners, seeds 0-2: they abstain
    only with nothing left to do, and the monitor (mid-task abstention and duplicated
    work only) leaves them under sequential."""
    for seed in range(3):
        log = tmp_path / f"seq{seed}.jsonl"
        result = run_episode(layout="house", organization="sequential", agents=5,
                             backend="planner", seed=seed, monitor=True, log_path=str(log))
        s = result.summary
        events = [x for x in result.records if isinstance(x, EventLine)]
        abstentions = [e for e in events if e.type == "abstention"]
        assert s.success and abstentions
        assert not [e for e in abstentions if e.get("mid_task")]
        assert s.end_of_task_abstentions == sum(len(e.get("agents")) for e in abstentions)
        assert s.mid_task_abstentions == 0 and s.abstention_rate > 0.2
        assert not [e for e in events if e.type == "org_switch"]
        assert s.final_organization == "sequential"


def test_mid_task_abstention_still_switches_to_the_fallback():
    """A team that abstains while the whole task is left collapses: the monitor
    switches it, and the switch's reason is that abstention."""
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    members = {a: Recorder(a, abstain=True) for a in env.possible_agents}
    result = TeamRunner(env, load_organization("sequential"), members, max_rounds=8,
                        monitor=MonitorConfig()).run(seed=0)
    events = [x for x in result.records if isinstance(x, EventLine)]
    assert all(e.get("mid_task") for e in events if e.type == "abstention")
    (switch,) = [e for e in events if e.type == "org_switch"]
    assert switch.round == 4 and switch.get("to_protocol") == "coordinator"
    assert switch.get("reason") == "abstention 1.00 > 0.6 over 5 rounds: coverage collapsed"
    assert result.summary.mid_task_abstentions == 15  # 3 agents x rounds 0-4


def test_a_sequential_planner_team_finishes_with_abstainers_stepping_aside(tmp_path):
    """``--org sequential --agents 8 --layout generated:32:0``, planners, seed 3 (the
    paper2-scaling task): the member carrying the last unit to the coffee table pushed
    an abstainer onto the narrow cell beside it, whose stepping aside (evacuating off
    that cell) pushed it back, every round until the tick limit. Now it gets through."""
    log = tmp_path / "seq8.jsonl"
    result = run_episode(task="prepare_afternoon_tea", layout="generated:32:0",
                         organization="sequential", agents=8, backend="planner", seed=3,
                         max_ticks=1200, log_path=str(log))
    lines = log_dicts(read_log(log))
    abstained = [d for d in lines if d.get("type") == "abstention"]
    blocked = [d for d in lines if d.get("kind") == "action"
               and "blocked" in (d.get("failure_reason") or "")]
    assert result.summary.success and result.summary.units_done == result.summary.units_total
    assert abstained and not blocked
