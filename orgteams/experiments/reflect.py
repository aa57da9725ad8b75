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

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from orgteams.agents.team import Team
from orgteams.criticize_reflect.coordinator import Coordinator
from orgteams.criticize_reflect.critic import Critic
from orgteams.criticize_reflect.loop import ReflectResult, reflect
from orgteams.errors import UserError
from orgteams.organizations.rounds.status import (
    DEFAULT_MAX_INVALID_REPLIES,
    DEFAULT_MAX_TRANSPORT_FAILURES,
)
from orgteams.organizations.spec.library import load_organization
from orgteams.organizations.spec.organization import Organization

__all__ = ["HEURISTIC_EPISODES", "check_reflector", "make_episode_fn", "make_llm",
           "run_reflect"]

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


def check_reflector(role: str, spec: str) -> None:
    """Check the Critic's or Coordinator's spec: ``heuristic`` or a chat backend spec
    (``local``, ``openai:<model>``, ``scripted``).

    Raises:
        UserError: ``Unknown Coordinator backend kind 'nosuch'. Known: heuristic, ...``
            (with a "Did you mean"), or a malformed spec (``local:foo``).
    """
    from orgteams.agents.backends import BACKENDS
    from orgteams.agents.backends.pool import parse_member_spec
    from orgteams.errors import unknown_name

    if spec == "heuristic":
        return
    kind = str(spec).strip().partition(":")[0]
    if kind not in BACKENDS:
        raise unknown_name(f"{role} backend kind", kind, ["heuristic", *BACKENDS])
    parse_member_spec(spec)  # the model part: local takes none, openai needs one


