"""What a run's model calls will cost, estimated before it runs: ``orgteams sweep``,
``experiment`` and ``reflect`` print it when a model of the run has a price.

How it is made (:data:`HOW`, printed with it):

* **Episode lengths**: the cell's planner team plays it (the cell's first
  :data:`PLANNER_SEEDS` seeds; the other seeds count as their mean): each member's
  communicate turns, and the act turns where it had to decide (a planner that is busy
  with its plan answers ``continue``; a model member is not asked then). Model teams
  often take longer than planners, up to the tick limit.
* **Prompt sizes**: one probe of the cell with the ``scripted`` double in every model
  member's place, with the same prompts (organization, protocol, prompt variant), for
  :data:`PROBE_ROUNDS` rounds: each member's model calls per turn and prompt tokens per
  call, counted with the run's tokenizer. Later rounds' prompts hold more dialogue (up
  to the prompts' windows).
* **Completions**: every call at its member's ``max_tokens``, an upper bound.
* Retries after invalid replies are not counted. A reflect run's Critic and Coordinator
  calls are their prompts for the probe's episode (the Coordinator's with as many
  iterations of history as it will be shown), at their ``max_tokens``.

Prices: the run's ``price_per_mtok`` for ``openai:`` models, else the price table
(:mod:`~orgteams.agents.backends.pricing`); a model with no known price makes the
estimate's cost unknown (and ``max_cost`` refuses to run:
:func:`~orgteams.agents.backends.spend.check_priced`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orgteams.agents.backends.pricing import PRICES_ENV, Price
from orgteams.agents.backends.spend import LLM_KINDS, price_for, run_models
from orgteams.config import EpisodeConfig, ReflectConfig
from orgteams.organizations.rounds.episode_log import LogLine, line_dict

__all__ = ["HOW", "PLANNER_SEEDS", "PROBE_ROUNDS", "Cells", "Estimate", "ModelCalls",
           "estimate_episodes", "estimate_evaluation", "estimate_reflect", "estimate_sweep",
           "reflect_episodes", "spec_models"]

PLANNER_SEEDS = 3
"""Seeds of a cell whose planner episodes are played for its length."""
PROBE_ROUNDS = 3
"""Rounds of the scripted probe that measures a cell's prompt sizes."""
HOW = ("how: episode lengths of the same cells played by planner teams (model teams often "
       "take longer, up to the tick limit); prompt sizes measured by rendering each cell's "
       "prompts for {rounds} rounds ({tokenizer} tokens); every reply at max_tokens (an "
       "upper bound); retries not counted")
"""The line that says how the estimate is made (``{rounds}``, ``{tokenizer}``)."""


@dataclass
class ModelCalls:
    """The estimated calls of one model.

    Attributes:
        kind: The member kind it is called as (``openai``, ``local``...).
        model: Its name.
        calls, prompt_tokens, completion_tokens: Estimated totals.
        price: Its price (None: unknown).
    """

    kind: str
    model: str
    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    price: Price | None = None

    @property
    def usd(self) -> float | None:
        """The calls' cost at ``price`` (None: no price)."""
        if self.price is None:
            return None
        return (round(self.prompt_tokens) * self.price.prompt
                + round(self.completion_tokens) * self.price.completion) / 1e6


