"""The docs (issue 31): every Python and shell block of the README and of docs/ runs, the
README stays a short front door, the site builds with ``mkdocs build --strict`` and its
internal links lead somewhere, and the public API has docstrings.

A block runs as it is written, in a fresh process, in a scratch folder that sees the
repository's ``assets``, ``benchmarks``, ``examples`` and ``docs``. An HTML comment on
the line above a block says how it is tested, parts separated by ``;``:

* ``<!-- test: skip (why) -->``: not run, reported skipped with the reason (a block that
  needs a network, a key, an install, or minutes of training);
* ``<!-- test: slow (why) -->``: runs in the slow suite (``pytest -m slow``);
* ``<!-- test: needs rl -->`` (or ``jax``): runs where that extra is installed;
* anything else is a note, and the block runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from doubles import load_script

ROOT = Path(__file__).resolve().parents[1]
README_LIMIT = 12 * 1024

# The Markdown that people read: the README, the docs pages, and the two READMEs of the
# script folders (the benchmarks page of the site is benchmarks/README.md).
DOC_FILES = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "benchmarks" / "README.md",
     ROOT / "examples" / "README.md", *(ROOT / "docs").rglob("*.md")])

FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$",
                   re.M | re.S)
MARKER = re.compile(r"<!--\s*test:\s*(?P<spec>.*?)\s*-->")
RUNNABLE = {"python": "python", "bash": "bash", "sh": "bash", "shell": "bash"}


def _installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


EXTRAS = {
    "rl": pytest.mark.skipif(
        not _installed("torch", "stable_baselines3", "sb3_contrib", "supersuit", "torchrl",
                       "tianshou"), reason="needs the rl extra"),
    "jax": pytest.mark.skipif(not _installed("jax", "optax"), reason="needs the jax extra"),
}


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    path: Path
    line: int
    lang: str
    code: str
    marker: str  # the ``<!-- test: ... -->`` text above it, or ""

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def code_blocks(path: Path) -> list[Block]:
    """The Python and shell blocks of ``path``, dedented (blocks inside list items)."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for m in FENCE.finditer(text):
        lang = RUNNABLE.get(m.group("lang"))
        if lang is None:
            continue
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        indent = len(m.group("indent"))
        code = "\n".join(line[indent:] for line in m.group("body").splitlines())
        blocks.append(Block(path, text[:m.start()].count("\n") + 1, lang, code + "\n",
                            marker.group("spec") if marker else ""))
    return blocks


def marker_parts(marker: str) -> list[tuple[str, str]]:
    """``"needs rl; slow (why; more)"`` -> ``[("needs", "rl"), ("slow", "why; more")]``."""
    parts = [p.strip() for p in re.split(r";(?![^()]*\))", marker) if p.strip()]
    return [(word, rest.strip().strip("()").strip())
            for word, _, rest in (p.partition(" ") for p in parts)]


def _params() -> list:
    params = []
    for path in DOC_FILES:
        for block in code_blocks(path):
            marks = []
            for word, rest in marker_parts(block.marker):
                if word == "skip":
                    marks.append(pytest.mark.skip(reason=f"{block.name}: {rest}"))
                elif word == "slow":
                    marks.append(pytest.mark.slow)
                elif word == "needs":
                    marks.append(EXTRAS[rest.split()[0]])
            params.append(pytest.param(block, id=block.name, marks=marks))
    return params


