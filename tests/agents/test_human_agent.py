"""HumanAgent with fake input/output functions: valid, invalid then valid, every stage."""

from __future__ import annotations

import asyncio

from test_prompts import TEAM, FakeEnv, comm_ctx

from orgteams.agents import ActContext, HumanAgent, TeamMember


def run(coro):
    return asyncio.run(coro)


def scripted(*answers: str):
    """An input function answering in order, recording the prompts it was shown."""
    prompts: list[str] = []
    queue = list(answers)

    def input_fn(prompt: str) -> str:
        prompts.append(prompt)
        if not queue:
            raise EOFError
        return queue.pop(0)

    input_fn.prompts = prompts  # type: ignore[attr-defined]
    return input_fn


def make(*answers: str, **kwargs) -> tuple[HumanAgent, list[str]]:
    shown: list[str] = []
    return HumanAgent("agent_0", scripted(*answers), shown.append, **kwargs), shown


def test_human_is_a_team_member():
    assert isinstance(make()[0], TeamMember)


def test_act_reads_a_letter_and_shows_the_list():
    human, shown = make("b")
    decision = run(human.act(FakeEnv(), 2, ActContext(2, "agent_0", "Alice", dict(TEAM))))
    assert decision.action_id == "check:fridge"
    assert "  A. [goexplore] <kitchen>\n  B. [gocheck] <fridge>" in shown[0]
    assert "Goal: ON(cupcake, coffee_table): 2 (1 done)" in shown[0]
    assert decision.record.model == "human" and decision.record.replies == ["b"]


def test_act_invalid_then_valid():
    human, shown = make("Z", "explore:kitchen")
    decision = run(human.act(FakeEnv(), 2))
    assert decision.action_id == "explore:kitchen"
    assert shown[1] == "Not a valid choice: 'Z'. Type one of A-D."
    assert decision.record.errors == ["Not a valid choice: 'Z'. Type one of A-D."]
    assert decision.record.retries == 1 and decision.record.fallback is None


def test_act_closed_input_is_a_recorded_wait():
    human, _ = make()
    decision = run(human.act(FakeEnv(), 2))
    assert decision.action_id == "wait" and decision.record.fallback == "input closed"


def test_max_attempts_falls_back():
    human, _ = make("Q", "Q", max_attempts=2)
    decision = run(human.act(FakeEnv(), 2))
    assert decision.action_id == "wait"
    assert decision.record.fallback == "no valid answer after 2 attempt(s)"


def test_message_to_named_receivers():
    human, _ = make("bob, Charlie: I take the fridge")
    decision = run(human.communicate(comm_ctx(), FakeEnv()))
    assert [(m.receivers, m.text) for m in decision.messages] == [
        (("agent_1", "agent_2"), "I take the fridge")]


def test_message_without_prefix_goes_to_everyone_and_empty_is_silence():
    human, _ = make("Kitchen is clear")
    assert run(human.communicate(comm_ctx(), FakeEnv())).messages[0].receivers == "everyone"
    human, _ = make("")
    assert run(human.communicate(comm_ctx(), FakeEnv())).silent


def test_unknown_receiver_then_valid():
    human, shown = make("Dave: hi", "everyone: hi all")
    decision = run(human.communicate(comm_ctx(), FakeEnv()))
    assert shown[1] == "You cannot message Dave. Choose from: Bob, Charlie, or everyone."
    assert decision.messages[0].receivers == "everyone" and decision.messages[0].text == "hi all"


def test_abstain_and_role_when_allowed():
    human, shown = make("role scout", "abstain")
    ctx = comm_ctx(allow_abstain=True, self_chosen_roles=True)
    decision = run(human.communicate(ctx, FakeEnv()))
    assert decision.role == "scout" and decision.abstain and decision.silent
    assert "Role set to scout." in shown
    # without permission "abstain" is just a message
    human, _ = make("abstain")
    assert run(human.communicate(comm_ctx(), FakeEnv())).messages[0].text == "abstain"


def test_vote_invalid_then_valid():
    human, shown = make("Dave", "charlie")
    ctx = comm_ctx(stage_kind="vote", candidates=["agent_1", "agent_2"])
    decision = run(human.communicate(ctx, FakeEnv()))
    assert decision.vote == "agent_2"
    assert shown[1] == "Not a candidate: 'Dave'. Type one of Bob, Charlie."


def test_async_input_function_for_a_gui():
    async def gui_input(prompt: str) -> str:
        await asyncio.sleep(0)
        return "A"

    human = HumanAgent("agent_0", gui_input, lambda text: None)
    assert run(human.act(FakeEnv(), 0)).action_id == "explore:kitchen"


def test_heard_messages_are_shown():
    from orgteams.agents import ReceivedMessage

    human, shown = make("A")
    human.receive([ReceivedMessage("agent_1", "everyone", "fridge has cupcakes", 1)])
    run(human.act(FakeEnv(), 2))
    assert "  Round 1, agent_1 to everyone: fridge has cupcakes" in shown[0]
