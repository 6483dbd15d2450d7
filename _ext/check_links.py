"""The deploy's link check: the site and the live notebooks link the course's repository only.

``python _ext/check_links.py _build [--repo owner/name]`` (the deploy runs it after ``make book``
with ``--repo`` set to the repository it deploys from) reads the build's record,
``_build/live/.course-build.json`` (:data:`attnlib.bundle.MANIFEST`), and fails, listing every
problem, when

- a page of ``_build/html`` or a live notebook of ``_build/live`` (any cell) or the notebooks'
  zip links a GitHub repository other than the configured one: a ``github.com/owner/name``
  address, a Binder (``mybinder.org/v2/gh/...``) or Colab (``colab.research.google.com/github/...``)
  launch, a ``raw.githubusercontent.com`` file, or Live Code's ``repo: "owner/name"``. Another
  repository that the prose means to cite goes in :data:`ALLOWED`, the one allow-list;
- a notebook page's Binder, Colab or Live Code button does not open the same notebook on the
  live branch of the configured repository, or its edit, issue or repository button does not
  point at the source repository and branch;
- a live notebook's install cell does not install ``attnlib @ git+URL@REF`` with the
  configured URL and the ref the build recorded, or the zip's set-up line does not;
- ``--repo`` names another repository than the one the site was built for.

It prints one line when all is well. Third-party scripts and stylesheets the site serves
(``_static/``, ``_vendor/``) name their own repositories in comments and are not pages.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import yaml

from attnlib.bundle import MANIFEST, NAME

ROOT = Path(__file__).resolve().parents[1]

#: Other people's repositories the course's prose may link, as "owner/name" (none so far).
ALLOWED: frozenset[str] = frozenset()

_OWNER = r"(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))"
_NAME = r"(?P<name>[A-Za-z0-9._-]+)"
#: Every way a page or notebook can name a GitHub repository.
REPOSITORY_LINKS = [
    re.compile(rf"\bgithub\.com/{_OWNER}/{_NAME}"),
    re.compile(rf"\braw\.githubusercontent\.com/{_OWNER}/{_NAME}"),
    re.compile(rf"\bcolab\.research\.google\.com/github/{_OWNER}/{_NAME}"),
    re.compile(rf"\bmybinder\.org/v2/gh/{_OWNER}/{_NAME}"),
    re.compile(rf"\brepo:\s*\"{_OWNER}/{_NAME}\""),  # sphinx-thebe's binderOptions
]
#: Folders of the built site that hold no pages.
NOT_PAGES = {"_static", "_vendor", "_sources", "_images"}
#: The install line of a live notebook or of the zip's set-up.
INSTALL = re.compile(r"attnlib(?:\[[\w,]+\])? @ git\+(?P<url>[^\s\"'@]+)@(?P<ref>[^\s\"']+)")


def _repo(owner: str, name: str) -> str:
    return f"{owner}/{name.removesuffix('.git').rstrip('.')}".lower()


def repositories(text: str) -> Iterator[tuple[str, str]]:
    """Every GitHub repository ``text`` names: ("owner/name" in lower case, the match)."""
    for pattern in REPOSITORY_LINKS:
        for m in pattern.finditer(text):
            yield _repo(m["owner"], m["name"]), m.group()


def _parse_repo(spec: str) -> str:
    m = re.fullmatch(rf"(?:https://github\.com/)?{_OWNER}/{_NAME}/?", spec.strip())
    if not m:
        raise SystemExit(f"--repo must be owner/name or https://github.com/owner/name: {spec!r}")
    return _repo(m["owner"], m["name"])


def _href(html: str, pattern: str) -> list[str]:
    return re.findall(rf'href="({pattern}[^"]*)"', html)


def check(build: Path, repo: str | None = None) -> tuple[list[str], str]:
    """The problems of a build (``_build``), and a one-line summary.

    Parameters
    ----------
    build : Path
        The build folder that holds ``html/`` and ``live/``.
    repo : str, optional
        The repository the deploy expects, ``owner/name`` (default: the build's own record).
    """
    html_dir, live = build / "html", build / "live"
    record_path = live / MANIFEST
    if not record_path.is_file():
        return [f"{record_path} is missing: run `make book` first"], ""
    record = json.loads(record_path.read_text(encoding="utf-8"))
    url, ref = record["repository"], record["ref"]
    owner, name, branch, live_branch = (
        record["owner"],
        record["name"],
        record["branch"],
        record["live_branch"],
    )
    mine = _repo(owner, name)
    problems: list[str] = []
    if repo is not None and _parse_repo(repo) != mine:
        problems.append(f"the site was built for {mine}, the deploy expects {_parse_repo(repo)}")
    allowed = {mine} | {a.lower() for a in ALLOWED}

    def foreign(where: str, text: str) -> None:
        for found, match in repositories(text):
            if found not in allowed:
                problems.append(f"{where} links {found} ({match})")

    pages = [
        p
        for p in sorted(html_dir.rglob("*.html"))
        if not NOT_PAGES & set(p.relative_to(html_dir).parts)
    ]
    for page in pages:
        foreign(page.relative_to(build).as_posix(), page.read_text(encoding="utf-8"))

    launch = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["launch_buttons"]
    lab = {"classic": "tree", "jupyterlab": "lab/tree"}[launch.get("notebook_interface", "classic")]
    binder, colab = launch["binderhub_url"].rstrip("/"), launch["colab_url"].rstrip("/")
    for rel in record["notebooks"]:
        page = html_dir / Path(rel).with_suffix(".html")
        where = page.relative_to(build).as_posix()
        if not page.is_file():
            problems.append(f"{where} is missing (the live notebook {rel} has no page)")
            continue
        html = page.read_text(encoding="utf-8")
        expected = {
            "Binder": f"{binder}/v2/gh/{owner}/{name}/{live_branch}?urlpath={lab}/{rel}",
            "Colab": f"{colab}/github/{owner}/{name}/blob/{live_branch}/{rel}",
            "edit": f"{url}/edit/{branch}/{rel}",
            "repository": url,
        }
        for what, href in expected.items():
            if f'href="{href}"' not in html:
                problems.append(f"{where}: no {what} button to {href}")
        issues = _href(html, re.escape(f"{url}/issues/new"))
        if not issues:
            problems.append(f"{where}: no issue button to {url}/issues/new")
        thebe = re.search(r'repo:\s*"([^"]+)",\s*ref:\s*"([^"]+)"', html)
        if not thebe or (thebe[1].lower(), thebe[2]) != (mine, live_branch):
            problems.append(
                f"{where}: Live Code opens {thebe and thebe.groups()}, not {mine} at {live_branch}"
            )

    for rel in record["notebooks"]:
        path = live / rel
        nb = json.loads(path.read_text(encoding="utf-8"))
        where = path.relative_to(build).as_posix()
        for cell in nb["cells"]:
            foreign(f"{where}, cell {cell.get('id')}", "".join(cell["source"]))
        first = next(("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"), "")
        installs = [(m["url"], m["ref"]) for m in INSTALL.finditer(first)]
        if installs != [(url, ref)]:
            problems.append(f"{where}: the install cell installs {installs}, not {(url, ref)}")
    for extra in sorted(live.glob("*.md")):
        foreign(extra.relative_to(build).as_posix(), extra.read_text(encoding="utf-8"))

    zipped = html_dir / NAME
    if zipped.is_file():
        with zipfile.ZipFile(zipped) as zf:
            for member in zf.namelist():
                foreign(f"{zipped.name}:{member}", zf.read(member).decode("utf-8"))
                if member.endswith("README.md"):
                    text = zf.read(member).decode("utf-8")
                    line = [(m["url"], m["ref"]) for m in INSTALL.finditer(text)]
                    if line != [(url, ref)]:
                        problems.append(f"{zipped.name}: the set-up installs {line}")
    summary = (
        f"link check: {len(pages)} pages, {len(record['notebooks'])} live notebooks and the zip "
        f"link github.com/{owner}/{name} only; every launch, edit and issue button and install "
        f"cell points there (live branch {live_branch!r}, ref {ref})"
    )
    return problems, summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python _ext/check_links.py", description=__doc__)
    parser.add_argument("build", type=Path, help="the build folder (_build)")
    parser.add_argument("--repo", help="the repository the deploy expects (owner/name)")
    args = parser.parse_args(argv)
    problems, summary = check(args.build, args.repo)
    if problems:
        sys.stderr.write(f"link check: {len(problems)} problem(s)\n")
        sys.stderr.writelines(f"  {p}\n" for p in problems)
        return 1
    sys.stdout.write(summary + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
