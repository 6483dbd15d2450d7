"""Write Binder's learner-only pins (``binder/requirements.txt``) from ``requirements.txt``.

``requirements.txt`` pins everything the course is built and tested with: the package's
dependencies, the book, the tests and the linters. A learner on Binder needs only the first:
attnlib's runtime dependencies (``[project] dependencies`` in ``pyproject.toml``) and what
they need in turn. This script walks that closure through the metadata of the installed
distributions (the repository's ``.venv``, installed from ``requirements.txt``), evaluating
each requirement's markers for this interpreter (Binder's Python is the same 3.11), and prints
the pins of ``requirements.txt`` for those names, unchanged: the same versions, fewer of them.

The file has no ``-r`` line, so repo2docker installs it before it copies the repository and
caches that layer until the pins change. JupyterLab, the notebook server and ipykernel are not
listed: repo2docker's image has them (JupyterLab 4, README "Three ways to use it").

``make pin`` runs it after refreshing ``requirements.txt`` (``make binder`` alone:
``.venv/bin/python binder/learner_pins.py > binder/requirements.txt``);
``tests/live/test_binder.py`` checks that the committed file is exactly what it prints.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import tomllib
from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

#: The installer's own tools: ``pip freeze`` leaves them out of requirements.txt, and
#: repo2docker's image has them (setuptools 80.9, which meets torch's ``setuptools>=77.0.3``).
TOOLS = {"pip", "setuptools", "wheel"}

HEADER = """\
# Binder's environment (repo2docker): what a learner's notebooks need, nothing for the book,
# the tests or the linters. Written by `make pin` (binder/learner_pins.py) from ../requirements.txt:
# the same exact versions. No -r line, so repo2docker installs it before copying the repository
# and reuses that layer until these pins change. JupyterLab 4 and ipykernel come with its image.
# torch is the CPU build, from PyTorch's CPU index.
--extra-index-url https://download.pytorch.org/whl/cpu
"""


def canonical(name: str) -> str:
    """A name as PEP 503 compares it (``Typing_Extensions`` is ``typing-extensions``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, str]:
    """The exact pins of a requirements file: canonical name → its line (``name==version``).

    Raises
    ------
    ValueError
        If a requirement line is not an exact ``==`` pin.
    """
    pins = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        req = Requirement(line)
        if len(req.specifier) != 1 or next(iter(req.specifier)).operator != "==":
            raise ValueError(f"{path.name}: {line!r} is not an exact pin")
        pins[canonical(req.name)] = line
    return pins


def runtime_closure(requirements: list[str]) -> set[str]:
    """Canonical names of ``requirements`` and of everything they need, as installed here.

    Raises
    ------
    LookupError
        If a needed distribution is not installed in this environment.
    """
    base = default_environment()
    todo = [(Requirement(r), "") for r in requirements]
    seen: dict[str, set[str]] = {}
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**base, "extra": extra}):
            continue
        name = canonical(req.name)
        wanted = set(req.extras)
        if name in seen and wanted <= seen[name]:
            continue
        seen.setdefault(name, set()).update(wanted)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise LookupError(
                f"{req.name} is needed by attnlib but not installed here: run `make` first"
            ) from None
        for sub in dist.requires or []:
            sub_req = Requirement(sub)
            extras = ["", *sorted(seen[name])]
            for ex in extras:
                if sub_req.marker is None or sub_req.marker.evaluate({**base, "extra": ex}):
                    todo.append((sub_req, ex))
                    break
    return set(seen)


def derive(root: Path = ROOT) -> str:
    """The text of ``binder/requirements.txt``: header, index line, the learner's pins.

    Raises
    ------
    LookupError
        If a runtime dependency is not installed here, or not pinned in ``requirements.txt``.
    ValueError
        If its installed version is not the pinned one (``.venv`` is stale: run ``make``).
    """
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = read_pins(root / "requirements.txt")
    lines = []
    for name in sorted(runtime_closure(list(project["dependencies"])) - TOOLS):
        if name not in pins:
            raise LookupError(
                f"{name} is a runtime dependency but requirements.txt pins no version"
            )
        pinned = Requirement(pins[name])
        installed = metadata.version(name)
        if not pinned.specifier.contains(installed, prereleases=True):
            raise ValueError(
                f"{name} {installed} is installed but requirements.txt pins {pins[name]}: "
                "run `make` to bring .venv to the pins"
            )
        lines.append(pins[name])
    return HEADER + "\n".join(sorted(lines, key=lambda ln: canonical(Requirement(ln).name))) + "\n"


if __name__ == "__main__":
    sys.stdout.write(derive())
