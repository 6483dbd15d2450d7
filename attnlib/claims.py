"""Claims checked against their evidence: the sentence, then the line that checks it.

A chapter states what a computation shows ("the baseline learns more slowly",
"the weights are near uniform"). Under each such sentence sits one call from
this module, which the reader sees in the page as a line such as::

    ✔ Checked: attention beats the baseline on the longest strings
      (exact match 0.996 vs 0.099; needs a > b)

and which raises :class:`ClaimError` the moment the numbers stop supporting
the words. A failing claim fails the notebook, so it fails the book build and
the notebook tests: prose cannot drift from the numbers beside it.

The checks::

    from attnlib import claims
    claims.greater(acc_attn, acc_base, "attention is more accurate", names=("attn", "base"))
    claims.at_most(h_share, 0.1, "the weights are focused", name="H_t / log T_x")
    claims.between(top1, 0.5, 0.7, "they agree at about 60 % of steps", name="top-1 agreement")
    claims.close(c_a, c_b, "the two context vectors are the same", tol=1e-12)
    claims.check(ok, "every output is unchanged", evidence="120 of 120 sentences")

Two kinds of line. Most checks are evidence: a measurement that could have come out otherwise
("✔ Checked: …"). Some show an identity, a fact that holds for any input by the algebra (the
additive score's bound ``|e_ti| ≤ ‖v_a‖₁``, a convex combination lying in the hull): the check
then guards the code that computes it, not the claim, and says so (``identity=True``:
"✔ Identity: …").

A claim about a trained model should hold for other training seeds too;
:func:`across_seeds` runs a claim function for several seeds and tabulates
which of its claims hold for which seed (``tests/test_seeds.py`` does this).

See Also
--------
Every chapter; the convention is described in the course's README.
"""

from __future__ import annotations

import contextlib
import html
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "Checked",
    "ClaimError",
    "SeedTable",
    "across_seeds",
    "at_least",
    "at_most",
    "between",
    "check",
    "close",
    "greater",
    "recording",
]


class ClaimError(AssertionError):
    """A sentence of the course is no longer supported by the numbers it rests on."""


@dataclass(frozen=True)
class Checked:
    """One claim and the evidence that was checked for it.

    Attributes
    ----------
    claim : str
        The sentence (or its gist) as the prose states it.
    evidence : str
        The numbers, and the test they had to pass.
    holds : bool
        Whether they passed (always True outside :func:`recording`).
    identity : bool
        True for a fact that holds for any input by the algebra: the line then reads
        "Identity", and checks the code that computes it rather than the claim.
    """

    claim: str
    evidence: str
    holds: bool = True
    identity: bool = False

    @property
    def kind(self) -> str:
        """What the line shows: "Identity" (true for any input) or "Checked" (evidence)."""
        return "Identity" if self.identity else "Checked"

    def __repr__(self) -> str:
        mark = f"✔ {self.kind}" if self.holds else "✘ FAILS"
        return f"{mark}: {self.claim} ({self.evidence})"

    def _repr_html_(self) -> str:
        mark, word = ("✔", self.kind) if self.holds else ("✘", "Fails")
        title = (
            ' title="true for any input, by the algebra: this line checks the code, not the claim"'
            if self.identity
            else ""
        )
        return (
            f'<p class="attnlib-claim"{title}><span aria-hidden="true">{mark}</span> '
            f"<strong>{word}:</strong> {html.escape(self.claim)} "
            f"<span class='attnlib-claim-evidence'>({html.escape(self.evidence)})</span></p>"
        )


@dataclass
class _Recorder:
    results: list[Checked] = field(default_factory=list)


_RECORDERS: list[_Recorder] = []


@contextlib.contextmanager
def recording() -> Iterator[list[Checked]]:
    """Collect the claims checked in the block instead of raising on the first that fails.

    Yields
    ------
    results : list of Checked
        Filled as the block runs, failing claims included (``holds=False``).
    """
    rec = _Recorder()
    _RECORDERS.append(rec)
    try:
        yield rec.results
    finally:
        _RECORDERS.remove(rec)


def _fmt(x: float) -> str:
    if isinstance(x, bool | np.bool_):
        return str(bool(x))
    x = float(x)
    if x == 0 or math.isinf(x) or math.isnan(x):
        return f"{x:g}"
    return f"{x:.3g}" if abs(x) >= 1e-3 and abs(x) < 1e4 else f"{x:.3e}"


def check(holds: bool | np.bool_, claim: str, *, evidence: str, identity: bool = False) -> Checked:
    """The general check: ``holds`` is the test, ``evidence`` says what it looked at.

    Parameters
    ----------
    holds : bool
        Whether the evidence supports the claim.
    claim : str
        The sentence it supports.
    evidence : str
        What was measured ("118 of 120 sentences unchanged").
    identity : bool
        The claim holds for any input by the algebra (shown as "✔ Identity: …"); the same
        keyword exists on every check below.

    Returns
    -------
    Checked
        Shown in the notebook as "✔ Checked: …" (or "✔ Identity: …").

    Raises
    ------
    ClaimError
        If ``holds`` is false (outside :func:`recording`).
    """
    if not isinstance(claim, str) or not claim.strip():
        raise ValueError("a check needs the claim it supports, as a non-empty string")
    result = Checked(claim, evidence, bool(holds), bool(identity))
    if _RECORDERS:
        _RECORDERS[-1].results.append(result)
        return result
    if not result.holds:
        raise ClaimError(
            f"the course says: {claim!r}, but the evidence does not support it: {evidence}. "
            "Change the words or find out what changed the numbers."
        )
    return result


