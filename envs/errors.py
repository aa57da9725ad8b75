"""The one exception type for bad user input, shared by every layer.

``UserError`` means "what the user gave us is wrong": an unknown name, a malformed
layout, task, organization or sweep file, an out-of-range option. The CLI prints it as
one line and exits 2. Anything else that escapes is our bug and keeps its traceback.
It subclasses ``ValueError`` so callers that catch ``ValueError`` keep working.
"""

from __future__ import annotations


class UserError(ValueError):
    """Bad input from the user (a file, an option, a name); the message says where."""


class MissingExtraError(UserError, ImportError):
    """A feature the user asked for needs an optional extra that is not installed.

    The message carries the install hint (``pip install 'orgteams[render]'``). It is
    also an ``ImportError``, so code that tries an import and falls back keeps working.
    """
