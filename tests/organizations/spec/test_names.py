"""One naming scheme: the team's display names reach prompts, instructions, planner
messages and the terminal alike (ids stay in the log)."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr

from doubles import records_of

from orgteams.agents import LLMAgent, ScriptedBackend
from orgteams.agents.planner.planner_member import PlannerMember
from orgteams.agents.records import decision_line
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.runner import TeamRunner

NAMES = {"agent_0": "Zed", "agent_1": "Yan", "agent_2": "Xia"}


def test_custom_names_reach_the_instruction_and_the_prompt():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    backend = ScriptedBackend()
    members = {"agent_0": LLMAgent("agent_0", backend, seed=0),
               "agent_1": PlannerMember("agent_1"), "agent_2": PlannerMember("agent_2")}
    runner = TeamRunner(env, load_organization("leader"), members, names=NAMES, max_rounds=2)
    result = runner.run(seed=0)
    prompts = [m["content"] for call in backend.calls for m in call]
    assert any("You are Zed. Zed is the leader of the team; the others (Yan, Xia)" in p
               for p in prompts)
    for name in ("Alice", "Bob", "Charlie", "agent_1", "agent_2"):
        assert not any(name in p for p in prompts), name
    # planners' assignments and notes name people the same way in what they send
    texts = [r["message"] for r in records_of(result) if r.get("message")]
    assert texts and not any("agent_" in t for t in texts), texts


def test_planner_assignments_use_display_names():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    members = {a: PlannerMember(a, leader=a == "agent_0") for a in env.possible_agents}
    result = TeamRunner(env, load_organization("leader"), members, names=NAMES,
                        max_rounds=3).run(seed=0)
    assigns = [r["message"] for r in records_of(result)
               if r.get("phase") == "communicate" and (r.get("message") or "").startswith(
                   ("Yan:", "Xia:"))]
    assert assigns, [r.get("message") for r in records_of(result)]


def test_terminal_lines_use_display_names():
    from orgteams.cli.commands import _round_printer

    show = _round_printer(NAMES)
    err = io.StringIO()
    with redirect_stderr(err):
        show(0, [decision_line({"phase": "communicate", "agent": "agent_0", "round": 0,
                                "message": "Yan: explore kitchen",
                                "delivered": ["agent_1", "agent_2"]}),
                 decision_line({"phase": "act", "agent": "agent_1", "round": 0,
                                "action": "explore:kitchen", "status": "running", "tick": 3})])
    assert err.getvalue().splitlines() == [
        "  r0   Zed -> Yan, Xia: Yan: explore kitchen",
        "  r0   Yan does explore:kitchen (running, tick 3)",
    ]


def test_an_order_names_its_receiver_once_in_the_terminal():
    """``Alice -> Bob: Bob: explore living_room`` (issue 25): the order's text names the
    assignee for the log and prompts; the terminal line already does."""
    from orgteams.cli.commands import _round_printer

    show = _round_printer(NAMES)
    err = io.StringIO()
    with redirect_stderr(err):
        show(2, [decision_line(line) for line in (
            {"phase": "communicate", "agent": "agent_0", "round": 2,
             "message": "Yan: explore kitchen", "message_kind": "assign",
             "delivered": ["agent_1"]},
            {"phase": "communicate", "agent": "agent_0", "round": 2, "message": "Yan: you lead",
             "message_kind": "text", "delivered": ["agent_1"]},  # free text: as said
            {"phase": "communicate", "agent": "agent_0", "round": 2,
             "message": "Xia: grab cupcake_1", "message_kind": "assign",
             "delivered": []})])  # cut off: not delivered
    assert err.getvalue().splitlines() == [
        "  r2   Zed -> Yan: explore kitchen",
        "  r2   Zed -> Yan: Yan: you lead",
        "  r2   Zed -> nobody: Xia: grab cupcake_1",
    ]


def test_a_real_run_prints_each_order_with_one_name(capsys, tmp_path):
    from orgteams.cli.main import main

    assert main(["run", "--backend", "planner", "--layout", "studio", "--max-rounds", "1",
                 "--json", "--log", str(tmp_path / "ep.jsonl")]) == 0
    orders = [line for line in capsys.readouterr().err.splitlines() if " -> " in line
              and ": explore " in line and "claim" not in line]
    assert orders and all(re.fullmatch(r"  r0   Alice -> (\w+): explore \w+", o)
                          for o in orders), orders
