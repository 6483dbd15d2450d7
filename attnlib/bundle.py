"""The course as one download: every chapter and exercise notebook in a zip, with one set-up line.

``make book`` builds the website and then this zip into it
(``_build/html/attention-course-notebooks.zip``); the introduction links it. The zip holds
the live copies of the notebooks (``_build/live``, written by the website's build,
``_ext/live_notebooks.py``): the notebooks of ``_toc.yml`` in their folders (``chapters/``,
``exercises/``), without outputs, their prose in plain Jupyter Markdown with the website's
numbers, their first cell installing the course package where it is missing. A ``README.md``
says how to set up: one line that installs JupyterLab and the course package from the
repository, at the tag or commit the website was built from (the same as the install cells;
the exercises' checks need nothing more). The zip is reproducible: the same live tree gives the
same bytes.

Examples
--------
>>> from attnlib import bundle
>>> bundle.setup_line(url="https://github.com/o/r", ref="v1.0")
'pip install jupyterlab "attnlib @ git+https://github.com/o/r@v1.0"'

See Also
--------
The introduction (intro.md), "Where to start"; :mod:`attnlib.colab` for the install cell.
"""

from __future__ import annotations

import json
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from attnlib import colab

__all__ = [
    "FOLDER",
    "LIVE",
    "MANIFEST",
    "NAME",
    "build",
    "clean_notebook",
    "setup_line",
    "toc_notebooks",
]

_ROOT = Path(__file__).resolve().parents[1]

NAME = "attention-course-notebooks.zip"
"""The zip's file name, in the site's root folder next to ``intro.html``."""

FOLDER = "attention-course"
"""The one folder the zip unpacks into."""

LIVE = _ROOT / "_build" / "live"
"""The live copies the website's build writes (``_ext/live_notebooks.py``)."""

MANIFEST = ".course-build.json"
"""What the build resolved (repository, ref, the notebooks), in the live tree."""

#: Every entry's timestamp (the earliest a zip can store): the bytes do not depend on the day.
_EPOCH = (1980, 1, 1, 0, 0, 0)


def toc_notebooks(root: Path | None = None) -> list[Path]:
    """The notebooks ``_toc.yml`` lists, in reading order, as paths relative to ``root``.

    Parameters
    ----------
    root : Path, optional
        The book's folder (default: the repository).

    Returns
    -------
    list of Path
        e.g. ``chapters/symbols.ipynb``, ..., ``exercises/06_decoding.ipynb``; pages that
        are Markdown (``intro``, ``chapters/glossary``, ``exercises/index``) are left out.
    """
    import yaml

    root = Path(root or _ROOT)
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    found: list[Path] = []

    def visit(entries: Sequence[dict]) -> None:
        for entry in entries:
            if "file" in entry:
                path = Path(entry["file"]).with_suffix(".ipynb")
                if (root / path).is_file():
                    found.append(path)
            if "glob" in entry:  # a pattern over page names (``exercises/[0-9]*``), sorted
                pages = root.glob(f"{entry['glob']}.ipynb")
                found.extend(sorted(p.relative_to(root) for p in pages))
            visit(entry.get("sections", []))
            visit(entry.get("chapters", []))

    visit([{"file": toc["root"]}, *toc.get("parts", []), *toc.get("chapters", [])])
    return found


def setup_line(*, url: str, ref: str) -> str:
    """The one shell line that installs what every notebook of the zip imports.

    Parameters
    ----------
    url : str
        The course repository, e.g. ``"https://github.com/o/r"``.
    ref : str
        The tag or commit the website (and the notebooks' install cells) was built from.

    Returns
    -------
    str
        ``pip install jupyterlab "attnlib @ git+URL@REF"``.

    Raises
    ------
    ValueError
        If ``url`` or ``ref`` is empty or holds a quote or white space.
    """
    colab.plain_source(url, ref, "the set-up line")
    return f'pip install jupyterlab "attnlib @ git+{url.rstrip("/")}@{ref}"'


