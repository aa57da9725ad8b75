"""The orgteams command line: run, play, replay, record, demos, reflect, sweep, report, list.

Every command that produces results accepts ``--json`` and then prints exactly one
JSON object on stdout (the episode summary for ``run``), so scripts can consume it.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import traceback
from typing import Any

from orgteams.cli_options import positive, subcommand, view_options
from orgteams.envs.errors import UserError
from orgteams.envs.limits import MAX_AGENTS, MAX_ROUNDS, MAX_SEED, MAX_TICKS


class _Parser(argparse.ArgumentParser):
    """Bad options are one line (``orgteams run: error: argument --seed: ...``), exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_in(low: int, high: int):
    """An argparse type: an integer in ``[low, high]``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer from {low} to {high}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {value}")
        return value

    return parse


def _weight(text: str) -> float:
    """An argparse type: a finite number >= 0 (a cost weight)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _seed_list(text: str) -> list[int]:
    """An argparse type: a comma list of seeds (``0,5,7``)."""
    parse = _int_in(0, MAX_SEED)
    seeds = [parse(x.strip()) for x in text.split(",") if x.strip()]
    if not seeds:
        raise argparse.ArgumentTypeError(f"expected a comma list of seeds, got {text!r}")
    return seeds


SEED, AGENTS = _int_in(0, MAX_SEED), _int_in(1, MAX_AGENTS)
ROUNDS, TICKS, COUNT = _int_in(1, MAX_ROUNDS), _int_in(1, MAX_TICKS), _int_in(1, 1_000)


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, default=str))


def _round_printer(names: dict[str, str] | None = None):
    """A live one-line-per-event printer for ``orgteams run`` (stderr, so --json stays clean).

    Agents appear by display name (``names``: agent id -> name; default the runner's
    Alice, Bob...), as in the window and the prompts; ids stay in the log.
    """

    from orgteams.envs.team import Team

    @functools.cache
    def name(agent: str) -> str:
        if names is not None:
            return names.get(agent, agent)
        return Team.of([agent]).names[0]  # the default name scheme (agent_1 is Bob)

    def show(round_: int, records: list[dict]) -> None:
        for r in records:
            who = name(r.get("agent", "team"))
            if r.get("phase") == "communicate" and r.get("message"):
                to = ", ".join(map(name, r.get("delivered") or [])) or "nobody"
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
                "delivered_tokens_per_step", "llm_prompt_tokens", "llm_completion_tokens",
                "cost_usd", "fallback_count", "abstention_rate", "duplicate_rate",
                "hierarchy_depth", "algebraic_connectivity", "spectral_gap", "election_count",
                "tokenizer", "tokens_approximate", "wall_seconds", "log_path")


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
        max_transport_failures=_failure_limit(args),
        temperature=args.temperature, prompts=args.prompts, fps=args.fps, scale=args.scale)
    summary = result.summary
    # never met silently (stderr, so --json stays clean)
    for line in [*summary.get("warnings", []), summary.get("tokens_approximate")]:
        if line:
            print(f"warning: {line}", file=sys.stderr)
    if args.json:
        _print_json(summary)
    else:
        _print_summary(summary)
        if result.log_path is not None:  # the table cuts long paths
            print(f"log: {result.log_path}\nreplay it: orgteams replay {result.log_path}")
    status = summary.get("episode_status", "complete")
    if status == "interrupted":  # e.g. the window was closed
        partial = f"; partial log {result.log_path}" if result.log_path else ""
        print(f"stopped at round {summary['rounds']} ({summary['stop_reason']}){partial}",
              file=sys.stderr)
        return 1
    if status != "complete":
        print(f"orgteams run: episode stopped ({status}): {summary.get('stop_reason')}",
              file=sys.stderr)
        return 1
    return 0


def _failure_limit(args: argparse.Namespace) -> int | None:
    """--max-transport-failures N; 0 means never stop."""
    return args.max_transport_failures or None


