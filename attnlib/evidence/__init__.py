"""The chapters' claims that rest on a computed result, one module per chapter, for any seed.

A sentence such as "the reversal model puts its largest weight on the mirror position"
rests on a trained model, and a trained model is one draw of its initial weights and batch
order (a Monte Carlo estimate is one draw of its samples). Each chapter whose claims could
come out otherwise with another seed has a module here, named by the chapter's slug
(``attnlib/evidence/bottleneck.py`` for ``chapters/bottleneck.ipynb``). It holds:

``check_claims(seed=0, ...)``
    computes the numbers the chapter states, checks each claim with :mod:`attnlib.claims`
    and returns the numbers, with the checks by group under ``"checks"``. With ``seed=0`` it
    reads the shipped checkpoints, which is what the chapter shows; with another seed it
    retrains the same recipes on the same data. The words and the threshold of each claim
    are written there, once: the chapter displays the checks under its sentences and does
    not restate them.
``GROUPS``
    the groups of checks the chapter displays, each under its own sentence.
``AT_LEAST``
    the fewest claims the module must check, so that one that silently stops checking fails.

and, where they apply, ``PARTS`` (the parts ``check_claims(parts=...)`` can run alone),
``SEED_CASES`` (the parts each case of the seed test runs, when one run takes over a
minute), ``RECORDED_SEEDS`` (seeds whose models take too long to retrain in ``make test``:
the test reads their results from the table ``make seeds`` writes), ``DOES_NOT_HOLD`` (claims
known to fail for some seeds, by the seeds they fail for) and ``OVER_SEEDS`` (a function
whose claims compare seeds in one run). What each module's claims rest on, which of them
vary with a seed and which are checked in the chapter itself (arithmetic and data, which no
seed changes) is said in the module's docstring.

:func:`chapters` finds the modules: every module of this package whose name does not start
with ``_`` is a chapter's. Helpers several modules share are in :mod:`._shared`.
``python -m attnlib.evidence`` (``make seeds``) runs every chapter for seeds 0, 1 and 2 and
writes the table ``tests/seeds.md``; ``tests/test_seeds.py`` runs them in ``make test``.

See Also
--------
attnlib.claims : the checks.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import Any

from attnlib import claims
from attnlib.evidence._seeds import ClaimOutcome

__all__ = ["Chapter", "ClaimOutcome", "chapters", "run"]


@dataclasses.dataclass(frozen=True)
class Chapter:
    """A chapter's evidence module, as :func:`chapters` reads it.

    Attributes
    ----------
    slug : str
        The chapter's file name without ``.ipynb``, and the module's name.
    module : module
    check_claims : callable
        ``check_claims(seed, parts=...)``.
    groups : tuple of str
        The groups of checks the chapter displays.
    at_least : int
        The fewest claims the module checks.
    cases : tuple of (tuple of str or None)
        The parts each case of the seed test runs (``(None,)``: one case, every part).
    recorded_seeds : tuple of int
        Seeds ``make test`` reads from the table instead of retraining.
    does_not_hold : dict
        Claim (its words for seed 0) → the seeds it is known to fail for.
    over_seeds : callable or None
        ``over_seeds(seeds)``: claims that compare seeds in one run.
    """

    slug: str
    module: ModuleType
    check_claims: Callable[..., dict[str, Any]]
    groups: tuple[str, ...]
    at_least: int
    cases: tuple[tuple[str, ...] | None, ...]
    recorded_seeds: tuple[int, ...]
    does_not_hold: dict[str, tuple[int, ...]]
    over_seeds: Callable[..., dict[str, Any]] | None


def _read(module: ModuleType) -> Chapter:
    """The :class:`Chapter` a module declares; a clear error for a missing or wrong name."""
    slug = module.__name__.rpartition(".")[2]
    where = f"attnlib.evidence.{slug}"
    fn = getattr(module, "check_claims", None)
    if not callable(fn):
        raise TypeError(f"{where} must define check_claims(seed=0, ...)")
    groups = getattr(module, "GROUPS", None)
    if not (isinstance(groups, tuple) and groups and all(isinstance(g, str) for g in groups)):
        raise TypeError(f"{where}.GROUPS must be a non-empty tuple of group names")
    at_least = getattr(module, "AT_LEAST", None)
    if isinstance(at_least, bool) or not isinstance(at_least, int) or at_least < 1:
        raise TypeError(f"{where}.AT_LEAST must be a whole number ≥ 1, got {at_least!r}")
    parts = tuple(getattr(module, "PARTS", ()))
    cases = tuple(getattr(module, "SEED_CASES", (None,)))
    if cases != (None,):
        covered = [p for case in cases for p in case]
        if sorted(covered) != sorted(parts):
            raise ValueError(f"{where}.SEED_CASES must run each of PARTS {parts} once")
    recorded = tuple(getattr(module, "RECORDED_SEEDS", ()))
    if 0 in recorded:
        raise ValueError(f"{where}.RECORDED_SEEDS: seed 0 is always checked live")
    over = getattr(module, "OVER_SEEDS", None)
    return Chapter(
        slug=slug,
        module=module,
        check_claims=fn,
        groups=groups,
        at_least=at_least,
        cases=cases,
        recorded_seeds=recorded,
        does_not_hold=dict(getattr(module, "DOES_NOT_HOLD", {})),
        over_seeds=over,
    )


@functools.cache
def chapters() -> dict[str, Chapter]:
    """Every chapter's evidence module, by slug: the modules of this package not named ``_…``.

    Imported on the first call (they import torch and the trained-model stacks), so that
    ``from attnlib.evidence import bottleneck`` loads one chapter's module only.

    Returns
    -------
    dict
        Slug → :class:`Chapter`, in alphabetical order.
    """
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.ispkg:
            continue
        found[info.name] = _read(importlib.import_module(f"{__name__}.{info.name}"))
    return found


def _checks(found: dict[str, Any], where: str) -> Iterator[ClaimOutcome]:
    groups = found.get("checks")
    if not isinstance(groups, dict):
        raise TypeError(f"{where} must return its checks by group under 'checks'")
    for group, checks in groups.items():
        for k, c in enumerate(checks):
            yield ClaimOutcome(group, k, c.claim, c.evidence, c.holds)


def run(
    slug: str,
    seed: int | Sequence[int],
    parts: Sequence[str] | None = None,
    **options: Any,
) -> list[ClaimOutcome]:
    """Check one chapter's claims for one seed, recording the failures instead of raising.

    Parameters
    ----------
    slug : str
        A key of :func:`chapters`.
    seed : int or sequence of int
        The training seed; a sequence runs the chapter's ``over_seeds`` function instead.
    parts : sequence of str, optional
        Run only these parts (``None``: all).
    **options
        Passed on to the claim function.

    Returns
    -------
    list of ClaimOutcome
        Every claim the function checked, group by group, failing ones included.

    Raises
    ------
    ValueError
        If a claim was checked but not returned in a group: the chapter could not show it.
    """
    chapter = chapters()[slug]
    if isinstance(seed, int):
        fn: Callable[..., dict[str, Any]] = chapter.check_claims
        kwargs = {**options, **({} if parts is None else {"parts": list(parts)})}
        call = functools.partial(fn, seed, **kwargs)
    else:
        if chapter.over_seeds is None:
            raise ValueError(f"the chapter {slug!r} has no claims over several seeds")
        call = functools.partial(chapter.over_seeds, tuple(seed), **options)
    with claims.recording() as recorded:
        found = call()
    checks = list(_checks(found, f"attnlib.evidence.{slug}"))
    shown = sorted((c.claim, c.evidence) for c in checks)
    if shown != sorted((r.claim, r.evidence) for r in recorded):
        hidden = sorted({r.claim for r in recorded} - {c.claim for c in checks})
        raise ValueError(
            f"attnlib.evidence.{slug} checked claims it does not return in a group "
            f"(the chapter could not show them): {hidden}"
        )
    return checks
