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

BUDGET_REACHED = 3
"""Exit status of a run its ``--max-cost`` stopped (finished work kept; rerun with a
higher ``--max-cost`` to go on)."""


def _announce_cost(estimate: Any, spend: Any) -> None:
    """Print a run's cost estimate (stderr), with what its folder spent already and the
    budget."""
    from orgteams.agents.backends.spend import usd

    lines = estimate.lines()
    if spend is not None and spend.ledger is not None and spend.spent:
        lines.append(f"  spent so far: {usd(spend.spent)} ({spend.ledger})")
    if spend is not None and spend.max_cost is not None:
        over = estimate.usd is not None and spend.spent + estimate.usd > spend.max_cost
        lines.append(f"  --max-cost {usd(spend.max_cost)}: the run stops cleanly when the "
                     f"spend reaches it{' (the estimate is above it)' if over else ''}")
    for line in lines:
        print(line, file=sys.stderr)


def _budget_reached(command: str, stop: Any) -> int:
    """The one line of a run its budget stopped; its exit status."""
    print(f"orgteams {command}: {stop.line()}", file=sys.stderr)
    return BUDGET_REACHED


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

    from orgteams.agents.llm.quoting import printable
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
                # model text: escaped, so it cannot drive the terminal (ESC, CR, BEL...)
                print(f"  r{round_:<3} {name(r.agent)} -> {to}: {printable(text[:100])}",
                      file=sys.stderr)
            elif isinstance(r, ActionLine):
                fallback = r.call.fallback
                extra = f"  [fallback: {printable(fallback)}]" if fallback else ""
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
                "hierarchy_depth", "message_reach_depth", "algebraic_connectivity",
                "algebraic_connectivity_binary", "algebraic_connectivity_per_tick",
                "spectral_gap", "election_count",
                "self_vote_rate", "leader_tenure",
                "tokenizer", "tokens_approximate", "wall_seconds", "log_path")


def _print_summary(summary: EpisodeSummary) -> None:
    title = (f"{summary.task} on {summary.layout}, {summary.organization} "
             f"({summary.num_agents} agents)")
    rows = [(k, f"{v:.3f}" if isinstance(v, float) else str(v))
            for k, v in ((k, getattr(summary, k)) for k in SUMMARY_ROWS)]
    try:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        # Text, not str: rich would read "[local]" in "pip install 'orgteams[local]'" (or
        # any bracket in a name or a path) as markup and drop it.
        table = Table(title=Text(title))
        table.add_column("metric")
        table.add_column("value", justify="right")
        for k, v in rows:
            table.add_row(k, Text(v, justify="right"))
        Console().print(table)
    except ImportError:  # rich is in the report extra; the same rows, as plain text
        width = max(len(k) for k, _ in rows)
        print(title)
        for k, v in rows:
            print(f"{k:>{width}}: {v}")


