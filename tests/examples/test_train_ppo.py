"""examples/train_ppo.py: its vector env and a short training run (slow)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from doubles import load_script, log_dicts

pytest.importorskip("sb3_contrib", reason="needs the rl extra")

EXAMPLE = Path(__file__).parents[2] / "examples" / "train_ppo.py"


@pytest.fixture(scope="module")
def train_ppo():
    return load_script(EXAMPLE)


def test_scalar_path_and_batched_core_play_the_same_episodes(train_ppo):
    """Same seed, same actions: the two vector envs the example can train on agree at
    every tick, episode ends and restarts included."""
    kw = {**train_ppo.EASY, "max_ticks": 7}
    scalar, batched = (train_ppo.make_vec_env(core, 3, seed=21, **kw)
                       for core in ("scalar", "batched"))
    assert type(batched).__name__ == "AgentVecEnv" and batched.num_envs == scalar.num_envs == 6
    assert np.array_equal(scalar.reset(), batched.reset())
    rng = np.random.default_rng(1)
    for _ in range(30):
        masks = scalar.action_masks()
        assert np.array_equal(masks, batched.action_masks())
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        s_obs, s_rew, s_done, s_info = scalar.step(actions)
        b_obs, b_rew, b_done, b_info = batched.step(actions)
        assert np.array_equal(s_obs, b_obs) and np.array_equal(s_done, b_done)
        assert np.allclose(s_rew, b_rew)
        for s, b in zip(s_info, b_info):
            if "terminal_observation" in s:
                assert np.array_equal(s["terminal_observation"], b["terminal_observation"])
                assert s["TimeLimit.truncated"] == b["TimeLimit.truncated"]
                assert s["episode"]["r"] == pytest.approx(b["episode"]["r"])
    with pytest.raises(ValueError, match=re.escape("core must be 'scalar' or 'batched', "
                                                   "got 'gpu'")):
        train_ppo.make_vec_env("gpu", 1)
    with pytest.raises(ValueError, match=re.escape("obs_dtype must be one of ('float32', "
                                                   "'uint8'), got 'float16'")):
        train_ppo.make_vec_env("batched", 1, obs_dtype="float16")
    with pytest.raises(ValueError, match=re.escape("obs_dtype='uint8' is for core='batched'; "
                                                   "the scalar path gives float32")):
        train_ppo.make_vec_env("scalar", 1, obs_dtype="uint8")


@pytest.mark.parametrize("net", ["cells", "mlp"])
def test_uint8_observations_train_the_same_model_as_float32(train_ppo, net):
    """The example's learner on the batched core's raw uint8 observations ends with the
    same parameters, bit for bit, as on float32 ones, and acts the same on the scalar
    env's float observations once they are turned into raw values (what evaluation does)."""
    import torch

    kw = {**train_ppo.EASY, "max_ticks": 9}
    models = {}
    for dtype in ("float32", "uint8"):
        venv = train_ppo.make_vec_env("batched", 2, seed=3, obs_dtype=dtype, **kw)
        model, _ = train_ppo.make_model(venv, net, ppo_kwargs={"n_steps": 16,
                                                               "batch_size": 32})
        assert type(model.rollout_buffer).__name__ == "GatherRolloutBuffer"
        model.learn(2 * 4 * 16)
        models[dtype] = model
    params = {k: torch.cat([p.detach().flatten() for p in m.policy.parameters()])
              for k, m in models.items()}
    assert torch.equal(params["float32"], params["uint8"])
    scalar = train_ppo.ScalarAgentVecEnv(2, seed=50, **kw)
    obs, masks = scalar.reset(), scalar.action_masks()
    raw = train_ppo.to_uint8(obs, models["uint8"].observation_space.high)
    acts = {k: m.predict(o, action_masks=masks, deterministic=True)[0]
            for (k, m), o in zip(models.items(), (obs, raw))}
    assert np.array_equal(acts["float32"], acts["uint8"])
    values = {k: m.policy.predict_values(m.policy.obs_to_tensor(o)[0])
              for (k, m), o in zip(models.items(), (obs, raw))}
    assert torch.equal(values["float32"], values["uint8"])


@pytest.mark.slow
@pytest.mark.parametrize("core,obs_dtype", [("scalar", "float32"), ("batched", "uint8")])
def test_a_short_training_run_writes_its_curve_and_results(train_ppo, tmp_path, core,
                                                           obs_dtype):
    result = train_ppo.train(4096, tmp_path, copies=2, eval_every=2048, eval_episodes=2,
                             core=core, obs_dtype=obs_dtype)
    assert result["timesteps"] >= 4096 and result["core"] == core
    assert result["obs_dtype"] == obs_dtype
    assert 0 < result["train_cpu_seconds"] <= result["cpu_seconds"]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["held_out_success"] == result["held_out_success"]
    assert 0.0 <= saved["held_out_success"] <= 1.0
    assert [c[0] for c in saved["curve"]][:2] == [2048, 4096] or len(saved["curve"]) >= 2
    assert (tmp_path / "curve.png").stat().st_size > 1000
    assert (tmp_path / "model.zip").exists()
    assert saved["machine"] == train_ppo.machine()
    # model.json beside a float32 model seats it in a team run (none for raw uint8 ones)
    assert (tmp_path / "model.json").exists() == (obs_dtype == "float32")
    if obs_dtype == "float32":
        from orgteams import run_episode

        team = run_episode(task="put_dishwasher_easy", layout="studio", organization="leader",
                           agents=2, backend=f"planner,policy:{tmp_path / 'model.zip'}",
                           seed=0, max_ticks=5, log_path=None)
        assert team.summary["ticks"] == 5
        assert sum(r.get("kind") == "action" and r["agent"] == "agent_1" and r["fallback"]
                   is None for r in log_dicts(team.records)) == 5


