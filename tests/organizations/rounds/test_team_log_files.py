"""One log file, one episode: reruns replace it, a killed run leaves a readable .partial."""

from __future__ import annotations

from doubles import read_dicts

from orgteams.cli.main import main
from orgteams.organizations.rounds.episode_log import EpisodeLine, EpisodeLog, EventLine, read_log


def test_same_log_twice_holds_one_episode_that_replays(tmp_path, capsys):
    log = tmp_path / "same.jsonl"
    argv = ["run", "--layout", "studio", "--backend", "planner", "--max-rounds", "3",
            "--log", str(log), "--quiet", "--json"]
    assert main(argv) == 0
    first = list(read_dicts(log))
    assert main([*argv[:-2], "--seed", "1", "--quiet", "--json"]) == 0
    records = list(read_dicts(log))
    assert [r.get("record") for r in records].count("episode") == 1
    assert [r.get("record") for r in records].count("summary") == 1
    assert records[0]["seed"] == 1 and first[0]["seed"] == 0
    assert not log.with_name("same.jsonl.partial").exists()
    capsys.readouterr()
    assert main(["replay", str(log), "--no-window"]) == 0
    assert "matches the log" in capsys.readouterr().out


def test_killed_run_leaves_a_readable_partial_and_the_old_log(tmp_path):
    path = tmp_path / "ep.jsonl"
    path.write_text('{"record": "episode", "seed": 0}\n')  # an older, finished episode
    log = EpisodeLog(path)
    line = EventLine(round=0, tick=0, type="small_team", data={"message": "one agent"})
    log.write(line)
    log.flush()  # end of round 0; then kill -9: close() never runs
    partial = tmp_path / "ep.jsonl.partial"
    written = {"record": "event", "round": 0, "tick": 0, "type": "small_team",
               "message": "one agent"}
    assert list(read_dicts(partial)) == [written]
    assert list(read_log(partial)) == [line]
    old = next(read_log(path))  # untouched; its missing fields read as None
    assert isinstance(old, EpisodeLine) and (old.seed, old.agents) == (0, None)
    assert list(read_dicts(path)) == [{"record": "episode", "seed": 0, "organization": None,
                                       "agents": None, "names": None, "initial_state": None}]
    log.close()
    assert not partial.exists()
    assert list(read_dicts(path)) == [written]


def test_bad_instruction_template_writes_no_log(tmp_path, capsys):
    org = tmp_path / "bad.yaml"
    org.write_text('name: bad\ninstruction: "Hello {{ nope }}"\n')
    log = tmp_path / "run" / "episode.jsonl"
    assert main(["run", "--org", str(org), "--layout", "studio", "--backend", "planner",
                 "--log", str(log), "--quiet"]) == 2
    assert "field 'instruction': 'nope' is undefined" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # validated before anything was written


def test_replay_reads_the_partial_log_of_a_killed_run(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["run", "--layout", "studio", "--backend", "planner", "--max-rounds", "3",
                 "--log", str(run / "episode.jsonl"), "--quiet", "--json"]) == 0
    (run / "episode.jsonl").rename(run / "episode.jsonl.partial")  # as kill -9 leaves it
    lines = (run / "episode.jsonl.partial").read_text().splitlines()
    (run / "episode.jsonl.partial").write_text("\n".join(lines[:-3]) + "\n")  # no end line
    capsys.readouterr()
    assert main(["replay", str(run), "--no-window"]) == 0
    out = capsys.readouterr()
    assert "not checked" in out.out and "without an end line" in out.err
