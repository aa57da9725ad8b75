"""orgteams run --temperature / --prompts: reach every LLM member, recorded in the summary."""

from __future__ import annotations

import json

import pytest

from orgteams.cli.main import main


def test_temperature_and_prompts_are_recorded_in_the_summary(capsys, tmp_path):
    argv = ["run", "--backend", "scripted,planner,planner", "--layout", "studio",
            "--max-rounds", "1", "--log", str(tmp_path / "e.jsonl"), "--quiet", "--json",
            "--temperature", "0.7", "--prompts", "compact"]
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["llm_settings"] == {"agent_0": {"temperature": 0.7, "prompts": "compact",
                                             "option_order": "shuffled", "max_tokens": 320}}
    prompts = [json.loads(line)["prompt"] for line in (tmp_path / "e.jsonl").open()
               if '"phase": "act"' in line and '"agent": "agent_0"' in line]
    assert prompts and "Options:" in prompts[0][1]["content"]  # the compact template


def test_default_prompts_follow_the_backend(capsys, tmp_path):
    argv = ["run", "--backend", "scripted", "--layout", "studio", "--max-rounds", "1",
            "--log", str(tmp_path / "e.jsonl"), "--quiet", "--json"]
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)
    assert {v["prompts"] for v in s["llm_settings"].values()} == {"default"}
    assert {v["temperature"] for v in s["llm_settings"].values()} == {0.0}


@pytest.mark.parametrize(("value", "why"), [("3", "must be between 0 and 2, got 3"),
                                            ("hot", "not a number: 'hot'")])
def test_bad_temperature_is_one_clear_line(capsys, value, why):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--backend", "planner", "--temperature", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --temperature: {why}" in err and "Traceback" not in err