def clean_notebook(text: str) -> str:
    """A notebook's JSON without outputs, execution counts or saved widget state.

    Outputs are what would carry the machine a notebook last ran on: paths in warnings
    and tracebacks, timings, figures. The cells' sources and ids are kept as they are.

    Parameters
    ----------
    text : str
        The notebook file's text.

    Returns
    -------
    str
        The cleaned notebook, laid out as the repository stores notebooks (indent 1,
        UTF-8 as is, a trailing newline).
    """
    nb = json.loads(text)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    nb.get("metadata", {}).pop("widgets", None)
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def _title(text: str) -> str:
    """The first ``# `` heading of a notebook's Markdown cells ("" where there is none)."""
    for cell in json.loads(text).get("cells", []):
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell.get("source", "")).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def _readme(notebooks: Sequence[tuple[Path, str]], line: str, site: str) -> str:
    listing = "\n".join(f"- `{path.as_posix()}`: {title}" for path, title in notebooks)
    return f"""# Attention, run and checked: the notebooks

Every chapter and exercise of the course, to run in your own Jupyter (the website is
{site}). Set up once, in a fresh virtual environment with Python 3.11 (3.10 or newer),
from this folder:

```
{line}
```

(on Linux without a GPU, add `--extra-index-url https://download.pytorch.org/whl/cpu` for a much
smaller torch), then run `jupyter lab` here and open the notebooks in the order below. The first
code cell of each notebook installs the course package only where it is missing, so on your
machine it does nothing. The exercises check your answers cell by cell (`grader.check`).

{listing}
"""


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(f"{FOLDER}/{name}", date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def build(out: Path, live: Path | None = None, *, line: str | None = None) -> Path:
    """Write the zip of the course's notebooks to ``out``, from the live copies.

    Parameters
    ----------
    out : Path
        The zip to write (its folder is made where missing).
    live : Path, optional
        The live tree the website's build wrote (default: ``_build/live``). Its
        ``.course-build.json`` names the notebooks, the repository and the ref.
    line : str, optional
        The set-up line of the README (default: :func:`setup_line` for that repository and ref).

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    FileNotFoundError
        If ``live`` holds no live notebooks (run ``make book`` first), or names none.
    """
    live = Path(live or LIVE)
    out = Path(out)
    manifest_path = live / MANIFEST
    if not manifest_path.is_file():
        raise FileNotFoundError(
            f"{live} holds no live notebooks ({MANIFEST} is missing): run `make book` first"
        )
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    notebooks = [Path(p) for p in manifest.get("notebooks", [])]
    if not notebooks:
        raise FileNotFoundError(f"{manifest_path} names no notebook")
    cleaned = [
        (path, clean_notebook((live / path).read_text(encoding="utf-8"))) for path in notebooks
    ]
    line = line or setup_line(url=manifest["repository"], ref=manifest["ref"])
    titles = [(path, _title(text)) for path, text in cleaned]
    readme = _readme(titles, line, manifest["site"])
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(partial, "w") as zf:
        zf.writestr(_entry("README.md"), readme)
        for path, text in cleaned:
            zf.writestr(_entry(path.as_posix()), text)
    partial.replace(out)  # a reader never sees half a zip
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m attnlib.bundle [OUT]`` (``make bundle``, part of ``make book``)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m attnlib.bundle",
        description="Zip the live copy of every chapter and exercise with a one-line set-up.",
    )
    parser.add_argument(
        "out",
        nargs="?",
        type=Path,
        default=_ROOT / "_build" / "html" / NAME,
        help=f"the zip to write (default: _build/html/{NAME})",
    )
    parser.add_argument(
        "--live",
        type=Path,
        default=LIVE,
        help="the live notebooks the website's build wrote (default: _build/live)",
    )
    args = parser.parse_args(argv)
    path = build(args.out, args.live)
    sys.stdout.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
