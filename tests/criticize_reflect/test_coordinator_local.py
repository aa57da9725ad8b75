"""The Coordinator on the embedded model: SmolLM2-135M's reply is read as a reply.

Before the JSON reader refused to take an inner object of a broken reply for the whole
(and before local requests stopped carrying the schema's text), every reply of this
model ended as ``field 'candidates': Field required``. One call, no retry (~20-60 s on
a busy 2-core CPU).
"""

from __future__ import annotations

import pytest

from orgteams.agents.backends.local import local_unavailable
from orgteams.criticize_reflect.coordinator import Coordinator, Trial
from orgteams.organizations.spec.library import load_organization


@pytest.mark.local_llm
@pytest.mark.skipif(local_unavailable() is not None, reason=str(local_unavailable()))
def test_smollm2s_coordinator_reply_is_read_and_judged_candidate_by_candidate():
    from orgteams.agents.backends import LocalBackend, LocalServer

    org = load_organization("leader")
    history = [Trial(0, org, 80.6, {"ticks": 70, "success": True})]
    with LocalServer() as server:
        backend = LocalBackend(server, timeout=600, max_retries=0)
        decision = Coordinator(backend, k=2, max_retries=0).propose(
            history, org, team=["agent_0", "agent_1", "agent_2"], iteration=1)
    call = decision.call
    assert len(call["replies"]) == 1 and call["usage"]["completion_tokens"] > 0
    # The reply's shape is right: every candidate it proposed is judged on its own.
    assert decision.candidates and all(r["attempt"] == 1 for r in decision.candidates)
    assert all(r["valid"] or r["reason"] for r in decision.candidates)
    if decision.fallback is None:
        assert decision.organization != org and decision.pick is not None
    else:
        assert decision.fallback.startswith("invalid reply after 1 attempt(s): no candidate "
                                            "is valid (candidate 0: ")
