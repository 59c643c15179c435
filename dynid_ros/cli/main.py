"""The ``dynid`` command line: one subcommand per module in :mod:`dynid_ros.cli`.

Each command module exposes ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. Errors derived from :class:`~dynid_ros.errors.DynidError` are printed
as one line ``dynid <command>: error: <message>`` and give exit code 2, with no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from dynid_ros.errors import DynidError

COMMAND_MODULES: tuple[str, ...] = (
    "info",
    "identify",
    "validate",
    "excite",
    "simulate",
    "demo",
    "bag",
    "batch",
    "drift",
    "gains",
    "identify_body",
)
"""Modules of :mod:`dynid_ros.cli`, in the order ``dynid --help`` lists them."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, object]]:
    """The ``dynid`` parser with one subcommand per CLI module, and the modules by command name."""
    parser = _Parser(prog="dynid", description="Dynamic identification of robot arms.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    modules: dict[str, object] = {}
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"dynid_ros.cli.{name}")
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        modules[module.NAME] = module
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dynid``; returns the exit code."""
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    args.argv = ["dynid", *(sys.argv[1:] if argv is None else argv)]  # the command, for the report's provenance
    if not args.command:
        parser.print_help()
        return 2
    try:
        return int(modules[args.command].run(args))
    except DynidError as err:
        print(f"dynid {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"dynid {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
