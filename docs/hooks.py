"""MkDocs hooks (mkdocs.yml, ``hooks:``): the pages made from data, so they cannot drift.

* ``organizations/<name>.md``: one page per ``assets/organizations/*.yaml``, with its
  roles, channels and rendered instruction for a team of 3 (and of its recommended
  size), its rules and the file itself; listed in the nav under "Teams and
  organizations" and in a table where ``organizations.md`` has ``<!-- organizations -->``.
* The ``<!-- household_v0 docstring -->`` marker of ``household.md``: ``household_v0``'s
  module docstring (Farama's env-page sections) as Markdown, as Minigrid's env pages are
  made from their docstrings.
* ``<!-- api: MODULE -->`` markers of the API reference: the module's docstring, then
  each class and function of its ``__all__`` from the module that defines it.
* The ``<!-- cli help -->`` marker of ``cli.md``: every command's ``--help``.
* The ``<!-- recipes -->`` marker of ``paper-experiments.md``: one row per recipe of
  ``assets/experiments/*.yaml``.
* ``benchmarks/index.md``: ``benchmarks/README.md`` (the one copy of the results
  tables), its links rewritten for the page's place in the site.

Pages link the files a generated page is made from, so the link works where the
Markdown is read as it is (GitHub): ``../benchmarks/README.md`` and
``../assets/organizations/<name>.yaml``. On the site such a link leads to the page made
from that file (``benchmarks/index.md``, ``organizations/<name>.md``): see
:func:`site_links` (``tests/test_docs.py`` checks that every link of ``docs/`` names a
file of the repository).
"""

from __future__ import annotations

import posixpath
import re
import textwrap
from pathlib import Path

import yaml
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
ORGS = ROOT / "assets" / "organizations"
SOURCE_TREE = ROOT / "build" / "docs-src"  # mkdocs.yml: mkdocstrings' ``paths``


def lay_out_package(tree: Path = SOURCE_TREE) -> Path:
    """The ``orgteams`` package as it installs (``orgteams.envs`` is ``envs/``...), as
    symlinks under ``tree``, so that mkdocstrings reads the source by module name.

    Made when mkdocs loads this file, before any page is rendered."""
    package = tree / "orgteams"
    if package.is_symlink() or package.is_file():
        package.unlink()
    package.mkdir(parents=True, exist_ok=True)
    for entry in package.iterdir():
        if entry.is_symlink():
            entry.unlink()
    for entry in (ROOT / "orgteams").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for sub in ("envs", "agents", "organizations", "criticize_reflect", "assets"):
        (package / sub).symlink_to(ROOT / sub)
    return tree


lay_out_package()


def organization_names() -> list[str]:
    """The named organizations, as files in ``assets/organizations`` (fragments left out)."""
    return sorted(p.stem for p in ORGS.glob("*.yaml") if not p.stem.startswith("_"))


def on_config(config):
    """Lists every organization page in the nav, under "Teams and organizations"."""
    for entry in config["nav"]:
        if isinstance(entry, dict) and "Teams and organizations" in entry:
            entry["Teams and organizations"].append(
                {"The organizations": [{n: f"organizations/{n}.md"} for n in organization_names()]})
    return config


def on_files(files, config):
    """Adds the generated pages: one per organization, and the benchmarks page."""
    for name in organization_names():
        files.append(File.generated(config, f"organizations/{name}.md",
                                    content=organization_page(name)))
    files.append(File.generated(config, "benchmarks/index.md", content=benchmarks_page()))
    return files


def generated_from() -> dict[Path, str]:
    """Repository files outside ``docs/`` that a generated page is made from -> that
    page (its path in the site's sources)."""
    out = {ROOT / "benchmarks" / "README.md": "benchmarks/index.md"}
    out.update({ORGS / f"{n}.yaml": f"organizations/{n}.md" for n in organization_names()})
    return out


_LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?P<fragment>#[^)\s]*)?\)")


def site_links(markdown: str, src_uri: str, pages: dict[Path, str] | None = None) -> str:
    """``markdown`` of the page ``docs/<src_uri>`` with each link to a file a generated
    page is made from (:func:`generated_from`) leading to that page instead, relative to
    the page; other links as written."""
    pages = generated_from() if pages is None else pages
    here = (ROOT / "docs" / src_uri).parent

    def to_site(m: re.Match) -> str:
        target = m.group("target")
        if re.match(r"[a-z]+:", target):
            return m.group(0)
        page = pages.get((here / target).resolve())
        if page is None:
            return m.group(0)
        rel = posixpath.relpath(page, posixpath.dirname(src_uri) or ".")
        return f"]({rel}{m.group('fragment') or ''})"

    return _LINK.sub(to_site, markdown)


