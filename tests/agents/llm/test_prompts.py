"""Prompt templates: strict rendering, the paper's prompt structure, dialogue/action windows.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doubles import TEAM, FakeEnv, comm_ctx, run

import orgteams.agents
from orgteams.agents import (
    ActContext,
    DialogueLog,
    LLMAgent,
    PromptError,
    PromptTemplates,
    ScriptedBackend,
    TeamMessage,
    letters,
)
from orgteams.agents.llm.prompts import Options
from orgteams.envs.highlevel import ActionId, HighLevelAction


def test_letters_continue_after_z():
    assert letters(3) == ["A", "B", "C"]
    assert letters(28)[25:] == ["Z", "AA", "AB"]


MENU = [HighLevelAction.make("explore", "kitchen"), HighLevelAction.make("grab", "cupcake_1"),
        HighLevelAction.make("wait")]


def test_options_letter_the_menu_and_read_a_choice_back_to_its_action_id():
    options = Options.of(MENU)
    assert options.letters == ["A", "B", "C"] and options.ids() == [a.id for a in MENU]
    assert options.lines() == [("A", "[goexplore] <kitchen>"), ("B", "[gograb] <cupcake_1>"),
                               ("C", "[wait]")]
    assert Options.of(MENU, terse=True).lines()[1] == ("B", "grab cupcake_1")
    for answer in ("b", "grab:cupcake_1", "[GOGRAB] <cupcake_1>"):
        letter, action = options.find(answer)
        assert (letter, action) == ("B", "grab:cupcake_1") and type(action) is ActionId
    assert options.find("[gograb] <cupcake_1>", labels=False) is None  # a person types no label
    assert options.find("D") is None and not Options.of([])


def test_option_letters_exist_only_in_prompt_rendering():
    """Members, the round loop, the log and the env pass action ids; letters are made and
    read back only by agents/llm/prompts.py (its Options)."""
    root = Path(orgteams.agents.__file__).resolve().parents[1]
    found = []
    for path in sorted(root.glob("*/**/*.py")):
        if ".venv" in path.parts or "tests" in path.parts or path.name == "prompts.py":
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(root)}: {name}" for name in ("letters(", "action_options(")
                  if re.search(rf"(?<![\w.]){re.escape(name)}", text)]
    assert found == []


def test_shipped_templates():
    assert {"act", "communicate", "correction", "system"} <= set(PromptTemplates().names)


def test_strict_rendering_fails_on_missing_variable():
    with pytest.raises(PromptError, match=re.escape("prompt template act.j2: 'instruction' is")):
        PromptTemplates().render("act", name="Alice")


def test_unknown_template_is_an_error():
    with pytest.raises(PromptError, match=re.escape("no prompt template 'actt'")):
        PromptTemplates().render("actt")


def test_user_folder_overrides_one_template(tmp_path):
    (tmp_path / "act.j2").write_text("Act now, {{ name }}!")
    templates = PromptTemplates(tmp_path)
    assert templates.render("act", name="Bob") == "Act now, Bob!"
    assert "JSON" in templates.render("system", name="Bob", team_size=2)
    with pytest.raises(PromptError, match=re.escape("prompt template act.j2: 'name' is undefined")):
        templates.render("act")


def test_syntax_error_names_file_and_line(tmp_path):
    (tmp_path / "act.j2").write_text("line one\n{% if %}")
    with pytest.raises(PromptError, match=r"act\.j2: syntax error at line 2"):
        PromptTemplates(tmp_path).render("act")


def test_communicate_prompt_has_the_papers_parts():
    backend = ScriptedBackend()
    agent = LLMAgent("agent_0", backend, shuffle_options=False)
    run(agent.communicate(comm_ctx(role="leader"), FakeEnv()))
    system, user = backend.calls[0]
    assert system["role"] == "system" and "You are Alice, one of 3 agents" in system["content"]
    text = user["content"]
    for part in (
        'Organization instruction (from your organization; each of its lines starts with '
        '"> "):\n> Alice is the leader. Follow her orders.',
        "You are Alice, your role is: leader. Your teammates: Bob, Charlie. This is round 3.",
        "Goal: ON(cupcake, coffee_table): 2 (1 done)",
        "Progress: 1 of 2 goal items done. Still to do: ON(cupcake, coffee_table): 2.",
        "Rooms seen: kitchen.\ncupcake_1: on kitchen_table.",
        "What you see now:\nYou are agent_0, in the kitchen.",
        "A. [goexplore] <kitchen>\nB. [gocheck] <fridge>\nC. [gograb] <cupcake_1>\nD. [wait]",
        "Latest dialogue (up to 12 messages, one per line, the words in quotes):\n(none yet)",
        'You may message: Bob, Charlie (or "everyone").',
    ):
        assert part in text, part
    assert "abstain" not in text and "Choose your own role" not in text


def test_empty_instruction_leaves_no_heading():
    backend = ScriptedBackend()
    run(LLMAgent("agent_0", backend).communicate(comm_ctx(instruction=""), FakeEnv()))
    assert "Organization instruction" not in backend.calls[0][1]["content"]


def test_abstain_and_role_options_only_when_allowed():
    backend = ScriptedBackend()
    ctx = comm_ctx(allow_abstain=True, self_chosen_roles=True)
    run(LLMAgent("agent_0", backend).communicate(ctx, FakeEnv()))
    text = backend.calls[0][1]["content"]
    assert 'You may abstain from this round: set "abstain" to true' in text
    assert 'Choose your own role for this round in "role"' in text


def test_dialogue_window_keeps_latest_messages():
    backend = ScriptedBackend()
    agent = LLMAgent("agent_0", backend, dialogue_window=12)
    agent.receive([TeamMessage("agent_1", "everyone", f"note {i:02d}", round=i) for i in range(15)])
    run(agent.communicate(comm_ctx(), FakeEnv()))
    text = backend.calls[0][1]["content"]
    assert "note 00" not in text and "note 02" not in text
    assert 'Round 3, Bob to everyone: "note 03"' in text and "note 14" in text
    assert text.count(', Bob to everyone: "note') == 12


def test_action_window_keeps_latest_actions():
    backend = ScriptedBackend()
    agent = LLMAgent("agent_0", backend, action_window=20)
    for r in range(25):
        run(agent.act(FakeEnv(), r, ActContext(r, "agent_0", "Alice", dict(TEAM))))
    text = backend.calls[-1][1]["content"]
    lines = [line for line in text.splitlines() if re.fullmatch(r"Round \d+: .*", line)]
    # the latest call shows the 20 actions taken before it (rounds 4..23)
    assert lines[0] == "Round 4: [goexplore] <kitchen>" and len(lines) == 20


def test_dialogue_lines_name_receivers_and_self():
    log = DialogueLog()
    log.heard([TeamMessage("agent_1", ("agent_0", "agent_2"), "hi", round=1)])
    assert log.dialogue_lines(TEAM, "agent_0") == ['Round 1, Bob to you, Charlie: "hi"']


def test_negative_window_is_rejected():
    with pytest.raises(ValueError, match=re.escape("windows must be >= 0")):
        DialogueLog(-1, 20)
