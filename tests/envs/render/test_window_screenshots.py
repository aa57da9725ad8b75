"""docs/window_screenshots.py makes the docs' window pictures from real runs: a watched
run paused at a round, and the player's T box (the pictures the README shows)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pygame")
PIL = pytest.importorskip("PIL.Image")

from orgteams.envs.render.renderer import PygameRenderer  # noqa: E402

SCRIPT = Path(__file__).parents[3] / "docs" / "window_screenshots.py"


@pytest.fixture(scope="module")
def shots():
    spec = importlib.util.spec_from_file_location("window_screenshots", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_watched_run_is_paused_at_its_round(shots, tmp_path):
    render = PygameRenderer.render
    path = shots.watched_shot("watched.png", 3, "apartment", "leader", "round 2 - act",
                              tmp_path)
    assert PygameRenderer.render is render  # put back for everything after it
    picture = np.asarray(PIL.open(path).convert("RGB"))
    assert picture.shape == (680, 1326, 3)
    assert len(np.unique(picture.reshape(-1, 3), axis=0)) > 20  # a drawn frame, not blank


def test_a_round_the_run_never_reaches_is_one_line(shots, tmp_path):
    with pytest.raises(SystemExit, match=re.escape(
            "never.png: the run never showed 'round 99 - act'")):
        shots.watched_shot("never.png", 2, "studio", "leader", "round 99 - act", tmp_path)
    assert not (tmp_path / "never.png").exists()
    assert PygameRenderer.render.__name__ == "render"


def test_the_talk_box_picture(shots, tmp_path):
    path = shots.talk_shot(tmp_path)
    assert path.name == "play_talk.png"
    assert np.asarray(PIL.open(path)).shape[:2] == (680, 984)
