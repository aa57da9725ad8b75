"""examples/jax_ippo.py: masked IPPO in one jitted function on household_v0.jax_env."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="needs the jax extra")
pytest.importorskip("optax", reason="needs optax (pip install optax)")

EXAMPLE = Path(__file__).parents[2] / "examples" / "jax_ippo.py"


@pytest.fixture(scope="module")
def ippo():
    spec = importlib.util.spec_from_file_location("jax_ippo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["jax_ippo"] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    yield module
    del sys.modules["jax_ippo"]


def test_a_tiny_run_trains_evaluates_and_writes_its_curve(ippo, tmp_path):
    """Three updates of four households end to end (about 20 s here, most of it
    compiling), held-out evaluation, results.json and curve.png."""
    result = ippo.main(["--updates", "3", "--envs", "4", "--ticks", "8", "--episodes", "16",
                        "--eval-episodes", "6", "--log-every", "1", "--out", str(tmp_path)])
    assert result["agent_steps"] == 3 * 4 * 8 * 2
    stored = json.loads((tmp_path / "results.json").read_text())
    assert stored["agent_steps"] == result["agent_steps"]
    assert len(stored["curve"]["success"]) == 3 and len(stored["curve"]["return"]) == 3
    # Every held-out household plays its first episode to the end (80 ticks at most).
    assert stored["held_out"]["episodes"] == 6
    assert 0 <= stored["held_out"]["successes"] <= 6
    png = tmp_path / "curve.png"
    if importlib.util.find_spec("matplotlib") is not None:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size < 200_000


def test_the_policy_samples_only_valid_actions(ippo):
    """Masked logits: thousands of samples, none outside the env's mask."""
    env = ippo.easy_env(episodes=8)
    keys = jax.random.split(jax.random.PRNGKey(0), 16)
    obs, state = jax.vmap(env.reset)(keys)
    x = np.concatenate([np.asarray(obs[a]) for a in env.agents])
    masks = jax.vmap(env.get_avail_actions)(state)
    mask = np.concatenate([np.asarray(masks[a]) for a in env.agents])
    params = ippo.init_params(jax.random.PRNGKey(1), x.shape[1], 8, 53)
    logp, value = ippo.policy(params, x, mask)
    assert value.shape == (32,)
    actions = np.asarray(jax.random.categorical(jax.random.PRNGKey(2), logp, shape=(500, 32)))
    assert mask[np.arange(32), actions].all()
    assert (mask == 0).any()  # some actions were masked to begin with
    assert np.isfinite(np.asarray(logp)[mask > 0]).all()
