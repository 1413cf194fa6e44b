"""The batch runner's command: run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlab.app.cli.options import (
    Command,
)


def cmd_run(args: argparse.Namespace) -> int:
    from datetime import datetime

    from memlab.app.execution import run_batch
    from memlab.app.runner import load_batch, parse_overrides

    batch = load_batch(args.config)
    overrides = parse_overrides(args.param or [])
    out = Path(args.out) if args.out else Path("results") / datetime.now().strftime("run-%Y%m%d-%H%M%S")

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    results, index = run_batch(
        batch, out, overrides, args.notebooks, log=log, jobs=args.jobs, force=args.force
    )
    if not args.out:  # results/latest points at the newest default run
        latest = out.parent / "latest"
        if latest.is_symlink() or not latest.exists():
            latest.unlink(missing_ok=True)
            latest.symlink_to(out.name)
    failed = [f"{r.run}/{r.notebook}" for r in results if r.status != "ok"]
    latest = " (results/latest/index.html is the newest default run)" if not args.out else ""
    print(f"open in a browser: {index}{latest}")
    if failed:
        print(
            f"memlab: {len(failed)} of {len(results)} notebooks failed: {', '.join(failed)}", file=sys.stderr
        )
        return 1
    return 0


# arguments: each command declares its own


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help="batch YAML: notebooks, shared parameters, runs")
    p.add_argument("--out", default=None, help="output folder (default: results/run-<timestamp>)")
    p.add_argument(
        "-p",
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="override a notebook parameter in every run (repeatable)",
    )
    p.add_argument("--notebooks", default=None, help="folder holding the notebooks (default: ./notebooks)")
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="notebooks run at once, one kernel each (default: the number of cores)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="execute every notebook, even those whose earlier result would be reused (nothing "
        "they depend on changed: notebook, parameters, input files, memlab, models)",
    )


COMMANDS = (
    Command(
        "run",
        "execute the notebooks with papermill for every parameter set of a batch",
        add_run_arguments,
        cmd_run,
    ),
)
