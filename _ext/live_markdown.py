"""MyST Markdown to the plain Jupyter Markdown that JupyterLab and Colab render.

A chapter's Markdown cells are written in MyST, which the website's build understands and a
notebook front end does not: opened on Binder or Colab, ``{glue:text}`name``` would be shown as
typed. The live copies of the notebooks (``_ext/live_notebooks.py``) carry every Markdown cell
through :func:`convert` first, which rewrites each MyST construct into CommonMark, raw HTML and
``$``/``$$`` math:

==============================  ===========================================================
MyST                            Jupyter Markdown
==============================  ===========================================================
``{role}`content```             what :meth:`Resolver.role` returns for it: the glued value,
                                a link to the website with the text the website shows, ...
``(label)=`` line               removed (the links point at the website, which has the
                                anchor)
``% comment``, ``+++``          removed (MyST comments and block breaks)
``$$ ... $$ (label)``           ``$$ ... \\tag{n} $$``, with the website's number n
``:::{dropdown} Title``         ``<details><summary>Title</summary>`` ... ``</details>``
                                (blank lines around the inside, which stays Markdown;
                                ``:open:`` opens it)
``:::{admonition} Title``,      a block quote whose first line is the title in bold
``:::{note}`` and its kin
==============================  ===========================================================

Directives nest (a longer fence around a shorter one, as in MyST). Code blocks, code spans and
math are copied as they are. Anything else that MyST would read as markup, an unknown role or
directive, a directive option this module does not know, raises :class:`MystError`, so a new
construct fails the build instead of reaching a learner raw; :func:`leftovers` is the last check
over a converted cell.

The module needs no Sphinx: what a role becomes is the resolver's business (the extension
resolves roles with the build's environment), which keeps the syntax testable on its own
(``tests/live/test_live_notebooks.py``).
"""

from __future__ import annotations

import html
import re
from collections import Counter
from typing import Protocol

__all__ = ["MystError", "Resolver", "convert", "escape", "leftovers"]


class MystError(ValueError):
    """A MyST construct that has no Jupyter Markdown form here (the message says which)."""


class Resolver(Protocol):
    """What the converter asks the build for."""

    def role(self, name: str, content: str) -> str:
        """The Markdown for ``{name}`content```; raise :class:`MystError` for an unknown role."""
        ...

    def equation_number(self, label: str) -> str:
        """The number the website shows for the display equation ``label`` (``"2.1"``)."""
        ...


#: A role's opening: ``{name}`` right before a run of backticks.
ROLE = re.compile(r"\{(?P<name>[A-Za-z][\w.+:-]*)\}(?P<ticks>`+)")
#: A fence line: code (```, ~~~) or a directive (also :::), any indentation (list items).
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
#: A directive's name and argument after the fence: ``{dropdown} Answer``.
DIRECTIVE = re.compile(r"^\{(?P<name>[A-Za-z][\w.+:-]*)\}\s*(?P<arg>.*?)\s*$")
#: A target line: ``(label)=``.
LABEL = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
#: A MyST comment (``% ...``) or block break (``+++``).
COMMENT = re.compile(r"^\s*(?:%|\+\+\+)")
#: The start of a display formula: a line that begins with ``$$``.
MATH_OPEN = re.compile(r"^(?P<indent>\s*)\$\$(?P<rest>.*)$")
#: The end of a display formula: ``$$``, optionally followed by ``(label)``.
MATH_CLOSE = re.compile(r"^(?P<body>.*?)\$\$\s*(?:\((?P<label>[^()\s]+)\))?\s*$")
#: A directive option: ``:name: value`` (or a bare ``:name:``).
OPTION = re.compile(r"^:(?P<key>[\w-]+):(?:\s+(?P<value>.*?))?\s*$")

#: The admonitions with a fixed title (MyST / docutils), and that title.
ADMONITIONS = {
    "note": "Note",
    "tip": "Tip",
    "hint": "Hint",
    "important": "Important",
    "attention": "Attention",
    "caution": "Caution",
    "warning": "Warning",
    "danger": "Danger",
    "error": "Error",
    "seealso": "See also",
}
#: Options that only style a directive on the website: a notebook has no use for them.
STYLE_OPTIONS = {"class", "name"}
DROPDOWN_OPTIONS = STYLE_OPTIONS | {
    "open",
    "color",
    "icon",
    "chevron",
    "animate",
    "margin",
    "class-container",
    "class-title",
    "class-body",
}

#: Characters of plain text that Markdown (or the math of JupyterLab and Colab) would read as
#: markup, and what stands for them: backslash escapes, or entities where an escape would not do.
_ESCAPES = {
    "\\": "\\\\",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
    "|": "\\|",
    "~": "\\~",
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "$": "&#36;",  # JupyterLab and Colab look for math before Markdown: no escape stops that
}
_ESCAPE = re.compile("[" + re.escape("".join(_ESCAPES)) + "]")


def escape(text: str) -> str:
    """Plain text as Markdown that shows exactly that text (``<eos>`` stays ``<eos>``)."""
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group()], text)