def make_episode_fn(task: str | Sequence[str] = "prepare_afternoon_tea",
                    layout: str | Sequence[str] = "apartment", agents: int = 3,
                    backend: str | list[str] = "local", seeds: Sequence[int] = (0,),
                    max_rounds: int | None = None, max_ticks: int | None = None,
                    log_dir: str | Path | None = None, cache: str | Path | None = None,
                    max_transport_failures: int | None = DEFAULT_MAX_TRANSPORT_FAILURES,
                    pool: Any = None, episodes_per_iteration: int = 1,
                    on_progress: Callable[[int, int, int], object] | None = None,
                    max_invalid_replies: int | None = DEFAULT_MAX_INVALID_REPLIES):
    """``episode_fn(organization, iteration)`` playing an iteration with ``run_episode``.

    Schedule: iteration ``k`` plays ``episodes_per_iteration`` (E) episodes, episode
    ``j`` with ``seeds[(k * E + j) % len(seeds)]`` (E equal to ``len(seeds)``: the same
    seeds every iteration, the fair comparison), and likewise for ``task`` and ``layout``
    when they are lists. With E = 1 (the paper's loop) it returns one result, else a list.
    Logs go to ``log_dir/iteration_<k>[_<j>].jsonl`` (None: kept in memory). ``pool``:
    a :class:`~orgteams.agents.backends.pool.BackendPool` shared by the episodes (None: each episode
    makes and closes its own). ``on_progress(iteration, tick, tick_limit)`` is called
    after every tick.
    """
    tasks = [task] if isinstance(task, str) else list(task)
    layouts = [layout] if isinstance(layout, str) else list(layout)
    seeds = list(seeds)
    if not (tasks and layouts and seeds):
        raise UserError("the schedule needs at least one task, layout and seed")
    _check_schedule(tasks, layouts, agents, backend)

    if episodes_per_iteration < 1:
        raise UserError(f"episodes_per_iteration must be >= 1, got {episodes_per_iteration}")
    per = episodes_per_iteration

    def one(organization: Organization, iteration: int, j: int):
        from orgteams.run import run_episode

        i = iteration * per + j
        name = f"iteration_{iteration}" + (f"_{j}" if per > 1 else "")
        log = Path(log_dir) / f"{name}.jsonl" if log_dir is not None else None
        return run_episode(task=tasks[i % len(tasks)], layout=layouts[i % len(layouts)],
                           organization=organization, agents=agents, backend=backend,
                           seed=seeds[i % len(seeds)], max_rounds=max_rounds,
                           max_ticks=max_ticks, log_path=log, cache=cache,
                           max_transport_failures=max_transport_failures, pool=pool,
                           max_invalid_replies=max_invalid_replies,
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


def run_reflect(organization: str | Path | Organization = "leader", *,
                task: str | Sequence[str] = "prepare_afternoon_tea",
                layout: str | Sequence[str] = "apartment", agents: int = 3,
                backend: str | list[str] = "local", seeds: Sequence[int] = (0,),
                critic: str = "local", coordinator: str = "local", iterations: int = 3,
                out_dir: str | Path = "runs/reflect", candidates: int = 3,
                step_weight: float = 1.0, token_weight: float = 1.0, use_critic: bool = True,
                approved: bool = False, max_rounds: int | None = None,
                max_ticks: int | None = None, cache: str | Path | None = None,
                budget_chars: int = 6000,
                max_transport_failures: int | None = DEFAULT_MAX_TRANSPORT_FAILURES,
                episodes_per_iteration: int | None = None, failure_penalty: float = 0.0,
                screen_candidates: bool | None = None,
                on_progress: Callable[[int, int, int], object] | None = None,
                max_invalid_replies: int | None = DEFAULT_MAX_INVALID_REPLIES) -> ReflectResult:
    """Run (or resume) the Criticize-Reflect loop; see :func:`~orgteams.criticize_reflect.reflect`.

    Args:
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
        on_progress: Called as ``on_progress(iteration, tick, tick_limit)`` while each
            episode plays (the CLI's progress bar).
    """
    check_reflector("Coordinator", coordinator)  # before anything is built or started
    if use_critic:
        check_reflector("Critic", critic)
    org = organization if isinstance(organization, Organization) else load_organization(
        organization)
    resolved = org.resolve(Team.of_size(agents))
    for agent in resolved.team:  # a bad instruction template fails now, before any file
        resolved.instruction_for(agent)
    from orgteams.agents.backends.pool import BackendPool, parse_member_spec
    from orgteams.criticize_reflect.heuristic import HeuristicCoordinator, HeuristicCritic
    from orgteams.run import member_specs

    if episodes_per_iteration is None:
        episodes_per_iteration = HEURISTIC_EPISODES if coordinator == "heuristic" else 1
    if screen_candidates is None:
        screen_candidates = coordinator == "heuristic"
    # One pool for the team, the Critic and the Coordinator: one local server for all,
    # living as long as the reflect run.
    with BackendPool() as pool:
        # Size the shared server for the team before the Critic or Coordinator starts it.
        pool.expect_local_members(sum(parse_member_spec(spec)[0] == "local"
                                      for spec in member_specs(backend, agents)))
        critic_obj: Any = None
        if use_critic:
            critic_obj = HeuristicCritic() if critic == "heuristic" else Critic(
                pool.get(critic, cache))
        coordinator_obj: Any = (HeuristicCoordinator(k=candidates) if coordinator == "heuristic"
                                else Coordinator(pool.get(coordinator, cache), k=candidates))
        episode_fn = make_episode_fn(task, layout, agents, backend, seeds, max_rounds,
                                     max_ticks, log_dir=Path(out_dir) / "logs", cache=cache,
                                     max_transport_failures=max_transport_failures, pool=pool,
                                     max_invalid_replies=max_invalid_replies,
                                     episodes_per_iteration=episodes_per_iteration,
                                     on_progress=on_progress)
        _write_run(Path(out_dir), {
            "organization": org.name, "task": task, "layout": layout, "agents": agents,
            "backend": backend, "seeds": list(seeds), "critic": critic if use_critic else None,
            "coordinator": coordinator, "episodes_per_iteration": episodes_per_iteration,
            "max_rounds": max_rounds, "max_ticks": max_ticks})
        return reflect(org, episode_fn, critic_obj, coordinator_obj, iterations=iterations,
                       out_dir=out_dir, step_weight=step_weight, token_weight=token_weight,
                       use_critic=use_critic, approved=approved, budget_chars=budget_chars,
                       failure_penalty=failure_penalty, screen_candidates=screen_candidates)


def _write_run(out: Path, run: dict[str, Any]) -> None:
    """``run.json``: how the loop played (the evaluation reads its seeds to avoid them)."""
    import json

    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