def _scratch(tmp_path: Path) -> Path:
    """A folder where blocks run: the repository's data folders are seen, what a block
    writes (``runs/``...) stays in the test's own folder."""
    for name in ("assets", "benchmarks", "examples", "docs"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


@pytest.mark.parametrize("block", _params())
def test_code_block_runs(block: Block, tmp_path):
    env = {**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "MPLBACKEND": "Agg"}
    if block.lang == "python":
        command = [sys.executable, "-c", block.code]
    else:
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    out = subprocess.run(command, cwd=_scratch(tmp_path), env=env, capture_output=True,
                         text=True, timeout=1800)
    assert out.returncode == 0, f"{block.name} failed:\n{block.code}\n{out.stdout}\n{out.stderr}"


def test_every_skipped_block_says_why():
    for path in DOC_FILES:
        for block in code_blocks(path):
            for word, rest in marker_parts(block.marker):
                assert word != "skip" or rest, f"{block.name}: skip without a reason"
                assert word != "needs" or rest.split()[0] in EXTRAS, (
                    f"{block.name}: unknown extra in '{word} {rest}'")


def test_block_collector_reads_markers_and_list_items(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n<!-- test: skip (needs a key) -->\n```bash\nexit 1\n```\n\n"
                    "* item:\n\n  ```python\n  print(1)\n  ```\n\n```yaml\na: 1\n```\n")
    first, second = code_blocks(page)
    assert (first.lang, first.code, first.marker, first.line) == (
        "bash", "exit 1\n", "skip (needs a key)", 4)
    assert (second.lang, second.code, second.marker) == ("python", "print(1)\n", "")
    assert marker_parts("needs rl; slow (why; more)") == [("needs", "rl"), ("slow", "why; more")]


def test_readme_is_a_short_front_door():
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_LIMIT, f"README.md is {size} bytes; at most {README_LIMIT}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/index.md)" in readme and "mkdocs build" in readme


def test_readme_lists_every_experiment_recipe():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| `([\w-]+)` \|", readme, flags=re.M))
    recipes = {p.stem for p in (ROOT / "assets" / "experiments").glob("*.yaml")}
    assert table == recipes


def test_getting_started_shows_the_readme_commands_as_they_are():
    """docs/getting-started.md repeats README commands 1 and 2; CI runs the README's."""
    readme_command = load_script(ROOT / ".ci" / "readme_command.py").readme_command
    page = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    for n in (1, 2):
        assert readme_command(n) == readme_command(n, page)


def test_readme_and_docs_links_lead_to_files():
    """Relative links of the Markdown files outside the site (the README, the script
    folders' READMEs, CONTRIBUTING) name files that exist."""
    for path in (ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "examples" / "README.md",
                 ROOT / "benchmarks" / "README.md"):
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            assert (path.parent / target).exists(), f"{path.name}: link to missing {target}"


# The public modules: the API reference's pages (docs/reference/) document these.
PUBLIC_MODULES = [
    "orgteams", "orgteams.config", "orgteams.errors", "orgteams.replay", "orgteams.play",
    "orgteams.experiments", "orgteams.envs", "orgteams.envs.household_v0",
    "orgteams.envs.core", "orgteams.envs.highlevel", "orgteams.envs.vector",
    "orgteams.envs.vector.functional",
    "orgteams.envs.render", "orgteams.agents", "orgteams.agents.backends",
    "orgteams.agents.llm", "orgteams.agents.planner", "orgteams.organizations",
    "orgteams.organizations.rounds", "orgteams.organizations.spec",
    "orgteams.organizations.metrics", "orgteams.organizations.protocols",
    "orgteams.criticize_reflect",
]


def public_api_without_docstrings(modules: list[str] = PUBLIC_MODULES) -> list[str]:
    """Public classes and functions of ``modules`` (their ``__all__``) without a
    docstring, and the public methods and properties those classes define."""
    missing = set()
    for name in modules:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", None) or [n for n in vars(module)
                                                          if not n.startswith("_")]:
            obj = getattr(module, attr)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not getattr(obj, "__module__", "").startswith("orgteams"):
                continue
            if not obj.__doc__:
                missing.add(f"{obj.__module__}.{obj.__qualname__}")
            if inspect.isclass(obj):
                for key, value in vars(obj).items():
                    func = value.fget if isinstance(value, property) else getattr(
                        value, "__func__", value)
                    if not key.startswith("_") and inspect.isfunction(func) and not func.__doc__:
                        missing.add(f"{obj.__module__}.{obj.__qualname__}.{key}")
    return sorted(missing)


def test_public_api_has_docstrings():
    missing = public_api_without_docstrings()
    assert not missing, "public API without a docstring:\n" + "\n".join(missing)


def test_docstring_check_finds_a_missing_one(tmp_path, monkeypatch):
    (tmp_path / "orgteams_fake_docs.py").write_text(
        '__all__ = ["Told", "untold"]\n'
        'class Told:\n    """Has one."""\n    def method(self):\n        return 1\n'
        '    @property\n    def size(self):\n        """Has one."""\n        return 1\n'
        'def untold():\n    return 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert public_api_without_docstrings(["orgteams_fake_docs"]) == [
        "orgteams_fake_docs.Told.method", "orgteams_fake_docs.untold"]


mkdocs_missing = pytest.mark.skipif(
    not _installed("mkdocs", "material", "mkdocstrings_handlers.python"),
    reason='mkdocs is not installed here (pip install -e ".[docs]")')


@mkdocs_missing
@pytest.mark.slow
def test_site_builds_strict_and_its_internal_links_resolve(tmp_path):
    site = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(site)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    checker = load_script(ROOT / ".ci" / "check_site_links.py")
    assert checker.broken_links(site) == []
    for name in ("leader", "sequential", "pyramid"):  # one generated page per organization
        assert (site / "organizations" / f"{name}.html").is_file()
    env_page = (site / "household.html").read_text(encoding="utf-8")
    assert "Action Space" in env_page and "pick(d, k)" in env_page  # from the docstring
    assert "usage: orgteams sweep" in (site / "cli.html").read_text(encoding="utf-8")
    recipes = (site / "paper-experiments.html").read_text(encoding="utf-8")
    assert all(f"<code>{p.stem}</code>" in recipes
               for p in (ROOT / "assets" / "experiments").glob("*.yaml"))