@dataclass
class Estimate:
    """A run's estimated model calls, tokens and cost.

    Attributes:
        episodes: Episodes the run plays (those not done yet).
        models: Per model (``kind:model``) its :class:`ModelCalls`.
        tokenizer: The tokenizer the prompt sizes were counted with.
        done: Episodes an earlier run of it already played (not in the estimate).
    """

    episodes: int = 0
    models: dict[str, ModelCalls] = field(default_factory=dict)
    tokenizer: str = ""
    done: int = 0

    def add(self, kind: str, model: str, price: Price | None, calls: float, prompt: float,
            completion: float) -> None:
        """Add calls of ``model``."""
        key = f"{kind}:{model}"
        row = self.models.setdefault(key, ModelCalls(kind, model, price=price))
        row.calls += calls
        row.prompt_tokens += prompt
        row.completion_tokens += completion

    def merge(self, other: Estimate) -> None:
        """Add another estimate of the same run (another variant, the evaluation)."""
        self.episodes += other.episodes
        self.done += other.done
        self.tokenizer = self.tokenizer or other.tokenizer
        for row in other.models.values():
            self.add(row.kind, row.model, row.price, row.calls, row.prompt_tokens,
                     row.completion_tokens)

    @property
    def calls(self) -> int:
        return round(sum(m.calls for m in self.models.values()))

    @property
    def prompt_tokens(self) -> int:
        return round(sum(m.prompt_tokens for m in self.models.values()))

    @property
    def completion_tokens(self) -> int:
        return round(sum(m.completion_tokens for m in self.models.values()))

    @property
    def usd(self) -> float | None:
        """The cost of every call; None when a called model has no price."""
        costs = [m.usd for m in self.models.values() if m.calls]
        return None if None in costs else float(sum(c for c in costs if c is not None))

    @property
    def unpriced(self) -> list[str]:
        """Models called with no known price."""
        return [m.model for m in self.models.values() if m.calls and m.price is None]

    def lines(self) -> list[str]:
        """The printout: the totals, one line per model when there are several, how."""
        from orgteams.agents.backends.spend import usd

        cost = "cost unknown" if self.usd is None else f"about {usd(self.usd)}"
        done = f" ({self.done:,} done before)" if self.done else ""
        out = [f"cost estimate: {_count(self.episodes, 'episode')}{done}, "
               f"{_count(self.calls, 'model call')}, {self.prompt_tokens:,} prompt + "
               f"{self.completion_tokens:,} completion tokens: {cost}"]
        called = [m for m in self.models.values() if m.calls]
        for m in called if len(called) > 1 or self.unpriced else []:
            price = m.price.text() if m.price else (
                f"no price (give --price-per-mtok IN,OUT or add it to ${PRICES_ENV})")
            out.append(f"  {m.model}: {round(m.calls):,} calls, {round(m.prompt_tokens):,} + "
                       f"{round(m.completion_tokens):,} tokens at {price}"
                       + (f" = {usd(m.usd)}" if m.usd is not None else ""))
        if len(called) == 1 and not self.unpriced and called[0].price is not None:
            out[0] += f" ({called[0].model} at {called[0].price.text()})"
        out.append("  " + HOW.format(rounds=PROBE_ROUNDS, tokenizer=self.tokenizer))
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"episodes": self.episodes, "done": self.done, "calls": self.calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "usd": self.usd,
                "tokenizer": self.tokenizer,
                "how": HOW.format(rounds=PROBE_ROUNDS, tokenizer=self.tokenizer),
                "models": {k: {"calls": round(m.calls), "prompt_tokens": round(m.prompt_tokens),
                               "completion_tokens": round(m.completion_tokens), "usd": m.usd,
                               "price": None if m.price is None else [m.price.prompt,
                                                                       m.price.completion]}
                           for k, m in self.models.items()}}


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


# ---------------------------------------------------------------- the run's models


def spec_models(spec: Any) -> list[tuple[str, str]]:
    """The models a :class:`~orgteams.experiments.sweep_spec.SweepSpec` calls: its
    backends' and its substitute shocks' members."""
    from orgteams.organizations.rounds.shocks import Shock

    members = [shock.member for texts in spec.shocks.values() for t in texts
               for shock in [Shock.parse(t)]
               if shock.kind == "substitute" and isinstance(shock.member, str)]
    return run_models([*spec.backends, *members])


# ---------------------------------------------------------------- episodes


def _planner_config(config: EpisodeConfig) -> EpisodeConfig:
    """The cell with planners in every member's place (substitutes too): no model call."""
    shocks = tuple(replace(s, member="planner") if s.kind == "substitute" else s
                   for s in config.shocks)
    return _bare(config).replace(backend="planner", shocks=shocks)


