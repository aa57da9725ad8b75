"""The orgteams subcommands: what ``orgteams run``, ``play``, ``reflect``... do.

:mod:`orgteams.cli.main` builds the parser and calls these; each returns the exit code.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the commands import what they run when they run
    from orgteams.agents.records import DecisionLine
    from orgteams.organizations.rounds.episode_log import EventLine
    from orgteams.organizations.rounds.episode_summary import EpisodeSummary


def _check_out(path: str | None) -> None:
    """An output folder (``--out``) that is a file, or under one, is one line before
    anything runs (it was a FileExistsError or NotADirectoryError traceback)."""
    from pathlib import Path

    from orgteams.errors import UserError

    if path is None:
        return
    out = Path(path)
    blocking = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise UserError(f"{out}: --out must be a folder, but {blocking} is a file")


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, default=str))


def _round_printer(names: dict[str, str] | None = None):
    """A live one-line-per-event printer for ``orgteams run`` (stderr, so --json stays clean).

    Agents appear by display name (``names``: agent id -> name; default the runner's
    Alice, Bob...), as in the window and the prompts; ids stay in the log.
    """

    from orgteams.agents.records import ActionLine, MessageLine
    from orgteams.agents.team import Team
    from orgteams.organizations.rounds.episode_log import EventLine

    @functools.cache
    def name(agent: str) -> str:
        if names is not None:
            return names.get(agent, agent)
        return Team.of([agent]).names[0]  # the default name scheme (agent_1 is Bob)

    def show(round_: int, records: list[DecisionLine | EventLine]) -> None:
        for r in records:
            if isinstance(r, MessageLine) and r.message is not None and r.message.text:
                to = ", ".join(map(name, r.message.delivered or [])) or "nobody"
                text = r.message.text
                if r.message.kind == "assign":  # "Bob: explore kitchen", to Bob
                    text = text.removeprefix(f"{to}: ")
                print(f"  r{round_:<3} {name(r.agent)} -> {to}: {text[:100]}", file=sys.stderr)
            elif isinstance(r, ActionLine):
                fallback = r.call.fallback
                extra = f"  [fallback: {fallback}]" if fallback else ""
                print(f"  r{round_:<3} {name(r.agent)} does {r.action} "
                      f"({r.status}, tick {r.tick}){extra}", file=sys.stderr)
            elif isinstance(r, EventLine):
                print(f"  r{round_:<3} event {r.type}: "
                      f"{ {'round': r.round, 'tick': r.tick, **r.data} }", file=sys.stderr)
    return show


SUMMARY_ROWS = ("episode_status", "stop_reason", "stop_detail", "success", "ticks", "rounds",
                "units_done", "units_total",
                "message_tokens_sent", "message_tokens_delivered", "comm_tokens_per_step",
                "delivered_tokens_per_step", "llm_prompt_tokens", "llm_completion_tokens",
                "cost_usd", "fallback_count", "fallback_rate", "abstention_rate",
                "duplicate_rate",
                "hierarchy_depth", "algebraic_connectivity", "spectral_gap", "election_count",
                "self_vote_rate", "leader_tenure",
                "tokenizer", "tokens_approximate", "wall_seconds", "log_path")


def _print_summary(summary: EpisodeSummary) -> None:
    try:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"{summary.task} on {summary.layout}, "
                            f"{summary.organization} ({summary.num_agents} agents)")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for k in SUMMARY_ROWS:
            v = getattr(summary, k)
            table.add_row(k, f"{v:.3f}" if isinstance(v, float) else str(v))
        Console().print(table)
    except ImportError:  # rich is in the report extra
        for k in SUMMARY_ROWS:
            print(f"{k:>26}: {getattr(summary, k)}")


def cmd_run(args: argparse.Namespace) -> int:
    from orgteams.run import run_episode

    result = run_episode(
        task=args.task, layout=args.layout, organization=args.org, agents=args.agents,
        backend=args.backend, seed=args.seed, max_rounds=args.max_rounds,
        max_ticks=args.max_ticks, render=args.render, video=args.video,
        log_path=args.log or "auto", shocks=args.shock, monitor=args.monitor or None,
        cache=args.cache, on_round=None if args.quiet else _round_printer(),
        max_transport_failures=_failure_limit(args),
        max_invalid_replies=args.max_invalid_replies or None,
        temperature=args.temperature, prompts=args.prompts, fps=args.fps, scale=args.scale)
    summary = result.summary
    # never met silently (stderr, so --json stays clean)
    for line in [*summary.warnings, summary.tokens_approximate]:
        if line:
            print(f"warning: {line}", file=sys.stderr)
    if args.json:
        _print_json(summary.to_dict())
    else:
        _print_summary(summary)
        for e in summary.successions:
            print(f"round {e.round}: {e.get('successor')} took {e.get('agent')}'s seat "
                  f"({e.get('role')}, succession {e.get('rule')})")
        if result.log_path is not None:  # the table cuts long paths
            print(f"log: {result.log_path}\nreplay it: orgteams replay {result.log_path}")
    status = summary.episode_status or "complete"
    if status == "interrupted":  # e.g. the window was closed
        partial = f"; partial log {result.log_path}" if result.log_path else ""
        print(f"stopped at round {summary.rounds} ({summary.stop_reason}){partial}",
              file=sys.stderr)
        return 1
    if status != "complete":
        from orgteams.organizations.rounds.status import why_stopped

        print(f"orgteams run: episode stopped ({status}): {why_stopped(summary)}",
              file=sys.stderr)
        return 1
    return 0


def _failure_limit(args: argparse.Namespace) -> int | None:
    """--max-transport-failures N; 0 means never stop (so does --max-invalid-replies 0)."""
    return args.max_transport_failures or None


def cmd_play(args: argparse.Namespace) -> int:
    from orgteams.play.teammates import play_with

    out = play_with(args.others, layout=args.layout, task=args.task, num_agents=args.agents,
                    human_agent=args.agent, seed=args.seed, fps=args.fps, cache=args.cache,
                    talk=not args.silent, scale=args.scale, log_path=args.log,
                    organization=args.org)
    if args.json:
        _print_json(out)
    else:
        done = "goal complete" if out["success"] else "goal not met"
        said = (f", teammates said {out['teammate_messages']} message(s), you said "
                f"{out['player_messages']}" if "teammate_messages" in out else "")
        logs = f"; log {', '.join(out['logs'])}" if out.get("logs") else ""
        org = (f" under {out['organization']} (you: {args.agent}, "
               f"{out['player_role'] or 'no role'})" if out.get("organization") else "")
        print(f"played {out['ticks']} tick(s) of seed {out['seed']}{org}: {done}{said}{logs}")
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from orgteams.cli.progress import Progress
    from orgteams.envs.render.video import check_video_path
    from orgteams.run import run_episode

    check_video_path(args.out, images=True)  # before a whole episode is played
    bar = Progress(1, f"recording {args.out}", enabled=not (args.json or args.quiet))
    result = run_episode(
        task=args.task, layout=args.layout, organization=args.org, agents=args.agents,
        backend=args.backend, seed=args.seed, max_rounds=args.max_rounds,
        max_ticks=args.max_ticks, video=args.out, log_path=None, cache=args.cache,
        fps=args.fps, scale=args.scale,
        on_tick=lambda tick, limit: bar.update(tick, f"tick {tick}", total=limit))
    bar.close()
    summary = result.summary
    out = {"path": args.out, "frames": summary.video["frames"], "ticks": summary.ticks,
           "success": summary.success, "organization": summary.organization}
    if args.json:
        _print_json(out)
    else:
        done = "goal complete" if out["success"] else "goal not met"
        print(f"wrote {out['frames']} frame(s) to {args.out}: {out['ticks']} ticks, {done}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from orgteams.replay import replay

    render = None if (args.no_window or args.video) and not args.window else "human"
    result = replay(args.log, render=render, video=args.video, fps=args.fps,
                    render_options={"scale": args.scale})
    if args.json:
        _print_json(asdict(result))
    else:
        verdict = {True: "matches the log", False: "does NOT match the log",
                   None: "not checked"}[result.matches]
        print(f"replayed {result.ticks} ticks: {'success' if result.success else 'goal not met'}"
              f", {verdict}" + (f"; {result.frames} frames to {args.video}" if args.video else ""))
        if result.problem:
            print(f"  {result.problem}", file=sys.stderr)
    return 1 if result.matches is False else 0


def cmd_demos(args: argparse.Namespace) -> int:
    from orgteams.experiments.demos import collect_demos

    _check_out(args.out)
    out = collect_demos(args.layout, args.task, args.agents, range(args.seeds), args.out)
    if args.json:
        _print_json(out)
    else:
        wins = sum(r["success"] for r in out)
        for r in out:
            print(f"seed {r['seed']}: {r['ticks']} ticks, "
                  f"{'success' if r['success'] else 'goal not met'} -> {r['file']}")
        print(f"{len(out)} demonstration(s), {wins} successful, in {args.out}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from orgteams.envs import list_layouts, list_tasks
    from orgteams.organizations import list_organizations

    what = {"layouts": list_layouts() + ["generated:<rooms>:<seed>"], "tasks": list_tasks(),
            "organizations": list_organizations()}
    chosen = {args.what: what[args.what]} if args.what else what
    if args.json:
        _print_json(chosen)
    else:
        for k, v in chosen.items():
            print(f"{k}: {', '.join(v)}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from orgteams.experiments.sweep import SweepSpec, run_sweep, spec_from_lists

    _check_out(args.out)
    base = SweepSpec.from_yaml(args.spec) if args.spec else None
    spec = spec_from_lists(base, tasks=args.tasks, layouts=args.layouts,
                           organizations=args.orgs, agents=args.agents,
                           backends=args.backend, seeds=args.seeds,
                           max_rounds=args.max_rounds, max_ticks=args.max_ticks,
                           cache=args.cache,
                           max_transport_failures=args.max_transport_failures,
                           max_invalid_replies=args.max_invalid_replies)
    out = run_sweep(spec, args.out, workers=args.workers, ray=args.ray, progress=not args.quiet)
    if args.json:
        _print_json(out)
    else:
        print(f"{out['ran']} episodes run ({out['ok']} ok, {out['errors']} failed), "
              f"{out['skipped']} already done; results in {out['results']}")
    if out["errors"]:  # the rows are kept (error rows are retried by a rerun)
        print(f"orgteams sweep: {out['errors']} of {out['ran']} episodes failed (status "
              f"error in {out['results']}; rerun the same command to retry them)",
              file=sys.stderr)
        return 1
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from orgteams.experiments.report import report

    out = report(args.results, args.out, baseline=args.baseline, progress=not args.json)
    if args.json:
        _print_json(out)
    else:
        print(f"{len(out['groups'])} groups from {out['cells']} cells; wrote "
              f"{out['files']['markdown']}, {out['files']['json']} and "
              f"{len(out['files'].get('plots', []))} plots")
    return 0


def cmd_experiment(args: argparse.Namespace) -> int:
    from orgteams.experiments.recipes import list_experiments, run_experiment

    if args.list or not args.name:
        for name, description in list_experiments():
            print(f"{name}: {description}")
        return 0
    _check_out(args.out)
    table = run_experiment(args.name, backend=args.backend, seeds=args.seeds, out=args.out,
                           progress=not args.no_progress)
    out = args.out or f"runs/experiments/{args.name}"
    print(f"{args.name}: {len(table['rows'])} rows; table {out}/table.md, spec {out}/spec.yaml")
    return 0


def cmd_reflect(args: argparse.Namespace) -> int:
    from orgteams.cli.progress import Progress
    from orgteams.criticize_reflect.loop import EpisodeFailed
    from orgteams.experiments.reflect import HEURISTIC_EPISODES, run_reflect

    if args.episodes_per_iteration is None:
        args.episodes_per_iteration = (HEURISTIC_EPISODES if args.coordinator == "heuristic"
                                       else 1)
    seeds = args.seeds or list(range(args.seed, args.seed + args.episodes_per_iteration))
    out_dir = args.out or f"runs/reflect_{args.org.replace('/', '_')}_{args.task}"
    _check_out(out_dir)
    if args.evaluate is not None:
        from orgteams.experiments.reflect_eval import evaluate_reflect, format_evaluation

        report = evaluate_reflect(out_dir, seeds=args.evaluate, tasks=args.eval_tasks,
                                  layouts=args.eval_layouts, progress=not args.json)
        _print_json(report) if args.json else print(format_evaluation(report))
        return 0
    bar = Progress(args.iterations, "reflect", enabled=not args.json)

    def progress(iteration: int, tick: int, limit: int) -> None:
        bar.update(iteration, f"iteration {iteration + 1}/{args.iterations}: "
                              f"tick {tick}/{limit}")

    try:
        result = _reflect(run_reflect, args, seeds, out_dir, progress)
    except EpisodeFailed as exc:  # recorded on disk; not bad input, not a bug
        print(f"orgteams reflect: stopped: {exc}", file=sys.stderr)
        return 1
    finally:
        bar.close()
    out = result.to_dict()
    if args.json:
        _print_json(out)
    else:
        for h in out["history"]:
            print(f"iteration {h['iteration']}: {h['organization']} cost {h['cost']:.2f} "
                  f"(ticks {h['ticks']}, tokens/step {h['comm_tokens_per_step']:.2f})"
                  + (f" -> {h['next_organization']}" if h["next_organization"] else ""))
        best = out["best"]
        print(f"best: {best['organization']} (iteration {best['iteration']}, cost "
              f"{best['cost']:.2f}) saved to {best['path']}")
    failed = result.coordinator_failure()
    if failed:  # the loop never revised the organization: not a result
        print(f"orgteams reflect: {failed}", file=sys.stderr)
        return 1
    return 0


def _reflect(run_reflect, args: argparse.Namespace, seeds: list[int], out_dir: str,
             on_progress=None):
    return run_reflect(
        args.org, task=args.task, layout=args.layout, agents=args.agents, backend=args.backend,
        seeds=seeds, critic=args.critic, coordinator=args.coordinator,
        iterations=args.iterations, out_dir=out_dir, candidates=args.candidates,
        step_weight=args.step_weight, token_weight=args.token_weight,
        use_critic=not args.no_critic, approved=args.approved, max_rounds=args.max_rounds,
        max_ticks=args.max_ticks, cache=args.cache,
        max_transport_failures=_failure_limit(args),
        max_invalid_replies=args.max_invalid_replies or None,
        episodes_per_iteration=args.episodes_per_iteration, failure_penalty=args.failure_penalty,
        screen_candidates=args.screen, on_progress=on_progress)