def test_machine_names_the_libraries_and_cpu_kernels_in_use(train_ppo):
    import sb3_contrib
    import torch

    found = train_ppo.machine()
    assert found["torch"] == torch.__version__
    assert found["sb3-contrib"] == sb3_contrib.__version__
    assert found["numpy"] == np.__version__
    assert found["cpu_capability"] == torch.backends.cpu.get_cpu_capability()


def test_machine_records_kernels_forced_by_the_environment(train_ppo):
    import torch

    if torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"):
        pytest.skip("forcing AVX2 kernels needs an x86 CPU that has them")
    # A run with torch's AVX2 kernels forced is another run (docs/rl-examples.md):
    # results.json must tell it apart from the default kernels.
    code = ("import importlib.util, json; s = importlib.util.spec_from_file_location("
            f"'t', {str(EXAMPLE)!r}); m = importlib.util.module_from_spec(s); "
            "s.loader.exec_module(m); print(json.dumps(m.machine()))")
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2"}
    env.pop("MKL_ENABLE_INSTRUCTIONS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    found = json.loads(out)
    assert found["cpu_capability"] == "AVX2" and found["ATEN_CPU_CAPABILITY"] == "avx2"
    assert "MKL_ENABLE_INSTRUCTIONS" not in found


def test_the_command_line_baseline_and_plot(train_ppo, tmp_path, capsys):
    train_ppo.main(["--random", "--random-passes", "2", "--episodes", "3"])
    line = capsys.readouterr().out
    assert re.fullmatch(r"masked random: held-out success \d\.\d{3} \(mean of 2 passes over "
                        r"3 episodes; passes \d\.\d\d-\d\.\d\d\)\n", line)
    runs = []
    for core, copies in (("scalar", 8), ("batched", 64)):
        path = tmp_path / f"{core}.json"
        path.write_text(json.dumps({"core": core, "seed": 0, "copies": copies,
                                    "ppo": {"n_steps": 32},
                                    "curve": [[1000, 0.1, 5.0], [2000, 0.9, 9.0]]}))
        runs.append(str(path))
    train_ppo.main(["--plot", *runs, "--out", str(tmp_path / "fig")])
    assert (tmp_path / "fig" / "curve.png").stat().st_size > 1000


@pytest.mark.parametrize("argv, line", [
    # each failed deep inside the run: min() of no passes, a division by zero episodes,
    # an index into no env copies, a "-0.0 s" line after 0 agent-steps
    (["--random", "--random-passes", "0"], "argument --random-passes: must be positive, got 0"),
    (["--random", "--episodes", "0"], "argument --episodes: must be positive, got 0"),
    (["--copies", "0"], "argument --copies: must be positive, got 0"),
    (["--timesteps", "0"], "argument --timesteps: must be positive, got 0"),
    (["--obs-dtype", "uint8"],
     "--obs-dtype uint8 needs --core batched (the scalar path gives float32)"),
])
def test_bad_counts_are_one_line_before_anything_runs(train_ppo, capsys, argv, line):
    with pytest.raises(SystemExit) as stop:
        train_ppo.main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f": error: {line}")  # prog: argv[0]


def test_plot_names_a_file_it_cannot_draw(train_ppo, tmp_path):
    """--plot read each file with json.loads(path.read_text()) and indexed it: a missing
    file, a file that is not JSON or not a run's results.json was a traceback."""
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"core": "scalar", "seed": 0, "copies": 8, "curve": []}))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    for path, line in [
            (tmp_path / "nope.json", f"{tmp_path / 'nope.json'}: No such file or directory"),
            (broken, f"{broken}: not JSON (Expecting property name enclosed in double "
                     "quotes: line 1 column 2 (char 1))"),
            (other, f"{other}: not a results.json of train_ppo.py (no ppo)")]:
        with pytest.raises(SystemExit) as stop:
            train_ppo.main(["--plot", str(path), "--out", str(tmp_path / "fig")])
        assert stop.value.code == line
    assert not (tmp_path / "fig" / "curve.png").exists()


@pytest.mark.slow
def test_the_batched_core_trains_without_a_read_only_array_warning(tmp_path):
    """`train_ppo.py --core batched` printed torch's "The given NumPy array is not
    writable ... undefined behavior" warning: the core's observations are read-only on
    purpose and nothing writes into them. (A subprocess: torch warns once per process.)"""
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--core", "batched", "--timesteps", "512",
         "--copies", "2", "--n-steps", "128", "--batch-size", "128", "--eval-every", "512",
         "--episodes", "1", "--random-passes", "1", "--out", str(tmp_path)],
        capture_output=True, text=True, check=True)
    assert "trained: held-out success" in done.stdout
    assert "Warning" not in done.stderr, done.stderr
