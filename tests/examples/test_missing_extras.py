"""Each example run without its extra says so in one line (it was a ModuleNotFoundError
traceback from deep in an import)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RL = ('needs the rl extra ({missing} is not installed): pip install torch --index-url '
      'https://download.pytorch.org/whl/cpu && pip install -e ".[rl]"')


@pytest.mark.parametrize(("script", "missing", "line"), [
    ("train_ppo.py", "stable_baselines3", RL),
    ("adhoc_teamwork.py", "stable_baselines3", RL),
    ("lean_ppo.py", "torch", RL),
    ("jax_ippo.py", "jax", 'needs the jax extra ({missing} is not installed): pip install -e '
                           '".[jax]"')])
def test_an_example_without_its_extra_is_one_line(script, missing, line):
    path = str(EXAMPLES / script)
    code = (f"import runpy, sys; sys.modules[{missing!r}] = None; "  # import raises ImportError
            f"sys.argv = [{path!r}, '--help']; runpy.run_path({path!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"{script} {line.format(missing=missing)}\n"
