"""The install cell: the first code cell of every chapter and exercise.

A notebook is used in two flavours. The **source** flavour is what the repository commits
and what the website's build executes: attnlib is installed there (``make book``), so its
first code cell only imports it (and, in an exercise, makes the ``grader``). The **live**
flavour is what a learner opens from the website's Binder and Colab buttons or the
notebooks' zip (``_ext/live_notebooks.py`` writes it at build time): there the course package
may be missing, so the same cell installs it with IPython's ``%pip``, from the repository the
course is published from, at the commit the website was built from, and never touches a
package that is already installed (Colab's ipywidgets stays as it is).

This module holds both flavours of that cell, :func:`source_cell` and :func:`install_cell`,
and the one answer to "where is the course published?", :func:`resolve`: the repository (from
``make book REPO=owner/name``, else ``GITHUB_REPOSITORY``, else ``_config.yml``), the website's
address, the branch the live copies are published to (:data:`LIVE_BRANCH`) and the tag or
commit their install cell installs. The website's launch buttons, the live copies, the
notebooks' zip and the deploy's link check all take it from there. In a chapter the cell is a
code cell of its own, first of all code cells and tagged ``remove-cell``: it runs when the
book executes, but the website does not show it. ``python -m attnlib.colab``
(``make chapters``) writes the source flavour into every ``chapters/*.ipynb``; a second run
changes nothing. The exercises get theirs from ``make exercises``
(:func:`attnlib.grading.build`).

Examples
--------
>>> from attnlib import colab
>>> print(colab.install_cell(url="https://github.com/o/r", ref="v1.0"))
# The course package. Where it is missing (on Colab, say), this installs it first, at the
# version the website was built from; it takes about a minute the first time.
try:
    import attnlib
except ModuleNotFoundError:
    %pip install --quiet "attnlib @ git+https://github.com/o/r@v1.0"

See Also
--------
The README's set-up; :func:`attnlib.grading.build` for the exercises.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CELL_ID",
    "CELL_TAG",
    "ENV_REF",
    "ENV_REPOSITORY",
    "ENV_SITE",
    "LIVE_BRANCH",
    "Home",
    "git_ref",
    "github_repository",
    "install_cell",
    "pages_site",
    "plain_source",
    "repository",
    "resolve",
    "source_cell",
    "write_chapters",
]

_ROOT = Path(__file__).resolve().parents[1]

CELL_ID = "install-attnlib"
"""The nbformat id of the install cell in every chapter (ids are unique per notebook)."""

CELL_TAG = "remove-cell"
"""The myst-nb tag that keeps the install cell off the website; it still runs."""

_SOURCE_CHAPTER = """\
# The course package (installed by the README's set-up). The copies of this notebook that the
# website's Binder and Colab buttons open install it here where it is missing.
import attnlib  # noqa: F401 (importing it is the check that it is installed)"""

_SOURCE_EXERCISE = """\
# Set up the checks. The copies of this notebook that the website's Binder and Colab buttons
# open first install the course package here where it is missing.
from attnlib.grading import student_notebook

grader = student_notebook("{name}.ipynb")"""

_LIVE = """\
{comment}
try:
    import attnlib
except ModuleNotFoundError:
    %pip install --quiet "attnlib @ git+{url}@{ref}"{after}"""

_LIVE_CHAPTER = """\
# The course package. Where it is missing (on Colab, say), this installs it first, at the
# version the website was built from; it takes about a minute the first time."""

_LIVE_EXERCISE = """\
# Set up the checks. Where the course package is missing (on Colab, say), this installs it
# first; it takes about a minute the first time."""

_LIVE_AFTER = """
from attnlib.grading import student_notebook

grader = student_notebook("{name}.ipynb")"""


def repository(config: Path | None = None) -> tuple[str, str]:
    """The course repository's URL and branch, as ``_config.yml`` names them.

    Parameters
    ----------
    config : Path, optional
        The Jupyter Book configuration (default: the repository's ``_config.yml``).

    Returns
    -------
    url : str
        ``repository.url``, e.g. ``"https://github.com/attention-course/attention-course"``.
    branch : str
        ``repository.branch`` (``"main"`` where it is not set).
    """
    import yaml

    data = yaml.safe_load(Path(config or _ROOT / "_config.yml").read_text())
    return data["repository"]["url"], data["repository"].get("branch", "main")


LIVE_BRANCH = "live"
"""The branch of the course repository that holds the live copies (``make book`` writes them to
``_build/live``, the deploy pushes them there). Binder, Colab and Live Code open it."""