def convert(source: str, resolver: Resolver, counts: Counter[str] | None = None) -> str:
    """One Markdown cell, MyST in, Jupyter Markdown out.

    Parameters
    ----------
    source : str
        The cell's MyST source.
    resolver : Resolver
        Turns roles into Markdown and labels into equation numbers.
    counts : Counter, optional
        Incremented per construct converted (``"role:glue:text"``, ``"directive:dropdown"``,
        ``"label"``, ``"equation"``, ...).

    Returns
    -------
    str
        The cell's Jupyter Markdown.

    Raises
    ------
    MystError
        For a construct with no Jupyter Markdown form (unknown role or directive, an option
        this module does not know, display math inside an admonition, ...).
    """
    counts = Counter() if counts is None else counts
    lines = _blocks(source.split("\n"), resolver, counts)
    return "\n".join(lines)


def _closing_ticks(text: str, start: int, n: int) -> int | None:
    """Index of the next run of exactly ``n`` backticks at or after ``start`` (None: none)."""
    for m in re.finditer(r"`+", text[start:]):
        if len(m.group()) == n:
            return start + m.start()
    return None


def _inline(text: str, resolver: Resolver, counts: Counter[str]) -> str:
    """Roles replaced in one paragraph; code spans, math and escapes copied as they are."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            out.append(text[i : i + 2])
            i += 2
        elif c == "`":
            k = len(re.match(r"`+", text[i:]).group())  # type: ignore[union-attr]
            j = _closing_ticks(text, i + k, k)
            end = i + k if j is None else j + k
            out.append(text[i:end])
            i = end
        elif c == "$":
            k = 2 if text.startswith("$$", i) else 1
            j = _unescaped(text, "$" * k, i + k)
            end = i + k if j is None else j + k
            out.append(text[i:end])
            i = end
        elif c == "{" and (m := ROLE.match(text, i)):
            k = len(m["ticks"])
            j = _closing_ticks(text, m.end(), k)
            if j is None:
                raise MystError(f"the role {{{m['name']}}} is not closed: {text[i : i + 60]!r}")
            content = " ".join(text[m.end() : j].split("\n"))
            out.append(resolver.role(m["name"], content))
            counts[f"role:{m['name']}"] += 1
            i = j + k
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _unescaped(text: str, what: str, start: int) -> int | None:
    """Index of the next ``what`` at or after ``start`` not preceded by a backslash."""
    j = text.find(what, start)
    while j != -1 and text[j - 1] == "\\":
        j = text.find(what, j + 1)
    return None if j == -1 else j


def _blocks(lines: list[str], resolver: Resolver, counts: Counter[str]) -> list[str]:
    """Convert a run of MyST lines (a cell, or a directive's body)."""
    out: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.extend(_inline("\n".join(paragraph), resolver, counts).split("\n"))
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            flush()
            mark = fence["fence"]
            close = re.compile(rf"^\s*{re.escape(mark[0])}{{{len(mark)},}}\s*$")
            j = next((k for k in range(i + 1, len(lines)) if close.match(lines[k])), len(lines))
            body = lines[i + 1 : j]
            directive = DIRECTIVE.match(fence["info"].strip())
            if directive:
                out += _directive(
                    fence["indent"], directive["name"], directive["arg"], body, resolver, counts
                )
            elif mark[0] == ":":
                raise MystError(f"a {mark} fence names no directive: {line.strip()!r}")
            else:  # a code block: as it is
                out += lines[i : j + 1]
            i = j + 1
            continue
        if LABEL.match(line):
            flush()
            counts["label"] += 1
            i += 1
            continue
        if COMMENT.match(line):
            flush()
            counts["comment"] += 1
            i += 1
            continue
        opened = MATH_OPEN.match(line)
        if opened:
            flush()
            i = _display_math(lines, i, opened, resolver, counts, out)
            continue
        if not line.strip():
            flush()
            out.append(line)
        else:
            paragraph.append(line)
        i += 1
    flush()
    return out


def _display_math(
    lines: list[str],
    i: int,
    opened: re.Match[str],
    resolver: Resolver,
    counts: Counter[str],
    out: list[str],
) -> int:
    """Copy the formula that starts on line ``i``, numbered if labelled; the next line's index."""
    indent = opened["indent"]
    first = MATH_CLOSE.match(opened["rest"])
    if first:  # $$ ... $$ (label) on one line
        body, label, end = [first["body"]], first["label"], i
    else:
        body, end, label = [opened["rest"]], len(lines), None
        for k in range(i + 1, len(lines)):
            closing = MATH_CLOSE.match(lines[k])
            if closing:
                body.append(closing["body"])
                end, label = k, closing["label"]
                break
            body.append(lines[k])
        else:
            raise MystError(f"a display formula is not closed with $$: {lines[i].strip()!r}")
    counts["equation"] += 1
    if label:
        counts["equation:numbered"] += 1
        body.append(f"\\tag{{{resolver.equation_number(label)}}}")
    inner = [ln for ln in body if ln.strip()]
    if end == i:
        out.append(f"{indent}$$ {' '.join(s.strip() for s in inner)} $$")
    else:
        out.append(f"{indent}$$")
        out += inner
        out.append(f"{indent}$$")
    return end + 1


def _options(body: list[str], name: str, allowed: set[str]) -> tuple[dict[str, str], list[str]]:
    """A directive's options (``:key: value`` lines, or a ``---`` block) and the rest."""
    options: dict[str, str] = {}
    k = 0
    if body and body[0].strip() == "---":
        end = next((j for j in range(1, len(body)) if body[j].strip() == "---"), None)
        if end is None:
            raise MystError(f"the options of {{{name}}} open with --- and never close")
        for raw in body[1:end]:
            key, sep, value = raw.partition(":")
            if not sep:
                raise MystError(f"{{{name}}}: an option line without a colon: {raw.strip()!r}")
            options[key.strip()] = value.strip()
        k = end + 1
    else:
        while k < len(body) and (m := OPTION.match(body[k].strip())):
            options[m["key"]] = m["value"] or ""
            k += 1
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise MystError(
            f"{{{name}}} has option(s) {', '.join(unknown)}, which the live notebooks cannot "
            f"show; known: {', '.join(sorted(allowed))}"
        )
    rest = body[k:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    while rest and not rest[-1].strip():
        rest = rest[:-1]
    return options, rest


def _directive(
    indent: str,
    name: str,
    arg: str,
    body: list[str],
    resolver: Resolver,
    counts: Counter[str],
) -> list[str]:
    """A directive's Jupyter Markdown, indented as the directive was."""
    body = [ln[len(indent) :] if ln.startswith(indent) else ln.lstrip() for ln in body]
    if name == "dropdown":
        options, rest = _options(body, name, DROPDOWN_OPTIONS)
        if ROLE.search(arg):
            raise MystError(f"a role in a dropdown's title cannot be shown live: {arg!r}")
        opening = "<details open>" if "open" in options else "<details>"
        inner = _blocks(rest, resolver, counts)
        lines = [opening, f"<summary>{html.escape(arg, quote=False)}</summary>", "", *inner]
        lines += ["", "</details>"]
    elif name == "admonition" or name in ADMONITIONS:
        options, rest = _options(body, name, STYLE_OPTIONS)
        if name == "admonition":
            if not arg:
                raise MystError("an {admonition} needs a title")
            title = _inline(arg, resolver, counts)
        else:
            title = ADMONITIONS[name]
            rest = [arg, *rest] if arg else rest
        inner = _blocks(rest, resolver, counts)
        if any(MATH_OPEN.match(ln) for ln in inner):
            raise MystError(
                f"display math inside {{{name}}}: a block quote would break it in JupyterLab; "
                "put the formula outside, or inline"
            )
        lines = [f"> **{title}**", ">"] + [f"> {ln}" if ln.strip() else ">" for ln in inner]
    else:
        raise MystError(f"the directive {{{name}}} has no live form in _ext/live_markdown.py")
    counts[f"directive:{name}"] += 1
    return [f"{indent}{ln}" if ln else ln for ln in lines]


# --------------------------------------------------------------------------- the last check
_CODE_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(?!\s*\{)")
_SPAN_OR_MATH = re.compile(r"(?<![`}])(`+)[\s\S]*?(?<!`)\1(?!`)|\$\$[\s\S]*?\$\$|\$[^$\n]*\$")
#: MyST block markup: looked for everywhere but in code blocks.
_BLOCK_LEFTOVERS = [
    ("a ::: fence", re.compile(r"^\s*:::.*$", re.M)),
    ("a directive fence", re.compile(r"^\s*(?:`{3,}|~{3,})\s*\{.*$", re.M)),
    ("a (label)= target", re.compile(r"^\s*\([^()\s]+\)=\s*$", re.M)),
    ("a labelled formula", re.compile(r"\$\$\s*\([^()\s]+\)\s*$", re.M)),
]
#: MyST inline markup: looked for outside code spans and math too.
_INLINE_LEFTOVERS = [
    ("a role", re.compile(r"\{[A-Za-z][\w.+:-]*\}`+[^`]*`*")),
    ("a substitution", re.compile(r"\{\{.*?\}\}")),
]


def leftovers(markdown: str) -> list[str]:
    """The MyST markup left in converted Markdown, outside code, one description each."""
    text = _without_code_blocks(markdown)
    found = [
        f"{what}: {m.group().strip()!r}" for what, p in _BLOCK_LEFTOVERS for m in p.finditer(text)
    ]
    prose = _SPAN_OR_MATH.sub(" ", text)
    found += [
        f"{what}: {m.group().strip()!r}" for what, p in _INLINE_LEFTOVERS for m in p.finditer(prose)
    ]
    return found


def _without_code_blocks(markdown: str) -> str:
    """``markdown`` with the lines of fenced code blocks (not directives) blanked."""
    out, fence = [], None
    for line in markdown.split("\n"):
        if fence is None:
            m = _CODE_FENCE.match(line)
            if m:
                fence = m.group(1)
                out.append("")
                continue
            out.append(line)
        else:
            if re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", line):
                fence = None
            out.append("")
    return "\n".join(out)
