"""The orgteams command line: run, play, replay, record, demos, reflect, experiment, list,
sweep, report.

Every command that produces results accepts ``--json`` and then prints exactly one
JSON object on stdout (the episode summary for ``run``), so scripts can consume it.
"""

from __future__ import annotations

import argparse
import errno
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
from orgteams.cli.options import (
    add_fields,
    argparse_type,
    checked_number,
    subcommand,
    view_options,
)
from orgteams.config import EpisodeConfig, ReflectConfig, check_scale, int_arg, names
from orgteams.errors import UserError


class _Parser(argparse.ArgumentParser):
    """Bad options are one line (``orgteams run: error: argument --seed: ...``), exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_in(low: int, high: int):
    """An argparse type: an integer in ``[low, high]`` (checked as config fields are)."""
    return argparse_type(int_arg(low, high))


COUNT = _int_in(1, 1_000)


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


_WHERE = ["task", "layout", "agents", "seed"]
"""The fields every episode-playing command takes first."""
_BUDGET = {"max_cost": "stop the run cleanly once its model calls' spend (their reported "
                       "usage, priced) reaches USD; the output folder's spend.json keeps "
                       "the spend across reruns: rerun with a higher one to go on"}
"""The help of --max-cost where a command plays many episodes into a folder."""
_EACH_EPISODE = {"max_rounds": "stop each episode after this many rounds",
                 "max_ticks": "stop each episode after this many ticks (default: the task's "
                              "limit)"}
"""The help of the episode limits where a command plays many episodes."""


def _run(sub) -> None:
    p = subcommand(sub, "run", "play one episode of a team under an organization")
    add_fields(p, EpisodeConfig)  # every option of the config, from its fields
    _json(p)
    p.add_argument("--quiet", action="store_true", help="no live round-by-round output")
    p.set_defaults(func=cmd_run)


def _play(sub) -> None:
    p = subcommand(sub, "play", "control one agent with the keyboard in a window")
    add_fields(p, EpisodeConfig, _WHERE, defaults={"layout": "studio"}, given_only=False)
    _json(p)
    p.add_argument("--agent", default="agent_0",
                   help="the agent you play: its id or its name (Alice, Bob, ...)")
    p.add_argument("--fps", type=_int_in(1, 240), default=30, help="window frames per second")
    p.add_argument("--scale", type=checked_number(check_scale), default=1.0,
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


def _replay(sub) -> None:
    p = subcommand(sub, "replay", "replay an episode from its JSONL log (window, video, or a "
                                  "headless check that it reproduces)")
    p.add_argument("log", help="episode log written by orgteams run --log (or a sweep)")
    p.add_argument("--video", default=None, help="write every tick to this .mp4/.gif "
                                                 "(no window unless --window)")
    view_options(p)
    p.add_argument("--no-window", action="store_true",
                   help="no window: only check that the log reproduces")
    p.add_argument("--window", action="store_true", help="a window even with --video")
    _json(p)
    p.set_defaults(func=cmd_replay)


def _record(sub) -> None:
    p = subcommand(sub, "record", "record a team's episode to MP4/GIF, or its last frame to PNG")
    add_fields(p, EpisodeConfig, [*_WHERE, "organization", "backend", "max_rounds",
                                  "max_ticks", "cache", "fps", "scale"],
               help={"backend": "member spec(s), as for run (planner needs no model)"},
               defaults={"backend": "planner"})
    _json(p)
    p.add_argument("--out", required=True, help="output file: .mp4, .gif or .png")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_record)


def _demos(sub) -> None:
    p = subcommand(sub, "demos", "roll out planner teams and save demonstrations")
    add_fields(p, EpisodeConfig, _WHERE, given_only=False,
               help={"seed": "the first episode's seed"})
    _json(p)
    p.add_argument("--seeds", type=_int_in(1, 100_000), default=10,
                   help="episodes: seeds S..S+N-1, S the --seed")
    p.add_argument("--out", required=True, help="folder for the .npz files and index.jsonl")
    p.set_defaults(func=cmd_demos)


def _reflect(sub) -> None:
    p = subcommand(sub, "reflect", "Criticize-Reflect: improve an organization over episodes")
    add_fields(p, ReflectConfig)  # every option of the config, from its fields
    add_fields(p, EpisodeConfig, ["seed"], given_only=False)  # the first of default --seeds
    _json(p)
    p.add_argument("--evaluate", type=COUNT, default=None, metavar="N",
                   help="do not run: compare best.yaml with the start on N held-out seeds")
    p.add_argument("--eval-tasks", type=argparse_type(names), default=None,
                   help="with --evaluate: comma list of tasks (default: the run's)")
    p.add_argument("--eval-layouts", type=argparse_type(names), default=None,
                   help="with --evaluate: comma list of layouts (default: the run's)")
    p.set_defaults(func=cmd_reflect)


def _experiment(sub) -> None:
    p = subcommand(sub, "experiment", "run a paper experiment by name (--list: all)")
    p.add_argument("name", nargs="?", help="recipe name (see --list)")
    p.add_argument("--list", action="store_true", help="list the experiments")
    p.add_argument("--backend", default=None, help="member spec replacing the recipe's "
                   "(paper2-capability: a comma list of backends, each a whole team)")
    p.add_argument("--team", action="append", default=None, metavar="NAME=COMPOSITION",
                   help="an arm's team, e.g. mixed='1x openai:gpt-4o + 2x "
                   "openai:gpt-4o-mini' (repeat for more arms; replaces the recipe's teams)")
    p.add_argument("--seeds", type=COUNT, default=None, help="seeds per cell (reflect "
                   "recipes: held-out seeds)")
    p.add_argument("--out", default=None, help="output folder (default "
                   "runs/experiments/<name>)")
    p.add_argument("--max-rounds", type=COUNT, default=None, metavar="R",
                   help="round cap replacing a sweep recipe's (a short run of a slow "
                        "model; spec.yaml records it)")
    add_fields(p, EpisodeConfig, ["max_cost", "price_per_mtok"], help=_BUDGET)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _json(p)
    p.set_defaults(func=cmd_experiment)


def _list(sub) -> None:
    p = subcommand(sub, "list", "list layouts, tasks and organizations")
    p.add_argument("what", nargs="?", choices=["layouts", "tasks", "organizations"],
                   help="list only these (default: all three)")
    _json(p)
    p.set_defaults(func=cmd_list)


def _sweep(sub) -> None:
    from orgteams.experiments.sweep_spec import SweepSpec

    p = subcommand(sub, "sweep", "run many episodes in parallel (resumable)")
    p.add_argument("--spec", default=None, help="YAML sweep spec; flags given override it")
    # the default is the spec's field, else SweepSpec's (argparse's is None: "not given")
    spec = SweepSpec()

    def listed(field: str) -> str:
        return f"(default: the spec's, else {','.join(map(str, getattr(spec, field)))})"

    p.add_argument("--tasks", default=None, help=f"comma list of tasks {listed('tasks')}")
    p.add_argument("--layouts", default=None, help=f"comma list of layouts {listed('layouts')}")
    p.add_argument("--orgs", default=None,
                   help=f"comma list of organizations {listed('organizations')}")
    p.add_argument("--agents", default=None, help=f"comma list of team sizes {listed('agents')}")
    p.add_argument("--backend", action="append", default=None,
                   help="member spec (as for run; a comma list is one team); repeat the "
                        f"flag to sweep over backends {listed('backends')}")
    p.add_argument("--seeds", default=None,
                   help="a count N (seeds 0..N-1), a comma list, or a range A-B (default: "
                        f"the spec's, else {len(spec.seeds)})")
    # the episode options a sweep spec shares with orgteams run; given ones override the spec
    add_fields(p, EpisodeConfig, [*_EACH_EPISODE, "cache", "max_transport_failures",
                                  "max_invalid_replies", "max_cost", "price_per_mtok"],
               help={**_EACH_EPISODE, **_BUDGET})
    p.add_argument("--out", required=True, help="folder for results.jsonl and logs/")
    p.add_argument("--workers", type=_int_in(1, 256), default=None,
                   help="parallel processes (default: 1 with a local backend, else up to 4)")
    p.add_argument("--ray", action="store_true", help='run as Ray tasks (orgteams[ray])')
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _json(p)
    p.set_defaults(func=cmd_sweep)


def _report(sub) -> None:
    p = subcommand(sub, "report", "statistics and plots from a sweep's results.jsonl")
    p.add_argument("results", help="results.jsonl written by orgteams sweep")
    p.add_argument("--out", required=True, help="folder for report.md, report.json, PNGs")
    p.add_argument("--baseline", default=None,
                   help="organization to test the others against (default: none, if "
                        "present, else the first)")
    _json(p)
    p.set_defaults(func=cmd_report)


COMMANDS = (_run, _play, _replay, _record, _demos, _reflect, _experiment, _list, _sweep,
            _report)
"""The subcommands, in the order ``orgteams --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The ``orgteams`` parser: one subparser per entry of :data:`COMMANDS`."""
    parser = _Parser(prog="orgteams")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of bad-input errors too")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    # every command named, from the parser itself (the docstring's list missed one)
    parser.description = f"The orgteams command line: {', '.join(sub.choices)}."
    for p in sub.choices.values():  # --debug also after the command name
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the traceback of bad-input errors too")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; bad input is one line on stderr and exit code 2.

    Only user errors get that treatment: :class:`~orgteams.errors.UserError` (a bad
    name, file or option; a missing extra for a feature asked for), a missing file, a
    path that cannot be written (:data:`_PATH_ERRNOS`), an embedded model server that
    would not start. Anything else is our bug and keeps its
    traceback; ``--debug`` shows the traceback of user errors too.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    from orgteams.agents.backends.local import LocalServerError
    from orgteams.agents.llm.quoting import printable

    try:
        return args.func(args)
    except (UserError, LocalServerError, OSError) as exc:
        if isinstance(exc, OSError) and not _about_a_path(exc):
            raise  # an OSError of ours, not of a path the user gave: keep its traceback
        if args.debug:
            traceback.print_exc()
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            exc = f"{exc.filename}: {exc.strerror}"  # not "[Errno 13] Permission denied: ..."
        # one line, whatever the message holds (a server's text too: no escape sequences)
        text = printable(" ".join(str(exc).split()))
        print(f"orgteams {args.command}: error: {text}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C: one line, the shell's usual status for SIGINT
        print(f"orgteams {args.command}: interrupted (Ctrl-C){_kept(exc)}", file=sys.stderr)
        return 130


_PATH_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT,
                errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG}
"""Where a path the user gave cannot be used (an unwritable folder, a read-only or full
disk): one line naming the path, as a missing file is (it was a traceback)."""


def _about_a_path(exc: OSError) -> bool:
    """A missing file (ours name it in their text), or an OSError naming a path that
    cannot be used; any other OSError is a bug of ours."""
    return isinstance(exc, FileNotFoundError) or (exc.filename is not None
                                                  and exc.errno in _PATH_ERRNOS)


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
