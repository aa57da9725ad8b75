"""The embedded model's raw speed beside the framework's per-decision time.

One run, one server (the package's ``LocalServer``, default threads), side by side:

1. raw llama.cpp rates through the same OpenAI wire path: prompt tok/s on fresh
   ~700-token decision prompts (``max_tokens=1``) and generation tok/s on a cached
   prompt;
2. ``LLMAgent`` decisions (communicate, then act, on a real ``HighLevelEnv`` state
   per seed) with the ``default`` and the ``compact`` prompts: prompt and completion
   tokens per decision, seconds per decision, and the ratio to what the raw rates
   predict for those tokens (1.0 = no framework cost at all; the goal is <= 1.5);
3. the ``compact`` prompts again with the schema sent as the standard
   ``response_format: json_schema`` (``LocalBackend(compact_json=False)``) instead of
   the backend's default compact JSON grammar: the server then lets the model put
   whitespace between tokens, and the completion tokens show what that costs.

    python benchmarks/llm/llm_latency.py [--decisions 4] [--calls 3]

Needs the ``local`` extra and the model file (README command 1).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import cores_and_load, load_average, parser, run_local  # noqa: E402

GEN_PROMPT = [{"role": "user", "content": "Tell a long story about a robot that tidies a house."}]


def decision_prompt(seed: int = 0) -> list[dict[str, str]]:
    """A real act prompt (default variant) of agent_0 on the studio at ``seed``."""
    from orgteams.agents import ActContext, LLMAgent, ScriptedBackend
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    env.reset(seed=seed)
    env.display_names = ["Alice", "Bob", "Charlie"]  # as the runner sets them
    backend = ScriptedBackend()
    team = {"agent_0": "Alice", "agent_1": "Bob", "agent_2": "Charlie"}
    agent = LLMAgent("agent_0", backend, seed=seed)
    asyncio.run(agent.act(env, 0, ActContext(0, "agent_0", "Alice", team, "Alice leads.")))
    return backend.calls[0]


def raw_rates(backend: Any, messages: list[dict[str, str]], calls: int) -> tuple[float, float]:
    """``(prompt tok/s, generation tok/s)`` of ``backend`` on ``messages``.

    Prompt: each call starts with a new first line, so nothing is reused from the
    server's prompt cache; generation: a cached prompt, up to 64 new tokens.
    """
    def fresh(i: int) -> list[dict[str, str]]:
        first = {**messages[0], "content": f"Session {i}.\n{messages[0]['content']}"}
        return [first, *messages[1:]]

    backend.complete(fresh(-1), max_tokens=1)  # warm-up: load, first evaluation
    tokens, seconds = 0, 0.0
    for i in range(calls):
        started = time.perf_counter()
        reply = backend.complete(fresh(i + int(time.time())), max_tokens=1)
        seconds += time.perf_counter() - started
        tokens += reply.usage.prompt_tokens
    prompt_rate = tokens / seconds
    backend.complete(GEN_PROMPT, max_tokens=1)  # cache the generation prompt
    tokens, seconds = 0, 0.0
    for i in range(calls):
        started = time.perf_counter()
        reply = backend.complete(GEN_PROMPT, max_tokens=64, seed=i)
        seconds += time.perf_counter() - started
        tokens += reply.usage.completion_tokens
    return prompt_rate, tokens / seconds


def _ctx(seed: int):
    from orgteams.agents import CommunicateContext

    team = {"agent_0": "Alice", "agent_1": "Bob", "agent_2": "Charlie"}
    return CommunicateContext(
        round=0, agent="agent_0", name="Alice", team=team, role="leader",
        instruction="You are Alice. Alice is the leader of the team; the others (Bob, "
                    "Charlie) follow Alice's instructions and report to Alice.",
        can_message=["agent_1", "agent_2"])


def agent_decisions(backend: Any, variant: str, seeds: list[int]) -> dict[str, list]:
    """Per phase: ``(prompt_tokens, completion_tokens, wall)`` of each decision."""
    from orgteams.agents import LLMAgent
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

    async def decide() -> list:  # one event loop: the async HTTP client is bound to it
        records = []
        for seed in seeds:
            env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
            env.reset(seed=seed)
            env.display_names = ["Alice", "Bob", "Charlie"]  # as the runner sets them
            agent = LLMAgent("agent_0", backend, seed=seed, prompts=variant, max_tokens=160)
            records.append((await agent.communicate(_ctx(seed), env)).record)
            records.append((await agent.act(env, 0)).record)
        await backend.aclose()
        return records

    out: dict[str, list] = {"communicate": [], "act": []}
    for rec in asyncio.run(decide()):
        out[rec.phase].append((rec.usage.prompt_tokens, rec.usage.completion_tokens, rec.wall))
    return out


def main(argv: list[str] | None = None) -> int:
    options = parser(__doc__)
    options.add_argument("--decisions", type=int, default=4, help="states (seeds) per variant")
    options.add_argument("--calls", type=int, default=3, help="timed calls per raw rate")
    args = options.parse_args(argv)

    def measure() -> None:
        from orgteams.agents.backends import LocalBackend, LocalServer

        print(cores_and_load())
        with LocalServer() as server:
            print(repr(server))
            backend = LocalBackend(server)
            prompt_rate, gen_rate = raw_rates(backend, decision_prompt(), args.calls)
            print(f"raw llama.cpp: prompt {prompt_rate:.1f} tok/s, generation "
                  f"{gen_rate:.1f} tok/s")
            print(f"{'prompts':>8} {'phase':>11} | {'prompt tok':>10} {'compl tok':>9} "
                  f"{'s/decision':>10} {'raw s':>6} {'ratio':>5}")
            standard = LocalBackend(server, compact_json=False)
            for variant, chat, json_label in (("default", backend, ""),
                                              ("compact", backend, ""),
                                              ("compact", standard, " (response_format)")):
                seeds = list(range(100, 100 + args.decisions))
                agent_decisions(chat, variant, [99])  # warm-up: grammar, templates
                for phase, rows in agent_decisions(chat, variant, seeds).items():
                    p = statistics.mean(r[0] for r in rows)
                    c = statistics.mean(r[1] for r in rows)
                    wall = statistics.mean(r[2] for r in rows)
                    raw = p / prompt_rate + c / gen_rate
                    print(f"{variant:>8} {phase:>11} | {p:>10.0f} {c:>9.1f} {wall:>10.2f} "
                          f"{raw:>6.2f} {wall / raw:>5.2f}{json_label}", flush=True)
        print(f"load average at end: {load_average()}")

    return run_local(measure)


if __name__ == "__main__":
    sys.exit(main())
