"""The decision-round loop: an episode's state and hooks, the two phases, the runner,
the episode log and status, shocks, the capability monitor and planner teams.

>>> from orgteams.organizations.rounds import TeamRunner, run_team
"""

from orgteams.organizations.rounds.episode import EpisodeState, RoundHooks, play_rounds
from orgteams.organizations.rounds.episode_log import (
    EpisodeLog,
    EventLine,
    LogLine,
    line_dict,
    read_log,
)
from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.organizations.rounds.monitor import MonitorConfig
from orgteams.organizations.rounds.planner_team import everyone_hears_everyone, run_team
from orgteams.organizations.rounds.runner import EpisodeResult, TeamRunner
from orgteams.organizations.rounds.shocks import Shock
from orgteams.organizations.rounds.status import EpisodeStopped

__all__ = ["EpisodeLog", "EpisodeResult", "EpisodeState", "EpisodeStopped", "EpisodeSummary",
           "EventLine", "LogLine", "MonitorConfig", "RoundHooks", "Shock", "TeamRunner",
           "everyone_hears_everyone", "line_dict", "play_rounds", "read_log", "run_team"]
