"""The ``memlab`` command line: one module per command group, each declaring its own arguments."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import warnings
from collections.abc import Sequence

from memlab.app.cli import (
    answers,
    benchmark,
    calibrate,
    data,
    explain,
    rerank,
    run,
    studies,
    sweep,
    tuning,
    verify,
)
from memlab.core.errors import MemlabError, MemlabWarning
from memlab.core.files import discard_pending, forget_inputs
from memlab.datasets.schema import DatasetError

GROUPS = (tuning, verify, explain, sweep, rerank, benchmark, studies, calibrate, data, answers, run)
NEGATIVE_VALUE = re.compile(r"^-\.?\d")


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
            # a value that starts with a minus and a digit is a value, not an option: argparse
            # itself takes only -5 and -0.1 so, and reads --bonus -0.1:0:0.05 or --threshold
            # -1,0.5 as a missing value; memlab has no option that looks like a number
            p._negative_number_matcher = NEGATIVE_VALUE
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like SIGINT's KeyboardInterrupt so every ``finally`` and atomic write
    cleans up on the way out."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame) -> None:
    raise Terminated(signum)


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    if issubclass(category, MemlabWarning):  # one line, no source location
        print(f"memlab: warning: {message}", file=sys.stderr)
    else:
        _default(message, category, filename, lineno, file, line)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except Terminated as e:
        # arrived while _main was putting its handlers back, after the work was done (or undone):
        # the same exit status, without a traceback
        return 128 + e.signum
    except KeyboardInterrupt:
        # ^C outside _main's own handling (as it starts, or as it puts its handlers back): the
        # same line and status as within it, not a traceback and an exit by the signal
        return _stopped(signal.SIGINT)


def _stopped(signum: int) -> int:
    """What a command stopped by a signal says, after removing the file it was writing."""
    removed = discard_pending()
    undone = "the file being written was removed" if removed else "nothing was being written"
    print(
        f"memlab: stopped by {signal.Signals(signum).name}; {undone}, earlier files are as they were",
        file=sys.stderr,
    )
    return 128 + signum


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser: its usage, not the list of every command
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
        commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    # `memlab run` owns its signals (its kernels); every other command stops cleanly on SIGTERM
    catch = args.command != "run" and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if catch else None
    shown, warnings.showwarning = warnings.showwarning, _show_warning
    forget_inputs()  # what an earlier command (in this process) read is not this one's input
    try:
        from memlab.app.cli.options import apply_dataset_language, apply_spec_file

        if getattr(args, "spec_file", None):
            apply_spec_file(args)
        apply_dataset_language(args)
        return args.handler(args)
    except KeyboardInterrupt as e:
        if not catch:
            raise
        return _stopped(e.signum if isinstance(e, Terminated) else signal.SIGINT)
    except DatasetError as e:
        print(f"memlab: invalid dataset:\n{e}", file=sys.stderr)
    except MemlabError as e:
        print(f"memlab: error: {e}", file=sys.stderr)
    except BrokenPipeError:  # stdout's reader stopped early (| head): nothing left to say, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit too
        return 128 + signal.SIGPIPE
    except OSError as e:  # the file system said no (permission, disk full): not a memlab bug
        print(f"memlab: error: {e}", file=sys.stderr)
    finally:
        if previous is not None:  # first: a SIGTERM from here on takes the previous path
            signal.signal(signal.SIGTERM, previous)
        warnings.showwarning = shown
    return 2


if __name__ == "__main__":
    sys.exit(main())
