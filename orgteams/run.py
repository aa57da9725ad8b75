"""Build teams and run episodes in a few lines (the Python face of ``orgteams run``).

>>> from orgteams import run_episode
>>> result = run_episode(task="prepare_afternoon_tea", layout="studio", organization="leader",
...                      agents=3, backend="planner", seed=0)
>>> result.summary.success, result.summary.ticks

The same as one :class:`~orgteams.config.EpisodeConfig` (what ``orgteams run``, sweep
cells and recipes build), reusable with changes:

>>> config = EpisodeConfig(layout="studio", backend="planner", log_path=None)
>>> [run_episode(config, seed=s).summary.ticks for s in range(3)]
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from orgteams.agents.backends.pool import (
    LLM_MEMBER_KINDS,
    BackendPool,
    parse_member_spec,
)
from orgteams.agents.policy_member import Policy
from orgteams.agents.team import Team
from orgteams.config import EpisodeConfig
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.errors import UserError
from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.organizations.rounds.runner import EpisodeResult, TeamRunner
from orgteams.organizations.rounds.shocks import Shock
from orgteams.organizations.spec.library import load_organization
from orgteams.organizations.spec.organization import Organization
from orgteams.organizations.spec.resolved import ResolvedOrganization


def build_member(agent_id: str, spec: str | Policy, *, leader: bool = False,
                 seed: int | None = None,
                 cache: str | Path | None = None,
                 env: HighLevelEnv | None = None, pool: BackendPool | None = None,
                 **llm_kwargs: Any):
    """A team member from a spec: ``planner``, ``random``, ``human``, ``local``,
    ``scripted``, ``openai:<model>`` (any OpenAI-compatible server, see docs/llm-backends.md) or
    ``policy:<model.zip>`` (a frozen RL policy saved by Stable-Baselines3, its
    observation settings in ``model.json`` beside it); or a callable
    ``policy(observation, action_mask) -> action`` (a
    :class:`~orgteams.agents.policy_member.PolicyMember` with ``single_agent_env``'s
    default observations: flat, view radius 7).

    ``llm_kwargs`` go to :class:`~orgteams.agents.llm.llm_agent.LLMAgent` (``temperature``,
    ``prompts``...); ``prompts=None`` picks the backend's default variant (``local``:
    ``compact``).

    ``leader`` only matters to planners (see :class:`PlannerMember`).
    ``env`` only matters to ``human``: when it renders in human mode the person
    answers in that window (:class:`~orgteams.agents.human.window_input.WindowInput`),
    else in the terminal. ``pool`` only matters to LLM members, and they need one: it
    owns their backend.

    Raises:
        UserError: A bad spec.
        ValueError: An LLM member without a pool.
    """
    if callable(spec):
        from orgteams.agents.policy_member import PolicyMember

        return PolicyMember(agent_id, spec, name=policy_name(spec))
    kind, path = parse_member_spec(spec)
    if kind == "policy":
        from orgteams.agents.policy_member import PolicyMember, load_policy

        return PolicyMember(agent_id, *load_policy(path, seed=seed), name=spec.strip())
    if kind in LLM_MEMBER_KINDS and pool is None:
        raise ValueError(f"member spec {spec!r} needs a BackendPool (pool=...): the pool owns "
                         "its backend and closes it")
    if kind == "planner":
        from orgteams.agents.planner.planner_member import PlannerMember

        return PlannerMember(agent_id, leader=leader)
    if kind == "random":
        from orgteams.agents.planner.planner_member import RandomMember

        return RandomMember(agent_id, seed)
    if kind == "human":
        from orgteams.agents.human.human_agent import HumanAgent

        if env is not None and env.render_mode == "human":
            from orgteams.agents.human.window_input import WindowInput

            env.overlay.set_team(you=env.overlay.you or agent_id)  # ringed, tagged YOU
            window = WindowInput(env)
            return HumanAgent(agent_id, window.ask, window.show)
        return HumanAgent(agent_id)
    from orgteams.agents.llm.llm_agent import LLMAgent
    from orgteams.agents.llm.prompts import variant_for_backend

    llm_kwargs["prompts"] = llm_kwargs.get("prompts") or variant_for_backend(kind)
    return LLMAgent(agent_id, pool.get(spec, cache), seed=seed, **llm_kwargs)


def policy_name(policy: Policy) -> str:
    """``policy:<name>`` of a callable policy member, for records and the summary."""
    return f"policy:{getattr(policy, '__qualname__', type(policy).__name__)}"


def member_specs(specs: str | Policy | list[str | Policy], num_agents: int
                 ) -> list[str | Policy]:
    """One member spec per agent: one spec for all, or a comma list / list per agent
    (a list may hold callable policies beside spec strings).

    Raises:
        UserError: Neither one spec nor one per agent.
    """
    if isinstance(specs, str):
        specs = [s.strip() for s in specs.split(",")]
    elif callable(specs):
        specs = [specs]
    if len(specs) == 1:
        specs = specs * num_agents
    if len(specs) != num_agents:
        raise UserError(f"got {len(specs)} member specs for {num_agents} agents; give one "
                        "spec for all or one per agent")
    return list(specs)


def build_team(specs: str | list[str], num_agents: int, organization: Organization,
               seed: int | None = None, cache: str | Path | None = None,
               env: HighLevelEnv | None = None, pool: BackendPool | None = None,
               resolved: ResolvedOrganization | None = None,
               **llm_kwargs: Any) -> dict[str, Any]:
    """Members for ``agent_0..agent_{n-1}``: one spec for all, or a comma list / list per agent.

    ``env``: where human members answer; ``pool``: owns LLM members' backends;
    ``resolved``: ``organization`` already resolved for the team (else it is resolved
    here); ``llm_kwargs``: for LLM members (see :func:`build_member`)."""
    specs = member_specs(specs, num_agents)
    if pool is not None:
        pool.expect_local_members(sum(parse_member_spec(s)[0] == "local" for s in specs
                                      if isinstance(s, str)))
    team = Team.of_size(num_agents)
    resolved = resolved if resolved is not None else organization.resolve(team)
    top = set(resolved.tiers[0][1]) if len(resolved.tiers) > 1 else set()
    # Planners follow the organization's rules, given with every decision (ctx.rules).
    return {a: build_member(a, s, leader=a in top, seed=seed, cache=cache, env=env,
                            pool=pool, **llm_kwargs)
            for a, s in zip(team, specs)}


def check_substitutes(shocks: list[Shock], pool: BackendPool,
                      cache: str | Path | None = None) -> None:
    """Check every substitute shock's member spec now, and make an LLM substitute's
    backend (the pool keeps it for the shock's round): a bad spec or a missing extra
    fails before anything runs, not after the rounds before the shock were played.

    Raises:
        UserError: ``substitute shock '<shock>': <what is wrong>``.
    """
    for shock in shocks:
        if shock.kind != "substitute" or not isinstance(shock.member, str):
            continue
        try:
            kind, _ = parse_member_spec(shock.member)
            if kind in LLM_MEMBER_KINDS:
                pool.get(shock.member, cache)
        except UserError as exc:
            raise type(exc)(f"substitute shock {shock.text()!r}: {exc}") from None


def _folder_part(name: str) -> str:
    """A task or organization as part of one folder name: a YAML path's stem, and only
    letters, digits, ``_``, ``-`` and ``.`` (a path's ``/`` or ``..`` would leave ``runs/``)."""
    if name.endswith((".yaml", ".yml")):
        name = Path(name).stem
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "x"


def default_log_path(task: str, organization: str, seed: int | None, root: str | Path = "runs"
                     ) -> Path:
    """``runs/<time>_<task>_<organization>_s<seed>/episode.jsonl``: one new folder under
    ``root``, whatever the task and organization are called."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    part = f"{stamp}_{_folder_part(task)}_{_folder_part(organization)}_s{seed}"
    return Path(root) / part / "episode.jsonl"


def run_episode(config: EpisodeConfig | None = None, *, pool: BackendPool | None = None,
                on_round: Callable[[int, list[dict]], object] | None = None,
                should_stop: Callable[[], str | None] | None = None,
                on_tick: Callable[[int, int], object] | None = None,
                **overrides: Any) -> EpisodeResult:
    """Play one episode of a team under an organization and return its summary and log.

    ``run_episode(config)``, ``run_episode(config, seed=3)`` (a copy with that change) or
    ``run_episode(task=..., backend=...)``: the keywords are :class:`EpisodeConfig`'s
    fields (``task``, ``layout``, ``organization``, ``agents``, ``backend``, ``seed``,
    ``max_rounds``, ``max_ticks``, ``render``, ``video``, ``fps``, ``scale``, ``hold``,
    ``log_path``, ``shocks``, ``monitor``, ``cache``, ``max_transport_failures``,
    ``max_invalid_replies``, ``temperature``, ``prompts``, ``render_options``), checked
    once before anything is built; a bad value is one :class:`UserError` line
    (``max_rounds must be from 1 to 10000, got 0``).

    Some of them:
        backend: One member spec for every agent, a comma list, or a list per agent;
            a list may hold callable policies ``policy(observation, action_mask) ->
            action`` beside the specs (see :func:`build_member`).
        render: ``"human"`` for a live window, None for none. Closing the window stops
            the episode (``episode_status`` ``"interrupted"``, ``stop_reason``
            ``"window closed"``); Space pauses, N steps, +/- change the speed.
        video: Record an MP4/GIF of every tick to this path (frames with new speech
            and the last frame are held, see :class:`~orgteams.envs.render.video.EpisodeVideo`).
        log_path: JSONL episode log; ``"auto"`` puts it under ``runs/``; None keeps it in memory.
        shocks: :class:`Shock` objects or CLI strings (``remove:agent_1@5``).
        monitor: Capability-threshold monitor: True for defaults, or a MonitorConfig.
        max_transport_failures: Stop the episode (``episode_status: "error"``) after this
            many model calls in a row failed after their retries; None or 0 never stops.
        max_invalid_replies: Stop the episode (``episode_status: "error"``) after this
            many model calls in a row gave no valid reply; None or 0 never stops.
        temperature: Sampling temperature of every LLM member (0.0 greedy; the
            self-organizing paper used 0.7). Recorded in the summary's ``llm_settings``.
        prompts: Prompt variant of LLM members, ``default`` or ``compact``; None: per
            backend (``local`` gets ``compact``).
        fps: Ticks per second of the window and the video (default the env's, 10).
        scale: Size factor of the window (its first size) and of the video frames.
        hold: With a window, keep the last frame up until the person closes it (Q) or
            replays it (R).
        max_cost: Stop the episode (``episode_status`` ``"interrupted"``,
            ``stop_reason`` ``"max cost"``) once its model calls' spend reaches this
            many USD (see :mod:`~orgteams.agents.backends.spend`).
        price_per_mtok: USD per 1 million prompt and completion tokens of the
            ``openai:`` models (``"IN,OUT"``), instead of the price table.

    Args:
        config: The episode; None: the defaults (with ``overrides``).
        pool: The LLM members' backends; None: the episode makes its own and closes it
            (a local model server stops with it). Give one to share across episodes.
            A pool with a :class:`~orgteams.agents.backends.spend.Spend` meters the calls,
            and the episode stops when that spend reaches its budget: the pool's
            ``Spend`` then governs, not ``max_cost`` and ``price_per_mtok`` (which, with
            a pool without one, are a ``ValueError``).
        on_round: Called as ``on_round(round, records)`` after every round (live output).
        should_stop: Asked at round and tick boundaries; a reason stops the episode.
        on_tick: Called as ``on_tick(tick, tick_limit)`` after every tick (progress bars).
        overrides: Fields of ``config`` to change.

    Raises:
        UserError: A bad value, name or spec, in one line; ``max_cost`` with a model
            that has no price.
        TypeError: A keyword that is no field.
    """
    config = EpisodeConfig.merged(config, overrides, "run_episode")
    own_pool = pool is None
    priced = config.max_cost is not None or config.price_per_mtok is not None
    if own_pool:
        from orgteams.agents.backends.spend import Spend

        if config.max_cost is not None:
            check_budget(config)
        pool = BackendPool(spend=Spend(config.max_cost, price=config.price_per_mtok)
                           if priced else None)
    elif priced and pool.spend is None:
        raise ValueError("max_cost and price_per_mtok meter the episode's own pool; give "
                         "the pool a Spend instead (BackendPool(spend=Spend(max_cost)))")
    try:
        return _run_episode(config, pool, on_round, should_stop, on_tick)
    finally:
        if own_pool:
            pool.close()


def check_budget(config: EpisodeConfig, flag: str = "max_cost") -> None:
    """An episode's ``max_cost`` can be kept: every model its members (substitutes too)
    call has a price.

    Raises:
        UserError: ``max_cost: no price for model 'x' (openai:x); ...``.
    """
    from orgteams.agents.backends.spend import check_priced, run_models

    # callable policies call no model
    specs = [s for s in member_specs(config.backend, config.agents) if isinstance(s, str)]
    specs += [s.member for s in config.shocks
              if s.kind == "substitute" and isinstance(s.member, str)]
    check_priced(run_models(specs), config.price_per_mtok, config.max_cost, flag)


def _run_episode(config: EpisodeConfig, pool: BackendPool, on_round, should_stop, on_tick
                 ) -> EpisodeResult:
    org = config.organization
    org = org if isinstance(org, Organization) else load_organization(org)
    check_substitutes(list(config.shocks), pool, config.cache)
    env = _make_env(config, org)
    llm = {"temperature": config.temperature, "prompts": config.prompts}
    resolved = org.resolve(Team.of_size(config.agents))  # once: the members and the runner
    members = build_team(config.backend, config.agents, org, seed=config.seed,
                         cache=config.cache, env=env, pool=pool, resolved=resolved, **llm)
    log_path = config.log_path
    if log_path == "auto":
        log_path = default_log_path(config.task, org.name, config.seed)
    recorder = None
    if config.video:
        from orgteams.envs.render.video import EpisodeVideo

        recorder = EpisodeVideo(config.video, env, fps=env.render_fps, scale=config.scale)
    runner = TeamRunner(
        env, org, members, max_rounds=config.max_rounds, log_path=log_path,
        shocks=list(config.shocks), monitor=config.monitor,
        member_factory=lambda a, spec: build_member(a, spec, cache=config.cache, env=env,
                                                    pool=pool, **llm),
        on_round=on_round, on_tick=_tick_hook(env, recorder, on_tick, config.max_ticks),
        max_transport_failures=config.max_transport_failures or None,
        should_stop=_stopper(env, config.render, should_stop, pool.spend),
        tokenizer=pool.tokenizer,
        max_invalid_replies=config.max_invalid_replies or None, resolved=resolved)
    return _play(runner, config, env, recorder, log_path)


def _make_env(config: EpisodeConfig, org: Organization) -> HighLevelEnv:
    """The episode's env: a window (``render``) or frames for the video, titled."""
    render_mode = config.render or ("rgb_array" if config.video else None)
    options = {"title": f"orgteams: {org.name} - {config.task} on {config.layout}",
               "scale": config.scale, **(config.render_options or {})}
    env = HighLevelEnv(layout=config.layout, task=config.task, num_agents=config.agents,
                       render_mode=render_mode, max_ticks=config.max_ticks,
                       render_options=options, render_fps=config.fps)
    env.overlay.set_team(organization=org.name)
    return env


def _tick_hook(env: HighLevelEnv, recorder: Any, on_tick: Callable[[int, int], object] | None,
               max_ticks: int | None) -> Callable[..., None] | None:
    """After every tick: the video's frame, then the caller's ``on_tick(tick, limit)``."""
    if recorder is None and on_tick is None:
        return None

    def tick_hook(*_: Any) -> None:
        if recorder is not None:
            recorder.tick()
        if on_tick is not None:
            world = env.world
            on_tick(world.tick, max_ticks or world.scene.step_limit)
    return tick_hook


def _stopper(env: HighLevelEnv, render: str | None,
             should_stop: Callable[[], str | None] | None, spend: Any = None
             ) -> Callable[[], str | None]:
    """Why to stop now: the window was closed, the pool's spend reached its budget
    (``max cost``), or the caller's ``should_stop`` says so."""
    def stop() -> str | None:
        if render == "human":
            from orgteams.envs.render.renderer import window_closed

            if window_closed(env):
                return "window closed"
        if spend is not None and spend.reached():
            return spend.stop_reason()
        return should_stop() if should_stop is not None else None
    return stop


def _play(runner: TeamRunner, config: EpisodeConfig, env: HighLevelEnv, recorder: Any,
          log_path: str | Path | None) -> EpisodeResult:
    """Run the rounds; end the video, hold the window, close the env whatever happens."""
    try:
        result = runner.run(config.seed)
        if recorder is not None:
            recorder.end()
        if config.render == "human" and config.hold:
            try:
                _hold_window(env, result)
            except KeyboardInterrupt:
                # The episode is over and logged: Ctrl-C at its held last frame (or its
                # replay) closes the window, as Q does, not an "interrupted" run.
                pass
    except KeyboardInterrupt as exc:
        exc.log_path = log_path  # the CLI's "interrupted" line names what was kept
        raise
    finally:
        if recorder is not None:
            result_frames = recorder.close()
        env.close()
    if recorder is not None:
        result.summary = replace(result.summary,
                                 video={"path": str(config.video), "frames": result_frames})
    return result


def end_banner(summary: EpisodeSummary, can_replay: bool) -> list[str]:
    """The lines shown over the last frame of an episode in the window."""
    if summary.episode_status in ("interrupted", "error"):
        how = f"stopped ({summary.stop_reason})"
    else:
        how = "goal complete" if summary.success else "goal not met"
    from orgteams.envs.render.boxes import end_banner as banner

    return banner(how, summary.ticks, summary.step_limit, summary.units_done,
                  summary.units_total, summary.rounds,
                  "Q to close, R to replay" if can_replay else "Q to close")


def _hold_window(env: HighLevelEnv, result: EpisodeResult) -> None:
    """The last frame stays up until Q; R replays the logged episode in the same window."""
    from orgteams.envs.render.renderer import window_renderer

    renderer = window_renderer(env)
    if renderer is None or renderer.closed:
        return
    can_replay = result.log_path is not None
    choice = renderer.hold(env.world, env.overlay, env.display_names,
                           end_banner(result.summary, can_replay), can_replay)
    if choice == "replay":
        from orgteams.replay import replay

        replay(result.log_path, render="human", renderer=renderer)
