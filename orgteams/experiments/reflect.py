"""Criticize-Reflect from the command line or Python: backends, the episode schedule, the loop.

>>> from orgteams.experiments.reflect import run_reflect
>>> result = run_reflect("leader", task="prepare_afternoon_tea", layout="studio",
...                      backend="planner", critic="scripted", coordinator="scripted",
...                      iterations=2, out_dir="runs/reflect_demo")
>>> result.best.name, result.best_cost

The critic and coordinator models are backend specs (``local``, ``openai:<model>``,
``scripted`` for tests; see :func:`orgteams.agents.backends.make_backend`); the team's
members are member specs as in ``orgteams run`` (``planner``, ``local``, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from orgteams.agents.team import Team
from orgteams.config import ReflectConfig, check_reflector
from orgteams.criticize_reflect.coordinator import Coordinator
from orgteams.criticize_reflect.critic import Critic
from orgteams.criticize_reflect.loop import ReflectResult, reflect
from orgteams.errors import UserError
from orgteams.organizations.spec.library import load_organization
from orgteams.organizations.spec.organization import Organization

__all__ = ["HEURISTIC_EPISODES", "ReflectConfig", "check_reflector", "make_episode_fn",
           "make_llm", "reflect_spend", "run_reflect"]

HEURISTIC_EPISODES = 5
"""Default episodes per iteration of the heuristic Coordinator. The paper's loop played
one; with one seed the best organization fits that seed's house and does not generalize
(measured in benchmarks/README.md), and planner episodes are cheap."""


def make_llm(spec: str, cache: str | Path | None = None):
    """A chat backend for the Critic or Coordinator from a spec (``local``, ``openai:m``,
    ``scripted``); ``cache``: a SQLite response cache path."""
    from orgteams.agents.backends import make_backend
    from orgteams.agents.backends.pool import backend_options

    return make_backend(backend_options(spec, cache))


def make_episode_fn(config: ReflectConfig | None = None, *,
                    log_dir: str | Path | None = None, pool: Any = None,
                    on_progress: Callable[[int, int, int], object] | None = None,
                    **overrides: Any):
    """``episode_fn(organization, iteration)`` playing an iteration with ``run_episode``.

    ``config`` (or :class:`ReflectConfig`'s defaults, with ``overrides``: ``task``,
    ``layout``, ``agents``, ``backend``, ``seeds``, ``episodes_per_iteration``, the
    episode limits...) says what each episode plays. Schedule: iteration ``k`` plays
    ``episodes_per_iteration`` (E; None: 1) episodes, episode ``j`` with ``seeds[(k * E
    + j) % len(seeds)]`` (E equal to ``len(seeds)``: the same seeds every iteration, the
    fair comparison), and likewise for ``task`` and ``layout`` when they are lists. With
    E = 1 (the paper's loop) it returns one result, else a list.
    Logs go to ``log_dir/iteration_<k>[_<j>].jsonl`` (None: kept in memory). ``pool``:
    a :class:`~orgteams.agents.backends.pool.BackendPool` shared by the episodes (None: each episode
    makes and closes its own). ``on_progress(iteration, tick, tick_limit)`` is called
    after every tick.
    """
    config = ReflectConfig.merged(config, overrides, "make_episode_fn")
    tasks = [config.task] if isinstance(config.task, str | Path) else list(config.task)
    layouts = [config.layout] if isinstance(config.layout, str | Path) else list(config.layout)
    seeds = list(config.seeds)
    if not (tasks and layouts and seeds):
        raise UserError("the schedule needs at least one task, layout and seed")
    _check_schedule(tasks, layouts, config.agents, config.backend)
    per = config.episodes_per_iteration or 1
    base = config.episode()

    def one(organization: Organization, iteration: int, j: int):
        from orgteams.run import run_episode

        i = iteration * per + j
        name = f"iteration_{iteration}" + (f"_{j}" if per > 1 else "")
        log = Path(log_dir) / f"{name}.jsonl" if log_dir is not None else None
        episode = base.replace(task=tasks[i % len(tasks)], layout=layouts[i % len(layouts)],
                               organization=organization, seed=seeds[i % len(seeds)],
                               log_path=log)
        return run_episode(config=episode, pool=pool,
                           on_tick=None if on_progress is None else (
                               lambda tick, limit: on_progress(iteration, tick, limit)))

    def episode_fn(organization: Organization, iteration: int):
        if per == 1:
            return one(organization, iteration, 0)
        return [one(organization, iteration, j) for j in range(per)]

    return episode_fn


def _check_schedule(tasks: list[str], layouts: list[str], agents: int,
                    backend: str | list[str]) -> None:
    """Every name of the schedule is loaded now, so bad input fails before any file is
    written (not at the first episode, after ``config.json``)."""
    from orgteams.agents.backends.pool import MEMBER_KINDS
    from orgteams.envs.core.layout import load_layout
    from orgteams.envs.core.tasks import load_task
    from orgteams.errors import unknown_name

    for t in tasks:
        load_task(t)
    for lay in layouts:
        load_layout(lay)
    specs = [s.strip() for s in backend.split(",")] if isinstance(backend, str) else backend
    for spec in specs:
        kind = str(spec).split(":", 1)[0]
        if kind not in MEMBER_KINDS:
            raise unknown_name("member kind", kind, MEMBER_KINDS)
    if len(specs) not in (1, agents):
        raise UserError(f"got {len(specs)} member specs for {agents} agents; give one "
                         "spec for all or one per agent")


def reflect_spend(config: ReflectConfig) -> Any:
    """The :class:`~orgteams.agents.backends.spend.Spend` of a reflect run (its ledger
    ``<out_dir>/spend.json``), or None when none of its models (team, Critic,
    Coordinator) has a price and it has no ``max_cost``.

    Raises:
        UserError: ``max_cost`` with a model that has no known price.
    """
    from orgteams.agents.backends.spend import LEDGER, Spend, check_priced, run_models

    specs = [config.backend] if isinstance(config.backend, str) else list(config.backend)
    specs += [s for s, used in ((config.critic, config.use_critic),
                                (config.coordinator, True)) if used and s != "heuristic"]
    priced = check_priced(run_models(specs), config.price_per_mtok, config.max_cost)
    if not (priced or config.max_cost is not None):
        return None
    return Spend(config.max_cost, Path(config.out_dir) / LEDGER, config.price_per_mtok)


def run_reflect(config: ReflectConfig | str | Path | Organization | None = None, *,
                on_progress: Callable[[int, int, int], object] | None = None,
                spend: Any = None, **overrides: Any) -> ReflectResult:
    """Run (or resume) the Criticize-Reflect loop; see :func:`~orgteams.criticize_reflect.reflect`.

    ``run_reflect(config)``, ``run_reflect(config, iterations=5)`` or, as before,
    ``run_reflect("leader", task=..., coordinator="heuristic")`` (a first argument that
    is no :class:`ReflectConfig` is the starting organization). The keywords are
    :class:`ReflectConfig`'s fields, checked once before anything is built or started:

        organization: Starting organization: a library name, a YAML path or an Organization.
        backend: Team member spec(s), as in ``orgteams run``.
        critic, coordinator: Backend specs of the two reflecting models, or
            ``heuristic`` (the offline rule-based ones of
            :mod:`~orgteams.criticize_reflect.heuristic`).
        candidates: K, the candidate organizations the Coordinator proposes each time.
        out_dir: Everything is saved there; a rerun with the same ``out_dir`` resumes.
        seeds: The loop's training seeds (see :func:`make_episode_fn`); the held-out
            evaluation (:mod:`orgteams.experiments.reflect_eval`) never uses them.
        episodes_per_iteration: Episodes (seeds) per iteration (default: 5 for the
            heuristic Coordinator, 1 otherwise: the paper's loop played one episode).
        failure_penalty: Extra cost of a failed episode (see ``CostModel``).
        screen_candidates: Play every valid candidate and keep the cheapest (default:
            on for the heuristic Coordinator, off for a model, as in the paper).
        max_cost: Stop the run cleanly once its model calls' spend (team, Critic and
            Coordinator; ``<out_dir>/spend.json`` keeps it across reruns) reaches this
            many USD: :class:`~orgteams.agents.backends.spend.BudgetReached`, the
            finished iterations kept; rerun with a higher one to go on.
        price_per_mtok: USD per 1 million prompt and completion tokens of the
            ``openai:`` models, instead of the price table.

    Args:
        on_progress: Called as ``on_progress(iteration, tick, tick_limit)`` while each
            episode plays (the CLI's progress bar).
        spend: What the calls are charged to (a recipe's, shared by its variants); None:
            :func:`reflect_spend`.

    Raises:
        BudgetReached: The spend reached the budget (before the run, or during it).
        EpisodeFailed: An episode stopped early for another reason.
    """
    if config is not None and not isinstance(config, ReflectConfig):
        overrides = {"organization": config, **overrides}
        config = None
    config = ReflectConfig.merged(config, overrides, "run_reflect")
    org = config.organization
    org = org if isinstance(org, Organization) else load_organization(org)
    resolved = org.resolve(Team.of_size(config.agents))
    for agent in resolved.team:  # a bad instruction template fails now, before any file
        resolved.instruction_for(agent)
    heuristic = config.coordinator == "heuristic"
    config = config.replace(
        episodes_per_iteration=config.episodes_per_iteration or (
            HEURISTIC_EPISODES if heuristic else 1),
        screen_candidates=heuristic if config.screen_candidates is None
        else config.screen_candidates)
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.criticize_reflect.loop import EpisodeFailed, finished_iterations

    spend = spend if spend is not None else reflect_spend(config)

    def done(finished: int) -> str:
        return f"{finished} of {config.iterations} iterations"

    if spend is not None:  # spent already: not even the pending decision is asked
        spend.check(done(finished_iterations(config.out_dir)))
    # One pool for the team, the Critic and the Coordinator: one local server for all,
    # living as long as the reflect run.
    with BackendPool(spend=spend) as pool:
        critic, coordinator = _reflectors(config, pool)
        episode_fn = make_episode_fn(config, log_dir=Path(config.out_dir) / "logs", pool=pool,
                                     on_progress=on_progress)
        _write_run(Path(config.out_dir), {
            "organization": org.name, "task": config.task, "layout": config.layout,
            "agents": config.agents, "backend": config.backend, "seeds": list(config.seeds),
            "critic": config.critic if config.use_critic else None,
            "coordinator": config.coordinator,
            "episodes_per_iteration": config.episodes_per_iteration,
            "max_rounds": config.max_rounds, "max_ticks": config.max_ticks})
        try:
            return reflect(org, episode_fn, critic, coordinator, iterations=config.iterations,
                           out_dir=config.out_dir, step_weight=config.step_weight,
                           token_weight=config.token_weight, use_critic=config.use_critic,
                           approved=config.approved, budget_chars=config.budget_chars,
                           failure_penalty=config.failure_penalty,
                           screen_candidates=config.screen_candidates)
        except EpisodeFailed as failed:
            if spend is not None and spend.reached():
                from orgteams.agents.backends.spend import BudgetReached

                assert spend.max_cost is not None
                raise BudgetReached(spend.spent, spend.max_cost, spend.ledger,
                                    done(failed.finished)) from failed
            raise


def _reflectors(config: ReflectConfig, pool: Any) -> tuple[Any, Any]:
    """The Critic (None without one) and the Coordinator: heuristic, or a model of the pool
    (sized first for the team's local members, so one server serves them all)."""
    from orgteams.agents.backends.pool import LLM_MEMBER_KINDS, parse_member_spec
    from orgteams.criticize_reflect.heuristic import HeuristicCoordinator, HeuristicCritic
    from orgteams.run import member_specs

    kinds = [parse_member_spec(spec)[0] for spec in member_specs(config.backend, config.agents)]
    pool.expect_local_members(kinds.count("local"))
    # planner, random and policy members never read the instruction: an edit of its
    # text alone is the same behaviour for them (and skipped before it is played)
    reads = any(kind in (*LLM_MEMBER_KINDS, "human") for kind in kinds)
    critic: Any = None
    if config.use_critic:
        critic = HeuristicCritic() if config.critic == "heuristic" else Critic(
            pool.get(config.critic, config.cache))
    coordinator: Any = (HeuristicCoordinator(k=config.candidates, reads_prompts=reads)
                        if config.coordinator == "heuristic"
                        else Coordinator(pool.get(config.coordinator, config.cache),
                                         k=config.candidates, reads_prompts=reads))
    return critic, coordinator


def _write_run(out: Path, run: dict[str, Any]) -> None:
    """``run.json``: how the loop played (the evaluation reads its seeds to avoid them)."""
    import json

    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
