"""Print README command N (the numbered commands at the top of README.md), verbatim.

CI runs what a newcomer runs: it takes the commands from the README instead of a
copy that could drift. A command is the first non-comment line after the comment
line that starts with ``# N.`` in the README's first ``bash`` block.

    python .ci/readme_command.py 1
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_command(n: int, text: str | None = None) -> str:
    """README command ``n``.

    Raises:
        ValueError: No such numbered command in the README's first bash block.
    """
    text = README.read_text(encoding="utf-8") if text is None else text
    block = re.search(r"```bash\n(.*?)```", text, flags=re.S)
    if block is None:
        raise ValueError("README.md has no ```bash block")
    seen = False
    for line in block.group(1).splitlines():
        if re.match(rf"#\s*{n}\.", line):
            seen = True
        elif seen and line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    raise ValueError(f"README.md: no command numbered {n} in the first bash block")


if __name__ == "__main__":
    print(readme_command(int(sys.argv[1])))