def cmd_run(args: argparse.Namespace) -> int:
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.cli.options import config_from_args
    from orgteams.config import EpisodeConfig
    from orgteams.errors import UserError
    from orgteams.run import run_episode

    config = config_from_args(EpisodeConfig, args)
    if args.json and "human" in {b.strip().partition(":")[0]
                                 for b in str(config.backend).split(",")}:
        # the person's prompts and answers are on stdout too: no longer one JSON object
        raise UserError("argument --json: a human member talks on the terminal (stdout), so "
                        "the output would not be one JSON object; drop --json (the summary "
                        "is the last line of the episode's log)")
    spend = None
    if config.max_cost is not None or config.price_per_mtok is not None:
        from orgteams.agents.backends.spend import Spend
        from orgteams.run import check_budget

        check_budget(config, "--max-cost")
        spend = Spend(config.max_cost, price=config.price_per_mtok)
    with BackendPool(spend=spend) as pool:
        result = run_episode(config=config, pool=pool,
                             on_round=None if args.quiet else _round_printer())
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
    if spend is not None and spend.reached():
        from orgteams.agents.backends.spend import MAX_COST, usd

        if summary.stop_reason == MAX_COST:
            partial = f"; log {result.log_path}" if result.log_path else ""
            print(f"orgteams run: budget reached: spent {usd(spend.spent)} of --max-cost "
                  f"{usd(spend.max_cost)}; the episode stopped at round {summary.rounds}"
                  f"{partial}", file=sys.stderr)
            return BUDGET_REACHED
    if status == "interrupted":  # e.g. the window was closed
        partial = f"; partial log {result.log_path}" if result.log_path else ""
        print(f"stopped at round {summary.rounds} ({summary.stop_reason}){partial}",
              file=sys.stderr)
        return 1
    if status != "complete":
        from orgteams.agents.llm.quoting import printable
        from orgteams.organizations.rounds.status import why_stopped

        print(f"orgteams run: episode stopped ({status}): {printable(why_stopped(summary))}",
              file=sys.stderr)
        return 1
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    from orgteams.play.teammates import play_with

    out = play_with(args.others, layout=args.layout, task=args.task, num_agents=args.agents,
                    human_agent=args.agent, seed=args.seed, fps=args.fps, cache=args.cache,
                    talk=not args.silent, scale=args.scale, log_path=args.log,
                    organization=args.org, reveal=args.reveal)
    if args.json:
        _print_json(out)
    else:
        said = (f", teammates said {out['teammate_messages']} message(s), you said "
                f"{out['player_messages']}" if "teammate_messages" in out else "")
        logs = f"; log {', '.join(out['logs'])}" if out.get("logs") else ""
        you = out.get("player", args.agent)
        if out.get("player_name", you) != you:
            you = f"{out['player_name']}, {you}"
        org = (f" under {out['organization']} (you: {you}, "
               f"{out['player_role'] or 'no role'})" if out.get("organization") else "")
        episodes = out.get("episodes") or [out]
        if len(episodes) == 1:
            played = f"played {out['ticks']} tick(s) of seed {out['seed']}{org}: {_outcome(out)}"
        else:  # every episode played (R), not only the last
            played = f"played {len(episodes)} episodes{org}: " + "; ".join(
                _episode_line(e) for e in episodes)
        print(f"{played}{said}{logs}")
    return 0


def _episode_line(episode: dict) -> str:
    """``seed 1: goal complete in 84 tick(s)`` or ``seed 2: interrupted at tick 12 (quit)``."""
    outcome = _outcome(episode)
    if episode.get("episode_status", "complete") == "complete":
        outcome += f" in {episode['ticks']} tick(s)"
    return f"seed {episode['seed']}: {outcome}"


def cmd_record(args: argparse.Namespace) -> int:
    from orgteams.cli.options import config_from_args
    from orgteams.cli.progress import Progress
    from orgteams.config import EpisodeConfig
    from orgteams.envs.render.video import check_video_path
    from orgteams.run import run_episode

    check_video_path(args.out, images=True)  # before a whole episode is played
    config = config_from_args(EpisodeConfig, args, video=args.out, log_path=None)
    bar = Progress(1, f"recording {args.out}", enabled=not (args.json or args.quiet))
    result = run_episode(
        config=config, on_tick=lambda tick, limit: bar.update(tick, f"tick {tick}", total=limit))
    summary = result.summary
    bar.finish(f"tick {summary.ticks}, {_outcome(summary.to_dict())}")  # full even when
    bar.close()  # it ended early
    out = {"path": args.out, "frames": summary.video["frames"], "ticks": summary.ticks,
           "success": summary.success, "organization": summary.organization}
    if args.json:
        _print_json(out)
    else:
        print(f"wrote {out['frames']} frame(s) to {args.out}: {out['ticks']} ticks, "
              f"{_outcome(summary.to_dict())}")
    return 0


def _outcome(summary: dict) -> str:
    """How an episode ended, in words: goal complete, goal not met, or stopped (why), from
    its summary's JSON object (a recorded episode's, or each of ``orgteams play``'s)."""
    status = summary.get("episode_status", "complete")
    if status != "complete":
        return f"{status} at tick {summary['ticks']} ({summary.get('stop_reason')})"
    return "goal complete" if summary["success"] else "goal not met"


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
        video = f"; {result.frames} frames to {args.video}" if args.video else ""
        print(f"replayed {result.ticks} ticks: {result.outcome}, {verdict}{video}")
        if result.problem and not result.stopped:  # a stop is said in the line above
            print(f"  {result.problem}", file=sys.stderr)
    return 1 if result.matches is False else 0


