"""Check the internal links of the built docs site: every ``href`` and ``src`` that
stays inside the site must name a file that was built, and its ``#fragment`` an id on
that page. External links (``http:``, ``https:``, ``mailto:``) are not followed (CI
reaches only package registries).

    python .ci/check_site_links.py site

Prints one line per broken link (page, link, why) and exits 1 when there is any.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    """The links and the ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.links.append(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def broken_links(site: Path) -> list[str]:
    """``page: link: why`` for every internal link of ``site`` that leads nowhere."""
    site = site.resolve()
    pages = {p: _parse(p) for p in sorted(site.rglob("*.html"))}
    problems = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            if not parts.path:
                target = path
            elif parts.path.startswith("/"):  # from the site's root (mkdocs' 404 page)
                target = (site / unquote(parts.path).lstrip("/")).resolve()
            else:
                target = (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site)}: {link}"
            if not target.is_relative_to(site):
                problems.append(f"{where}: leaves the site")
            elif not target.exists():
                problems.append(f"{where}: no such file")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{where}: no id '{parts.fragment}' there")
    return problems


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "site")
    if not (site / "index.html").is_file():
        print(f"{site}: no built site here (index.html missing); run mkdocs build first",
              file=sys.stderr)
        return 2
    problems = broken_links(site)
    for line in problems:
        print(line)
    pages = sum(1 for _ in site.rglob("*.html"))
    print(f"{len(problems)} broken internal link(s) in {pages} pages of {site}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
