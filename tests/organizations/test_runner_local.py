"""The README's first command, as a test: an LLM team on the embedded model.

SmolLM2 behind the local llama.cpp server, through the OpenAI wire path, driven by
the team runner under the ``leader`` organization for three decision rounds. Every
decision must parse (JSON-schema constrained decoding) and report usage.
"""

from __future__ import annotations

import pytest

from orgteams.agents.backends.local import local_unavailable
from orgteams.team import run_episode


@pytest.mark.local_llm
@pytest.mark.skipif(local_unavailable() is not None,
                    reason=str(local_unavailable()))
def test_llm_team_on_the_embedded_model(tmp_path):
    result = run_episode(task="prepare_afternoon_tea", layout="studio", organization="leader",
                         agents=3, backend="local", seed=0, max_rounds=3,
                         log_path=tmp_path / "ep.jsonl")
    decisions = [r for r in result.records if r.get("phase") in ("communicate", "act")]
    llm_calls = [r for r in decisions if r["replies"]]
    assert len(llm_calls) >= 4
    for r in llm_calls:
        assert r["fallback"] is None, (r["phase"], r["errors"], r["replies"])
        assert r["usage"]["prompt_tokens"] > 0 and r["usage"]["completion_tokens"] > 0
        assert r["model"] == "smollm2-135m-instruct"
    s = result.summary
    assert s["rounds"] == 3 and s["fallback_count"] == 0
    assert s["llm_prompt_tokens"] > 0 and s["tokenizer"] == "smollm2-135m-bpe"
    assert s["cost_usd"] == 0.0  # the local model is free, and known to be
