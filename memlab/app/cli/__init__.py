"""The ``memlab`` command line: one module per command group, each declaring its own arguments."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memlab.app.cli import calibrate, data, run, studies, tuning
from memlab.core.errors import MemlabError
from memlab.datasets.model import DatasetError

GROUPS = (tuning, studies, calibrate, data, run)


def package_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("memlab")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memlab", description="Measure and tune how an agent's long-term memory is recalled."
    )
    parser.add_argument("--version", action="version", version=f"memlab {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        for command in group.COMMANDS:
            p = sub.add_parser(command.name, help=command.help, description=command.help)
            command.add_arguments(p)
            p.set_defaults(handler=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except DatasetError as e:
        print(f"memlab: invalid dataset:\n{e}", file=sys.stderr)
    except MemlabError as e:
        print(f"memlab: error: {e}", file=sys.stderr)
    except OSError as e:  # the file system said no (permission, disk full): not a memlab bug
        print(f"memlab: error: {e}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