ENV_REPOSITORY = "COURSE_REPOSITORY"
"""Environment variable that overrides the repository (``make book REPO=...`` sets it)."""

ENV_SITE = "COURSE_SITE_URL"
"""Environment variable that overrides the website's address (``make book SITE_URL=...``)."""

ENV_REF = "COURSE_REF"
"""Environment variable that overrides the tag or commit the live copies install (``REF=...``)."""

#: A GitHub account or organisation: letters, digits and single hyphens, at most 39 characters.
_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
#: A GitHub repository name: letters, digits, ".", "-" and "_" (not "." or "..").
_NAME = r"(?!\.\.?(?:\.git)?/?$)[A-Za-z0-9._-]{1,100}?"
_SHORT = re.compile(rf"(?P<owner>{_OWNER})/(?P<name>{_NAME})")
_FULL = re.compile(
    rf"https://(?:www\.)?github\.com/(?P<owner>{_OWNER})/(?P<name>{_NAME})(?:\.git)?/?"
)
#: A ref that git and pip's ``git+URL@REF`` accept: no white space or quotes, no ``..`` or
#: ``@{``, none of ``~^:?*[\\``, no leading ``-``.
_REF = re.compile(r"(?!-)(?!.*\.\.)(?!.*@\{)[^\s\"'~^:?*\[\\]+")


def github_repository(spec: str) -> tuple[str, str]:
    """The owner and name of a GitHub repository given as ``owner/name`` or by its URL.

    Parameters
    ----------
    spec : str
        ``"owner/name"`` or ``"https://github.com/owner/name"`` (a trailing ``/`` or ``.git``
        is allowed).

    Returns
    -------
    owner, name : str
        As spelled in ``spec``.

    Raises
    ------
    ValueError
        For anything else (another host, a path below the repository, a blank): Binder, Colab
        and the install cells need a repository on GitHub.

    Examples
    --------
    >>> github_repository("https://github.com/ana/attention.git")
    ('ana', 'attention')
    """
    text = spec.strip()
    found = _SHORT.fullmatch(text) or _FULL.fullmatch(text)
    if found is None:
        raise ValueError(
            f"the course repository must be given as owner/name or https://github.com/owner/name "
            f"(Binder, Colab and the install cells need a GitHub repository), got {spec!r}"
        )
    return found["owner"], found["name"]


def pages_site(owner: str, name: str) -> str:
    """The address GitHub Pages serves a repository's website at, with a trailing ``/``.

    ``owner/name`` is served at ``https://owner.github.io/name/``; the repository named
    ``owner.github.io`` is the account's own site, ``https://owner.github.io/``. Host names
    are case-insensitive and GitHub writes them in lower case.
    """
    host = f"{owner.lower()}.github.io"
    return f"https://{host}/" if name.lower() == host else f"https://{host}/{name}/"


def _git(root: Path, *args: str) -> str | None:
    """The output of ``git -C root ARGS`` (stripped), or None where git fails or is missing."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_ref(root: Path | None = None) -> tuple[str, str, str]:
    """The tag or commit a build of ``root`` records for the live copies to install.

    Parameters
    ----------
    root : Path, optional
        A git checkout (default: this repository).

    Returns
    -------
    ref : str
        The tag at ``HEAD`` if there is one (``git describe --tags --exact-match``), else the
        full commit (``git rev-parse HEAD``).
    commit : str
        The full commit of ``HEAD``.
    how : str
        ``"the tag at HEAD"`` or ``"the commit at HEAD"``, for the build's log.

    Raises
    ------
    RuntimeError
        If ``root`` is not a git checkout with a commit: then say ``REF=`` which to install.
    """
    root = Path(root or _ROOT)
    commit = _git(root, "rev-parse", "--verify", "HEAD^{commit}")
    if not commit:
        raise RuntimeError(
            f"{root} is not a git checkout with a commit, so the build cannot tell which version "
            "the live notebooks should install: give it, e.g. `make book REF=v1.0`"
        )
    tag = _git(root, "describe", "--tags", "--exact-match", "HEAD")
    if tag:
        return tag, commit, "the tag at HEAD"
    return commit, commit, "the commit at HEAD"


@dataclass(frozen=True)
class Home:
    """Where the course is published, as one build resolved it (:func:`resolve`).

    Attributes
    ----------
    owner, name : str
        The GitHub repository, ``owner/name``.
    branch : str
        The source branch (``repository.branch`` of ``_config.yml``): edit and issue buttons.
    site : str
        The website's address, with a trailing ``/``.
    ref : str
        The tag or commit the live copies' install cells install.
    commit : str
        The source commit the build ran on ("" where the build was not in a git checkout).
    live_branch : str
        The branch that holds the live copies (:data:`LIVE_BRANCH`).
    chosen : dict
        For each of ``repository``, ``site`` and ``ref``: where the value came from.
    """

    owner: str
    name: str
    branch: str
    site: str
    ref: str
    commit: str
    live_branch: str = LIVE_BRANCH
    chosen: Mapping[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """``https://github.com/owner/name``."""
        return f"https://github.com/{self.owner}/{self.name}"

    def describe(self) -> str:
        """One line for the build's log: each value and where it came from."""
        return (
            f"repository {self.url} ({self.chosen.get('repository', '?')}), "
            f"website {self.site} ({self.chosen.get('site', '?')}), "
            f"live copies on branch {self.live_branch!r} install {self.ref} "
            f"({self.chosen.get('ref', '?')})"
        )

    def as_dict(self) -> dict[str, object]:
        """The values as JSON-ready data (the live tree's ``.course-build.json``)."""
        return {
            "repository": self.url,
            "owner": self.owner,
            "name": self.name,
            "branch": self.branch,
            "live_branch": self.live_branch,
            "site": self.site,
            "ref": self.ref,
            "commit": self.commit,
            "chosen": dict(self.chosen),
        }


