"""``python -m attnlib.evidence [TABLE] [--only SLUG ...]``: every chapter's claims, three seeds.

What ``make seeds`` runs. Each chapter's :func:`check_claims` runs for seeds 0, 1 and 2 in
full, retraining every model of seeds 1 and 2 (the English–French ones included: about an
hour on two cores), one chapter after another in this process, so that chapters that share
a model train it once. The result table goes to ``TABLE`` (default ``tests/seeds.md``), which
is committed: ``tests/test_seeds.py`` checks it against the claims and reads from it the
seeds ``make test`` does not retrain. ``--only`` reruns some chapters and keeps the other
sections of the existing table; ``--keep DIR`` keeps the English–French models of seeds 1 and 2
in DIR and reuses them in a later run; ``--seed-models DIR`` writes the small models of seeds 1
and 2 it retrains to DIR (``make seeds`` passes ``tests/seed_models``: ``make test`` checks
seeds 1 and 2 on those, and retrains a sample). A line per run goes to the standard error, with
its time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from attnlib import evidence
from attnlib.evidence import _seeds, _shared

SEEDS = (0, 1, 2)

PREAMBLE = """\
# Every chapter's claims, for training seeds 0, 1 and 2

Written by `make seeds` (`python -m attnlib.evidence tests/seeds.md`): each chapter's claim
function, `attnlib/evidence/<chapter>.py`, run for seeds 0, 1 and 2. Seed 0 reads the shipped
models (what the chapter shows); seeds 1 and 2 retrain every model with another training seed
on the same data. ✔ the claim held, ✘ it did not; then what was measured and what it needed.
A claim is known by its group and its place in the group (#); where a seed's words differ from
the row's (a claim about an example a rule picked names the example), the cell starts with them
in ⟦ ⟧. `tests/test_seeds.py` checks this table against the code: seed 0 as `make test` runs it,
and every claim held for every seed but those a module lists in `DOES_NOT_HOLD`."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chapters' claims for seeds 0, 1 and 2 and write the table; 0 when written."""
    parser = argparse.ArgumentParser(prog="python -m attnlib.evidence", description=__doc__)
    parser.add_argument("table", nargs="?", default="tests/seeds.md", help="the table to write")
    parser.add_argument("--only", nargs="+", metavar="SLUG", help="rerun these chapters only")
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="keep the English–French models of seeds 1 and 2 in DIR, and reuse those already "
        "there (for a rerun after a change that leaves training alone)",
    )
    parser.add_argument(
        "--seed-models",
        metavar="DIR",
        help="write there the small models of seeds 1 and 2 this run retrains (tests/seed_models, "
        "which make test reads instead of retraining them)",
    )
    args = parser.parse_args(argv)
    if args.keep:
        _shared.KEEP = Path(args.keep)
    if args.seed_models:
        _shared.SEED_MODELS, _shared.SAVE_SEED_MODELS = Path(args.seed_models), True
    found = evidence.chapters()
    todo = list(args.only or found)
    unknown = sorted(set(todo) - set(found))
    if unknown:
        parser.error(f"no evidence module for {unknown}; the chapters are {sorted(found)}")
    table = Path(args.table)
    kept = _seeds.parse(table.read_text(encoding="utf-8")) if args.only and table.exists() else {}
    sections = {}
    for slug in found:
        if slug not in todo:
            if slug in kept:
                sections[slug] = kept[slug]
            continue
        section = _seeds.Section(slug)
        runs: list[tuple[str, int | tuple[int, ...]]] = [(f"seed {k}", k) for k in SEEDS]
        if found[slug].over_seeds is not None:
            runs.append((f"seeds {', '.join(map(str, SEEDS))}", SEEDS))
        for label, seed in runs:
            start = time.perf_counter()
            try:
                checks = evidence.run(slug, seed)
            except Exception as error:  # recorded in the table, which the tests then refuse
                section.errors[label] = f"{type(error).__name__}: {error}"
                print(f"{slug}, {label}: {section.errors[label]}", file=sys.stderr, flush=True)
                continue
            if isinstance(seed, int):
                section.by_seed[seed] = checks
            else:
                section.over[seed] = checks
            _log(slug, label, checks, start)
        sections[slug] = section
    table.write_text(_seeds.render(sections.values(), PREAMBLE), encoding="utf-8")
    print(f"wrote {table}", file=sys.stderr)
    return 0


def _log(slug: str, what: str, checks: list[_seeds.ClaimOutcome], start: float) -> None:
    failing = sum(not c.holds for c in checks)
    print(
        f"{slug}, {what}: {len(checks)} claims, {failing} not holding, "
        f"{time.perf_counter() - start:.0f} s",
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