def _bare(config: EpisodeConfig) -> EpisodeConfig:
    """The cell's world and limits, nothing written, shown, cached or priced."""
    return config.replace(log_path=None, render=None, video=None, cache=None, max_cost=None,
                          price_per_mtok=None)


def _scripted(spec: str) -> str:
    """A model member's stand-in: the scripted double (a person's: a planner, so the
    probe asks no one)."""
    from orgteams.agents.backends.pool import parse_member_spec

    kind = parse_member_spec(spec)[0]
    return "scripted" if kind in LLM_KINDS else "planner" if kind == "human" else spec


def _probe_config(config: EpisodeConfig, specs: list[str]) -> EpisodeConfig:
    """The cell with the scripted double in every model member's place (the prompts the
    real members get), for :data:`PROBE_ROUNDS` rounds."""
    from orgteams.agents.backends.pool import parse_member_spec
    from orgteams.agents.llm.prompts import variant_for_backend

    kinds = [parse_member_spec(s)[0] for s in specs]
    paid = [k for k in kinds if k == "openai"] or [k for k in kinds if k in LLM_KINDS]
    prompts = config.prompts or variant_for_backend(paid[0] if paid else "openai")
    shocks = tuple(replace(s, member=_scripted(s.member))
                   if s.kind == "substitute" and isinstance(s.member, str) else s
                   for s in config.shocks)
    rounds = min(PROBE_ROUNDS, config.max_rounds or PROBE_ROUNDS)
    return _bare(config).replace(backend=[_scripted(s) for s in specs], prompts=prompts,
                                 shocks=shocks, max_rounds=rounds)


def _turns(records: list[LogLine]) -> dict[tuple[str, str, int], int]:
    """Decision turns per ``(agent, phase, round)``: communicate turns (one per stage
    spoken in), act turns where the member had to decide (not ``continue``)."""
    seen: set[tuple] = set()
    out: dict[tuple[str, str, int], int] = defaultdict(int)
    for r in map(line_dict, records):  # the lines' JSON objects, as the log holds them
        phase, agent = r.get("phase"), r.get("agent")
        if phase not in ("communicate", "act") or agent is None:
            continue
        if phase == "act" and r.get("action") == "continue":
            continue
        key = (agent, phase, r.get("round"), r.get("stage"))
        if key not in seen:
            seen.add(key)
            out[(agent, phase, int(r.get("round") or 0))] += 1
    return out


@dataclass
class _Probe:
    """What a cell's prompts measure: per (agent, phase) calls per turn and prompt tokens
    per call; each member's ``max_tokens``; the probe episode (for reflect's prompts)."""

    per_call: dict[tuple[str, str], tuple[float, float]]
    max_tokens: dict[str, int]
    tokenizer: str
    summary: dict[str, Any]
    records: list[dict]

    def rate(self, agent: str, phase: str) -> tuple[float, float]:
        """``(calls per turn, prompt tokens per call)``; an agent the probe did not see
        in that phase gets the team's mean."""
        if (agent, phase) in self.per_call:
            return self.per_call[(agent, phase)]
        seen = [v for (a, p), v in self.per_call.items() if p == phase and v[0] > 0]
        if not seen:
            seen = [v for v in self.per_call.values() if v[0] > 0] or [(1.0, 0.0)]
        return (sum(c for c, _ in seen) / len(seen), sum(t for _, t in seen) / len(seen))


