"""Command line: ``python -m attnlib.grading build`` or ``... grade SUBMISSIONS`` (README)."""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path


def _timeout(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text}")
    return value


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """``build [NAMES...]`` or ``grade SUBMISSIONS [-o CSV] [--seed S] [-j N] [--wide] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.grading", description="Build the exercises, grade submissions."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="sources -> student notebooks and solutions")
    b.add_argument("names", nargs="*", help="only these exercises")
    g = sub.add_parser("grade", help="a folder of submissions -> a CSV gradebook")
    g.add_argument("submissions", type=Path)
    g.add_argument("-o", "--output", type=Path, default=Path("gradebook.csv"))
    g.add_argument(
        "-j", "--jobs", type=int, default=2, help="students graded at once, a process each"
    )
    g.add_argument(
        "--seed",
        help="the private seed of the hidden cases, at least 64 bits "
        "(default: $ATTNLIB_GRADING_SEED); keep it secret",
    )
    g.add_argument(
        "--weak-seed-ok", action="store_true", help="grade with a seed of fewer than 64 bits"
    )
    g.add_argument("--exercise", action="append", help="a row for this exercise (repeatable)")
    g.add_argument(
        "--timeout",
        type=_timeout,
        default=300.0,
        help="wall-clock seconds per submission, at least 30: a backstop for one that waits "
        "without computing (the limits are CPU time)",
    )
    g.add_argument(
        "--wide",
        nargs="?",
        type=Path,
        const=True,
        help="also a CSV with a row per student, a column per exercise and a total "
        "(default path: OUTPUT with -wide before .csv)",
    )
    g.add_argument(
        "--details",
        type=Path,
        help="also every failed check's full message, for you only (it quotes the students' "
        "values and hidden inputs: never share it)",
    )
    g.add_argument("--restart", action="store_true", help="ignore the journal of an earlier run")
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
    from attnlib.grading.grader import NothingToGrade, SandboxUnavailable, grade

    log = logging.getLogger("attnlib.grading")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("grade: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    wide = args.wide
    if wide is True:
        wide = args.output.with_name(f"{args.output.stem}-wide{args.output.suffix or '.csv'}")
    try:
        rows = grade(
            args.submissions,
            args.output,
            seed=args.seed,
            jobs=args.jobs,
            exercises=args.exercise,
            isolate=not args.no_sandbox,
            timeout=args.timeout,
            wide=wide,
            details=args.details,
            weak_seed_ok=args.weak_seed_ok,
            restart=args.restart,
            progress=_say,
        )
    except (
        SandboxUnavailable,
        NothingToGrade,
        ValueError,
        FileNotFoundError,
        NotADirectoryError,
    ) as err:
        sys.stderr.write(f"grade: {err}\n")
        return 2
    got = sum(r["score"] for r in rows)
    written = f"{args.output}" + (f" and {wide}" if wide else "")
    sys.stdout.write(
        f"graded {len({r['student'] for r in rows})} students: {len(rows)} rows, "
        f"{got:g} points in all -> {written}\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
