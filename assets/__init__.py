"""The shipped data (layouts, tasks, the object catalog, organizations, prompts, recipes,
sweeps, behaviour labels, prices, fonts) and :func:`asset_dir` / :func:`asset_names`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["asset_dir", "asset_names"]


def asset_dir(*parts: str) -> Path:
    """Return the path of a folder (or file) inside the shipped ``assets/`` data."""
    return Path(str(resources.files("orgteams.assets").joinpath(*parts)))


def asset_names(folder: str, suffix: str = ".yaml") -> list[str]:
    """Names (file stems) of the asset files in ``assets/<folder>``, sorted."""
    return sorted(p.stem for p in asset_dir(folder).glob(f"*{suffix}"))
