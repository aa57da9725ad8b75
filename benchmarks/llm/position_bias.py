"""Position bias of the embedded model: which option position it picks, before and after.

The same decision states (studio, ``prepare_afternoon_tea``, seeds x agents at round
0, under the ``leader`` instruction) are put to SmolLM2 as act decisions with two
prompt setups:

* ``before``: the shipped default prompt as it was, options in the env's order and a
  reply example ``{"action": "A", "thoughts": "one short reason"}``;
* ``after``: what ``--backend local`` uses now: the compact prompt, options in a
  per-agent seeded order, and a description of the fields instead of an example;
* ``after-default`` (optional): the same with the default (papers') prompt.

It prints, per setup, how often each option position (A, B, C...) was chosen, the
share of A against the share a uniform choice would give, and how many distinct
actions were chosen.

    python benchmarks/llm/position_bias.py [--seeds 10] [--setups before,after]

Needs the ``local`` extra and the model file (README command 1).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import cores_and_load, parser, run_local  # noqa: E402

LEGACY_ACT = (
    '{% include "_situation.j2" %}\n\nChoose your next action from the list above.\n\n'
    'Reply with exactly one JSON object like {"action": "A", "thoughts": "one short reason"}; '
    'action must be one of {{ letters | join(", ") }}.\n'
)
TEAM = {"agent_0": "Alice", "agent_1": "Bob", "agent_2": "Charlie"}


def _agent(setup: str, agent_id: str, seed: int, backend, legacy_dir: Path):
    from orgteams.agents import LLMAgent, PromptTemplates

    if setup == "before":
        return LLMAgent(agent_id, backend, seed=seed, shuffle_options=False, max_retries=0,
                        max_tokens=96, templates=PromptTemplates(legacy_dir))
    variant = "default" if setup == "after-default" else "compact"
    return LLMAgent(agent_id, backend, seed=seed, prompts=variant, max_retries=0,
                    max_tokens=96)


def run_setup(setup: str, backend, seeds: list[int], legacy_dir: Path) -> list[tuple]:
    """``(position, n_options, action_id, fallback)`` per decision."""
    from orgteams.agents import ActContext
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
    from orgteams.organizations import load_organization

    resolved = load_organization("leader").resolve(list(TEAM))

    async def decide() -> list:  # one event loop: the async HTTP client is bound to it
        records = []
        for seed in seeds:
            env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
            env.reset(seed=seed)
            env.display_names = list(TEAM.values())  # as the runner sets them
            for agent_id, name in TEAM.items():
                agent = _agent(setup, agent_id, seed, backend, legacy_dir)
                ctx = ActContext(0, agent_id, name, dict(TEAM),
                                 resolved.instruction_for(agent_id), resolved.role_of(agent_id))
                records.append((await agent.act(env, 0, ctx)).record)
        await backend.aclose()
        return records

    rows = []
    for rec in asyncio.run(decide()):
        action = (rec.parsed or {}).get("action")
        letters = [chr(65 + i) for i in range(len(rec.options))]
        pos = letters.index(action) if action in letters else None
        rows.append((pos, len(rec.options), rec.options[pos] if pos is not None else None,
                     rec.fallback))
    return rows


def report(setup: str, rows: list[tuple], seconds: float) -> None:
    chosen = [r for r in rows if r[0] is not None]
    counts = Counter(r[0] for r in chosen)
    top = max(r[1] for r in rows)
    share_a = counts[0] / len(chosen) if chosen else 0.0
    uniform_a = statistics.mean(1 / r[1] for r in rows)
    hist = " ".join(f"{chr(65 + i)}:{counts[i]}" for i in range(top) if counts[i])
    print(f"{setup:>7}: {len(rows)} decisions, {len(chosen)} parsed, "
          f"{len({r[2] for r in chosen})} distinct actions, "
          f"share of A {share_a:.2f} (uniform {uniform_a:.2f}), "
          f"{seconds / len(rows):.1f} s/decision")
    print(f"{'':>9}positions: {hist}", flush=True)


def main(argv: list[str] | None = None) -> int:
    options = parser(__doc__)
    options.add_argument("--seeds", type=int, default=10, help="states = seeds x 3 agents")
    options.add_argument("--setups", default="before,after")
    args = options.parse_args(argv)

    def measure() -> None:
        from orgteams.agents.backends import LocalBackend, LocalServer

        print(cores_and_load())
        with LocalServer() as server, tempfile.TemporaryDirectory() as tmp:
            legacy = Path(tmp)
            (legacy / "act.j2").write_text(LEGACY_ACT)
            backend = LocalBackend(server)
            for setup in args.setups.split(","):
                started = time.perf_counter()
                rows = run_setup(setup, backend, list(range(args.seeds)), legacy)
                report(setup, rows, time.perf_counter() - started)

    return run_local(measure)


if __name__ == "__main__":
    sys.exit(main())