def _add_failure_limit(p: argparse.ArgumentParser, spec_default: bool = False) -> None:
    from orgteams.organizations.episode_status import DEFAULT_MAX_TRANSPORT_FAILURES

    p.add_argument("--max-transport-failures", type=int, metavar="N",
                   default=None if spec_default else DEFAULT_MAX_TRANSPORT_FAILURES,
                   help="stop an episode with status error after N model calls in a row "
                        f"failed after retries (default {DEFAULT_MAX_TRANSPORT_FAILURES}; "
                        "0: never)")


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
                           cache=args.cache,
                           max_transport_failures=args.max_transport_failures)
    out = run_sweep(spec, args.out, workers=args.workers, ray=args.ray, progress=not args.quiet)
    if args.json:
        _print_json(out)
    else:
        print(f"{out['ran']} episodes run ({out['ok']} ok, {out['errors']} failed), "
              f"{out['skipped']} already done; results in {out['results']}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from orgteams.report import report

    out = report(args.results, args.out, baseline=args.baseline)
    if args.json:
        _print_json(out)
    else:
        print(f"{len(out['groups'])} groups from {out['cells']} cells; wrote "
              f"{out['files']['markdown']}, {out['files']['json']} and "
              f"{len(out['files'].get('plots', []))} plots")
    return 0


def cmd_experiment(args: argparse.Namespace) -> int:
    from orgteams.experiments import list_experiments, run_experiment

    if args.list or not args.name:
        for name, description in list_experiments():
            print(f"{name}: {description}")
        return 0
    table = run_experiment(args.name, backend=args.backend, seeds=args.seeds, out=args.out,
                           progress=not args.no_progress)
    out = args.out or f"runs/experiments/{args.name}"
    print(f"{args.name}: {len(table['rows'])} rows; table {out}/table.md, spec {out}/spec.yaml")
    return 0


def _name_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one name")
    return names


def cmd_reflect(args: argparse.Namespace) -> int:
    from orgteams.criticize_reflect.loop import EpisodeFailed
    from orgteams.progress import Progress
    from orgteams.reflect import HEURISTIC_EPISODES, run_reflect

    if args.episodes_per_iteration is None:
        args.episodes_per_iteration = (HEURISTIC_EPISODES if args.coordinator == "heuristic"
                                       else 1)
    seeds = args.seeds or list(range(args.seed, args.seed + args.episodes_per_iteration))
    out_dir = args.out or f"runs/reflect_{args.org.replace('/', '_')}_{args.task}"
    if args.evaluate is not None:
        from orgteams.reflect_eval import evaluate_reflect, format_evaluation

        report = evaluate_reflect(out_dir, seeds=args.evaluate, tasks=args.eval_tasks,
                                  layouts=args.eval_layouts)
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
        episodes_per_iteration=args.episodes_per_iteration, failure_penalty=args.failure_penalty,
        screen_candidates=args.screen, on_progress=on_progress)


