"""`python -m ttcli`: the command line."""

from ttcli.cli import cli

cli(prog_name="ttcli")
