"""``orgteams play --org``: the player's agent and its teammates under an organization.

Headless (SDL dummy driver): keys and typing are real pygame events posted to the queue
the play loop reads; what is checked is what the running episode did (its log, the
teammates' prompts, the window's overlay), not a resolver's answer."""

from __future__ import annotations

import json

import pytest

pygame = pytest.importorskip("pygame")

from doubles import read_dicts, scripted_teammates  # noqa: E402

from orgteams.agents.messages import EVERYONE  # noqa: E402
from orgteams.envs.play.keyboard import PlaySession  # noqa: E402
from orgteams.organizations.rounds.episode_log import state_digest  # noqa: E402
from orgteams.organizations.spec.library import load_organization  # noqa: E402
from orgteams.play.play_log import PlayLog  # noqa: E402
from orgteams.play.teammates import MemberTeammates, PlannerTeammates  # noqa: E402


def key(k):
    return pygame.event.Event(pygame.KEYDOWN, key=k, mod=0, unicode="")


def write(session, line):
    """T, the line as typing, Enter: one frame reads it all."""
    for e in (key(pygame.K_t), pygame.event.Event(pygame.TEXTINPUT, text=line),
              key(pygame.K_RETURN)):
        pygame.event.post(e)
    assert session.tick()


def wait(session, ticks=1):
    for _ in range(ticks):
        pygame.event.post(key(pygame.K_SPACE))
        assert session.tick()


@pytest.fixture
def scripted(monkeypatch):
    """LLM teammates on the scripted backend: each says one line to everyone, then
    picks the first action; ``backends[agent].calls`` are their prompts."""
    return scripted_teammates(monkeypatch, say="news from {agent}")


def session(teammates, human="agent_0", names=None, seed=0):
    s = PlaySession(layout="studio", num_agents=3, teammates=teammates, seed=seed, fps=240,
                    human_agent=human, display_names=names)
    s.tick()
    return s


def prompts(backend):
    return ["\n".join(m["content"] for m in call) for call in backend.calls]


def records(path):
    return list(read_dicts(path))


def test_chain_routes_the_players_line_and_what_they_hear(scripted, tmp_path):
    log = PlayLog(tmp_path / "p.jsonl", organization="chain")
    teammates = MemberTeammates("scripted", log=log,
                                organization=load_organization("chain"))
    s = session(teammates, names=["You", "Bob", "Carol"])
    assert s.raw.overlay.caption == "you may message: Bob"  # the chain's one neighbour
    write(s, "meet at the fridge")
    wait(s)
    s.close()
    log.end()
    teammates.close()
    lines = records(tmp_path / "p.jsonl")
    [mine] = [r for r in lines if r.get("agent") == "agent_0" and r.get("message")]
    assert (mine["receivers"], mine["delivered"], mine["dropped"]) == (
        EVERYONE, ["agent_1"], ["agent_2"])
    assert any("meet at the fridge" in p for p in prompts(scripted["agent_1"]))
    assert not any("meet at the fridge" in p for p in prompts(scripted["agent_2"]))
    said = {r["agent"]: r["delivered"] for r in lines
            if r.get("message", "").startswith("news from")}
    assert said == {"agent_1": ["agent_0", "agent_2"], "agent_2": ["agent_1"]}
    # the window draws what the player hears: Bob's line and their own, never Carol's
    assert {m.sender for m in s.raw.overlay.log} == {"agent_0", "agent_1"}
    assert teammates.messages == 2  # both teammates spoke; the player heard one


def test_in_a_big_team_the_caption_says_the_player_may_message_everyone():
    """At 64 agents under leader the panel read 'you may message: Alice, Bob, Charlie,
    David, Eve, Grace, Heidi, Ivan, Judy,...' (63 names, cut off)."""
    teammates = PlannerTeammates(organization=load_organization("leader"))
    s = PlaySession(layout="generated:16:0", num_agents=64, teammates=teammates, seed=0,
                    fps=240, human_agent="agent_5")
    s.tick()
    assert s.raw.overlay.caption == "you may message: everyone (63)"
    s.close()


def test_a_line_to_someone_the_player_may_not_reach_is_not_sent(scripted, tmp_path):
    log = PlayLog(tmp_path / "p.jsonl")
    teammates = MemberTeammates("scripted", log=log, talk=False,
                                organization=load_organization("chain"))
    s = session(teammates, names=["You", "Bob", "Carol"])
    write(s, "@Carol are you there")
    wait(s)
    assert s.raw.overlay.caption == "you may message: Bob; 1 of your messages reached nobody"
    s.close()
    log.end()
    teammates.close()
    [mine] = [r for r in records(tmp_path / "p.jsonl") if r.get("agent") == "agent_0"]
    assert mine["message"] is None and mine["delivered"] == []
    assert mine["notes"] == ["undeliverable: 1 message(s) no teammate can receive not sent: "
                             "text"]
    assert not any("are you there" in p for b in scripted.values() for p in prompts(b))