def resolve(
    environ: Mapping[str, str] | None = None,
    *,
    root: Path | None = None,
    config: Path | None = None,
) -> Home:
    """Where the course is published: the one function the build, the zip and the checks call.

    The repository is, in this order: ``COURSE_REPOSITORY`` (what ``make book REPO=...``
    passes), ``GITHUB_REPOSITORY`` (set by GitHub Actions: a deploy points at the repository
    it runs in), ``repository.url`` of ``_config.yml``. The website is ``COURSE_SITE_URL``
    (``SITE_URL=...``) or GitHub Pages' address for that repository (:func:`pages_site`). The
    ref is ``COURSE_REF`` (``REF=...``) or what :func:`git_ref` finds at ``HEAD``. An empty
    variable counts as unset.

    Parameters
    ----------
    environ : mapping, optional
        The environment (default: ``os.environ``).
    root : Path, optional
        The git checkout the build runs in (default: this repository).
    config : Path, optional
        The Jupyter Book configuration (default: ``root/_config.yml``).

    Returns
    -------
    Home

    Raises
    ------
    ValueError
        If a repository, website or ref is malformed; the message names the variable.
    RuntimeError
        If no ref is given and ``root`` is not a git checkout (:func:`git_ref`).
    """
    env = os.environ if environ is None else environ
    root = Path(root or _ROOT)
    chosen: dict[str, str] = {}
    for variable, how in (
        (ENV_REPOSITORY, f"REPO= ({ENV_REPOSITORY})"),
        ("GITHUB_REPOSITORY", "GITHUB_REPOSITORY"),
    ):
        if env.get(variable, "").strip():
            try:
                owner, name = github_repository(env[variable])
            except ValueError as exc:
                raise ValueError(f"{how}: {exc}") from None
            chosen["repository"] = how
            break
    else:
        url, _ = repository(config or root / "_config.yml")
        try:
            owner, name = github_repository(url)
        except ValueError as exc:
            raise ValueError(f"repository.url of _config.yml: {exc}") from None
        chosen["repository"] = "_config.yml"
    _, branch = repository(config or root / "_config.yml")

    site = env.get(ENV_SITE, "").strip()
    if site:
        if not re.fullmatch(r"https?://[^\s\"'<>]+", site):
            raise ValueError(f"SITE_URL= ({ENV_SITE}) must be an http(s) address, got {site!r}")
        site = site.rstrip("/") + "/"
        chosen["site"] = f"SITE_URL= ({ENV_SITE})"
    else:
        site = pages_site(owner, name)
        chosen["site"] = "GitHub Pages of the repository"

    ref = env.get(ENV_REF, "").strip()
    if ref:
        if not _REF.fullmatch(ref):
            raise ValueError(f"REF= ({ENV_REF}) must be a git tag, branch or commit, got {ref!r}")
        commit = _git(root, "rev-parse", "--verify", "HEAD^{commit}") or ""
        chosen["ref"] = f"REF= ({ENV_REF})"
    else:
        ref, commit, how = git_ref(root)
        chosen["ref"] = how
    return Home(
        owner=owner, name=name, branch=branch, site=site, ref=ref, commit=commit, chosen=chosen
    )


