"""Author-year labels for the bibliography, to match the author-year citations.

``bibtex_reference_style: author_year`` cites "(Bahdanau et al., 2015)", but pybtex's own
styles label the list of references with numbers ([1]) or letters ([BCB15]). This registers
``author_year``: pybtex's plain style whose labels read like the citations
("Bahdanau et al., 2015"; "Jain and Wallace, 2019"; a, b, ... where two would be the same).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as Plain
from pybtex.style.labels import BaseLabelStyle


def _last(person: Any) -> str:
    return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")


def _authors(entry: Any) -> str:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_last(p) for p in people]
    if not names:
        return entry.fields.get("key", entry.key)
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return f"{names[0]} et al."


class AuthorYearLabels(BaseLabelStyle):
    """ "Author, year" labels; "2015a", "2015b" where two entries would share one.

    A letter added to a label is added to the entry's year too, so the in-text citations, which
    sphinxcontrib-bibtex builds from the ``year`` field, read "Cho et al., 2014a" like the list.
    """

    def format_labels(self, sorted_entries: Iterable[Any]) -> Iterator[str]:
        entries = list(sorted_entries)
        years = [_year(e) for e in entries]
        plain = [f"{_authors(e)}, {y}" for e, y in zip(entries, years, strict=True)]
        shared, seen = Counter(plain), Counter[str]()
        for entry, year, label in zip(entries, years, plain, strict=True):
            letter = ""
            if shared[label] > 1:
                seen[label] += 1
                letter = "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            if "year" in entry.fields:
                entry.fields["year"] = year + letter
            yield label + letter


def _year(entry: Any) -> str:
    """The entry's own year (as in the .bib file, before any letter this module added)."""
    if not hasattr(entry, "_author_year_base"):
        entry._author_year_base = entry.fields.get("year", "n.d.")
    return str(entry._author_year_base)


class AuthorYearStyle(Plain):
    default_label_style = AuthorYearLabels


def setup(app: Any) -> dict[str, Any]:
    register_plugin("pybtex.style.formatting", "author_year", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