def on_page_markdown(markdown, page, config, files):
    """Fills the markers: the env page's docstring, the organizations' table; leads the
    links to generated pages' sources to those pages (:func:`site_links`)."""
    markdown = site_links(markdown, page.file.src_uri)
    if "<!-- household_v0 docstring -->" in markdown:
        markdown = markdown.replace("<!-- household_v0 docstring -->", household_v0_markdown())
    markdown = re.sub(r"<!-- api: ([\w.]+) -->", lambda m: api_markdown(m.group(1)), markdown)
    if "<!-- cli help -->" in markdown:
        markdown = markdown.replace("<!-- cli help -->", cli_help_markdown())
    if "<!-- recipes -->" in markdown:
        markdown = markdown.replace("<!-- recipes -->", recipes_table())
    if "<!-- organizations -->" in markdown:
        markdown = markdown.replace("<!-- organizations -->", organizations_table())
    return markdown


def on_page_content(html, page, config, files):
    """The API reference's docstrings use Sphinx roles (``:class:`X```) and ``::`` before
    literal blocks, which Markdown shows as written: drop the role names and the second
    colon, and ``~a.b.C`` reads ``C`` as Sphinx shows it."""
    if not page.file.src_uri.startswith("reference/"):
        return html
    html = re.sub(r":(?:class|func|meth|attr|mod|data|exc|obj|py:\w+):(?=<code>)", "", html)
    html = re.sub(r"<code>~(?:[\w]+\.)*(\w+)</code>", r"<code>\1</code>", html)
    return re.sub(r"::</p>", ":</p>", html)


def _code(text: str) -> str:
    """reST literals (````x````) as Markdown code."""
    return re.sub(r"``(.+?)``", r"`\1`", text)


def _rst_table(block: list[str]) -> list[str]:
    """A reST simple table (``====`` rules) as a Markdown table."""
    rule = next(line for line in block if set(line.strip()) <= {"=", " "} and line.strip())
    spans = [m.span() for m in re.finditer(r"=+", rule)]
    rows = [line for line in block if line.strip() and not (set(line.strip()) <= {"=", " "})]

    def cells(line: str) -> list[str]:
        out = []
        for i, (start, _end) in enumerate(spans):
            stop = spans[i + 1][0] if i + 1 < len(spans) else len(line)
            out.append(_code(line[start:stop].strip()))
        return out

    head, *body = [cells(r) for r in rows]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(r) + " |" for r in body] + [""]


def docstring_markdown(doc: str) -> str:
    """A Farama-style env docstring (a title line, then unindented section names with
    indented bodies) as Markdown: sections become ``###`` headings."""
    lines = textwrap.dedent(doc).strip("\n").splitlines()
    out: list[str] = [_code(lines[0]), ""]
    section: list[str] = []

    def flush() -> None:
        body = textwrap.dedent("\n".join(section)).splitlines()
        i = 0
        while i < len(body):
            if body[i].strip().startswith("==="):
                j = i + 1
                while j < len(body) and not body[j].strip().startswith("==="):
                    j += 1
                j += 1  # the table's middle rule
                while j < len(body) and not body[j].strip().startswith("==="):
                    j += 1
                out.extend(_rst_table(body[i:j + 1]))
                i = j + 1
            else:
                out.append(_code(body[i]))
                i += 1
        section.clear()

    for line in lines[1:]:
        if line and not line[0].isspace():
            flush()
            out += ["", f"### {line.strip()}", ""]
        else:
            section.append(line)
    flush()
    return "\n".join(out).strip() + "\n"


def household_v0_markdown() -> str:
    """``household_v0``'s module docstring as Markdown."""
    from orgteams.envs import household_v0

    return docstring_markdown(household_v0.__doc__ or "")


def _team(n: int) -> list[str]:
    return [f"agent_{i}" for i in range(n)]