def source_cell(exercise: str | None = None) -> str:
    """The first code cell as the repository commits it: import, no install.

    Parameters
    ----------
    exercise : str, optional
        The exercise's notebook name without ``.ipynb`` (e.g. ``"01_masked_softmax"``);
        ``None`` (default) for the chapters' cell.

    Returns
    -------
    str
        Python source, without a trailing newline.
    """
    if exercise is None:
        return _SOURCE_CHAPTER
    return _SOURCE_EXERCISE.format(name=exercise)


def plain_source(url: str, ref: str, what: str) -> None:
    """Refuse a ``url`` or ``ref`` that would break out of a quoted ``pip install`` argument.

    Parameters
    ----------
    url, ref : str
        The repository and the tag or commit ``what`` installs from.
    what : str
        What needs them, for the message (e.g. ``"the install cell"``).

    Raises
    ------
    ValueError
        If either is empty or holds a quote or white space.
    """
    for name, value in (("url", url), ("ref", ref)):
        if not value or any(ch.isspace() or ch in "\"'" for ch in value):
            raise ValueError(f"{what} needs a plain {name}, got {value!r}")


def install_cell(exercise: str | None = None, *, url: str, ref: str) -> str:
    """The first code cell of a live notebook: install the course where it is missing.

    The cell imports attnlib and, only where that raises ``ModuleNotFoundError``,
    installs it with IPython's ``%pip`` from ``url`` at ``ref``. pip leaves every
    dependency that is already installed as it is (no ``--upgrade``), and attnlib's
    ranges admit what Colab ships, so nothing is replaced under a running kernel.
    An exercise's cell then makes the exercise's ``grader``.

    Parameters
    ----------
    exercise : str, optional
        The exercise's notebook name without ``.ipynb``; ``None`` (default) for a chapter.
    url : str
        The repository the course is published from, e.g. ``"https://github.com/o/r"``.
    ref : str
        The tag or commit the website was built from.

    Returns
    -------
    str
        IPython source, without a trailing newline.

    Raises
    ------
    ValueError
        If ``url`` or ``ref`` is empty or holds a quote or white space.
    """
    plain_source(url, ref, "the install cell")
    if exercise is None:
        comment, after = _LIVE_CHAPTER, ""
    else:
        comment, after = _LIVE_EXERCISE, _LIVE_AFTER.format(name=exercise)
    return _LIVE.format(comment=comment, url=url.rstrip("/"), ref=ref, after=after)


def _code_cell(source: str) -> dict:
    """A code cell as nbformat stores it (keys sorted, no outputs)."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": CELL_ID,
        "metadata": {"tags": [CELL_TAG]},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }


def write_chapters(chapters: Path | None = None) -> list[Path]:
    """Put the install cell's source flavour first among the code cells of every chapter.

    A cell with id :data:`CELL_ID` is replaced wherever it is; otherwise the
    cell goes in front of the first code cell. The JSON keeps the layout the
    notebooks are committed in (indent 1, UTF-8 as is, trailing newline), and a
    file is written only when its text changes, so a second run changes nothing.

    Parameters
    ----------
    chapters : Path, optional
        Folder of chapter notebooks (default ``chapters/``).

    Returns
    -------
    list of Path
        The notebooks that changed.

    Raises
    ------
    ValueError
        If a notebook has no code cell to put the install cell before.
    """
    source = source_cell()
    changed = []
    for path in sorted(Path(chapters or _ROOT / "chapters").glob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        cells = [c for c in nb["cells"] if c.get("id") != CELL_ID]
        first = next((k for k, c in enumerate(cells) if c["cell_type"] == "code"), None)
        if first is None:
            raise ValueError(f"{path.name} has no code cell to put the install cell before")
        cells.insert(first, _code_cell(source))
        nb["cells"] = cells
        new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m attnlib.colab [CHAPTERS]`` (``make chapters``)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m attnlib.colab",
        description="Write the install cell, from its one template, into every chapter.",
    )
    parser.add_argument("chapters", nargs="?", type=Path, help="folder (default: chapters/)")
    args = parser.parse_args(argv)
    changed = write_chapters(args.chapters)
    for path in changed:
        sys.stdout.write(f"wrote {path}\n")
    if not changed:
        sys.stdout.write("every chapter's install cell is up to date\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
