"""The orgteams command line: run, play, replay, record, demos, reflect, experiment, list,
sweep, report.

Every command that produces results accepts ``--json`` and then prints exactly one
JSON object on stdout (the episode summary for ``run``), so scripts can consume it.
"""

from __future__ import annotations

import argparse
import math
import sys
import traceback

from orgteams.cli.commands import (
    cmd_demos,
    cmd_experiment,
    cmd_list,
    cmd_play,
    cmd_record,
    cmd_reflect,
    cmd_replay,
    cmd_report,
    cmd_run,
    cmd_sweep,
)
from orgteams.cli.options import positive, subcommand, view_options
from orgteams.envs.core.limits import MAX_AGENTS, MAX_ROUNDS, MAX_SEED, MAX_TICKS
from orgteams.errors import UserError


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


def _name_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one name")
    return names


def _add_failure_limit(p: argparse.ArgumentParser, spec_default: bool = False) -> None:
    from orgteams.organizations.rounds.status import (
        DEFAULT_MAX_INVALID_REPLIES,
        DEFAULT_MAX_TRANSPORT_FAILURES,
    )

    p.add_argument("--max-transport-failures", type=int, metavar="N",
                   default=None if spec_default else DEFAULT_MAX_TRANSPORT_FAILURES,
                   help="stop an episode with status error after N model calls in a row "
                        f"failed after retries (default {DEFAULT_MAX_TRANSPORT_FAILURES}; "
                        "0: never)")
    p.add_argument("--max-invalid-replies", type=_int_in(0, 1000), metavar="N",
                   default=None if spec_default else DEFAULT_MAX_INVALID_REPLIES,
                   help="stop an episode with status error after N model calls in a row "
                        f"gave no valid reply (default {DEFAULT_MAX_INVALID_REPLIES}; "
                        "0: never)")


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
    parser = _Parser(prog="orgteams")
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
                   help="remove:agent_1@5, substitute:agent_1=planner@5, "
                        "regulate:protocol=shared@5 or priority:put_fridge@5 (repeatable; "
                        "docs/shocks.md)")
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
    p.add_argument("--agent", default="agent_0",
                   help="the agent you play: its id or its name (Alice, Bob, ...)")
    p.add_argument("--fps", type=_int_in(1, 240), default=30, help="window frames per second")
    p.add_argument("--scale", type=positive(float), default=1.0,
                   help="size factor of the window (it can also be resized)")
    p.add_argument("--others", default="random",
                   help="who drives the other agents: random (primitive actions), planner, "
                        "or an LLM member spec: local, openai:<model>, scripted (high-level "
                        "plans; your keys play one tick each)")
    p.add_argument("--org", default=None,
                   help="organization name or YAML path (as orgteams run --org) the teammates "
                        "(planner or LLM) and your agent play under: who hears whom, speaking "
                        "order, roles, rules (default: none, everyone hears everyone)")
    p.add_argument("--cache", default=None, help="SQLite response cache for LLM teammates")
    p.add_argument("--silent", action="store_true",
                   help="LLM teammates act without talking first (half the wait)")
    p.add_argument("--log", default=None,
                   help="write each episode's JSONL log here (teammates' and your messages, "
                        "every tick; orgteams replay reads it); the next episodes (R) go "
                        "beside it as <name>.2.jsonl, ...")
    p.add_argument("--reveal", action="store_true",
                   help="show the whole house; by default the window shows only what your "
                        "agent knows: its room, remembered rooms faded, unseen rooms dark "
                        "(recorded in the log's summary)")
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

    p = subcommand(sub, "experiment", "run a paper experiment by name (--list: all)")
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
    # every command named, from the parser itself (the docstring's list missed one)
    parser.description = f"The orgteams command line: {', '.join(sub.choices)}."
    for p in sub.choices.values():  # --debug also after the command name
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the traceback of bad-input errors too")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; bad input is one line on stderr and exit code 2.

    Only user errors get that treatment: :class:`~orgteams.errors.UserError` (a bad
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
    except KeyboardInterrupt as exc:  # Ctrl-C: one line, the shell's usual status for SIGINT
        print(f"orgteams {args.command}: interrupted (Ctrl-C){_kept(exc)}", file=sys.stderr)
        return 130


def _kept(exc: KeyboardInterrupt) -> str:
    """``; partial log: <path>`` for an episode log the interrupted run left (renamed
    from ``.partial`` when the episode closed it, else still ``.partial``), else ''."""
    from pathlib import Path

    path = getattr(exc, "log_path", None)
    if path is None:
        return ""
    for kept in (Path(path), Path(f"{path}.partial")):
        if kept.is_file():
            return f"; partial log: {kept}"
    return ""


if __name__ == "__main__":
    sys.exit(main())
