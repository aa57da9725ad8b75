"""CI runs the README's commands verbatim: it extracts them from README.md (so they
cannot drift) and checks the episode command 1 played."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / ".ci" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ci_runs_readme_commands_extracted_from_the_readme():
    readme_command = _load("readme_command").readme_command
    one, two = readme_command(1), readme_command(2)
    readme = (ROOT / "README.md").read_text()
    assert one in readme and two in readme
    assert one.startswith('CMAKE_ARGS="') and "orgteams run --backend" in one
    assert "--max-rounds 2" in one and two.endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "cmd1=$(python .ci/readme_command.py 1)" in ci and 'eval "$cmd1"' in ci
    assert "cmd2=$(python .ci/readme_command.py 2)" in ci and 'eval "$cmd2"' in ci
    assert ci.index('eval "$cmd1"') < ci.index('eval "$cmd2"')  # before the tests
    assert "python .ci/check_episode.py runs" in ci and '-m pip install "$repo"' in ci


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
