"""The suite's own guards (tests/conftest.py), each run on a small inner suite: a process
left behind fails the run, so does a test writing over 50 MB, and SIGINT stops a suite
started with SIGINT ignored (as a non-interactive shell starts a background job)."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="the process guard reads /proc (Linux)")


def _inner_suite(folder: Path, tests: str) -> list[str]:
    folder.mkdir()
    shutil.copy(CONFTEST, folder / "conftest.py")
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (folder / "test_inner.py").write_text(tests, encoding="utf-8")
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--basetemp={folder / 'tmp'}", str(folder)]


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_process_left_behind_fails_the_run_and_is_killed(tmp_path):
    argv = _inner_suite(tmp_path / "inner", (
        "import subprocess, sys\n"
        "SLEEP = [sys.executable, '-c', 'import time; time.sleep(300)']\n"
        "def test_forgets_its_child():\n"
        "    subprocess.Popen(SLEEP)\n"
        "def test_orphans_a_grandchild():\n"  # its parent exits at once: reparented to us
        "    subprocess.run([sys.executable, '-c', 'import subprocess, sys; '\n"
        "                    f'subprocess.Popen({SLEEP!r})'], check=True)\n"
        "def test_waits_for_its_child():\n"
        "    subprocess.run(SLEEP[:2] + ['pass'], check=True)\n"))
    out = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    assert out.returncode == 1, out.stdout + out.stderr
    assert ("2 process(es) the tests started were still running at the end of the session "
            "(killed now):") in out.stdout
    # A set: with $CI set, pytest's short summary repeats the whole message untruncated.
    left = set(re.findall(r"pid (\d+) \(running after test_inner\.py::(\w+)\)", out.stdout))
    assert sorted(name for _, name in left) == ["test_forgets_its_child",
                                                "test_orphans_a_grandchild"]
    assert not any(_running(int(pid)) for pid, _ in left)


def test_a_test_writing_over_50_mb_errors(tmp_path):
    argv = _inner_suite(tmp_path / "inner", (
        "def test_small(tmp_path):\n"
        "    (tmp_path / 'f').write_bytes(b'x' * 1000)\n"
        "def test_big(tmp_path):\n"  # a sparse file: its size counts, no disk is written
        "    with open(tmp_path / 'big', 'wb') as f:\n"
        "        f.truncate(51 * 2**20)\n"))
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=240)
        assert out.returncode == 1, out.stdout + out.stderr
        assert ("test_inner.py::test_big wrote 51 MB into its tmp_path (at most 50 MB): play "
                "smaller sizes") in out.stdout
        assert "2 passed, 1 error" in out.stdout  # test_big passed, then errored at teardown
    finally:
        shutil.rmtree(tmp_path / "inner", ignore_errors=True)  # this test's own 50 MB


def _sigint_ignored() -> None:
    # As `nohup python -m pytest &` from a script: the job starts with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


LONG_TEST = "    time.sleep(300)\n"
CAUGHT = ("    try:\n"  # as orgteams.cli.main.main does: Ctrl-C becomes exit status 130
          "        time.sleep(300)\n"
          "    except KeyboardInterrupt:\n"
          "        pass\n")


@pytest.mark.parametrize(("body", "preexec"), [(LONG_TEST, _sigint_ignored), (CAUGHT, None)],
                         ids=["started-with-sigint-ignored", "caught-by-the-code-under-test"])
def test_sigint_stops_the_suite(tmp_path, body, preexec):
    started = tmp_path / "started"
    argv = _inner_suite(tmp_path / "inner", (
        "import time\n"
        "def test_long():\n"
        f"    open({str(started)!r}, 'w').close()\n"
        f"{body}"
        "def test_never_reached():\n"
        "    time.sleep(300)\n"))
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          preexec_fn=preexec) as proc:
        try:
            deadline = time.monotonic() + 120
            while not started.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert started.exists(), "the inner suite never reached its test"
            time.sleep(0.5)  # inside the sleep
            proc.send_signal(signal.SIGINT)
            # "Must stop" guard with generous slack: not stopping waits out the 300 s.
            out, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "KeyboardInterrupt" in out or "Interrupted: SIGINT (Ctrl-C)" in out
    assert "test_never_reached" not in out
