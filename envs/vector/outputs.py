"""Copies of the observation buffer, in arrays recycled once the caller has let go.

With ``copy=True`` every ``step`` hands out an array of its own (Gymnasium's copy
semantics: it never changes under the caller). Allocating it anew each tick costs
more than filling it: 107 MB at 1,024 households of 3 (430 MB at 4,096) are fresh
pages every tick, and each first touch is a page fault the kernel serves by zeroing
the page (numpy asks for transparent huge pages on such arrays; when the host has no
free huge page at hand, the faults fall back to 4 KB pages and the tick's time goes
to the kernel: ``benchmarks/README.md``). :class:`OutputPool` keeps a few arrays
and copies into one that nobody outside the pool refers to any more: no
reference, no view (a view refers to its base), no buffer export (a memoryview or a
``torch.from_numpy`` tensor refers to it), no weak reference. An array the caller
still holds is never written; when every kept array is held, the copy goes to a new
array.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np


def _refs(arrays: list[np.ndarray], i: int) -> int:
    """References to ``arrays[i]``, counted the same way for the probe and the pool."""
    return sys.getrefcount(arrays[i])


# What _refs reads for an array that only its list refers to (measured, not assumed:
# interpreters differ in what the call itself holds).
_ONLY_THE_LIST = _refs([np.empty(0)], 0)


class OutputPool:
    """Hands out copies of one array shape, reusing the arrays the caller dropped."""

    def __init__(self, keep: int = 2):
        """``keep``: the most arrays kept for reuse (2 serve a loop that holds the last
        observations while it asks for the next)."""
        self.keep = keep
        self.arrays: list[np.ndarray] = []

    def copy(self, src: np.ndarray) -> np.ndarray:
        """A copy of ``src`` in an array no one else refers to (same shape and dtype)."""
        for i in range(len(self.arrays)):
            if _refs(self.arrays, i) == _ONLY_THE_LIST \
                    and not weakref.getweakrefcount(self.arrays[i]):
                out = self.arrays[i]
                if out.shape == src.shape and out.dtype == src.dtype:
                    out.flags.writeable = True  # the caller may have frozen it
                    np.copyto(out, src)
                    return out
        out = src.copy()
        if len(self.arrays) < self.keep:
            self.arrays.append(out)
        return out


__all__ = ["OutputPool"]