def cmd_demos(args: argparse.Namespace) -> int:
    from orgteams.envs.core.limits import MAX_SEED
    from orgteams.errors import UserError
    from orgteams.experiments.demos import collect_demos

    _check_out(args.out)
    if args.seed + args.seeds - 1 > MAX_SEED:
        raise UserError(f"--seed {args.seed} with --seeds {args.seeds} goes past the last "
                        f"seed, {MAX_SEED}")
    out = collect_demos(args.layout, args.task, args.agents,
                        range(args.seed, args.seed + args.seeds), args.out)
    wins = sum(r["success"] for r in out)
    if args.json:  # one object, as every command's --json (docs/cli.md)
        _print_json({"demonstrations": out, "successful": wins, "out": str(args.out)})
    else:
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
    from pathlib import Path

    from orgteams.agents.backends.spend import BudgetReached
    from orgteams.experiments.estimate import estimate_sweep
    from orgteams.experiments.sweep import SweepSpec, run_sweep, spec_from_lists, sweep_spend
    from orgteams.experiments.sweep_spec import BUDGET_FIELDS, EPISODE_FIELDS

    _check_out(args.out)
    base = SweepSpec.from_yaml(args.spec) if args.spec else None
    episode = {k: getattr(args, k) for k in (*EPISODE_FIELDS, *BUDGET_FIELDS)
               if hasattr(args, k)}
    lists = {"tasks": args.tasks, "layouts": args.layouts, "organizations": args.orgs,
             "agents": args.agents, "backends": args.backend, "seeds": args.seeds}
    spec = spec_from_lists(base, **lists, **episode)
    flag_of = {"tasks": "--tasks", "layouts": "--layouts", "organizations": "--orgs",
               "agents": "--agents", "backends": "--backend", "seeds": "--seeds"}
    spec.validate(source=args.spec or "command line",
                  flags={k: flag_of[k] for k, v in lists.items() if v is not None})
    spend = sweep_spend(spec, Path(args.out))
    if spend is not None:
        _announce_cost(estimate_sweep(spec, args.out), spend)
    out = run_sweep(spec, args.out, workers=args.workers, ray=args.ray, progress=not args.quiet)
    if args.json:
        _print_json(out)
    else:
        print(f"{out['ran']} episodes run ({out['ok']} ok, {out['errors']} failed), "
              f"{out['skipped']} already done; results in {out['results']}")
    if out.get("budget_reached"):
        done = out["skipped"] + out["ok"]
        return _budget_reached("sweep", BudgetReached(
            out["spend"]["spent_usd"], out["spend"]["max_cost"], Path(out["spend"]["ledger"]),
            f"{done} of {out['cells']} episodes"))
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
        if args.json:
            _print_json(dict(list_experiments()))
            return 0
        for name, description in list_experiments():
            print(f"{name}: {description}")
        return 0
    from orgteams.agents.backends.spend import BudgetReached

    _check_out(args.out)
    teams = None
    if args.team:
        from orgteams.errors import UserError

        teams = {}
        for item in args.team:
            arm, sep, composition = item.partition("=")
            if not sep or not arm.strip() or not composition.strip():
                raise UserError(f"--team {item!r}: give NAME=COMPOSITION, e.g. "
                                "mixed='1x openai:gpt-4o + 2x openai:gpt-4o-mini'")
            if arm.strip() in teams:
                raise UserError(f"--team {item!r}: the arm {arm.strip()!r} is given twice")
            teams[arm.strip()] = composition.strip()
    try:
        table = run_experiment(args.name, backend=args.backend, seeds=args.seeds, out=args.out,
                               progress=not (args.no_progress or args.json), teams=teams,
                               max_cost=getattr(args, "max_cost", None),
                               price_per_mtok=getattr(args, "price_per_mtok", None),
                               on_estimate=_announce_cost,
                               max_rounds=getattr(args, "max_rounds", None))
    except BudgetReached as stop:  # what finished is kept in the folder
        return _budget_reached("experiment", stop)
    if args.json:
        _print_json(table)
        return 0
    out = args.out or f"runs/experiments/{args.name}"
    print(f"{args.name}: {len(table['rows'])} rows; table {out}/table.md, spec {out}/spec.yaml")
    return 0


