"""What a PPO learner must compute per agent-step, and this machine's best rates for it.

Used by ``rl_throughput.py`` to say whether a training loop can come within a given
factor of the env's raw rate at all: the loop's time per agent-step is at least the
env's plus the learner's arithmetic at the machine's best matrix-multiply rate (and
its input bytes at the best copy rate), however little overhead is left.

Per agent-step, an on-policy learner with ``n_epochs`` passes runs one forward pass
while collecting and ``n_epochs`` forward + backward passes while learning. A
backward pass costs about twice a forward (the gradient of the inputs and of the
weights, each a product of the forward's size; the first layer needs only the
weights'), so ``flops = 2 * macs * (1 + 3 * n_epochs)``. The bytes: the observation
is read by each forward pass and again by the first layer's weight gradient, as
float32 (``4 * D * (1 + 2 * n_epochs)``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import cpu_slice  # noqa: E402


def forward_macs(policy, observation_space) -> int:
    """Multiply-accumulates of one forward pass of ``policy`` (an SB3 policy) on one
    observation, counted by hooks on every ``nn.Linear`` (a layer applied per cell
    counts once per cell)."""
    import torch
    from torch import nn

    total = [0]

    def count(module: nn.Linear, inputs, _output) -> None:
        rows = inputs[0].numel() // module.in_features
        total[0] += rows * module.in_features * module.out_features

    hooks = [m.register_forward_hook(count) for m in policy.modules()
             if isinstance(m, nn.Linear)]
    try:
        obs, _ = policy.obs_to_tensor(observation_space.sample()[None])
        with torch.no_grad():
            policy.evaluate_actions(obs, torch.zeros(1, dtype=torch.long))
    finally:
        for h in hooks:
            h.remove()
    return total[0]


def learner_cost(macs: int, obs_entries: int, n_epochs: int) -> tuple[float, float]:
    """(FLOPs, bytes) per agent-step of a learner (module docstring)."""
    return 2 * macs * (1 + 3 * n_epochs), 4 * obs_entries * (1 + 2 * n_epochs)


def machine_rates(seconds: float = 0.5) -> tuple[float, float]:
    """(GFLOP/s of a 1024x1024 float32 matrix product on one torch thread, GB/s of a
    64 MB numpy copy counting read + write): the best of several CPU-time slices."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
        flops = _best(lambda: a @ b, 2 * 1024 ** 3, seconds)
    finally:
        torch.set_num_threads(threads)
    src, dst = np.ones(16 << 20, np.float32), np.empty(16 << 20, np.float32)
    copied = _best(lambda: np.copyto(dst, src), 2 * src.nbytes, seconds)
    return flops / 1e9, copied / 1e9


def _best(call, work: float, seconds: float) -> float:
    """Best ``work`` per CPU second of ``call`` over slices of about ``seconds / 5``."""
    call()

    def step(i: int) -> float:
        call()
        return work

    return max(cpu_slice(step, seconds / 5, 0, batch=1)[0] for _ in range(5))


__all__ = ["forward_macs", "learner_cost", "machine_rates"]