def test_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "index.html").write_text(
        '<a href="a.html#there">ok</a><a href="a.html#gone">x</a><a href="b.html">x</a>'
        '<a href="https://example.org/">external</a><a href="/a.html">root</a>')
    (tmp_path / "a.html").write_text('<h2 id="there">There</h2>')
    checker = load_script(ROOT / ".ci" / "check_site_links.py")
    assert checker.broken_links(tmp_path) == [
        "index.html: a.html#gone: no id 'gone' there", "index.html: b.html: no such file"]


def github_dead_links(pages: list[Path], root: Path = ROOT) -> list[str]:
    """``page: target`` for each relative link of ``pages`` (Markdown, outside code
    blocks) that names no file: dead where the Markdown is read as it is (GitHub), e.g.
    a page only the site generates."""
    dead = []
    for page in pages:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not re.match(r"[a-z]+:", target) and not (page.parent / target).exists():
                dead.append(f"{page.relative_to(root)}: {target}")
    return dead


def test_docs_links_lead_to_files_on_github_too():
    """A docs page links files of the repository, never a page only the site generates
    (``organizations/<name>.md``, ``benchmarks/index.md``): it links the file that page
    is made from (``../assets/organizations/<name>.yaml``, ``../benchmarks/README.md``),
    which the site's hook leads to the generated page."""
    assert github_dead_links(sorted((ROOT / "docs").rglob("*.md"))) == []


def test_the_dead_link_check_finds_a_generated_page(tmp_path):
    (tmp_path / "cli.md").write_text("# CLI\n")
    page = tmp_path / "page.md"
    page.write_text("[a](organizations/leader.md#roles) [b](cli.md) [c](cli.md#x)\n"
                    "```\n[in code](nowhere.md)\n```\n[d](https://example.org/x.md)\n"
                    "[e](benchmarks/index.md)\n")
    assert github_dead_links([page], tmp_path) == ["page.md: organizations/leader.md",
                                                   "page.md: benchmarks/index.md"]


@mkdocs_missing
def test_the_site_leads_links_of_generated_pages_sources_to_those_pages():
    hooks = load_script(ROOT / "docs" / "hooks.py")
    text = ("[leader](../assets/organizations/leader.yaml) "
            "[numbers](../benchmarks/README.md#rl-throughput) [cli](cli.md) "
            "[yaml](../assets/organizations/_fragments.yaml)")
    assert hooks.site_links(text, "llm-backends.md") == (
        "[leader](organizations/leader.md) [numbers](benchmarks/index.md#rl-throughput) "
        "[cli](cli.md) [yaml](../assets/organizations/_fragments.yaml)")
    assert hooks.site_links("[x](../../benchmarks/README.md) [y](../organizations.md)",
                            "benchmarks/notebook.md") == "[x](index.md) [y](../organizations.md)"
    assert hooks.site_links("[o](../../assets/organizations/pyramid.yaml)",
                            "reference/organizations.md") == "[o](../organizations/pyramid.md)"


def test_ci_builds_the_site_strict_and_checks_its_links_after_the_tests():
    lines = [s.strip() for s in (ROOT / ".ci" / "run").read_text().splitlines()]
    slow = lines.index('run_tests "$work/slow.log" python -m pytest -m slow -rs --durations=20')
    build = lines.index('"$work/docs/bin/python" -m mkdocs build --strict --site-dir "$work/site"')
    check = lines.index('"$work/docs/bin/python" .ci/check_site_links.py "$work/site"')
    assert slow < build < check
    assert '"$work/docs/bin/python" -m pip install -e ".[docs]"' in lines[slow:build]


def test_readme_own_model_command_plays_against_an_openai_compatible_server(tmp_path):
    """The README's "your own model" command, as written (its ``orgteams run`` line), on a
    local OpenAI-compatible server: the leader's decisions went through that server."""
    from fault_server import FaultServer

    block = next(b for b in code_blocks(ROOT / "README.md") if "openai:" in b.code)
    line = next(s for s in block.code.splitlines() if s.startswith("orgteams run"))
    assert "--org leader" in line
    log = tmp_path / "episode.jsonl"
    with FaultServer(reply_text=None) as server:
        env = {**os.environ, "ORGTEAMS_BASE_URL": server.base_url, "ORGTEAMS_API_KEY": "sk-test",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        out = subprocess.run(["bash", "-c", f"{line} --max-rounds 2 --log {log}"], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=300)
        requests = list(server.requests)
    assert out.returncode == 0, out.stdout + out.stderr
    assert requests and all(r["model"] == "my-model" for r in requests)
    from doubles import read_dicts

    lines = read_dicts(log)
    decisions = [d for d in lines if d.get("agent") == "agent_0" and d.get("phase")]
    assert decisions and all(d.get("model") == "my-model" for d in decisions), decisions[:2]
