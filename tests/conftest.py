"""Test-wide settings and guards.

* Headless pygame (no display, no sound card).
* Ctrl-C (SIGINT) stops the suite: also when the code under test catches the
  KeyboardInterrupt (``orgteams.cli.main.main`` returns 130), and also when the suite was
  started in the background by a non-interactive shell (``nohup python -m pytest &``,
  a CI runner), which starts it with SIGINT *ignored* (Python then installs no
  KeyboardInterrupt handler, and every child would inherit the ignored signal).
* No test leaves a process behind: at the end of the session every process the
  tests started, and every orphan of theirs (the test process is their subreaper),
  must have exited; the ones still running are listed, killed, and fail the run.
* No test writes more than 50 MB into its ``tmp_path``.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

_SIGINTS: list[float] = []  # when each SIGINT came


def _on_sigint(signum: int, frame: object) -> None:
    # Remembered as well as raised: the code under test may catch the KeyboardInterrupt
    # (the CLI turns it into exit status 130), and the suite must stop all the same.
    _SIGINTS.append(time.monotonic())
    raise KeyboardInterrupt


# Also where the suite started with SIGINT ignored (as a background job of a script).
signal.signal(signal.SIGINT, _on_sigint)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Stop the session after a test during which SIGINT came, whoever caught it."""
    result = yield
    if _SIGINTS:
        item.session.shouldstop = "SIGINT (Ctrl-C)"
    return result

MAX_TMP_BYTES = 50 * 2**20
"""The most a test may write into its ``tmp_path``."""
_EXIT_GRACE_S = 3.0  # a process a fixture stopped without waiting for it may take a moment
# Helpers of the standard library that live as long as the test process, by design.
_OWNED_BY_PYTHON = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _become_subreaper() -> None:
    # A test's child that dies leaves its own children to us, not to init, so the
    # check below still sees them.
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass


def _descendants(root: int) -> dict[int, str]:
    """Running (not zombie) descendants of ``root``: pid -> command line."""
    parent_of: dict[int, int] = {}
    state_of: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited while we looked
        state_of[int(entry.name)] = fields[0]
        parent_of[int(entry.name)] = int(fields[1])
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parent_of.items():
            if ppid != parent or pid in found:
                continue
            frontier.append(pid)
            if state_of[pid] in ("Z", "X"):
                continue
            try:
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            cmdline = raw.replace(b"\0", b" ").decode(errors="replace").strip()
            if not any(helper in cmdline for helper in _OWNED_BY_PYTHON):
                found[pid] = cmdline
    return found


def _reap_zombies() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


_STARTED_BY: dict[int, str] = {}  # pid -> the test after which it was first seen running


@pytest.fixture(autouse=True)
def _note_processes_a_test_started(request: pytest.FixtureRequest) -> Iterator[None]:
    # A few milliseconds per test: names the test when a process is left behind.
    yield
    if _CHECK_PROCESSES:
        for pid in _descendants(os.getpid()):
            _STARTED_BY.setdefault(pid, request.node.nodeid)


_CHECK_PROCESSES = Path("/proc/self/stat").exists()  # Linux: the process table is readable


@pytest.fixture(scope="session", autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    """Fail the run, loudly, if a process the tests started is still running at the end."""
    if not _CHECK_PROCESSES:  # no /proc to read the process table from
        yield
        return
    _become_subreaper()
    yield
    deadline = time.monotonic() + _EXIT_GRACE_S
    left = _descendants(os.getpid())
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _descendants(os.getpid())
    if not left:
        _reap_zombies()
        return
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.2)
    _reap_zombies()
    listing = "\n".join(f"  pid {pid} (running after {_STARTED_BY.get(pid, 'a session fixture')})"
                        f": {cmd[:300]}" for pid, cmd in sorted(left.items()))
    pytest.fail(f"{len(left)} process(es) the tests started were still running at the end of "
                f"the session (killed now):\n{listing}", pytrace=False)


def _tree_bytes(folder: Path) -> int:
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size
            except OSError:
                pass
    return total


@pytest.fixture(autouse=True)
def _tmp_path_at_most_50_mb(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that wrote more than :data:`MAX_TMP_BYTES` into its ``tmp_path`` errors."""
    yield
    funcargs = getattr(request.node, "funcargs", None) or {}
    tmp = funcargs.get("tmp_path")
    if tmp is None and funcargs.get("tmpdir") is not None:
        tmp = Path(str(funcargs["tmpdir"]))
    if tmp is None or not Path(tmp).is_dir():
        return
    size = _tree_bytes(Path(tmp))
    if size > MAX_TMP_BYTES:
        pytest.fail(f"{request.node.nodeid} wrote {size / 2**20:.0f} MB into its tmp_path "
                    f"(at most {MAX_TMP_BYTES / 2**20:.0f} MB): play smaller sizes",
                    pytrace=False)


@pytest.fixture(autouse=True)
def _nothing_written_into_the_working_folder(request: pytest.FixtureRequest) -> Iterator[None]:
    """Episodes a test plays log under its tmp_path, never into the folder pytest runs in
    (an ``orgteams run`` without ``--log`` writes ``./runs``: a test must not)."""
    runs = Path.cwd() / "runs"
    before = set(os.listdir(runs)) if runs.is_dir() else set()
    yield
    after = set(os.listdir(runs)) if runs.is_dir() else set()
    if after - before:
        pytest.fail(f"{request.node.nodeid} wrote {sorted(after - before)} into {runs}: "
                    "give the episodes it plays a log path under tmp_path", pytrace=False)


sys.path.insert(0, str(Path(__file__).parent))
