"""Learner-side pieces for training SB3 on the batched core's flat observations.

* :class:`GatherRolloutBuffer`: sb3-contrib's ``MaskableRolloutBuffer`` flattens the
  whole ``(n_steps, n_envs, D)`` observation array into ``(n_envs * n_steps, D)``
  order before the first minibatch (one copy of the rollout), gathers each minibatch
  from it (a second), and turns that into a tensor with ``torch.tensor`` (a third).
  With the example's 4,812-entry flat observations those copies were about a quarter
  of collecting a rollout (``benchmarks/README.md``, "RL throughput"). This buffer
  gathers each minibatch's observations straight from the unflattened array and hands
  the gathered arrays (fresh copies already) to torch without copying them again. Its
  minibatches are the same rows in the same order, from the same draws of numpy's
  global generator, so a training run is the same bit for bit. Use it with
  ``MaskablePPO(..., rollout_buffer_class=GatherRolloutBuffer)``.
* :class:`RawScale`: a torch module for a features extractor's first step that turns
  the core's raw uint8 observations (``obs_dtype=np.uint8``: each entry
  ``round(x * flat_scale)``, a quarter of the bytes to store and copy) back into the
  float32 entries ``x``, bit for bit (``raw * (1 / high)``, as the env scales them).

``tests/envs/vector/test_vector_sb3.py`` checks both against training on float32
observations with sb3-contrib's buffer. Needs the ``rl`` extra; nothing in the core
imports this module.
"""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer
from sb3_contrib.common.maskable.buffers import MaskableRolloutBufferSamples as Samples
from torch import nn

# Everything but the observations: small per entry, flattened once as sb3-contrib does.
_FLATTENED = ("actions", "values", "log_probs", "advantages", "returns", "action_masks")


class GatherRolloutBuffer(MaskableRolloutBuffer):
    """``MaskableRolloutBuffer`` whose minibatches gather observations from the
    ``(n_steps, n_envs, ...)`` array as it was filled (module docstring)."""

    def get(self, batch_size: int | None = None
            ) -> Generator[Samples, None, None]:
        """Minibatches of ``batch_size`` entries (all at once for None) in a random
        order, as ``MaskableRolloutBuffer.get``."""
        if not self.full:
            raise RuntimeError("the rollout buffer is read before it is full")
        total = self.buffer_size * self.n_envs
        indices = np.random.permutation(total)  # the same draw as sb3-contrib's buffer
        if not self.generator_ready:
            for name in _FLATTENED:
                self.__dict__[name] = self.swap_and_flatten(self.__dict__[name])
            self.generator_ready = True
        batch_size = total if batch_size is None else batch_size
        for start in range(0, total, batch_size):
            yield self._get_samples(indices[start:start + batch_size])

    def _get_samples(self, batch_inds: np.ndarray, env: object = None
                     ) -> Samples:
        # Flattened entry j is env j // n_steps at step j % n_steps (swap_and_flatten).
        step, entry = batch_inds % self.buffer_size, batch_inds // self.buffer_size
        data = (self.observations[step, entry], self.actions[batch_inds],
                self.values[batch_inds].flatten(), self.log_probs[batch_inds].flatten(),
                self.advantages[batch_inds].flatten(), self.returns[batch_inds].flatten(),
                self.action_masks[batch_inds].reshape(-1, self.mask_dims))
        # Fancy indexing and flatten() made fresh arrays: torch may share them.
        return Samples(*(torch.as_tensor(a, device=self.device)
                                              for a in data))


class RawScale(nn.Module):
    """``obs * (1 / space.high)`` for a uint8 ``Box`` (the batched core's raw flat
    observations); float spaces pass through untouched."""

    def __init__(self, space: spaces.Box):
        super().__init__()
        self.raw = space.dtype == np.uint8
        if self.raw:  # float32 1 / scale: the env's own inverse scale
            self.register_buffer("inverse", torch.as_tensor(
                np.float32(1) / space.high.astype(np.float32)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return obs * self.inverse if self.raw else obs


__all__ = ["GatherRolloutBuffer", "RawScale"]
