"""The ttcli command line: a thin click shell over `ttcli.ops` and the runtime."""

from ttcli.cli.main import cli

__all__ = ["cli"]