def test_leader_first_order_roles_and_instruction_reach_llm_teammates(scripted, tmp_path):
    log = PlayLog(tmp_path / "p.jsonl", organization="leader")
    teammates = MemberTeammates("scripted", log=log, organization=load_organization("leader"))
    s = session(teammates, human="agent_1", names=["Alice", "You", "Carol"])
    assert s._status()[0] == "You: You (agent_1, member). H: help, T: talk, Q: quit"
    assert s.raw.overlay.roles == {"agent_0": "leader", "agent_1": "member",
                                   "agent_2": "member"}
    assert s.raw.overlay.organization == "leader"
    write(s, "I take the kitchen")
    wait(s)
    s.close()
    log.end()
    teammates.close()
    lines = records(tmp_path / "p.jsonl")
    stages = {r["agent"]: r["stage"] for r in lines
              if r.get("phase") == "communicate" and r["round"] == 0}
    assert stages == {"agent_0": 0, "agent_1": 1, "agent_2": 2}  # leaders first, team order
    [mine] = [r for r in lines if r.get("agent") == "agent_1"]
    assert mine["role"] == "member" and mine["delivered"] == ["agent_0", "agent_2"]
    alice, carol = prompts(scripted["agent_0"]), prompts(scripted["agent_2"])
    assert "your role is: leader" in alice[0] and "As the leader" in alice[0]
    assert "your role is: member" in carol[0]
    assert "Follow Alice's instructions" in carol[0]
    assert "I take the kitchen" not in alice[0]  # Alice spoke before the player
    assert "I take the kitchen" in carol[0]  # Carol speaks after: she saw it this round
    assert lines[0]["organization"] == "leader" and lines[-1]["player_role"] == "member"


def test_planners_under_a_teammate_leader_assign_work(tmp_path):
    log = PlayLog(tmp_path / "p.jsonl", organization="leader")
    teammates = PlannerTeammates(log=log, organization=load_organization("leader"))
    s = session(teammates, human="agent_1")
    wait(s, 3)
    assert teammates._state.members["agent_0"].planner.role == "leader"
    assert teammates._state.members["agent_2"].planner.role == "member"
    orders = [m for m in s.raw.overlay.log if m.kind == "assign"]
    s.close()
    log.end()
    lines = records(tmp_path / "p.jsonl")
    assigns = [r for r in lines if r.get("message_kind") == "assign"]
    assert assigns and {r["agent"] for r in assigns} == {"agent_0"}
    assert {a for r in assigns for a in r["delivered"]} == {"agent_1", "agent_2"}
    assert orders and all(m.delivered == ("agent_1",) for m in orders)  # the player's own
    assert lines[-1]["player"] == "agent_1" and lines[-1]["player_role"] == "member"


def test_a_player_who_only_waits_is_ordered_but_holds_no_work_back():
    """A planner leader orders the player as any member; a player who only waits does not
    keep the team from finishing: each round's order replaces the last, the work ordered
    to the player moves on as teammates do it, and planners place every unit. (The leader
    orders a waiting player every round: a count of orders checked against a 12-message
    log window said otherwise until the log kept more.)"""
    teammates = PlannerTeammates(organization=load_organization("leader"))
    s = session(teammates, human="agent_1")
    for _ in range(200):
        if s.raw.world.success:
            break
        wait(s)
    to_player = [m for m in s.raw.overlay.log if m.kind == "assign"
                 and m.delivered == ("agent_1",)]
    assert s.raw.world.success  # the planners did everything, the player nothing
    assert to_player and len({m.text for m in to_player}) > 1  # the orders moved on
    s.close()


def test_planners_take_no_orders_from_a_player_leader():
    """Documented: planners read only structured messages, so a leading player's
    words are no order to them; they work as planners without orders do."""
    worlds = []
    for talk in (False, True):
        teammates = PlannerTeammates(organization=load_organization("leader"))
        s = session(teammates)
        assert s._status()[0].startswith("You: agent_0 (agent_0, leader).")
        if talk:
            write(s, "@agent_2 fetch the wine")
        wait(s, 8)
        assert not [m for m in s.raw.overlay.log if m.kind == "assign"]
        assert teammates.player_role == "leader"
        worlds.append(state_digest(s.raw.world))
        s.close()
    assert worlds[0] == worlds[1]


def test_sequential_gives_the_player_their_turn_and_never_asks_them_to_act(tmp_path):
    log = PlayLog(tmp_path / "p.jsonl")
    teammates = PlannerTeammates(log=log, organization=load_organization("sequential"))
    s = session(teammates, human="agent_1")
    write(s, "going right")
    wait(s, 2)
    s.close()
    log.end()
    lines = records(tmp_path / "p.jsonl")
    [mine] = [r for r in lines if r.get("agent") == "agent_1"]
    assert (mine["round"], mine["stage"], mine["delivered"]) == (0, 1, ["agent_0", "agent_2"])
    acts = {r["agent"] for r in lines if r.get("phase") == "act"}
    assert "agent_1" not in acts and [r["tick"] for r in lines
                                      if r.get("record") == "tick"] == [1, 2]