def _common(p: argparse.ArgumentParser, agents: int = 3) -> None:
    p.add_argument("--task", default="prepare_afternoon_tea",
                   help="task name (orgteams list tasks)")
    p.add_argument("--layout", default="apartment",
                   help="layout name or generated:<rooms>:<seed> (orgteams list layouts)")
    p.add_argument("--agents", type=AGENTS, default=agents, help=f"team size (1 to {MAX_AGENTS})")
    p.add_argument("--seed", type=SEED, default=0, help="episode seed")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 2.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="orgteams", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of bad-input errors too")
    sub = parser.add_subparsers(dest="command", required=True)

    p = subcommand(sub, "run", "play one episode of a team under an organization")
    _common(p)
    p.add_argument("--org", default="leader", help="organization name or YAML path")
    p.add_argument("--backend", default="local",
                   help="member spec for all agents or a comma list per agent: local, "
                        "openai:<model>, planner, random, human, scripted")
    p.add_argument("--max-rounds", type=ROUNDS, default=None, help="stop after this many rounds")
    p.add_argument("--max-ticks", type=TICKS, default=None,
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
    _add_failure_limit(p)
    p.add_argument("--temperature", type=_temperature, default=0.0,
                   help="sampling temperature of LLM members, 0-2 (default 0: greedy; the "
                        "self-organizing paper used 0.7)")
    p.add_argument("--prompts", choices=["default", "compact"], default=None,
                   help="prompt variant of LLM members (default: compact for local, "
                        "default for others)")
    p.set_defaults(func=cmd_run)

    p = subcommand(sub, "play", "control one agent with the keyboard in a window")
    _common(p)
    p.set_defaults(layout="studio")
    p.add_argument("--agent", default="agent_0", help="the agent you play")
    p.add_argument("--fps", type=_int_in(1, 240), default=30, help="window frames per second")
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
    _common(p)
    p.add_argument("--out", required=True, help="output file: .mp4, .gif or .png")
    p.add_argument("--org", default="leader", help="organization name or YAML path")
    p.add_argument("--backend", default="planner",
                   help="member spec(s), as for run (planner needs no model)")
    p.add_argument("--max-rounds", type=ROUNDS, default=None, help="stop after this many rounds")
    p.add_argument("--max-ticks", type=TICKS, default=None,
                   help="stop after this many ticks (default: the task's step limit)")
    p.add_argument("--cache", default=None, help="SQLite response cache for LLM calls")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    view_options(p)
    p.set_defaults(func=cmd_record)

    p = subcommand(sub, "demos", "roll out planner teams and save demonstrations")
    _common(p)
    p.add_argument("--seeds", type=_int_in(1, 100_000), default=10,
                   help="episodes, seeds 0..N-1")
    p.add_argument("--out", required=True, help="folder for the .npz files and index.jsonl")
    p.set_defaults(func=cmd_demos)

    p = subcommand(sub, "reflect", "Criticize-Reflect: improve an organization over episodes")
    _common(p)
    p.add_argument("--org", default="leader", help="starting organization name or YAML path")
    p.add_argument("--backend", default="local", help="team member spec(s), as for run")
    p.add_argument("--critic", default="local", help="Critic: heuristic (rules), local, "
                   "openai:<model>, scripted")
    p.add_argument("--coordinator", default="local",
                   help="Coordinator: heuristic (rules) or a model spec")
    p.add_argument("--iterations", type=COUNT, default=3,
                   help="episodes in all (resumes count)")
    p.add_argument("--candidates", type=COUNT, default=3,
                   help="K organizations proposed each time")
    p.add_argument("--seeds", type=_seed_list, default=None,
                   help="comma list of the loop's seeds, cycled, E per iteration "
                   "(default: --seed .. --seed + E - 1, the same every iteration)")
    p.add_argument("--step-weight", type=_weight, default=1.0,
                   help="weight of ticks in an organization's cost")
    p.add_argument("--token-weight", type=_weight, default=1.0,
                   help="weight of communicated tokens (sent) per tick in the cost")
    p.add_argument("--no-critic", action="store_true", help="ablation: reflect without Critic")
    p.add_argument("--episodes-per-iteration", type=COUNT, default=None,
                   help="seeds each iteration plays (default: 5 with --coordinator "
                   "heuristic, else 1 as in the paper's loop)")
    p.add_argument("--failure-penalty", type=_weight, default=0.0,
                   help="extra cost of a failed episode (it already costs the step limit)")
    p.add_argument("--screen", action=argparse.BooleanOptionalAction, default=None,
                   help="play every valid candidate, keep the cheapest (default: on for "
                   "--coordinator heuristic)")
    p.add_argument("--evaluate", type=COUNT, default=None, metavar="N",
                   help="do not run: compare best.yaml with the start on N held-out seeds")
    p.add_argument("--eval-tasks", type=_name_list, default=None,
                   help="with --evaluate: comma list of tasks (default: the run's)")
    p.add_argument("--eval-layouts", type=_name_list, default=None,
                   help="with --evaluate: comma list of layouts (default: the run's)")
    p.add_argument("--approved", action="store_true",
                   help="a human approves changes to needs_approval fields")
    p.add_argument("--out", default=None, help="output folder; rerun to resume "
                   "(default runs/reflect_<org>_<task>)")
    p.add_argument("--max-rounds", type=ROUNDS, default=None,
                   help="stop each episode after this many rounds")
    p.add_argument("--max-ticks", type=TICKS, default=None,
                   help="stop each episode after this many ticks (default: the task's limit)")
    p.add_argument("--cache", default=None, help="SQLite response cache for LLM calls")
    _add_failure_limit(p)
    p.set_defaults(func=cmd_reflect)

    p = sub.add_parser("experiment", help="run a paper experiment by name (--list: all)")
    p.add_argument("name", nargs="?", help="recipe name (see --list)")
    p.add_argument("--list", action="store_true", help="list the experiments")
    p.add_argument("--backend", default=None, help="member spec replacing the recipe's")
    p.add_argument("--seeds", type=COUNT, default=None, help="seeds per cell (reflect "
                   "recipes: held-out seeds)")
    p.add_argument("--out", default=None, help="output folder (default "
                   "runs/experiments/<name>)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_experiment)

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
    p.add_argument("--max-rounds", type=ROUNDS, default=None,
                   help="stop each episode after this many rounds")
    p.add_argument("--max-ticks", type=TICKS, default=None,
                   help="stop each episode after this many ticks (default: the task's limit)")
    p.add_argument("--cache", default=None, help="SQLite response cache for LLM calls")
    p.add_argument("--out", required=True, help="folder for results.jsonl and logs/")
    p.add_argument("--workers", type=_int_in(1, 256), default=None,
                   help="parallel processes (default: 1 with a local backend, else up to 4)")
    p.add_argument("--ray", action="store_true", help='run as Ray tasks (orgteams[ray])')
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    _add_failure_limit(p, spec_default=True)
    p.set_defaults(func=cmd_sweep)

    p = subcommand(sub, "report", "statistics and plots from a sweep's results.jsonl")
    p.add_argument("results", help="results.jsonl written by orgteams sweep")
    p.add_argument("--out", required=True, help="folder for report.md, report.json, PNGs")
    p.add_argument("--baseline", default=None,
                   help="organization to test the others against (default: none, if "
                        "present, else the first)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=cmd_report)
    for p in sub.choices.values():  # --debug also after the command name
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the traceback of bad-input errors too")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; bad input is one line on stderr and exit code 2.

    Only user errors get that treatment: :class:`~orgteams.envs.errors.UserError` (a bad
    name, file or option; a missing extra for a feature asked for), a missing file, an
    embedded model server that would not start. Anything else is our bug and keeps its
    traceback; ``--debug`` shows the traceback of user errors too.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    from orgteams.agents.backends.local import LocalServerError

    try:
        return args.func(args)
    except (UserError, FileNotFoundError, LocalServerError) as exc:
        if args.debug:
            traceback.print_exc()
        text = " ".join(str(exc).split())  # one line, whatever the message holds
        print(f"orgteams {args.command}: error: {text}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's usual status for SIGINT
        print(f"orgteams {args.command}: interrupted (Ctrl-C)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