def _probe(config: EpisodeConfig, specs: list[str]) -> _Probe:
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.run import run_episode

    with BackendPool() as pool:
        result = run_episode(_probe_config(config, specs), pool=pool)
        tokenizer = pool.tokenizer.name
    turns: dict[tuple[str, str], int] = defaultdict(int)
    for (agent, phase, _), n in _turns(result.records).items():
        turns[(agent, phase)] += n
    calls: dict[tuple[str, str], int] = defaultdict(int)
    prompt: dict[tuple[str, str], int] = defaultdict(int)
    for r in map(line_dict, result.records):
        if r.get("phase") in ("communicate", "act") and r.get("replies"):
            key = (r["agent"], r["phase"])
            calls[key] += len(r["replies"])
            prompt[key] += int((r.get("usage") or {}).get("prompt_tokens") or 0)
    per_call = {key: (calls[key] / n, prompt[key] / calls[key] if calls[key] else 0.0)
                for key, n in turns.items() if n}
    settings = result.summary.get("llm_settings") or {}
    return _Probe(per_call, {a: int(s["max_tokens"]) for a, s in settings.items()},
                  tokenizer, result.summary, result.records)


def _lengths(config: EpisodeConfig) -> dict[tuple[str, str, int], int]:
    """Decision turns per ``(agent, phase, round)`` of the cell's planner episode."""
    from orgteams.run import run_episode

    return _turns(run_episode(_planner_config(config)).records)


class Cells:
    """The probes and planner lengths measured for one estimate, by cell and seed: a cell
    seen again (another reflect variant, a held-out arm) is not played again. Its owner
    is the estimate that made it."""

    def __init__(self) -> None:
        self._found: dict[str, tuple[_Probe, dict]] = {}

    def get(self, config: EpisodeConfig, seed: int) -> tuple[_Probe, dict]:
        """The probe and the planner's turns of ``config`` with ``seed``."""
        from orgteams.run import member_specs

        key = f"{_key(config)}|{seed}"
        if key not in self._found:
            config = config.replace(seed=seed)
            specs = member_specs(config.backend, config.agents)
            self._found[key] = (_probe(config, specs), _lengths(config))
        return self._found[key]


def _key(config: EpisodeConfig) -> str:
    """A cell's identity without its seed (an organization object by its YAML)."""
    from orgteams.organizations.spec.organization import Organization

    values = _bare(config).values()
    values.pop("seed")
    org = values["organization"]
    values["organization"] = org.to_yaml() if isinstance(org, Organization) else str(org)
    return repr(sorted(values.items()))


def estimate_episodes(configs: Sequence[EpisodeConfig], price: Price | None = None,
                      cells: Cells | None = None) -> Estimate:
    """The model calls of playing every config once (one episode each).

    Configs that differ only in their seed are one cell: its first
    :data:`PLANNER_SEEDS` seeds are measured (probe and planner episode), the others
    count as their mean.

    Args:
        configs: The episodes.
        price: The run's own price of its ``openai:`` models (None: the table).
        cells: What was measured already for this run (None: a fresh one).
    """
    from orgteams.run import member_specs

    cells = cells or Cells()
    groups: dict[str, list[EpisodeConfig]] = defaultdict(list)
    for config in configs:
        groups[_key(config)].append(config)
    estimate = Estimate(episodes=len(configs))
    for group in groups.values():
        config = group[0]
        specs = member_specs(config.backend, config.agents)
        substitutes = sorted((s for s in config.shocks if s.kind == "substitute"
                              and isinstance(s.member, str)), key=lambda s: s.round)
        for seed, weight in _weights([c.seed or 0 for c in group]).items():
            probe, lengths = cells.get(config, seed)
            estimate.tokenizer = probe.tokenizer
            for (agent, phase, round_), turns in lengths.items():
                spec = _spec_at(specs[int(agent.rsplit("_", 1)[1])], agent, round_,
                                substitutes)
                models = run_models([spec])
                if not models:
                    continue
                kind, model = models[0]
                per_turn, prompt = probe.rate(agent, phase)
                calls = turns * per_turn * weight
                estimate.add(kind, model, price_for(kind, model, price), calls, calls * prompt,
                             calls * probe.max_tokens.get(agent, _DEFAULT_MAX_TOKENS))
    return estimate