def test_an_election_counts_the_player_as_a_voter_without_a_ballot(tmp_path):
    log = PlayLog(tmp_path / "p.jsonl")
    teammates = PlannerTeammates(log=log, organization=load_organization("elected_leader"))
    s = session(teammates, human="agent_2")
    wait(s)
    s.close()
    log.end()
    lines = records(tmp_path / "p.jsonl")
    [vote] = [r for r in lines if r.get("agent") == "agent_2" and r.get("kind") == "vote"]
    assert vote["vote"] is None
    [election] = [r for r in lines if r.get("type") == "election"]
    assert set(election["votes"]) == {"agent_0", "agent_1"}


def test_shared_history_and_placements_come_from_the_played_ticks():
    teammates = PlannerTeammates(organization=load_organization("shared"))
    s = session(teammates, human="agent_1")
    wait(s, 2)
    state = teammates._state
    assert [o.round for o in state.outcomes] == [0, 1]  # remembered after each step
    assert "agent_1" not in {a for o in state.outcomes for a in o.actions}  # keys: not
    s.close()
    teammates = PlannerTeammates(organization=load_organization("dynamic"))  # most_progress
    s = session(teammates)
    wait(s, 30)
    placed = teammates._state.placed
    assert sum(placed.values()) == sum(s.raw.world.progress) > 0
    s.close()


def test_without_org_play_is_as_before(tmp_path):
    log = PlayLog(tmp_path / "p.jsonl")
    teammates = PlannerTeammates(log=log)
    s = session(teammates)
    assert s._status()[0] == "You: agent_0 (agent_0). H: help, T: talk, Q: quit"
    assert (s.raw.overlay.caption, s.raw.overlay.roles, s.raw.overlay.organization) == (
        "", {}, "")
    wait(s)
    assert teammates.rounds is None and teammates.voice is None
    s.close()
    log.end()
    lines = records(tmp_path / "p.jsonl")
    assert lines[0]["organization"] == "play" and lines[-1]["player_role"] is None


# ---- play_with and the CLI ----
def test_play_with_org_reports_the_organization_and_the_players_role(tmp_path):
    from orgteams.play.teammates import play_with

    path = tmp_path / "p.jsonl"
    out = play_with("planner", organization="pyramid", layout="studio", num_agents=3,
                    human_agent="agent_0", fps=240, max_frames=2, log_path=str(path))
    assert (out["organization"], out["player_role"]) == ("pyramid", "leader")
    first = json.loads(path.read_text().splitlines()[0])
    last = json.loads(path.read_text().splitlines()[-1])
    assert first["organization"] == "pyramid" and last["player_role"] == "leader"


def test_cli_play_org_prints_the_players_role(monkeypatch, capsys):
    import orgteams.play.teammates as play_team
    from orgteams.cli.main import main

    real = play_team.play
    monkeypatch.setattr(play_team, "play", lambda **kw: real(**kw, max_frames=2))
    assert main(["play", "--others", "planner", "--org", "leader", "--agent", "agent_1",
                 "--fps", "240"]) == 0
    assert capsys.readouterr().out.strip() == (
        "played 0 tick(s) of seed 0 under leader (you: Bob, agent_1, member): interrupted at "
        "tick 0 (max frames), teammates said 0 message(s), you said 0")


def test_cli_play_help_names_org(capsys):
    from orgteams.cli.main import main

    with pytest.raises(SystemExit):
        main(["play", "--help"])
    assert "--org ORG" in capsys.readouterr().out


def test_a_bad_org_file_is_the_same_one_line_as_in_run(capsys, tmp_path):
    from orgteams.cli.main import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ndescription: x\nprotocol: sequental\n")
    assert main(["play", "--others", "planner", "--org", str(bad)]) == 2
    play_err = capsys.readouterr().err.strip()
    assert main(["run", "--backend", "planner", "--org", str(bad), "--quiet"]) == 2
    run_err = capsys.readouterr().err.strip()
    assert play_err.startswith(f"orgteams play: error: {bad}: field 'protocol': unknown "
                               "protocol 'sequental'. Did you mean 'sequential'?")
    assert "\n" not in play_err and play_err == run_err.replace("orgteams run", "orgteams play")
    assert main(["play", "--others", "planner", "--org", "leadr"]) == 2
    assert capsys.readouterr().err.startswith(
        "orgteams play: error: Unknown organization 'leadr'. Did you mean 'leader'?")


def test_org_beside_random_others_is_one_clear_line(capsys):
    from orgteams.cli.main import main

    assert main(["play", "--org", "leader"]) == 2
    assert capsys.readouterr().err.strip() == (
        "orgteams play: error: --org needs teammates that play in rounds: --others planner "
        "or an LLM (local, openai:<model>, scripted)")
