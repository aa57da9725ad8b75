"""orgteams.cli.progress: the one progress bar (plain lines when stderr is not a terminal)."""

from __future__ import annotations

from orgteams.cli.progress import Progress


def test_plain_lines_on_a_non_terminal_and_nothing_when_disabled(capsys):
    bar = Progress(3, "evaluating run")
    bar.update(1, "seed 7")
    bar.update(2)  # within 2 s of the last line: not printed
    bar.update(3)  # the end is always printed
    bar.close()
    assert capsys.readouterr().err.splitlines() == ["evaluating run seed 7: 1/3",
                                                    "evaluating run: 3/3"]
    quiet = Progress(3, "x", enabled=False)
    quiet.update(5)
    assert quiet.done == 3 and capsys.readouterr().err == ""