def _weights(seeds: list[int]) -> dict[int, float]:
    """The measured seeds (the first :data:`PLANNER_SEEDS` distinct ones), each weighted
    by its episodes plus an equal share of the unmeasured seeds' episodes."""
    measured = list(dict.fromkeys(seeds))[:PLANNER_SEEDS]
    rest = sum(1 for s in seeds if s not in measured)
    return {s: seeds.count(s) + rest / len(measured) for s in measured}


_DEFAULT_MAX_TOKENS = 320
"""``LLMAgent``'s ``max_tokens``, for a member the probe did not build."""


def _spec_at(spec: str, agent: str, round_: int, substitutes: list) -> str:
    """The member spec ``agent`` plays with at ``round_`` (after substitute shocks)."""
    for shock in substitutes:
        if shock.agent == agent and shock.round <= round_:
            spec = shock.member
    return spec


def estimate_sweep(spec: Any, out: str | Path | None = None) -> Estimate:
    """The model calls of a :class:`~orgteams.experiments.sweep_spec.SweepSpec`'s cells:
    those not played yet in ``out/results.jsonl`` when ``out`` is given (a resumed sweep),
    else all."""
    from orgteams.experiments.sweep import cell_key, played, read_results
    from orgteams.experiments.sweep_spec import cell_config

    done: set[str] = set()
    if out is not None:
        rows, _ = read_results(Path(out) / "results.jsonl")
        done = {r.get("key") or cell_key(r["cell"]) for r in rows if played(r)}
    options = spec.episode_options()
    configs = [cell_config(c, None, options) for c in spec.cells() if cell_key(c) not in done]
    estimate = estimate_episodes(configs, spec.price_per_mtok)
    estimate.done = len(done & {cell_key(c) for c in spec.cells()})
    return estimate


# ---------------------------------------------------------------- reflect


def reflect_episodes(config: ReflectConfig, start: int = 0) -> list[EpisodeConfig]:
    """The episodes a reflect run plays under its starting organization from iteration
    ``start`` on (the earlier ones are finished): each iteration's (the schedule of
    :func:`~orgteams.experiments.reflect.make_episode_fn`), and with screening every
    candidate's for every iteration after the first (the played one's are reused)."""
    from orgteams.experiments.reflect import HEURISTIC_EPISODES

    heuristic = config.coordinator == "heuristic"
    per = config.episodes_per_iteration or (HEURISTIC_EPISODES if heuristic else 1)
    screen = heuristic if config.screen_candidates is None else config.screen_candidates
    tasks = [config.task] if isinstance(config.task, str) else list(config.task)
    layouts = [config.layout] if isinstance(config.layout, str) else list(config.layout)
    seeds = list(config.seeds)
    base = config.episode().replace(organization=config.organization)
    out = []
    for k in range(start, config.iterations):
        plays = config.candidates if screen and k > 0 else 1
        for j in range(per):
            i = k * per + j
            episode = base.replace(task=tasks[i % len(tasks)], layout=layouts[i % len(layouts)],
                                   seed=seeds[i % len(seeds)])
            out += [episode] * plays
    return out


def estimate_reflect(config: ReflectConfig, heldout_seeds: int = 0, cells: Cells | None = None,
                     start: int = 0) -> Estimate:
    """The model calls of a reflect run: its episodes (:func:`reflect_episodes`), its
    Critic's and Coordinator's calls, and ``heldout_seeds`` held-out episodes of the start
    and the best organization (a recipe's evaluation) on its task and layout.

    Args:
        cells: What was measured already (a recipe's other variants).
        start: Iterations finished already (a resumed run): not estimated.
    """
    from orgteams.experiments.reflect_eval import heldout_seeds as held

    start = min(start, config.iterations)
    episodes = reflect_episodes(config, start)
    price = config.price_per_mtok
    cells = cells or Cells()
    estimate = estimate_episodes(episodes, price, cells)
    estimate.done = len(reflect_episodes(config)) - len(episodes)
    if not episodes:
        return estimate
    if heldout_seeds:
        first = episodes[0]
        arms = [first.replace(seed=s) for s in held(config.seeds, heldout_seeds)] * 2
        estimate.merge(estimate_episodes(arms, price, cells))
    _reflectors(config, episodes[0], estimate, price, cells, start)
    return estimate


