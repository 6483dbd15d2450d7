"""The seed table: every chapter's claims × seeds, held or not, with the evidence.

``make seeds`` (``python -m attnlib.evidence``) writes it to ``tests/seeds.md`` and
``tests/test_seeds.py`` reads it back: :func:`render` and :func:`parse` are each other's
inverse. One section per chapter, one table row per claim, one column per seed::

    ## bottleneck

    | group | # | claim | seed 0 | seed 1 | seed 2 |
    |---|---|---|---|---|---|
    | budget | 0 | with attention, … | ✔ lowest bucket exact match … | ✔ … | ✔ … |

A claim is known by its group and its place in the group (``#``), since the words of a claim
about an example that a rule picked name the example: where a seed's words differ from the
row's, the cell starts with them in ⟦ ⟧. A chapter whose claims compare seeds in one run has
a second table, with one column for all of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

__all__ = ["ClaimOutcome", "Section", "parse", "render"]

HOLDS, FAILS, MISSING = "✔", "✘", "—"
ERROR = "Did not run, "


@dataclasses.dataclass(frozen=True)
class ClaimOutcome:
    """One claim as a run of a claim function checked it: its group, place and outcome.

    Attributes
    ----------
    group : str
    index : int
        Its place in the group (0 first).
    claim : str
        Its words.
    evidence : str
        What was measured, and the test it had to pass.
    holds : bool
    """

    group: str
    index: int
    claim: str
    evidence: str
    holds: bool

    @property
    def key(self) -> tuple[str, int]:
        """``(group, index)``: the claim's row in the table."""
        return self.group, self.index


@dataclasses.dataclass
class Section:
    """A chapter's part of the table.

    Attributes
    ----------
    slug : str
    by_seed : dict
        Seed → the checks of that seed's run.
    over : dict
        The seeds of a run that compares seeds (as a tuple) → its checks; empty if the
        chapter has none.
    errors : dict
        What stopped a run before it checked its claims: its label ("seed 1", "seeds 0, 1,
        2") → the error.
    """

    slug: str
    by_seed: dict[int, list[ClaimOutcome]] = dataclasses.field(default_factory=dict)
    over: dict[tuple[int, ...], list[ClaimOutcome]] = dataclasses.field(default_factory=dict)
    errors: dict[str, str] = dataclasses.field(default_factory=dict)


def _escape(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _split_row(line: str) -> list[str]:
    """The cells of a table row, ``\\|`` read as a ``|`` inside a cell."""
    cells, cell, k = [], "", 0
    body = line.strip()
    if not (body.startswith("|") and body.endswith("|")):
        raise ValueError(f"not a table row: {line!r}")
    body = body[1:-1]
    while k < len(body):
        if body[k] == "\\" and body[k + 1 : k + 2] == "|":
            cell += "|"
            k += 2
        elif body[k] == "|":
            cells.append(cell.strip())
            cell, k = "", k + 1
        else:
            cell += body[k]
            k += 1
    cells.append(cell.strip())
    return cells


def _cell(check: ClaimOutcome | None, words: str) -> str:
    if check is None:
        return MISSING
    mark = HOLDS if check.holds else FAILS
    said = "" if check.claim == words else f"⟦{_escape(check.claim)}⟧ "
    return f"{mark} {said}{_escape(check.evidence)}"


def _table(heads: Sequence[str], runs: Sequence[list[ClaimOutcome]]) -> list[str]:
    rows: dict[tuple[str, int], str] = {}
    for checks in runs:
        for c in checks:
            rows.setdefault(c.key, c.claim)
    by_key = [{c.key: c for c in checks} for checks in runs]
    lines = [
        "| group | # | claim | " + " | ".join(heads) + " |",
        "|---|---|---|" + "---|" * len(heads),
    ]
    for (group, index), words in rows.items():
        cells = [_cell(found.get((group, index)), words) for found in by_key]
        lines.append(f"| {group} | {index} | {_escape(words)} | " + " | ".join(cells) + " |")
    return lines


def render(sections: Iterable[Section], preamble: str = "") -> str:
    """The table as markdown: the preamble, then one section per chapter."""
    lines = [preamble.rstrip(), ""] if preamble else []
    for s in sections:
        seeds = sorted(s.by_seed)
        lines += [f"## {s.slug}", ""]
        lines += [f"{ERROR}{run}: {' '.join(error.split())}" for run, error in s.errors.items()]
        lines += [""] if s.errors else []
        lines += _table([f"seed {k}" for k in seeds], [s.by_seed[k] for k in seeds])
        for together, checks in s.over.items():
            label = ", ".join(map(str, together))
            lines += ["", f"Checked once over seeds {label} (the claims compare them):", ""]
            lines += _table([f"seeds {label}"], [checks])
        lines.append("")
    return "\n".join(lines)


def _read_cell(group: str, index: int, words: str, cell: str) -> ClaimOutcome | None:
    if cell == MISSING:
        return None
    mark, _, rest = cell.partition(" ")
    if mark not in (HOLDS, FAILS):
        raise ValueError(f"a cell starts with {HOLDS} or {FAILS}, got {cell!r}")
    if rest.startswith("⟦"):
        said, _, rest = rest[1:].partition("⟧ ")
        words = said
    return ClaimOutcome(group, index, words, rest, mark == HOLDS)


def parse(text: str) -> dict[str, Section]:
    """The sections of a table :func:`render` wrote, by slug.

    Raises
    ------
    ValueError
        If a row, a header or a cell is not in the form :func:`render` writes.
    """
    sections: dict[str, Section] = {}
    current: Section | None = None
    heads: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), Section(line[3:].strip()))
            heads = []
        elif line.startswith(ERROR) and current is not None:
            run, _, error = line[len(ERROR) :].partition(": ")
            current.errors[run] = error
        elif line.startswith("|") and current is not None:
            cells = _split_row(line)
            if cells[:3] == ["group", "#", "claim"]:
                heads = cells[3:]
                for head in heads:
                    if head.startswith("seeds "):
                        current.over[tuple(int(k) for k in head[6:].split(", "))] = []
                    elif head.startswith("seed "):
                        current.by_seed[int(head[5:])] = []
                    else:
                        raise ValueError(f"line {n}: unknown column {head!r}")
                continue
            if set(line.replace("|", "").strip()) <= {"-"}:
                continue
            if len(cells) != 3 + len(heads) or not heads:
                raise ValueError(f"line {n}: {len(cells)} cells under {len(heads)} seeds")
            group, index, words = cells[0], int(cells[1]), cells[2]
            for head, cell in zip(heads, cells[3:], strict=True):
                check = _read_cell(group, index, words, cell)
                if check is None:
                    continue
                if head.startswith("seeds "):
                    current.over[tuple(int(k) for k in head[6:].split(", "))].append(check)
                else:
                    current.by_seed[int(head[5:])].append(check)
    return sections
