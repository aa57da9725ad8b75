"""The episode log's lines are typed records: one writer, one reader, the same bytes.

``logs/written_before_typed_lines.jsonl`` was written by ``orgteams run`` before the
lines were typed (main at 9de226c: ``--layout studio --org leader --backend planner
--seed 0 --max-rounds 4 --shock remove:agent_1@3 --shock priority:put_fridge@1``); it
holds every kind of line a run writes, turns that sent several messages, a world line
and two shocks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orgteams.agents.records import ActionLine, DecisionLine, MessageLine
from orgteams.envs.highlevel.space import ActionId
from orgteams.organizations.rounds.episode_log import (
    EndLine,
    EpisodeLine,
    EpisodeLog,
    EventLine,
    PlaySummary,
    TickLine,
    UnknownLine,
    WorldLine,
    line_dict,
    parse_line,
    read_log,
)
from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.replay import replay
from orgteams.run import run_episode

OLD = Path(__file__).parent / "logs" / "written_before_typed_lines.jsonl"
NEWER_KEYS = frozenset({  # #27: lambda 2 variants, message reach, abstention kinds
    "algebraic_connectivity_binary", "algebraic_connectivity_per_tick",
    "message_reach_depth", "mid_task_abstentions", "end_of_task_abstentions",
    "mid_task_abstention_rate"})


def test_a_log_written_before_typed_lines_reads_typed_writes_back_and_replays():
    lines = list(read_log(OLD))
    texts = OLD.read_text(encoding="utf-8").splitlines()
    assert {type(x) for x in lines} == {EpisodeLine, MessageLine, ActionLine, TickLine,
                                        EventLine, WorldLine, EndLine, EpisodeSummary}
    assert [json.dumps(line_dict(x)) for x in lines] == texts  # byte for byte
    later = [x for x in lines if isinstance(x, MessageLine) and not x.first]
    assert len(later) == 7 and all(x.call.usage.total == 0 and not x.call.prompt
                                   for x in later)  # a turn's later messages
    acted = [x for x in lines if isinstance(x, ActionLine)]
    assert all(type(x.action) is ActionId for x in acted)
    said = [x.message for x in lines if isinstance(x, MessageLine) and x.message]
    assert said and {m.kind for m in said} <= {"status", "found", "assign", "done", "claim"}
    assert all(m.sender in ("agent_0", "agent_1", "agent_2") and m.delivered is not None
               for m in said)
    shocks = [(x.type, x.get("kind")) for x in lines if isinstance(x, EventLine)]
    assert shocks == [("shock", "priority"), ("shock", "remove")]
    summary = lines[-1]
    assert (summary.ticks, summary.success, summary.units_done) == (19, False, 1)
    assert summary.complete and summary.extra == {}
    assert summary.absent_keys == NEWER_KEYS  # fields added after it was written
    result = replay(OLD, render=None)
    assert (result.matches, result.ticks, result.problem) == (True, 19, "")


def test_what_an_episode_keeps_in_memory_is_what_its_log_reads_back(tmp_path):
    log = tmp_path / "ep.jsonl"
    result = run_episode(layout="studio", organization="elected_leader", agents=3,
                         backend="scripted,planner,planner", seed=3, max_rounds=4,
                         shocks=["remove:agent_2@2"], log_path=log)
    read = list(read_log(log))
    assert not [x for x in read if isinstance(x, UnknownLine)]
    kept = [x for x in read if isinstance(x, DecisionLine | EventLine)]
    assert [line_dict(x) for x in kept] == [line_dict(x) for x in result.records]
    assert [type(x) for x in kept] == [type(x) for x in result.records]
    assert {x.type for x in kept if isinstance(x, EventLine)} >= {"election", "shock"}
    assert read[-1].to_dict() == result.summary.to_dict()  # the summary line
    assert line_dict(read[-1]) == {"record": "summary", **result.summary.to_dict()}
    assert list(result.summary.to_dict()) == EpisodeSummary.keys()[:-1]  # no video


def test_a_line_of_another_version_reads_without_loss():
    """Unknown kinds and keys never crash the reader; what it cannot type is kept raw."""
    future = {"record": "telemetry", "round": 2, "gpu": 0.5}
    unknown = parse_line(future)
    assert isinstance(unknown, UnknownLine) and line_dict(unknown) == future
    assert unknown.problem == "unknown record kind 'telemetry'"
    newer = {"round": 1, "tick": 4, "agent": "agent_0", "phase": "act", "kind": "action",
             "action": "wait", "thoughts": "", "status": "done", "failure_reason": "",
             "events": [], "ticks_elapsed": 1, "model": "planner", "confidence": 0.9}
    line = parse_line(newer)
    assert isinstance(line, ActionLine) and line.extra == {"confidence": 0.9}
    assert line_dict(line)["confidence"] == 0.9  # written back, after the known keys
    older = {"round": 0, "tick": 0, "agent": "agent_1", "phase": "communicate",
             "kind": "message", "message": "hi", "receivers": "everyone",
             "delivered": ["agent_0"], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    line = parse_line(older)  # no message_kind, dropped, options, notes or wall yet
    assert isinstance(line, MessageLine) and line.message.kind == "text"
    assert (line.message.receivers, line.message.delivered) == ("everyone", ("agent_0",))
    assert line.dropped == [] and line.call.options == [] and line.message_tokens is None
    bad = {**older, "message_kind": "shout"}
    assert parse_line(bad).problem == ("ValueError: message kind 'shout' must be one of claim, "
                                       "release, found, assign, done, status, correct, text, "
                                       "action")
    assert parse_line({"message": "no phase"}).problem == ("no 'record' and no 'phase': not a "
                                                           "line kind")


def test_summaries_of_older_and_newer_writers_read_and_write_back_the_same_keys():
    old = {"record": "summary", "success": True, "ticks": 40, "comm_tokens_per_step": 1.5,
           "stop_reason": "goal met"}
    summary = parse_line(old)
    assert isinstance(summary, EpisodeSummary) and summary.rounds is None
    assert line_dict(summary) == old and summary.complete  # no status recorded: complete
    assert not summary.has("episode_status") and summary.has("ticks")
    assert summary.value("rounds") is None and summary.value("ticks") == 40
    grown = summary.with_values(rounds=12)
    assert grown.to_dict() == {"success": True, "ticks": 40, "rounds": 12,
                               "comm_tokens_per_step": 1.5, "stop_reason": "goal met"}
    newer = EpisodeSummary.from_dict({**old, "episode_status": "error", "carbon_g": 2.5})
    assert newer.extra == {"carbon_g": 2.5} and newer.value("carbon_g") == 2.5
    assert not newer.complete and list(newer.to_dict())[-1] == "carbon_g"
    play = parse_line({"record": "summary", "ticks": 3, "success": False, "player": "agent_0",
                       "messages_sent": 1})
    assert isinstance(play, PlaySummary) and not play.has("units_done")
    assert line_dict(play) == {"record": "summary", "ticks": 3, "success": False,
                               "player": "agent_0", "messages_sent": 1}


def test_the_writer_keeps_decision_and_event_lines_in_memory_only(tmp_path):
    log = EpisodeLog(tmp_path / "ep.jsonl")
    event = EventLine(round=0, tick=0, type="small_team", data={"message": "too small"})
    log.write(EpisodeLine(seed=1, organization="leader", agents=["agent_0"],
                          names=["Alice"], initial_state={}))
    log.write(event)
    log.write(TickLine(round=0, tick=1, actions=[0]))
    log.write(EndLine(tick=1, digest="0" * 16))
    log.close()
    assert log.records == [event]
    assert [type(x) for x in read_log(tmp_path / "ep.jsonl")] == [EpisodeLine, EventLine,
                                                                  TickLine, EndLine]


def test_run_json_is_the_summary_line_and_the_metrics_aggregate_summaries(tmp_path, capsys):
    from orgteams.cli.main import main
    from orgteams.organizations.metrics.episode_metrics import aggregate

    log = tmp_path / "ep.jsonl"
    assert main(["run", "--layout", "studio", "--backend", "planner", "--max-rounds", "3",
                 "--seed", "1", "--log", str(log), "--quiet", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    summary = list(read_log(log))[-1]
    assert isinstance(summary, EpisodeSummary)
    assert list(printed) == list(summary.to_dict()) and printed == json.loads(
        json.dumps(summary.to_dict()))
    other = run_episode(layout="studio", backend="planner", max_rounds=3, seed=2,
                        log_path=None).summary
    out = aggregate([summary, other])  # a summary is the episode's metrics and more
    assert out["episodes"] == 2 and out["all_episodes"]["ticks"]["mean"] == (
        summary.ticks + other.ticks) / 2


def test_a_summary_reads_by_key_as_its_json_object_does():
    from orgteams.run import run_episode

    summary = run_episode(task="prepare_afternoon_tea", layout="studio", organization="leader",
                          agents=2, backend="planner", seed=0, log_path=None).summary
    as_json = summary.to_dict()
    assert summary["ticks"] == summary.ticks == as_json["ticks"]
    assert summary.get("stop_reason") == as_json["stop_reason"] == "goal met"
    assert summary.get("video") is None and summary.get("video", "none") == "none"
    with pytest.raises(KeyError, match="video"):
        summary["video"]
