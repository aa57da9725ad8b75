"""The orgteams command line: run, play, replay, record, demos, reflect, sweep, report, list.

Every command that produces results accepts ``--json`` and then prints exactly one
JSON object on stdout (the episode summary for ``run``), so scripts can consume it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from orgteams.cli_options import common_options, positive, subcommand, view_options


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, default=str))


def _round_printer(names: dict[str, str] | None = None):
    """A live one-line-per-event printer for ``orgteams run`` (stderr, so --json stays clean)."""
    def show(round_: int, records: list[dict]) -> None:
        for r in records:
            who = r.get("agent", "team")
            if r.get("phase") == "communicate" and r.get("message"):
                to = ", ".join(r.get("delivered") or []) or "nobody"
                print(f"  r{round_:<3} {who} -> {to}: {r['message'][:100]}", file=sys.stderr)
            elif r.get("phase") == "act":
                extra = f"  [fallback: {r['fallback']}]" if r.get("fallback") else ""
                print(f"  r{round_:<3} {who} does {r.get('action')} "
                      f"({r.get('status')}, tick {r.get('tick')}){extra}", file=sys.stderr)
            elif r.get("record") == "event":
                print(f"  r{round_:<3} event {r.get('type')}: "
                      f"{ {k: v for k, v in r.items() if k not in ('record', 'type')} }",
                      file=sys.stderr)
    return show


SUMMARY_ROWS = ("episode_status", "stop_reason", "success", "ticks", "rounds", "units_done",
                "units_total",
                "message_tokens_sent", "message_tokens_delivered", "comm_tokens_per_step",
                "llm_prompt_tokens", "llm_completion_tokens", "cost_usd", "fallback_count",
                "abstention_rate", "duplicate_rate", "hierarchy_depth", "spectral_gap",
                "election_count", "tokenizer", "wall_seconds", "log_path")


def _print_summary(summary: dict) -> None:
    try:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"{summary['task']} on {summary['layout']}, "
                            f"{summary['organization']} ({summary['num_agents']} agents)")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for k in SUMMARY_ROWS:
            v = summary.get(k)
            table.add_row(k, f"{v:.3f}" if isinstance(v, float) else str(v))
        Console().print(table)
    except ImportError:  # rich is in the report extra
        for k in SUMMARY_ROWS:
            print(f"{k:>26}: {summary.get(k)}")


def cmd_run(args: argparse.Namespace) -> int:
    from orgteams.team import run_episode

    result = run_episode(
        task=args.task, layout=args.layout, organization=args.org, agents=args.agents,
        backend=args.backend, seed=args.seed, max_rounds=args.max_rounds,
        max_ticks=args.max_ticks, render=args.render, video=args.video,
        log_path=args.log or "auto", shocks=args.shock, monitor=args.monitor or None,
        cache=args.cache, on_round=None if args.quiet else _round_printer(),
        fps=args.fps, scale=args.scale)
    summary = result.summary
    if summary.get("episode_status") == "interrupted":
        partial = f"; partial log {result.log_path}" if result.log_path else ""
        print(f"stopped at round {summary['rounds']} ({summary['stop_reason']}){partial}",
              file=sys.stderr)
    if args.json:
        _print_json(summary)
    else:
        _print_summary(summary)
        if result.log_path is not None:  # the table cuts long paths
            print(f"log: {result.log_path}\nreplay it: orgteams replay {result.log_path}")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    from orgteams.play_team import play_with

    out = play_with(args.others, layout=args.layout, task=args.task, num_agents=args.agents,
                    human_agent=args.agent, seed=args.seed, fps=args.fps, cache=args.cache,
                    talk=not args.silent, scale=args.scale)
    if args.json:
        _print_json(out)
    else:
        done = "goal complete" if out["success"] else "goal not met"
        said = (f", teammates said {out['teammate_messages']} message(s)"
                if "teammate_messages" in out else "")
        print(f"played {out['ticks']} tick(s) of seed {out['seed']}: {done}{said}")
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from orgteams.envs.video import check_video_path
    from orgteams.progress import Progress
    from orgteams.team import run_episode

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
    out = {"path": args.out, "frames": summary["video"]["frames"], "ticks": summary["ticks"],
           "success": summary["success"], "organization": summary["organization"]}
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
    from orgteams.demos import collect_demos

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
    from orgteams.sweep import SweepSpec, run_sweep, spec_from_lists

    base = SweepSpec.from_yaml(args.spec) if args.spec else None
    spec = spec_from_lists(base, tasks=args.tasks, layouts=args.layouts,
                           organizations=args.orgs, agents=args.agents,
                           backends=args.backend, seeds=args.seeds,
                           max_rounds=args.max_rounds, max_ticks=args.max_ticks,
                           cache=args.cache)
    try:
        out = run_sweep(spec, args.out, workers=args.workers, ray=args.ray,
                        progress=not args.quiet)
    except ImportError as exc:  # --ray without Ray installed
        print(f"orgteams sweep: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        _print_json(out)
    else:
        print(f"{out['ran']} episodes run ({out['ok']} ok, {out['errors']} failed), "
              f"{out['skipped']} already done; results in {out['results']}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from orgteams.report import report

    try:
        out = report(args.results, args.out, baseline=args.baseline)
    except ImportError as exc:  # the report extra is missing
        print(f"orgteams report: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        _print_json(out)
    else:
        print(f"{len(out['groups'])} groups from {out['cells']} cells; wrote "
              f"{out['files']['markdown']}, {out['files']['json']} and "
              f"{len(out['files'].get('plots', []))} plots")
    return 0


def cmd_reflect(args: argparse.Namespace) -> int:
    from orgteams.progress import Progress
    from orgteams.reflect import run_reflect

    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else [args.seed]
    out_dir = args.out or f"runs/reflect_{args.org.replace('/', '_')}_{args.task}"
    bar = Progress(args.iterations, "reflect", enabled=not args.json)

    def progress(iteration: int, tick: int, limit: int) -> None:
        bar.update(iteration, f"iteration {iteration + 1}/{args.iterations}: "
                              f"tick {tick}/{limit}")

    result = run_reflect(
        args.org, task=args.task, layout=args.layout, agents=args.agents, backend=args.backend,
        seeds=seeds, critic=args.critic, coordinator=args.coordinator,
        iterations=args.iterations, out_dir=out_dir, candidates=args.candidates,
        step_weight=args.step_weight, token_weight=args.token_weight,
        use_critic=not args.no_critic, approved=args.approved, max_rounds=args.max_rounds,
        max_ticks=args.max_ticks, cache=args.cache, on_progress=progress)
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
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orgteams", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = subcommand(sub, "run", "play one episode of a team under an organization")
    common_options(p)
    p.add_argument("--org", default="leader", help="organization name or YAML path")
    p.add_argument("--backend", default="local",
                   help="member spec for all agents or a comma list per agent: local, "
                        "openai:<model>, planner, random, human, scripted")
    p.add_argument("--max-rounds", type=int, default=None, help="stop after this many rounds")
    p.add_argument("--max-ticks", type=int, default=None,
                   help="stop after this many ticks (default: the task's step limit)")
    p.add_argument("--render", choices=["human"], default=None,
                   help="live pygame window (Space pause, N next tick, +/- speed, H keys; "
                        "closing it stops the run)")
    p.add_argument("--video", default=None, help="record every tick to this .mp4/.gif")
    view_options(p)
    p.add_argument("--log", default=None, help="JSONL episode log path (default under runs/)")
    p.add_argument("--shock", action="append", default=[],
                   help="remove:agent_1@5 or substitute:agent_1=planner@5 (repeatable)")
    p.add_argument("--monitor", action="store_true",
                   help="capability-threshold monitor: fall back to coordinator when needed")
    p.add_argument("--cache", default=None, help="SQLite response cache for LLM calls")
    p.add_argument("--quiet", action="store_true", help="no live round-by-round output")
    p.set_defaults(func=cmd_run)

    p = subcommand(sub, "play", "control one agent with the keyboard in a window")
    common_options(p)
    p.set_defaults(layout="studio")
    p.add_argument("--agent", default="agent_0", help="the agent you play")
    p.add_argument("--fps", type=positive(int), default=30, help="window frames per second")
    p.add_argument("--scale", type=positive(float), default=1.0,
                   help="size factor of the window (it can also be resized)")
    p.add_argument("--others", default="random",
                   help="who drives the other agents: random (primitive actions), planner, "
                        "or an LLM member spec: local, openai:<model>, scripted (high-level "
                        "plans; your keys play one tick each)")
    p.add_argument("--cache", default=None, help="SQLite response cache for LLM teammates")
    p.add_argument("--silent", action="store_true",
                   help="LLM teammates act without talking first (half the wait)")
    p.set_defaults(func=cmd_play)

    p = subcommand(sub, "replay", "replay an episode from its JSONL log (window, video, or a "
                               "headless check that it reproduces)")
    p.add_argument("log", help="episode log written by orgteams run --log (or a sweep)")
    p.add_argument("--video", default=None, help="write every tick to this .mp4/.gif "
                                                 "(no window unless --window)")
    view_options(p)
    p.add_argument("--no-window", action="store_true",
                   help="no window: only check that the log reproduces")
    p.add_argument("--window", action="store_true", help="a window even with --video")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=cmd_replay)

    p = subcommand(sub, "record", "record a team's episode to MP4/GIF, or its last frame to PNG")
    common_options(p)
    p.add_argument("--out", required=True, help="output file: .mp4, .gif or .png")
    p.add_argument("--org", default="leader", help="organization name or YAML path")
    p.add_argument("--backend", default="planner",
                   help="member spec(s), as for run (planner needs no model)")
    p.add_argument("--max-rounds", type=int, default=None, help="stop after this many rounds")
    p.add_argument("--max-ticks", type=int, default=None,
                   help="stop after this many ticks (default: the task's step limit)")
    p.add_argument("--cache", default=None, help="SQLite response cache for LLM calls")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    view_options(p)
    p.set_defaults(func=cmd_record)

    p = subcommand(sub, "demos", "roll out planner teams and save demonstrations")
    common_options(p)
    p.add_argument("--seeds", type=int, default=10, help="episodes, seeds 0..N-1")
    p.add_argument("--out", required=True, help="folder for the .npz files and index.jsonl")
    p.set_defaults(func=cmd_demos)

    p = subcommand(sub, "reflect", "Criticize-Reflect: improve an organization over episodes")
    common_options(p)
    p.add_argument("--org", default="leader", help="starting organization name or YAML path")
    p.add_argument("--backend", default="local", help="team member spec(s), as for run")
    p.add_argument("--critic", default="local", help="Critic model: local, openai:<model>, "
                   "scripted")
    p.add_argument("--coordinator", default="local", help="Coordinator model spec")
    p.add_argument("--iterations", type=int, default=3, help="episodes in all (resumes count)")
    p.add_argument("--candidates", type=int, default=3, help="K organizations proposed each time")
    p.add_argument("--seeds", default=None, help="comma list of seeds, one per iteration, "
                   "cycled (default: --seed every iteration)")
    p.add_argument("--step-weight", type=float, default=1.0,
                   help="weight of ticks in an organization's cost")
    p.add_argument("--token-weight", type=float, default=1.0,
                   help="weight of communicated tokens per tick in the cost")
    p.add_argument("--no-critic", action="store_true", help="ablation: reflect without Critic")
    p.add_argument("--approved", action="store_true",
                   help="a human approves changes to needs_approval fields")
    p.add_argument("--out", default=None, help="output folder; rerun to resume "
                   "(default runs/reflect_<org>_<task>)")
    p.add_argument("--max-rounds", type=int, default=None,
                   help="stop each episode after this many rounds")
    p.add_argument("--max-ticks", type=int, default=None,
                   help="stop each episode after this many ticks (default: the task's limit)")
    p.add_argument("--cache", default=None, help="SQLite response cache for LLM calls")
    p.set_defaults(func=cmd_reflect)

    p = subcommand(sub, "list", "list layouts, tasks and organizations")
    p.add_argument("what", nargs="?", choices=["layouts", "tasks", "organizations"],
                   help="list only these (default: all three)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=cmd_list)

    p = subcommand(sub, "sweep", "run many episodes in parallel (resumable)")
    p.add_argument("--spec", default=None, help="YAML sweep spec; flags given override it")
    p.add_argument("--tasks", default=None, help="comma list of tasks")
    p.add_argument("--layouts", default=None, help="comma list of layouts")
    p.add_argument("--orgs", default=None, help="comma list of organizations")
    p.add_argument("--agents", default=None, help="comma list of team sizes")
    p.add_argument("--backend", action="append", default=None,
                   help="member spec (as for run; a comma list is one team); repeat the "
                        "flag to sweep over backends")
    p.add_argument("--seeds", default=None,
                   help="a count N (seeds 0..N-1), a comma list, or a range A-B")
    p.add_argument("--max-rounds", type=int, default=None,
                   help="stop each episode after this many rounds")
    p.add_argument("--max-ticks", type=int, default=None,
                   help="stop each episode after this many ticks (default: the task's limit)")
    p.add_argument("--cache", default=None, help="SQLite response cache for LLM calls")
    p.add_argument("--out", required=True, help="folder for results.jsonl and logs/")
    p.add_argument("--workers", type=int, default=None,
                   help="parallel processes (default: 1 with a local backend, else up to 4)")
    p.add_argument("--ray", action="store_true", help='run as Ray tasks (orgteams[ray])')
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=cmd_sweep)

    p = subcommand(sub, "report", "statistics and plots from a sweep's results.jsonl")
    p.add_argument("results", help="results.jsonl written by orgteams sweep")
    p.add_argument("--out", required=True, help="folder for report.md, report.json, PNGs")
    p.add_argument("--baseline", default=None,
                   help="organization to test the others against (default: none, if "
                        "present, else the first)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from orgteams.agents.backends.local import LocalServerError

    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, ImportError, LocalServerError) as exc:
        # Bad input (unknown names, malformed files), a missing extra, or an embedded
        # model server that would not start: one clear line, no traceback.
        print(f"orgteams {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's usual status for SIGINT
        print(f"orgteams {args.command}: interrupted (Ctrl-C)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
