"""HumanAgent with fake input/output functions: valid, invalid then valid, every stage."""

from __future__ import annotations

import asyncio

from doubles import TEAM, FakeEnv, comm_ctx

from orgteams.agents import ActContext, HumanAgent, TeamMember, TeamMessage


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
    human, shown = make("A")
    human.receive([TeamMessage("agent_1", "everyone", "fridge has cupcakes", round=1)])
    run(human.act(FakeEnv(), 2))
    assert '  Round 1, agent_1 to everyone: "fridge has cupcakes"' in shown[0]


# ---- answering in the pygame window (injected TEXTINPUT / KEYDOWN events) ----
def _window_env():
    import pytest

    pytest.importorskip("pygame")
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

    env = HighLevelEnv(layout="studio", num_agents=3, render_mode="human")
    env.reset(seed=0)
    return env


def _typed(*events, renderer_seen: list | None = None):
    """A coroutine that waits for the entry box, then posts ``events`` (type, attrs)."""
    import pygame

    from orgteams.envs.render.renderer import window_renderer

    async def typist(env):
        renderer = window_renderer(env)
        while renderer.entry is None:
            await asyncio.sleep(0.005)
        if renderer_seen is not None:
            renderer_seen.append((renderer.entry.title, list(renderer.entry.lines),
                                  renderer.entry.prompt))
        for kind, attrs in events:
            pygame.event.post(pygame.event.Event(kind, **attrs))
            await asyncio.sleep(0.01)

    return typist


def _text(s):
    import pygame

    return (pygame.TEXTINPUT, {"text": s})


def _key(k):
    import pygame

    return (pygame.KEYDOWN, {"key": k, "mod": 0, "unicode": ""})


async def _answer(env, decision, typist):
    result, _ = await asyncio.gather(decision, typist(env))
    return result


def test_window_input_answers_an_act_decision():
    import pygame

    from orgteams.agents.human.window_input import WindowInput
    from orgteams.envs.render.renderer import window_renderer

    env = _window_env()
    window = WindowInput(env, echo=None, fps=200)
    human = HumanAgent("agent_0", window.ask, window.show)
    seen: list = []
    # A wrong letter first (answered in the window), Backspace, F (typing, not the FOV key).
    typist = _typed(_text("z"), _text("f"), _key(pygame.K_BACKSPACE), _key(pygame.K_BACKSPACE),
                    _text("A"), _key(pygame.K_RETURN), renderer_seen=seen)
    fov = window_renderer(env).show_fov
    decision = run(_answer(env, human.act(env, 1), typist))
    first = env.available_actions("agent_0")[0].id
    assert decision.action_id == first and decision.record.replies == ["A"]
    title, lines, prompt = seen[0]
    assert title.startswith("Round 1: you are") and prompt == "Your action (letter): "
    assert lines[0] == f"A. {env.available_actions('agent_0')[0].label}"
    assert window_renderer(env).show_fov == fov and window_renderer(env).entry is None
    env.close()


def test_window_input_escape_waits_and_errors_are_shown():
    import pygame

    from orgteams.agents.human.window_input import WindowInput
    from orgteams.envs.render.renderer import window_renderer

    env = _window_env()
    window = WindowInput(env, echo=None, fps=200)
    human = HumanAgent("agent_0", window.ask, window.show)
    notes = []

    async def typist(env):
        renderer = window_renderer(env)
        for answer in ("zz", None):
            while renderer.entry is None or renderer.entry.text or renderer.entry.answer:
                await asyncio.sleep(0.005)
            notes.append(renderer.entry.note)
            if answer is None:
                pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_ESCAPE,
                                                     mod=0, unicode=""))
            else:
                pygame.event.post(pygame.event.Event(pygame.TEXTINPUT, text=answer))
                pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_RETURN,
                                                     mod=0, unicode=""))
            await asyncio.sleep(0.05)

    decision = run(_answer(env, human.act(env, 1), typist))
    assert decision.action_id == "wait" and decision.record.replies == ["zz", "wait"]
    assert notes[0] == "" and notes[1].startswith("Not a valid choice: 'zz'.")
    env.close()


def test_window_input_answers_a_communicate_decision():
    import pygame

    from orgteams.agents.human.window_input import WindowInput

    env = _window_env()
    window = WindowInput(env, echo=None, fps=200)
    human = HumanAgent("agent_0", window.ask, window.show)
    seen: list = []
    typist = _typed(_text("Bob: fridge "), _text("is mine"), _key(pygame.K_RETURN),
                    renderer_seen=seen)
    ctx = comm_ctx(round=1, visible_this_round=[
        TeamMessage("agent_2", "everyone", "hi all")])
    decision = run(_answer(env, human.communicate(ctx, env), typist))
    assert [(m.receivers, m.text) for m in decision.messages] == [
        (("agent_1",), "fridge is mine")]
    title, lines, prompt = seen[0]
    assert title == "Round 1: you are Alice"
    assert lines == ["This round, Charlie said: hi all"]
    assert prompt.startswith('Message as "names: text" (you may message Bob, Charlie')
    # Escape is silence.
    typist = _typed(_text("never sent"), _key(pygame.K_ESCAPE))
    assert run(_answer(env, human.communicate(ctx, env), typist)).messages == []
    env.close()


def test_closing_the_window_is_closed_input():
    import pygame

    from orgteams.agents.human.window_input import WindowInput

    env = _window_env()
    window = WindowInput(env, echo=None, fps=200)
    human = HumanAgent("agent_0", window.ask, window.show)
    decision = run(_answer(env, human.act(env, 1), _typed((pygame.QUIT, {}))))
    assert decision.action_id == "wait" and decision.record.fallback == "input closed"
    env.close()


def test_build_member_uses_the_window_when_rendering_human():
    from orgteams.agents.human.window_input import WindowInput
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
    from orgteams.run import build_member

    env = _window_env()
    member = build_member("agent_0", "human", env=env)
    assert isinstance(member.input_fn.__self__, WindowInput)
    assert member.output_fn == member.input_fn.__self__.show
    env.close()
    terminal = build_member("agent_0", "human", env=HighLevelEnv(layout="studio"))
    assert terminal.input_fn is input and build_member("agent_0", "human").input_fn is input
