"""CI runs the README's commands verbatim: it extracts them from README.md (so they
cannot drift) and checks the episode command 1 played."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from doubles import load_script

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    return load_script(ROOT / ".ci" / f"{name}.py")


def test_ci_runs_readme_commands_extracted_from_the_readme():
    readme_command = _load("readme_command").readme_command
    one, two = readme_command(1), readme_command(2)
    readme = (ROOT / "README.md").read_text()
    assert one in readme and two in readme
    # prebuilt wheels only: no compiler flags, no source build of llama.cpp
    assert one.startswith('pip install -e ".[local,render]"') and "CMAKE_ARGS" not in one
    assert "orgteams run --backend" in one
    assert "--max-rounds 2" in one and two.endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "cmd1=$(python .ci/readme_command.py 1)" in ci and 'eval "$cmd1"' in ci
    assert "cmd2=$(python .ci/readme_command.py 2)" in ci and 'eval "$cmd2"' in ci
    assert "python .ci/check_episode.py runs" in ci and '-m pip install "$repo"' in ci


def _steps() -> list[str]:
    """.ci/run's commands, in order, without comments and echo lines."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [s.strip() for s in lines if s.strip() and not s.strip().startswith(("#", "echo"))]


def test_ci_runs_command_2_in_a_fresh_venv_then_the_extras_then_the_slow_tests():
    steps = _steps()
    at: dict[str, int] = {}
    for name, line in {  # each found after the one before it: in this order
        "command 1": '(export PIP_NO_CACHE_DIR=1 && eval "$cmd1") 2>&1 | tee "$out"',
        "core": '"$work/core/bin/python" -m pip install "$repo"',
        "tests venv": 'python -m venv "$work/tests"',
        "activate tests venv": 'source "$work/tests/bin/activate"',
        "command 2": 'run_tests "" eval "$cmd2"',
        "back to command 1's venv": 'source "$work/main/bin/activate"',
        "torch cpu": 'python -m pip install "torch==2.13.0+cpu"',
        "extras": 'python -m pip install -e ".[rl,jax,dev]"',
        "extras' tests": 'run_tests "$work/extras.log" python -m pytest -rs "${extras_tests[@]}"',
        "slow": 'run_tests "$work/slow.log" python -m pytest -m slow -rs --durations=20',
    }.items():
        assert line in steps[max(at.values(), default=-1) + 1:], f"{name}: {line}"
        at[name] = steps.index(line, max(at.values(), default=-1) + 1)
    # Command 2's venv has nothing but what command 2 installs: no pip line between
    # its creation and command 2.
    between = steps[at["tests venv"]:at["command 2"]]
    assert not [s for s in between if "pip" in s], between
    assert "set -euo pipefail" in steps


def test_ci_treats_no_tests_collected_as_a_failure(tmp_path):
    text = (ROOT / ".ci" / "run").read_text()
    helper = text[text.index("run_tests() {"):text.index("\n}\n", text.index("run_tests() {")) + 3]
    script = tmp_path / "t.sh"
    script.write_text("set -euo pipefail\n" + helper +
                      'run_tests "" eval "$1"\nrun_tests "$2" bash -c "$1"\necho passed\n')
    for status, rc in ((0, 0), (5, 1), (3, 3)):
        out = subprocess.run(["bash", str(script), f"echo hi && (exit {status})",
                              str(tmp_path / "log")], capture_output=True, text=True)
        assert out.returncode == rc, out.stdout + out.stderr
        assert ("collected no tests" in out.stderr) == (status == 5)
        assert ("passed" in out.stdout) == (status == 0)


def test_ci_runs_every_test_file_that_skips_for_an_extra():
    """The extras step lists each test file that skips without an extra [dev] lacks
    (ray aside: CI does not install it)."""
    text = (ROOT / ".ci" / "run").read_text()
    listed = text[text.index("extras_tests=("):]
    listed = set(listed[:listed.index(")")].split()[1:])
    skipping = set()
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path == Path(__file__).resolve():  # this file names the patterns it looks for
            continue
        source = path.read_text(encoding="utf-8")
        extras = set(re.findall(r'reason="needs the (\w+) extra"', source))
        if "reason=str(local_unavailable())" in source:
            extras.add("local")
        if extras - {"ray"}:
            skipping.add(path.relative_to(ROOT).as_posix())
    assert listed == skipping
    assert all((ROOT / name).is_file() for name in listed)


def test_missing_command_is_one_clear_error():
    readme_command = _load("readme_command").readme_command
    with pytest.raises(ValueError, match=re.escape(
            "README.md: no command numbered 3 in the first bash block")):
        readme_command(3, "```bash\n# 1. x\necho 1\n```\n")
    assert readme_command(1, "```bash\n# 1. Set up:\n#    more\necho hi\n```") == "echo hi"


def _write_log(folder: Path, messages: list[str], actions: list[str]) -> None:
    folder.mkdir(parents=True)
    rows = [{"phase": "communicate", "message": m} for m in messages]
    rows += [{"phase": "act", "action": a} for a in actions]
    rows.append({"record": "summary"})
    (folder / "episode.jsonl").write_text("\n".join(json.dumps(r) for r in rows))


@pytest.mark.parametrize(("messages", "actions", "rc"), [
    (["go", "stay"], ["explore:kitchen", "grab:apple_1", "continue"], 0),
    (["go", "go"], ["explore:kitchen", "grab:apple_1"], 1),
    (["go", "stay"], ["explore:kitchen", "continue", "explore:kitchen"], 1),
])
def test_episode_check_wants_two_distinct_messages_and_actions(tmp_path, messages, actions, rc):
    _write_log(tmp_path / "runs" / "a", messages, actions)
    out = subprocess.run([sys.executable, str(ROOT / ".ci" / "check_episode.py"),
                          str(tmp_path / "runs")], capture_output=True, text=True)
    assert out.returncode == rc, out.stdout + out.stderr
