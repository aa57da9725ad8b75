"""The build backend: setuptools' own, with the editable install's finder put first.

``pip install -e .`` maps ``orgteams.envs`` to ``envs/`` (and so on) with a meta path
finder that setuptools *appends* to ``sys.meta_path``. A folder named ``orgteams`` in
the working directory (the clone itself, seen from the folder that contains it) is
then found first, by the ordinary path finder, as an empty namespace package:
``from orgteams import run_episode`` fails with "cannot import name ... (unknown
location)" (setuptools warns about it; pypa/setuptools#3557). The finder only answers
for ``orgteams`` and its subpackages, so putting it first changes nothing else.
Everything else (``pip install .``, sdists, wheels) is setuptools unchanged.
"""

from __future__ import annotations

import warnings

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the PEP 517/660 hooks)

_APPEND = "sys.meta_path.append(_EditableFinder)"
_FIRST = "sys.meta_path.insert(0, _EditableFinder)"


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660 hook: setuptools' editable wheel, its finder installed first."""
    try:
        from setuptools.command import editable_wheel
    except ImportError:  # a setuptools without the module: its default behaviour
        editable_wheel = None
    template = getattr(editable_wheel, "_FINDER_TEMPLATE", "")
    if _APPEND in template:
        editable_wheel._FINDER_TEMPLATE = template.replace(_APPEND, _FIRST)
    else:
        warnings.warn("orgteams build backend: this setuptools writes its editable finder "
                      "differently; a folder named 'orgteams' in the working directory may "
                      "hide the install", stacklevel=1)
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
