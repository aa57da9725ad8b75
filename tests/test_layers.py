"""The layers do not leak (docs/architecture.md, "Who may import whom"): every import of
ours points down or at a leaf, nothing above ``envs`` reaches into an env's ``.base``,
``import orgteams.envs`` stays light, and every package's short names resolve."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import orgteams

ROOT = Path(orgteams.__file__).resolve().parents[1]
# Folder -> package, as pyproject's package-dir maps them.
FOLDERS = {"envs": "orgteams.envs", "agents": "orgteams.agents",
           "organizations": "orgteams.organizations",
           "criticize_reflect": "orgteams.criticize_reflect", "orgteams": "orgteams"}
LEAVES = ("orgteams.errors", "orgteams.templates", "orgteams.lazy", "orgteams.assets")
LAYERS = ("orgteams.envs", "orgteams.agents", "orgteams.organizations",
          "orgteams.criticize_reflect", "orgteams")  # low to high


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((package, *parts))] = path
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    """Index in LAYERS (-1: a leaf, which any layer may import)."""
    if module in LEAVES or module.startswith(tuple(f"{leaf}." for leaf in LEAVES)):
        return -1
    matches = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    return LAYERS.index(max(matches, key=len))  # the innermost: orgteams.envs, not orgteams


def _our_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of ours in ``path``, lazy ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            name = next((n for n in reversed(names) if n in MODULES), node.module)
            found.append((node.lineno, name))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, m) for line, m in found if m == "orgteams" or m.startswith("orgteams.")]


def test_the_layout_is_found():
    assert {"orgteams.envs.highlevel.highlevel_env", "orgteams.agents.view", "orgteams.run",
            "orgteams.errors", "orgteams.organizations.rounds.runner"} <= set(MODULES)


def test_every_import_points_down_or_at_a_leaf():
    upward = []
    for module, path in MODULES.items():
        here = _layer(module)
        for line, target in _our_imports(path):
            if target == "orgteams" and module.startswith("orgteams."):
                continue  # `import orgteams` for its version: the package face is lazy
            there = _layer(target)
            if here == -1 and module != "orgteams.assets" and target != module:
                upward.append(f"{module}:{line} imports {target} (a leaf imports none of ours)")
            elif there > here >= 0:
                upward.append(f"{module}:{line} imports {target}")
    assert upward == []


def _base_reaches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "base"]


def test_nothing_above_envs_reaches_into_an_envs_base():
    above = [p for m, p in MODULES.items()
             if not m.startswith("orgteams.envs") and _layer(m) != -1]
    assert [hit for p in above for hit in _base_reaches(p)] == []


def test_nothing_above_envs_sets_the_envs_tick_or_stop_hooks_but_the_play_glue():
    """The round loop passes its hooks to ``env.step``; only the play session's glue,
    which owns its env, sets the env's one ``on_tick``."""
    setters = []
    for module, path in MODULES.items():
        if module.startswith("orgteams.envs") or _layer(module) == -1:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and target.attr in (
                            "on_tick", "should_stop") and isinstance(
                            target.value, ast.Name) and target.value.id == "env":
                        setters.append(f"{module}:{node.lineno}")
    assert [s.split(":")[0] for s in setters] == ["orgteams.play.teammates"]


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT.parent, timeout=120)
    return json.loads(out.stdout)


@pytest.mark.parametrize("module", ["orgteams.envs", "orgteams.envs.household_v0",
                                    "orgteams.envs.highlevel"])
def test_envs_imports_nothing_above_it_nor_pygame(module):
    loaded = _fresh(f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))")
    ours = [m for m in loaded if m.startswith("orgteams.") and _layer(m) > 0]
    heavy = [m for m in loaded if m.split(".")[0] in ("pygame", "jinja2", "openai")]
    assert ours == [] and heavy == []


PACKAGES = sorted(m for m, p in MODULES.items() if p.name == "__init__.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_says_what_lives_there_and_its_names_resolve(package):
    module = importlib.import_module(package)
    assert module.__doc__ and len(module.__doc__.strip()) > 40, package
    submodules = {m.rpartition(".")[2] for m in MODULES if m.rpartition(".")[0] == package}
    clash = [n for n in sorted(set(getattr(module, "__all__", ())) & submodules)
             if getattr(module, n) is not sys.modules.get(f"{package}.{n}")]
    assert clash == []  # a name that is also a submodule (unless it is the submodule)
    for name in getattr(module, "__all__", ()):
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_short_imports_are_the_same_objects():
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.agents.planner import PlannerAgent
    from orgteams.agents.planner.planner import PlannerAgent as Long
    from orgteams.envs.core import transition
    from orgteams.envs.core.dynamics import transition as long_transition
    from orgteams.envs.highlevel import HighLevelEnv
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv as LongEnv
    from orgteams.envs.render import EpisodeVideo
    from orgteams.envs.render.video import EpisodeVideo as LongVideo
    from orgteams.organizations import load_organization, run_team
    from orgteams.organizations.rounds.planner_team import run_team as long_run_team
    from orgteams.organizations.spec.library import load_organization as long_load

    assert (PlannerAgent, transition, HighLevelEnv, EpisodeVideo, run_team,
            load_organization) == (Long, long_transition, LongEnv, LongVideo,
                                   long_run_team, long_load)
    assert orgteams.BackendPool is BackendPool and orgteams.run_episode is not None
    with pytest.raises(AttributeError, match="module 'orgteams' has no attribute 'nope'"):
        orgteams.nope  # noqa: B018


def test_no_module_name_appears_twice():
    """The batched core's deliberate mirrors of scalar modules (``envs/vector``) aside."""
    names = [p.name for m, p in MODULES.items()
             if p.name != "__init__.py" and ".vector" not in m and p.name != "__main__.py"]
    assert sorted({n for n in names if names.count(n) > 1}) == []
