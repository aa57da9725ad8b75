"""The named organizations shipped in ``assets/organizations/*.yaml``.

Files whose name starts with ``_`` hold shared prompt fragments, not organizations.
"""

from __future__ import annotations

from pathlib import Path

from orgteams.assets import asset_dir, asset_names
from orgteams.errors import unknown_name
from orgteams.organizations.spec.organization import Organization


def list_organizations() -> list[str]:
    """Names of the shipped organizations, sorted."""
    return [n for n in asset_names("organizations") if not n.startswith("_")]


def organization_path(name: str) -> Path:
    """Path of a shipped organization's YAML file.

    Raises:
        ValueError: Unknown name, with a "Did you mean" hint and the known names.
    """
    names = list_organizations()
    if name not in names:
        raise unknown_name("organization", name, names)
    return asset_dir("organizations", f"{name}.yaml")


def load_organization(name_or_path: str | Path) -> Organization:
    """Load a shipped organization by name, or any organization YAML file by path.

    Args:
        name_or_path: ``"pyramid"``, or a path ending in ``.yaml`` / ``.yml``.

    Raises:
        ValueError: Unknown name, missing file, or an invalid file (naming file and field).
    """
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith((".yaml", ".yml")):
        return Organization.from_yaml(Path(name_or_path))
    return Organization.from_yaml(organization_path(text))
