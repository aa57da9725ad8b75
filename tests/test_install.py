"""The install as a newcomer uses it: scripts run from any folder import the package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orgteams

ROOT = Path(__file__).resolve().parents[1]


def test_the_clone_folder_does_not_hide_the_install(tmp_path):
    """A script in the folder that contains the clone (named ``orgteams``) imports the
    installed package, not the clone folder as an empty namespace package."""
    (tmp_path / "orgteams").symlink_to(ROOT, target_is_directory=True)
    script = tmp_path / "script.py"
    script.write_text("from orgteams import run_episode\n"
                      "from orgteams.envs import household_v0\n"
                      "import orgteams\n"
                      "print(orgteams.__file__)\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, (
        f"{out.stderr}\n(an editable install from before the in-tree build backend? "
        'rerun pip install -e ".[dev]")')
    assert out.stdout.strip() == orgteams.__file__
