"""The videokr command line: help, and one clear line for bad input."""

from videokr.cli import main
from videokr.paper import PAPER


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "reproduce" in out
    assert PAPER.title in out


def test_unknown_command_exits_2(capsys):
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert "unknown command" in err
    assert "Traceback" not in err