def organization_page(name: str) -> str:
    """The page of one named organization, from its YAML file and its resolution."""
    from orgteams.organizations import load_organization

    path = ORGS / f"{name}.yaml"
    org = load_organization(name)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    lines = [f"# `{name}`", "", org.description or "", ""]
    facts = [("from the paper", data.get("source", "-")), ("protocol", f"`{org.protocol}`")]
    if data.get("recommended_agents"):
        facts.append(("recommended team size", str(data["recommended_agents"])))
    lines += ["| | |", "|---|---|"] + [f"| **{k}** | {v} |" for k, v in facts] + [""]
    size = int(data.get("recommended_agents") or 3)
    where = "--layout studio" if size <= 3 else f"--layout house --agents {size}"
    lines += [f"Play it: `orgteams run --org {name} --backend planner {where}`, "
              f"or `run_episode(organization=\"{name}\", ...)`. Its protocol's turn-taking: "
              "[Teams, organizations and the runner](../organizations.md); Sequential and "
              "Shared: [as the paper defines them](../protocols.md).", ""]
    sizes = sorted({3, int(data.get("recommended_agents") or 3)})
    for n in sizes:
        resolved = org.resolve(_team(n))
        lines += [f"## A team of {n}", "",
                  "| agent | role | reports to | may message |", "|---|---|---|---|"]
        for agent in resolved.team:
            boss = resolved.reports_to.get(agent) or "-"
            receivers = ", ".join(resolved.receivers_of(agent)) or "nobody"
            lines.append(f"| {agent} | {resolved.role_of(agent)} | {boss} | {receivers} |")
        lines += ["", f"What `agent_0` and `agent_{n - 1}` read (the rendered instruction, "
                  "with the rules as sentences):", ""]
        for agent in ("agent_0", f"agent_{n - 1}"):
            text = resolved.instruction_for(agent).strip()
            lines += [f"??? note \"{agent}\"", "", "    ```text"]
            lines += [f"    {t}".rstrip() for t in text.splitlines()] + ["    ```", ""]
    rules = org.rules.model_dump() if hasattr(org.rules, "model_dump") else dict(org.rules)
    lines += ["## Rules", "", "Machine-readable; every member kind honours them "
              "([organization rules](../organizations.md#organization-rules)).", "",
              "| rule | value |", "|---|---|"]
    lines += [f"| `{k}` | `{v}` |" for k, v in rules.items()] + [""]
    lines += ["## The file", "", f"`assets/organizations/{name}.yaml`:", "", "```yaml",
              path.read_text(encoding="utf-8").rstrip(), "```", ""]
    return "\n".join(lines)


def organizations_table() -> str:
    """One row per named organization: its page, paper and description."""
    rows = ["| organization | from the paper | protocol | what |", "|---|---|---|---|"]
    for name in organization_names():
        data = yaml.safe_load((ORGS / f"{name}.yaml").read_text(encoding="utf-8"))
        rows.append(f"| [`{name}`](organizations/{name}.md) | {data.get('source', '-')} | "
                    f"`{data.get('protocol', '-')}` | {data.get('description', '')} |")
    return "\n".join(rows) + "\n"


def api_markdown(module_name: str) -> str:
    """mkdocstrings directives for a public module: its docstring, then each class and
    function of its ``__all__`` where it is defined (lazy re-exports included)."""
    import importlib
    import inspect

    module = importlib.import_module(module_name)
    lines = [f"## `{module_name}`", "", f"::: {module_name}", "    options:",
             "      show_root_heading: false", "      show_root_toc_entry: false",
             "      members: false", ""]
    elsewhere = []
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        path = f"{obj.__module__}.{obj.__qualname__}"
        if path in _DOCUMENTED:  # re-exported by an earlier module: one entry, linked
            elsewhere.append(f"[`{name}`][{path}]")
            continue
        _DOCUMENTED.add(path)
        lines += [f"::: {path}", "    options:", "      heading_level: 3", ""]
    if elsewhere:
        lines += ["Also exported here: " + ", ".join(elsewhere) + ".", ""]
    return "\n".join(lines) + "\n"


_DOCUMENTED: set[str] = set()  # objects given an entry in this build (one page each)


def on_pre_build(config):
    """A new build documents every object afresh."""
    _DOCUMENTED.clear()


def cli_help_markdown() -> str:
    """``orgteams <command> --help`` of every command, as argparse prints it (88 columns)."""
    import argparse
    import os

    from orgteams.cli.main import build_parser

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"
    try:
        parser = build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        lines = []
        for name, command in sub.choices.items():
            lines += [f"### `orgteams {name}`", "", "```text", command.format_help().rstrip(),
                      "```", ""]
    finally:
        if columns is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = columns
    return "\n".join(lines)


def recipes_table() -> str:
    """One row per experiment recipe (``assets/experiments/*.yaml``): what it runs."""
    rows = ["| recipe | kind | what it runs | organizations |", "|---|---|---|---|"]
    for path in sorted((ROOT / "assets" / "experiments").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        orgs = (data.get("sweep") or {}).get("organizations") or [data.get("organization", "-")]
        rows.append(f"| `{path.stem}` | {data.get('kind', '-')} | "
                    f"{_code(str(data.get('description', '')))} | "
                    + ", ".join(f"`{o}`" for o in orgs) + " |")
    return "\n".join(rows) + "\n"


def benchmarks_page() -> str:
    """``benchmarks/README.md`` with its links rewritten for ``docs/benchmarks/index.md``."""
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    text = re.sub(r"\]\(\.\./docs/", "](../", text)
    text = re.sub(r"\]\(\.\./README\.md\)", "](../index.md)", text)
    return text