def cmd_reflect(args: argparse.Namespace) -> int:
    from orgteams.agents.backends.spend import BudgetReached
    from orgteams.cli.options import config_from_args
    from orgteams.cli.progress import Progress
    from orgteams.config import ReflectConfig
    from orgteams.criticize_reflect.loop import EpisodeFailed
    from orgteams.experiments.reflect import reflect_spend, run_reflect

    config = _reflect_config(config_from_args(ReflectConfig, args), args)
    _check_out(str(config.out_dir))
    if args.evaluate is not None:
        return _evaluate_reflect(config, args)
    spend = reflect_spend(config)
    if spend is not None:
        from orgteams.criticize_reflect.loop import finished_iterations
        from orgteams.experiments.estimate import estimate_reflect

        start = finished_iterations(config.out_dir)
        _announce_cost(estimate_reflect(config, start=start), spend)
    bar = Progress(config.iterations, "reflect", enabled=not args.json)

    def progress(iteration: int, tick: int, limit: int) -> None:
        bar.update(iteration, f"iteration {iteration + 1}/{config.iterations}: "
                              f"tick {tick}/{limit}")

    try:
        result = run_reflect(config, on_progress=progress, spend=spend)
    except BudgetReached as stop:  # the finished iterations are kept
        return _budget_reached("reflect", stop)
    except EpisodeFailed as exc:  # recorded on disk; not bad input, not a bug
        print(f"orgteams reflect: stopped: {exc}", file=sys.stderr)
        return 1
    finally:
        bar.close()
    _print_reflect(result.to_dict(), args.json)
    failed = result.coordinator_failure()
    if failed:  # the loop never revised the organization: not a result
        print(f"orgteams reflect: {failed}", file=sys.stderr)
        return 1
    return 0


def _evaluate_reflect(config: Any, args: argparse.Namespace) -> int:
    """``reflect --evaluate N``: the held-out comparison of a finished run, its team's
    calls estimated and budgeted as the run's (``--max-cost``: the run folder's ledger)."""
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.agents.backends.spend import BudgetReached
    from orgteams.experiments.reflect_eval import (
        evaluate_reflect,
        evaluation_spend,
        format_evaluation,
    )

    spend = evaluation_spend(config.out_dir, config.max_cost, config.price_per_mtok)
    if spend is not None:
        from orgteams.experiments.estimate import estimate_evaluation

        _announce_cost(estimate_evaluation(config.out_dir, args.evaluate, args.eval_tasks,
                                           args.eval_layouts, config.price_per_mtok), spend)
    # a metered pool only when priced: unpriced episodes keep making their own
    pool = BackendPool(spend=spend) if spend is not None else None
    try:
        report = evaluate_reflect(config.out_dir, seeds=args.evaluate, tasks=args.eval_tasks,
                                  layouts=args.eval_layouts, progress=not args.json,
                                  pool=pool)
    except BudgetReached as stop:  # the finished held-out episodes are kept
        return _budget_reached("reflect", stop)
    finally:
        if pool is not None:
            pool.close()
    _print_json(report) if args.json else print(format_evaluation(report))
    return 0


def _reflect_config(config, args: argparse.Namespace):
    """What the command line derives when not given: E episodes per iteration (from the
    Coordinator), the seeds ``--seed .. --seed + E - 1`` and the output folder."""
    from orgteams.experiments.reflect import HEURISTIC_EPISODES

    derived: dict[str, Any] = {}
    per = config.episodes_per_iteration
    if per is None:
        per = derived["episodes_per_iteration"] = (
            HEURISTIC_EPISODES if config.coordinator == "heuristic" else 1)
    if not hasattr(args, "seeds"):
        derived["seeds"] = list(range(args.seed, args.seed + per))
    if not hasattr(args, "out_dir"):
        derived["out_dir"] = f"runs/reflect_{str(config.organization).replace('/', '_')}_" \
                             f"{config.task}"
    return config.replace(**derived) if derived else config


def _print_reflect(out: dict[str, Any], as_json: bool) -> None:
    if as_json:
        _print_json(out)
        return
    for i, h in enumerate(out["history"]):
        # a stopped loop's last decision kept the organization it played: nothing plays next
        last = out.get("stopped") and i == len(out["history"]) - 1
        # the success rate too: a failed episode costs the step limit, so "cost 576.30
        # (ticks 22.4 ...)" read as a wrong sum
        won = "-" if h.get("success") is None else f"{h['success']:.0%}"
        print(f"iteration {h['iteration']}: {h['organization']} cost {h['cost']:.2f} "
              f"(success {won}, ticks {h['ticks']}, tokens/step "
              f"{h['comm_tokens_per_step']:.2f})"
              + (f" -> {h['next_organization']}" if h["next_organization"] and not last
                 else ""))
    if out.get("stopped"):
        print(out["stopped"])
    best = out["best"]
    print(f"best: {best['organization']} (iteration {best['iteration']}, cost "
          f"{best['cost']:.2f}) saved to {best['path']}")
