"""The README's first command, as tests: teams on the embedded model.

SmolLM2 behind the local llama.cpp server, through the OpenAI wire path, driven by
the team runner under the ``leader`` organization. Every decision must parse
(JSON-schema constrained decoding) and report usage.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from doubles import load_script, records_of

from orgteams.agents.backends.local import local_unavailable
from orgteams.run import run_episode

ROOT = Path(__file__).resolve().parents[3]
needs_model = [pytest.mark.local_llm,
               pytest.mark.skipif(local_unavailable() is not None,
                                  reason=str(local_unavailable()))]


def readme_run_args() -> list[str]:
    """The ``orgteams run ...`` arguments of README command 1, as the README has them."""
    command = load_script(ROOT / ".ci" / "readme_command.py").readme_command(1)
    return shlex.split(command.rpartition("orgteams run ")[2])


def test_readme_command_1_runs_a_team_that_does_not_act_as_one():
    args = readme_run_args()
    assert args[:2] == ["--backend", "local,planner,planner"] and "--max-rounds" in args


@needs_model[0]
@needs_model[1]
def test_readme_command_1_on_the_embedded_model(tmp_path, capsys):
    """README command 1, verbatim arguments: the episode ends with a summary; over its
    2 rounds the team sends >= 2 distinct messages and takes >= 2 distinct actions;
    the model leader assigns and the planner members do what they were assigned."""
    from orgteams.cli.main import main

    log = tmp_path / "ep.jsonl"
    assert main(["run", *readme_run_args(), "--log", str(log), "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert summary["rounds"] == 2 and summary["fallback_count"] == 0
    assert summary["llm_settings"]["agent_0"]["prompts"] == "compact"
    messages = {r["message"] for r in records if r.get("phase") == "communicate"
                and r.get("message")}
    actions = {r["action"] for r in records if r.get("phase") == "act"
               and r["action"] != "continue"}
    assert len(messages) >= 2 and len(actions) >= 2, (messages, actions)
    assigned = [r for r in records if r.get("message_kind") == "assign"]
    assert assigned, "the model leader assigned nobody"
    acted = {(r["round"], r["agent"]): r["action"] for r in records if r.get("phase") == "act"}
    for r in assigned:
        member = r["delivered"][0]
        action = acted.get((r["round"], member))
        assert action is not None and action.replace(":", " ", 1) == r["message"].partition(
            ": ")[2], (r, action)


@needs_model[0]
@needs_model[1]
def test_llm_team_on_the_embedded_model(tmp_path):
    result = run_episode(task="prepare_afternoon_tea", layout="studio", organization="leader",
                         agents=3, backend="local", seed=0, max_rounds=2,
                         log_path=tmp_path / "ep.jsonl")
    decisions = [r for r in records_of(result) if r.get("phase") in ("communicate", "act")]
    llm_calls = [r for r in decisions if r.get("replies")]  # a decision's first record
    assert len(llm_calls) >= 4
    for r in llm_calls:
        assert r["fallback"] is None, (r["phase"], r["errors"], r["replies"])
        assert r["usage"]["prompt_tokens"] > 0 and r["usage"]["completion_tokens"] > 0
        assert r["model"] == "smollm2-135m-instruct"
        if r["phase"] == "act":  # the shown (shuffled) order is recorded with the choice
            assert r["action"] in r["options"], (r["action"], r["options"])
    s = result.summary
    assert s["rounds"] == 2 and s["fallback_count"] == 0
    assert s["llm_prompt_tokens"] > 0 and s["tokenizer"] == "smollm2-135m-bpe"
    assert s["cost_usd"] == 0.0  # the local model is free, and known to be
