"""The Critic over a server that dies mid-reply: a recorded fallback, every request kept."""

from __future__ import annotations

import sys
from pathlib import Path

from orgteams.agents.backends import OpenAIBackend
from orgteams.criticize_reflect.critic import Critic
from orgteams.organizations.library import load_organization

sys.path.insert(0, str(Path(__file__).parents[1] / "agents"))
from fault_server import FaultServer  # noqa: E402  (needs the path above)


def test_truncated_body_is_a_recorded_critic_fallback_not_a_crash():
    with FaultServer("truncated") as server:
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="k",
                                max_retries=1, backoff=0.01)
        critique = Critic(backend).criticize(load_organization("leader"), {"agents": {}}, 42.0,
                                             team={"agent_0": "agent_0"})
        sent = len(server.requests)
    assert critique.fallback.startswith("backend error (protocol: unreadable reply body "
                                        "(JSONDecodeError: ")
    requests = critique.call["requests"]
    assert sent == 2 and [(r["kind"], r["error"]) for r in requests] == [
        ("protocol", "JSONDecodeError")] * 2
