"""Regenerate the window screenshots of docs/ (team sizes 3 to 256, watched and paused
windows, and the player's view).

Each team shot is the last frame of ``orgteams record --out docs/team_<n>.png``: a
planner team under ``leader`` (``pyramid`` for 9) stopped after a few ticks, when
its members are talking; 64 and 256 agents play on generated houses (the house holds
273 floor cells). The play shot is ``orgteams play --others planner`` on the house
after a short walk out of the first room: the room in view, the room left behind
faded (remembered), the rest dark; ``play_talk.png`` is ``orgteams play --others
scripted`` with the T box open and a line typed. The watched shots (``screenshot.png``: three in the
apartment; ``pyramid9_house.png``: nine under ``pyramid`` on the house) are the live
window of ``orgteams run --render human``, paused by the watcher at a given round and
phase (the panel's caption), with its playback line. PNGs are saved with a 256-colour
palette (small files; the frames are flat colours).

Usage::

    SDL_VIDEODRIVER=dummy python docs/window_screenshots.py [--out docs]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

TEAMS = [  # agents, layout, organization, ticks
    (3, "apartment", "leader", 25),
    (9, "house", "pyramid", 30),
    (16, "house", "leader", 20),
    (32, "house", "leader", 20),
    (64, "generated:16:0", "leader", 20),
    (256, "generated:32:0", "leader", 12),
]


def save_small(picture, path: Path) -> None:
    """A 256-colour PNG of an (H, W, 3) frame."""
    from PIL import Image

    Image.fromarray(picture).quantize(256, dither=Image.Dither.NONE).save(path, optimize=True)


def team_shot(n: int, layout: str, org: str, ticks: int, out: Path) -> Path:
    import imageio.v2 as iio

    from orgteams.run import run_episode

    with tempfile.TemporaryDirectory() as tmp:
        frame = Path(tmp) / "frame.png"
        run_episode(layout=layout, organization=org, agents=n, backend="planner", seed=0,
                    max_ticks=ticks, video=frame, log_path=None)
        path = out / f"team_{n}.png"
        save_small(iio.imread(frame), path)
    return path


WATCHED = [  # file, agents, layout, organization, the caption it is paused at
    ("screenshot.png", 3, "apartment", "leader", "round 2 - act"),
    ("pyramid9_house.png", 9, "house", "pyramid", "round 4 - communicate"),
]


def watched_shot(name: str, n: int, layout: str, org: str, caption: str, out: Path) -> Path:
    """The live window of a planner run (seed 0), paused by the watcher when the panel's
    caption first reads ``caption``: Space pressed, the frame saved, the window closed
    (which stops the run)."""
    from orgteams.envs.render.renderer import PygameRenderer, to_array
    from orgteams.run import run_episode

    path = out / name
    render = PygameRenderer.render

    def render_and_pause(self, state, overlay=None, names=None):
        shown = render(self, state, overlay, names)
        if overlay is not None and overlay.caption == caption and not self.closed:
            self.playback.paused = True  # what Space does
            save_small(to_array(self.pg, self.draw(state, overlay, names)), path)
            self.close()
        return shown

    PygameRenderer.render = render_and_pause
    try:
        run_episode(layout=layout, organization=org, agents=n, backend="planner", seed=0,
                    render="human", fps=1000, hold=False, log_path=None, max_rounds=20)
    finally:
        PygameRenderer.render = render
    if not path.exists():
        raise SystemExit(f"{name}: the run never showed {caption!r}")
    return path


def play_shot(out: Path) -> Path:
    import pygame

    from orgteams.agents.team import display_names
    from orgteams.envs.play.keyboard import PlaySession
    from orgteams.envs.render.renderer import to_array
    from orgteams.play.teammates import PlannerTeammates

    s = PlaySession(layout="house", num_agents=3, teammates=PlannerTeammates(), seed=1,
                    fps=240, display_names=display_names(3))
    # Out of the first room (the bedroom) by its door to the hallway, north.
    world = s.raw.world
    scene = world.scene
    room = scene.room_of_cell[world.agent_pos[0]]
    hallway = scene.layout.rooms.index("hallway")
    door = next(d for d in scene.layout.doors if set(d.rooms) == {room, hallway})
    r, c = divmod(world.agent_pos[0], scene.width)
    (dr, dc) = door.cell
    side = [pygame.K_LEFT if dc < c else pygame.K_RIGHT] * abs(dc - c)
    keys = side + [pygame.K_UP] * (r - dr - 1) + [(pygame.K_UP, pygame.KMOD_SHIFT)] + [
        pygame.K_UP] * 2 + [pygame.K_RIGHT] * 3
    for k in keys:
        k, mod = k if isinstance(k, tuple) else (k, 0)
        s.handle_event(pygame.event.Event(pygame.KEYDOWN, key=k, mod=mod))
        s.tick()
    s._draw(s._status())
    path = out / "play_view.png"
    save_small(to_array(s.renderer.pg, s.renderer._canvas), path)
    s.close()
    return path


def talk_shot(out: Path) -> Path:
    """``orgteams play --others scripted`` on the studio: two ticks, then T opened and a
    line typed to one teammate (``play_talk.png``)."""
    import pygame

    from orgteams.agents.team import display_names
    from orgteams.envs.play.keyboard import PlaySession
    from orgteams.envs.render.renderer import to_array
    from orgteams.play.teammates import MemberTeammates

    s = PlaySession(layout="studio", num_agents=3, teammates=MemberTeammates("scripted"),
                    seed=1, fps=240, display_names=display_names(3))
    for _ in range(2):
        s.handle_event(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_RIGHT, mod=0))
        s.tick()
    s.handle_event(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_t, mod=0))
    s.handle_event(pygame.event.Event(pygame.TEXTINPUT,
                                      text="@Bob take the cupcake, I get the wine"))
    s._draw(s._status())
    path = out / "play_talk.png"
    save_small(to_array(s.renderer.pg, s.renderer._canvas), path)
    s.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parent))
    args = parser.parse_args()
    out = Path(args.out)
    for n, layout, org, ticks in TEAMS:
        print(team_shot(n, layout, org, ticks, out))
    for name, n, layout, org, caption in WATCHED:
        print(watched_shot(name, n, layout, org, caption, out))
    print(play_shot(out))
    print(talk_shot(out))


if __name__ == "__main__":
    main()
