"""Command line: ``python -m attnlib.grading build`` or ``... grade SUBMISSIONS`` (README)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """``build [NAMES...]`` or ``grade SUBMISSIONS [-o CSV] [--seed S] [-j N] [--no-sandbox]``."""
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.grading", description="Build the exercises, grade submissions."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="sources -> student notebooks and solutions")
    b.add_argument("names", nargs="*", help="only these exercises")
    g = sub.add_parser("grade", help="a folder of submissions -> a CSV gradebook")
    g.add_argument("submissions", type=Path)
    g.add_argument("-o", "--output", type=Path, default=Path("gradebook.csv"))
    g.add_argument("-j", "--jobs", type=int, default=2, help="submissions graded at once")
    g.add_argument(
        "--seed",
        help="the private seed of the hidden cases "
        "(default: $ATTNLIB_GRADING_SEED); keep it secret",
    )
    g.add_argument("--exercise", action="append", help="a row for this exercise (repeatable)")
    g.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="wall-clock seconds per submission: a backstop for one that waits without "
        "computing (the limits are CPU time)",
    )
    g.add_argument(
        "--no-sandbox",
        action="store_true",
        help="grade without the OS sandbox (only for work you trust)",
    )
    args = parser.parse_args(argv)
    if args.command == "build":
        from attnlib.grading.assign import build

        for path in build(names=args.names or None):
            sys.stdout.write(f"wrote {path}\n")
        return 0
    from attnlib.grading.grader import SandboxUnavailable, grade

    try:
        rows = grade(
            args.submissions,
            args.output,
            seed=args.seed,
            jobs=args.jobs,
            exercises=args.exercise,
            isolate=not args.no_sandbox,
            timeout=args.timeout,
        )
    except (SandboxUnavailable, ValueError, FileNotFoundError, NotADirectoryError) as err:
        sys.stderr.write(f"grade: {err}\n")
        return 2
    got = sum(r["score"] for r in rows)
    sys.stdout.write(
        f"graded {len({r['student'] for r in rows})} students: {len(rows)} rows, "
        f"{got:g} points in all -> {args.output}\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
