"""Pictures of the house: the pygame renderer and window, the world, side panel,
bubbles, boxes and style, the team overlay, ANSI text and video recording.

Names are imported on first use (``import orgteams.envs`` stays light).
"""

from orgteams.lazy import lazy_exports

__all__ = ["EpisodeVideo", "Overlay", "PygameRenderer", "Speech", "record_episode",
           "render_ansi", "render_frame", "save_frame", "window_closed", "window_renderer"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "EpisodeVideo": "orgteams.envs.render.video",
    "Overlay": "orgteams.envs.render.overlay",
    "PygameRenderer": "orgteams.envs.render.renderer",
    "Speech": "orgteams.envs.render.overlay",
    "record_episode": "orgteams.envs.render.video",
    "render_ansi": "orgteams.envs.render.ansi",
    "render_frame": "orgteams.envs.render.renderer",
    "save_frame": "orgteams.envs.render.video",
    "window_closed": "orgteams.envs.render.renderer",
    "window_renderer": "orgteams.envs.render.renderer",
})
