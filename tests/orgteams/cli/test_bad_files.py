"""A person's file that is not what it should be is one line naming it, exit 2 (issue 24,
"Tracebacks where the promise is one line"): a binary file or a directory given as an
organization, layout, task, sweep spec or log; YAML nested 50,000 deep; a response
cache that is not one."""

from __future__ import annotations

import re
import shutil
import sqlite3

import pytest
from doubles import read_dicts
from test_bad_input import one_line, run_fails  # noqa: E402  (tests/cli is on the path)

from orgteams.assets import asset_dir
from orgteams.cli.main import main
from orgteams.envs.core.limits import MAX_FILE_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES
from orgteams.envs.core.user_files import load_yaml
from orgteams.errors import UserError

BINARY = b"name: x\n\x00\x01\x80\xfe binary\n"
# what each run option expects, as its message says
RUN_FILES = [("--org", "an organization file"), ("--layout", "a layout file"),
             ("--task", "a task file")]


@pytest.mark.parametrize(("flag", "what"), RUN_FILES)
def test_a_binary_file_is_one_line(capsys, tmp_path, monkeypatch, flag, what):
    path = tmp_path / "blob.yaml"
    path.write_bytes(BINARY)
    assert run_fails(capsys, tmp_path, monkeypatch, flag, str(path)) == (
        f"orgteams run: error: {path}: line 2: not UTF-8 text (byte 0x80; is it a binary "
        f"file?), expected {what}")


@pytest.mark.parametrize(("flag", "what"), RUN_FILES)
def test_a_directory_is_one_line(capsys, tmp_path, monkeypatch, flag, what):
    path = tmp_path / "folder.yaml"
    path.mkdir()
    assert run_fails(capsys, tmp_path, monkeypatch, flag, str(path)) == (
        f"orgteams run: error: {path}: is a directory, expected {what}")


DEEP_FLOW = "name: deep\ntopology: " + "[" * 50_000 + "]" * 50_000 + "\n"
DEEP_BLOCK = "".join(" " * i + "k:\n" for i in range(MAX_YAML_DEPTH + 20))


@pytest.mark.parametrize(("text", "line"), [(DEEP_FLOW, 2), (DEEP_BLOCK, MAX_YAML_DEPTH + 1)])
def test_yaml_nested_50000_deep_is_one_line(capsys, tmp_path, monkeypatch, text, line):
    """PyYAML's composer recursed once per level: a RecursionError and 3,000 lines."""
    org = tmp_path / "deep.yaml"
    org.write_text(text)
    problem = (f"{org}: line {line}: YAML nested more than {MAX_YAML_DEPTH} levels deep; "
               f"the limit is {MAX_YAML_DEPTH}")
    assert run_fails(capsys, tmp_path, monkeypatch, "--org", str(org)) == (
        f"orgteams run: error: {problem}")
    assert main(["sweep", "--spec", str(org), "--out", str(tmp_path / "out")]) == 2
    assert one_line(capsys) == f"orgteams sweep: error: {problem}"
    assert not (tmp_path / "out").exists()