def _finite(value: float, name: str) -> float:
    v = float(value)
    if math.isnan(v):
        raise ClaimError(f"{name} is NaN: no claim can rest on it")
    return v


def at_least(
    value: float, bound: float, claim: str, *, name: str = "value", identity: bool = False
) -> Checked:
    """Check ``value ≥ bound``."""
    v = _finite(value, name)
    evidence = f"{name} = {_fmt(v)}; needs ≥ {_fmt(bound)}"
    return check(v >= bound, claim, evidence=evidence, identity=identity)


def at_most(
    value: float, bound: float, claim: str, *, name: str = "value", identity: bool = False
) -> Checked:
    """Check ``value ≤ bound``."""
    v = _finite(value, name)
    evidence = f"{name} = {_fmt(v)}; needs ≤ {_fmt(bound)}"
    return check(v <= bound, claim, evidence=evidence, identity=identity)


def between(
    value: float,
    lo: float,
    hi: float,
    claim: str,
    *,
    name: str = "value",
    identity: bool = False,
) -> Checked:
    """Check ``lo ≤ value ≤ hi`` (for "about X" claims)."""
    v = _finite(value, name)
    evidence = f"{name} = {_fmt(v)}; needs {_fmt(lo)} … {_fmt(hi)}"
    return check(lo <= v <= hi, claim, evidence=evidence, identity=identity)


def greater(
    a: float,
    b: float,
    claim: str,
    *,
    names: tuple[str, str] = ("a", "b"),
    by: float = 0.0,
    identity: bool = False,
) -> Checked:
    """Check ``a > b + by`` (``by`` is the margin the words promise, 0 for "more than")."""
    x, y = _finite(a, names[0]), _finite(b, names[1])
    need = f"needs {names[0]} > {names[1]}" + (f" + {_fmt(by)}" if by else "")
    evidence = f"{names[0]} = {_fmt(x)}, {names[1]} = {_fmt(y)}; {need}"
    return check(x > y + by, claim, evidence=evidence, identity=identity)


def close(
    a: ArrayLike,
    b: ArrayLike,
    claim: str,
    *,
    tol: float,
    name: str = "max |a − b|",
    identity: bool = False,
) -> Checked:
    """Check that two numbers or arrays agree within ``tol`` (largest absolute difference)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ClaimError(f"{claim!r}: cannot compare shapes {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ClaimError(f"{claim!r}: the values hold NaN; no claim can rest on them")
    gap = float(np.max(np.abs(x - y))) if x.size else 0.0
    evidence = f"{name} = {_fmt(gap)}; needs ≤ {_fmt(tol)}"
    return check(gap <= tol, claim, evidence=evidence, identity=identity)


@dataclass(frozen=True)
class SeedTable:
    """Which claims held for which training seed.

    Attributes
    ----------
    seeds : tuple of int
    claims : tuple of str
        In the order the claim function checks them.
    holds : dict
        ``holds[claim][seed]`` is True or False.
    evidence : dict
        ``evidence[claim][seed]``, the measured numbers.
    """

    seeds: tuple[int, ...]
    claims: tuple[str, ...]
    holds: dict[str, dict[int, bool]]
    evidence: dict[str, dict[int, str]]

    def failing(self) -> list[str]:
        """Lines naming each claim that fails for some seed, with its evidence."""
        return [
            f"{c!r} fails for seed {s}: {self.evidence[c][s]}"
            for c in self.claims
            for s in self.seeds
            if not self.holds[c].get(s, False)
        ]

    def markdown(self) -> str:
        """The table, one row per claim and one column per seed."""
        head = "| claim | " + " | ".join(f"seed {s}" for s in self.seeds) + " |"
        rule = "|---|" + "---|" * len(self.seeds)
        rows = [
            f"| {c} | "
            + " | ".join(
                ("✔ " if self.holds[c].get(s) else "✘ ") + self.evidence[c].get(s, "not checked")
                for s in self.seeds
            )
            + " |"
            for c in self.claims
        ]
        return "\n".join([head, rule, *rows])


def across_seeds(fn: Callable[[int], object], seeds: Sequence[int] = (0, 1, 2)) -> SeedTable:
    """Run a claim function once per seed and tabulate which of its claims hold.

    Parameters
    ----------
    fn : callable
        ``fn(seed)`` trains what it needs with that seed and checks its claims
        with the functions of this module.
    seeds : sequence of int

    Returns
    -------
    SeedTable
    """
    order: list[str] = []
    holds: dict[str, dict[int, bool]] = {}
    evidence: dict[str, dict[int, str]] = {}
    for seed in seeds:
        with recording() as results:
            fn(seed)
        for r in results:
            if r.claim not in holds:
                order.append(r.claim)
                holds[r.claim], evidence[r.claim] = {}, {}
            holds[r.claim][seed] = holds[r.claim].get(seed, True) and r.holds
            evidence[r.claim][seed] = r.evidence
    return SeedTable(tuple(seeds), tuple(order), holds, evidence)