def _reflectors(config: ReflectConfig, episode: EpisodeConfig, estimate: Estimate,
                price: Price | None, cells: Cells, start: int) -> None:
    """Add the Critic's call per iteration and the Coordinator's per decision, each at
    its prompt for the probe's episode (the Coordinator's history grows up to what it
    shows) and its ``max_tokens``."""
    from orgteams.agents.backends.scripted import ScriptedBackend
    from orgteams.agents.llm.tokens import Tokenizer
    from orgteams.criticize_reflect.coordinator import Coordinator, Trial
    from orgteams.criticize_reflect.cost import CostModel
    from orgteams.criticize_reflect.critic import Critic
    from orgteams.criticize_reflect.summary import summarize_episode
    from orgteams.organizations.spec.library import load_organization
    from orgteams.organizations.spec.organization import Organization

    critic = config.critic if config.use_critic and config.critic != "heuristic" else None
    coordinator = config.coordinator if config.coordinator != "heuristic" else None
    if critic is None and coordinator is None:
        return
    org = config.organization
    org = org if isinstance(org, Organization) else load_organization(org)
    probe, _ = cells.get(episode, episode.seed or 0)
    summary, records = probe.summary, probe.records
    tokenizer = Tokenizer()
    try:
        def tokens(messages: list[dict[str, str]]) -> int:
            return sum(tokenizer.count(m.get("content", "")) for m in messages)

        cost = CostModel(config.step_weight, config.token_weight, config.failure_penalty)
        bounded = summarize_episode(records, summary, budget_chars=config.budget_chars)
        if critic is not None:
            kind, model = run_models([critic])[0]
            agent = Critic(ScriptedBackend())
            calls = config.iterations - start
            prompt = tokens(agent.prompt(org, bounded, cost.cost(summary)))
            estimate.add(kind, model, price_for(kind, model, price), calls, calls * prompt,
                         calls * agent.max_tokens)
        if coordinator is not None and start + 1 < config.iterations:
            kind, model = run_models([coordinator])[0]
            agent = Coordinator(ScriptedBackend(), k=config.candidates)
            trial = Trial(0, org, cost.cost(summary), {k: v for k, v in summary.to_dict().items()
                                                       if isinstance(v, int | float)})
            shown = [min(n, agent.max_history + 1)
                     for n in range(start + 1, config.iterations)]
            sizes = {n: tokens(agent.prompt([replace(trial, iteration=i) for i in range(n)],
                                            org, config.approved)) for n in set(shown)}
            calls = len(shown)
            estimate.add(kind, model, price_for(kind, model, price), calls,
                         sum(sizes[n] for n in shown), calls * agent.max_tokens)
    finally:
        tokenizer.close()


def estimate_evaluation(out_dir: str | Path, seeds: int, tasks: Sequence[str] | None = None,
                        layouts: Sequence[str] | None = None,
                        price: Price | None = None) -> Estimate:
    """The model calls of ``orgteams reflect --evaluate``: the held-out episodes of the
    start and the best organization not finished before
    (:func:`~orgteams.experiments.reflect_eval.evaluation_episodes`). A cell the layout
    cannot host (asked for with ``tasks`` or ``layouts``) is left out, as the evaluation
    skips it."""
    from orgteams.errors import UserError
    from orgteams.experiments.reflect_eval import evaluation_episodes

    todo, done = evaluation_episodes(out_dir, seeds, tasks, layouts)
    estimate, cells = Estimate(done=done), Cells()
    for episodes in todo:
        try:
            estimate.merge(estimate_episodes(episodes, price, cells))
        except UserError:
            if not (tasks or layouts):
                raise
    return estimate