def test_sweep_spec_binary_and_directory(capsys, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(BINARY)
    assert main(["sweep", "--spec", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert one_line(capsys) == (f"orgteams sweep: error: {spec}: line 2: not UTF-8 text "
                                "(byte 0x80; is it a binary file?), expected a sweep spec")
    spec.unlink()
    spec.mkdir()
    assert main(["sweep", "--spec", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert one_line(capsys) == f"orgteams sweep: error: {spec}: is a directory, expected a " \
                               "sweep spec"
    assert not (tmp_path / "out").exists()


def test_a_file_past_the_size_cap_is_refused_before_parsing(capsys, tmp_path, monkeypatch):
    org = tmp_path / "big.yaml"
    org.write_text("# " + "x" * MAX_FILE_BYTES + "\n")
    assert run_fails(capsys, tmp_path, monkeypatch, "--org", str(org)) == (
        f"orgteams run: error: {org}: file is larger than {MAX_FILE_BYTES:,} bytes, the "
        "limit for an organization file")


def test_a_billion_laughs_is_refused_by_its_expanded_size():
    """Eight lines of nine aliases of the line before: 48 million nodes to walk; the
    check stops at the first line past the cap (a6, 4.8 million)."""
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 8)]
    with pytest.raises(UserError, match=re.escape(
            f"bomb.yaml: line 7: more than {MAX_YAML_NODES:,} YAML nodes once aliases are "
            f"expanded; the limit is {MAX_YAML_NODES:,}")):
        load_yaml("\n".join(lines) + "\n", "bomb.yaml")
    # aliases themselves are fine: small expansions load as PyYAML loads them
    assert load_yaml("\n".join(lines[:3]) + "\n", "ok.yaml")["a2"][0][0] == [1] * 9


def test_load_yaml_within_the_caps_is_safe_load():
    text = "name: x\nrules: {assign_work: leader}\nlist: [1, [2, [3]]]\n"
    assert load_yaml(text, "x") == {"name": "x", "rules": {"assign_work": "leader"},
                                    "list": [1, [2, [3]]]}
    assert load_yaml("[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH, "x") is not None
    with pytest.raises(UserError) as info:
        load_yaml("a: [\n", "x")
    # PyYAML's own text named the file "<unicode string>" and quoted the line with a caret
    assert str(info.value) == ("x: not valid YAML: line 2, column 1: expected the node "
                               "content, but found '<stream end>' (while parsing a flow node "
                               "at line 2, column 1)")
    with pytest.raises(UserError) as info:
        load_yaml("name: x\nprotocol: [1,2\n", "org.yaml")
    assert str(info.value) == ("org.yaml: not valid YAML: line 3, column 1: expected ',' or "
                               "']', but got '<stream end>' (while parsing a flow sequence at "
                               "line 2, column 11)")
    with pytest.raises(UserError) as info:
        load_yaml("a: b\n\tc: d\n", "tab.yaml")
    assert "<unicode string>" not in str(info.value) and "\n" not in str(info.value)


# ---- episode logs ---------------------------------------------------------------------
def test_a_binary_or_directory_log_is_one_line(capsys, tmp_path):
    log = tmp_path / "blob.jsonl"
    log.write_bytes(b'{"record": "x"}\n\x80\x81 binary\n{"a": 1}\n')
    assert main(["replay", str(log), "--no-window"]) == 2
    assert one_line(capsys) == (f"orgteams replay: error: {log}: line 2: not UTF-8 text "
                                "(byte 0x80; is it a binary file?), expected an episode log "
                                "(JSONL)")
    log.write_bytes(bytes(range(128, 256)))  # no newline at all: not a torn last line
    assert main(["replay", str(log), "--no-window"]) == 2
    assert one_line(capsys) == (f"orgteams replay: error: {log}: line 1: not UTF-8 text "
                                "(byte 0x80; is it a binary file?), expected an episode log "
                                "(JSONL)")
    log.write_text('{"a": 1}\n[1, 2]\n{"b": 2}\n')
    assert main(["replay", str(log), "--no-window"]) == 2
    assert one_line(capsys) == f"orgteams replay: error: {log}: line 2 is a JSON list, not " \
                               "an object"
    log.write_text('{"a": 1}\n' + "[" * 100_000 + "]" * 100_000 + '\n{"b": 2}\n')
    assert main(["replay", str(log), "--no-window"]) == 2
    assert one_line(capsys) == f"orgteams replay: error: {log}: line 2 is not valid JSON"
    folder = tmp_path / "folder.jsonl"  # a folder is read as a run folder under runs/
    folder.mkdir()
    assert main(["replay", str(folder), "--no-window"]) == 2
    assert one_line(capsys) == (f"orgteams replay: error: no episode log at "
                                f"{folder / 'episode.jsonl'}")
    with pytest.raises(UserError, match=re.escape(
            f"{folder}: is a directory, expected an episode log (JSONL)")):
        next(read_dicts(folder))


# ---- response caches ------------------------------------------------------------------
@pytest.fixture(scope="module")
def good_cache(tmp_path_factory):
    """A response cache filled by a scripted episode (its rows are what reruns look up)."""
    path = tmp_path_factory.mktemp("cache") / "good.sqlite"
    assert main(["run", "--backend", "scripted", "--layout", "studio", "--max-rounds", "2",
                 "--quiet", "--json", "--cache", str(path), "--log",
                 str(path.with_suffix(".jsonl"))]) == 0
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM completions").fetchone()[0] > 0
    conn.close()
    return path


def cache_fails(capsys, tmp_path, monkeypatch, cache) -> str:
    return run_fails(capsys, tmp_path, monkeypatch, "--backend", "scripted", "--cache",
                     str(cache), "--max-rounds", "2")


def damaged(good, tmp_path, how):
    path = tmp_path / f"{how}.sqlite"
    shutil.copy(good, path)
    data = bytearray(path.read_bytes())
    if how == "truncated":
        data = data[: len(data) // 2]
    elif how == "bit-flipped":  # the second page's cell pointers: damage to the b-tree
        # itself, which the integrity check finds whatever the rows hold (flipping bytes
        # of the rows' text instead is found only when a row is read, mid-episode)
        for i in range(4096 + 8, 4096 + 28):
            data[i] ^= 0xFF
    elif how == "not-sqlite":
        data = bytearray(b"hello, this is not a database\n" * 200)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(("how", "why"), [
    ("not-sqlite", "file is not a database"),
    ("truncated", "database disk image is malformed"),
    ("bit-flipped", "integrity check: *** in database main *** "),
])
def test_a_damaged_cache_is_one_line_before_the_episode(
        capsys, tmp_path, monkeypatch, good_cache, how, why):
    path = damaged(good_cache, tmp_path, how)
    line = cache_fails(capsys, tmp_path, monkeypatch, path)
    assert line.startswith(f"orgteams run: error: {path}: not a usable response cache ({why}")
    assert line.endswith("); delete it or give another --cache path")


def test_a_cache_row_of_garbage_bytes_is_one_short_line(capsys, tmp_path, monkeypatch,
                                                        good_cache):
    """Bytes of a row's text flipped: SQLite's own error quotes the undecodable text; the
    line stays one short printable line (at most 200 characters of the error are kept)."""
    path = tmp_path / "garbled.sqlite"
    shutil.copy(good_cache, path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE completions SET completion = CAST(? AS TEXT)",
                     (bytes(range(128, 256)) * 8,))
    conn.close()
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "scripted", "--layout", "studio", "--quiet",
                 "--max-rounds", "2", "--cache", str(path), "--log", "ep.jsonl"]) == 2
    line = one_line(capsys)
    assert line.startswith(f"orgteams run: error: {path}: not a usable response cache "
                           "(Could not decode to UTF-8 column 'completion' with text '")
    assert line.endswith("); delete it or give another --cache path")
    assert len(line) < len(str(path)) + 320 and line.isprintable()


def test_a_cache_of_another_schema_or_a_directory(capsys, tmp_path, monkeypatch):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE completions (a, b)")
    conn.close()
    assert cache_fails(capsys, tmp_path, monkeypatch, other) == (
        f"orgteams run: error: {other}: not a usable response cache (no such column: key); "
        "delete it or give another --cache path")
    folder = tmp_path / "caches"
    folder.mkdir()
    assert cache_fails(capsys, tmp_path, monkeypatch, folder) == (
        f"orgteams run: error: {folder}: is a directory; --cache takes a file path (for "
        f"example {folder / 'cache.sqlite'})")


@pytest.mark.parametrize(("row", "why"), [
    ("{not json", "JSONDecodeError: Expecting property name enclosed in double quotes: "
                  "line 1 column 2 (char 1)"),
    ("[1, 2]", "AttributeError: 'list' object has no attribute 'get'"),
    ('{"text": 5, "parsed": null, "usage": {}, "latency": 0, "raw": null}',
     "TypeError: 'text' must be a string and 'parsed' an object or null"),
    ("[" * 100_000 + "]" * 100_000, "RecursionError: maximum recursion depth exceeded"),
])
def test_a_poisoned_cache_row_is_one_line(capsys, tmp_path, monkeypatch, good_cache, row, why):
    path = tmp_path / "poisoned.sqlite"
    shutil.copy(good_cache, path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE completions SET completion = ?", (row,))
    conn.close()
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "scripted", "--layout", "studio", "--quiet",
                 "--max-rounds", "2", "--cache", str(path), "--log", "ep.jsonl"]) == 2
    found = re.fullmatch(re.escape(f"orgteams run: error: {path}: row ") + r"[0-9a-f]{16}\.\.\. "
                         r"is not a cached completion \((.*)\); delete the file or give "
                         r"another --cache path", one_line(capsys))
    assert found and found.group(1).startswith(why), found


# ---- files we write, and results files ---------------------------------------------------
def test_a_log_path_that_cannot_be_written_is_one_line_before_the_episode(
        capsys, tmp_path, monkeypatch):
    """A directory as --log played the whole episode, then failed renaming onto it."""
    folder = tmp_path / "logs"
    folder.mkdir()
    assert run_fails(capsys, tmp_path, monkeypatch, "--log", str(folder)) == (
        f"orgteams run: error: {folder}: is a directory; the episode log is a file (for "
        f"example {folder / 'episode.jsonl'})")
    assert list(folder.iterdir()) == [] and not (tmp_path / "logs.partial").exists()
    blob = tmp_path / "blob"
    blob.write_text("x")
    assert run_fails(capsys, tmp_path, monkeypatch, "--log", str(blob / "ep.jsonl")) == (
        f"orgteams run: error: {blob / 'ep.jsonl'}: cannot write the episode log: {blob} is "
        "a file, not a folder")
    assert run_fails(capsys, tmp_path, monkeypatch, "--backend", "scripted", "--cache",
                     str(blob / "c" / "cache.sqlite")) == (
        f"orgteams run: error: {blob / 'c' / 'cache.sqlite'}: cannot write the response "
        f"cache: {blob} is a file, not a folder")


def test_a_binary_or_directory_results_file_is_one_line(capsys, tmp_path):
    pytest.importorskip("scipy")
    results = tmp_path / "results.jsonl"
    results.write_bytes(b'{"cell": {}}\n\x80 binary\n')
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 2
    assert one_line(capsys) == (f"orgteams report: error: {results}: line 2: not UTF-8 text "
                                "(byte 0x80; is it a binary file?), expected a results.jsonl "
                                "file")
    results.unlink()
    results.mkdir()
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 2
    assert one_line(capsys) == (f"orgteams report: error: {results}: is a directory, expected "
                                "a results.jsonl file")


def test_a_character_cut_by_a_crash_in_the_last_results_line_is_a_torn_line(tmp_path):
    from orgteams.experiments.sweep import read_results

    results = tmp_path / "results.jsonl"
    results.write_bytes(b'{"cell": {"seed": 1}}\n{"cell": "caf\xc3')  # cut mid-character
    assert read_results(results) == ([{"cell": {"seed": 1}}], 1)


@pytest.mark.parametrize("argv", [
    ["sweep", "--backend", "planner", "--layouts", "studio", "--seeds", "1", "--quiet"],
    ["reflect", "--backend", "planner", "--coordinator", "heuristic", "--critic", "heuristic"],
    ["demos", "--layout", "studio", "--seeds", "1"],
    ["experiment", "paper1-behaviours"],
])
@pytest.mark.parametrize("under", [False, True])
def test_an_output_folder_that_is_a_file_is_one_line(capsys, tmp_path, monkeypatch, argv, under):
    monkeypatch.chdir(tmp_path)
    blob = tmp_path / "blob"
    blob.write_text("x")
    out = blob / "sub" if under else blob
    assert main([*argv, "--out", str(out)]) == 2
    assert one_line(capsys) == (f"orgteams {argv[0]}: error: {out}: --out must be a folder, "
                                f"but {blob} is a file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blob"]


@pytest.mark.parametrize("name", ["../../../escaped", "evil\\x1b[2J", "a\\nb", "..", ""])
def test_an_organization_name_that_is_a_path_or_has_control_characters_is_one_line(
        capsys, tmp_path, monkeypatch, name):
    # '../../../escaped' went into the default log's folder name: the run wrote outside runs/;
    # a newline or a terminal escape went into the printed summary's title
    path = tmp_path / "org.yaml"
    path.write_text(f'name: "{name}"\ninstruction: hi\n')
    shown = name.encode().decode("unicode_escape")
    assert run_fails(capsys, tmp_path, monkeypatch, "--org", str(path)) == (
        f"orgteams run: error: {path}: field 'name': must be 1 to 100 printable characters "
        f"without '/' or '\\' (it names files and folders), got {shown!r}")


def test_the_default_log_is_one_new_folder_under_runs_whatever_the_task_path(
        capsys, tmp_path, monkeypatch):
    (tmp_path / "tasks").mkdir()
    shutil.copy(asset_dir("tasks", "put_fridge.yaml"), tmp_path / "tasks" / "my task.yaml")
    (tmp_path / "org.yaml").write_text('name: "my team v1.2"\ninstruction: hi\n')
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "planner", "--layout", "studio", "--quiet",
                 "--max-rounds", "1", "--task", "tasks/my task.yaml", "--org", "org.yaml"]) == 0
    [folder] = (tmp_path / "runs").iterdir()
    assert re.fullmatch(r"\d{8}-\d{6}-\d{6}_my_task_my_team_v1\.2_s0", folder.name)
    assert [p.name for p in folder.iterdir()] == ["episode.jsonl"]


@pytest.mark.parametrize(("flag", "asset"), [("--layout", ("layouts", "studio.yaml")),
                                             ("--task", ("tasks", "put_fridge.yaml"))])
def test_a_layout_or_task_name_that_is_a_path_is_one_line(capsys, tmp_path, monkeypatch,
                                                          flag, asset):
    # orgteams demos wrote '<layout>_<task>_n3_s0.npz' under --out: '../../x' left it
    text = asset_dir(*asset).read_text(encoding="utf-8")
    path = tmp_path / "evil.yaml"
    path.write_text(re.sub(r"(?m)^name: .*$", 'name: "../../x"', text), encoding="utf-8")
    assert run_fails(capsys, tmp_path, monkeypatch, flag, str(path)) == (
        f"orgteams run: error: {path}: field 'name': must be 1 to 100 printable characters "
        "without '/' or '\\' (it names files and folders), got '../../x'")
