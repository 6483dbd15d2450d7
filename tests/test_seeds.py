"""Every chapter's claims hold for three seeds, not one lucky draw, and the seed table says so.

Each module of ``attnlib.evidence`` (one per chapter, named by its slug) computes what its
chapter states about trained models or random draws, and checks it. Here each runs for seed
0 (the shipped models: what the chapter shows) and seeds 1 and 2 (the same recipes retrained
with another training seed, on the same data), one test case per chapter, part and seed, so
that no case holds a worker for minutes (a module whose run takes longer names its cases in
``SEED_CASES``). Every case writes its column to ``tests/_artifacts/seeds/``.

``make seeds`` (``python -m attnlib.evidence``) runs every chapter for the three seeds in full
and writes the committed table ``tests/seeds.md``. The table is held to the code here:

* a fast test: it lists every registered chapter, each with the groups its module declares
  and at least ``AT_LEAST`` claims, for seeds 0, 1 and 2; every claim held for every seed
  except those its module lists in ``DOES_NOT_HOLD``, which must fail there and only there;
* the seed-0 cases: a live run gives the table's seed-0 column exactly, words and evidence
  (so the table is as current as the code);
* the seed-1 and seed-2 cases: the small models of those seeds are read from
  ``tests/seed_models/``, which ``make seeds`` retrained and kept (a few seconds to load where
  retraining takes minutes), so these cases too must give the table's column exactly; the
  kept models are held to the code by loading each against its recipe as the code has it now,
  and by retraining a sample of them here and getting the kept weights back;
* a module that lists a seed in ``RECORDED_SEEDS`` (the English–French models: about 7
  minutes each to retrain, and 5 MB each, too much to keep in the repository) has no live case
  for it: the table's column, which ``make seeds`` computed by retraining in full, stands in,
  held to the code by the fast tests and by the module's seed-0 cases.
"""

from __future__ import annotations

import pytest
import torch

from attnlib import evidence, pretrained
from attnlib.evidence import _seeds, _shared
from conftest import ROOT

ARTIFACTS = ROOT / "tests" / "_artifacts" / "seeds"
TABLE = ROOT / "tests" / "seeds.md"
SEED_MODELS = ROOT / "tests" / "seed_models"
#: The kept models retrained here, one per seed: the cheapest recipes (``make seeds`` retrains
#: them all).
RETRAINED_SAMPLE = (("majority", 1), ("reverse", 2))
SEEDS = (0, 1, 2)
CHAPTERS = evidence.chapters()


def _cases() -> list:
    """(slug, parts, seed) for every live case: each part of SEED_CASES, each seed not recorded."""
    cases = []
    for slug, chapter in CHAPTERS.items():
        for seed in (s for s in SEEDS if s not in chapter.recorded_seeds):
            for parts in chapter.cases:
                label = slug if parts is None else f"{slug}[{'+'.join(parts)}]"
                cases.append(pytest.param(slug, parts, seed, id=f"{label}-seed{seed}"))
        if chapter.over_seeds is not None:
            cases.append(pytest.param(slug, None, SEEDS, id=f"{slug}-over-seeds"))
    return cases


def _table() -> dict[str, _seeds.Section]:
    assert TABLE.is_file(), "no seed table: run `make seeds` (python -m attnlib.evidence)"
    return _seeds.parse(TABLE.read_text(encoding="utf-8"))


def _verdicts(
    slug: str, checks: list[_seeds.ClaimOutcome], seed: int, words: dict | None = None
) -> list[str]:
    """What is wrong with one seed's checks: a claim that fails, or one listed as failing that holds.

    DOES_NOT_HOLD names a claim by its words for seed 0 (``words``: key → those words; a claim
    about an example that a rule picked names another example for another seed).
    """
    wrong = []
    for c in checks:
        claim = (words or {}).get(c.key, c.claim)
        listed = seed in CHAPTERS[slug].does_not_hold.get(claim, ())
        if c.holds and listed:
            wrong.append(f"{claim!r} holds for seed {seed}: take it out of DOES_NOT_HOLD")
        elif not c.holds and not listed:
            wrong.append(f"{c.claim!r} fails for seed {seed}: {c.evidence}")
    return wrong


@pytest.fixture
def kept_seed_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """The small models of seeds 1 and 2 read from ``tests/seed_models``, not retrained."""
    monkeypatch.setattr(_shared, "SEED_MODELS", SEED_MODELS)
    monkeypatch.setattr(_shared, "SAVE_SEED_MODELS", False)


@pytest.mark.slow
@pytest.mark.usefixtures("kept_seed_models")
@pytest.mark.parametrize(("slug", "parts", "seed"), _cases())
def test_every_claim_holds_for_each_seed(slug: str, parts: tuple | None, seed) -> None:
    chapter = CHAPTERS[slug]
    table = _table()[slug]
    checks = evidence.run(slug, seed, parts)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    label = slug if parts is None else f"{slug}-{'+'.join(parts)}"
    section = _seeds.Section(slug)
    if isinstance(seed, int):
        section.by_seed[seed] = checks
    else:
        section.over[tuple(seed)] = checks
    name = f"{label}-seed{seed}" if isinstance(seed, int) else f"{label}-over-seeds"
    (ARTIFACTS / f"{name}.md").write_text(_seeds.render([section]) + "\n", encoding="utf-8")
    assert checks, f"attnlib.evidence.{slug} checked no claim"
    groups = {c.group for c in checks}
    assert groups <= set(chapter.groups), f"attnlib.evidence.{slug} returned a group not in GROUPS"
    recorded = table.by_seed[seed] if isinstance(seed, int) else table.over[tuple(seed)]
    assert [c for c in recorded if c.group in groups] == checks, (
        f"tests/seeds.md is not current for {slug}, seed {seed}: run `make seeds ONLY={slug}`"
    )
    words = {c.key: c.claim for c in table.by_seed[0]}
    wrong = _verdicts(slug, checks, seed if isinstance(seed, int) else 0, words)
    assert not wrong, "\n".join(wrong)


def test_the_seed_table_lists_every_claim_of_every_chapter_for_three_seeds() -> None:
    table = _table()
    assert sorted(table) == sorted(CHAPTERS), "run `make seeds` after adding or removing a module"
    for slug, chapter in CHAPTERS.items():
        section = table[slug]
        assert not section.errors, f"{slug}: a run of `make seeds` did not finish: {section.errors}"
        assert sorted(section.by_seed) == list(SEEDS), slug
        slots = [c.key for c in section.by_seed[0]]
        assert len(slots) == len(set(slots)), f"{slug}: a claim is listed twice"
        for seed in SEEDS:
            assert [c.key for c in section.by_seed[seed]] == slots, (
                f"{slug}: seed {seed} does not list the claims of seed 0"
            )
        over = [c for checks in section.over.values() for c in checks]
        assert list(section.over) == ([SEEDS] if chapter.over_seeds else []), slug
        groups = {c.group for c in section.by_seed[0]} | {c.group for c in over}
        assert groups == set(chapter.groups), f"{slug}: the table's groups are not its GROUPS"
        assert len(slots) + len(over) >= chapter.at_least, (
            f"{slug}: the table lists fewer claims than AT_LEAST"
        )


def test_every_claim_of_the_table_held_for_every_seed_but_the_listed_ones() -> None:
    table = _table()
    wrong = []
    for slug, section in table.items():
        words = {c.key: c.claim for c in section.by_seed.get(0, [])}
        for seed, checks in section.by_seed.items():
            wrong += [f"{slug}: {w}" for w in _verdicts(slug, checks, seed, words)]
            if seed == 0:
                wrong += [f"{slug}: seed 0 fails {c.claim!r}" for c in checks if not c.holds]
        for checks in section.over.values():
            wrong += [f"{slug}: {c.claim!r} fails over the seeds" for c in checks if not c.holds]
    assert not wrong, "\n".join(wrong)


def test_every_claim_listed_as_failing_is_in_the_table() -> None:
    table = _table()
    for slug, chapter in CHAPTERS.items():
        words = {c.claim for checks in table[slug].by_seed.values() for c in checks}
        stale = sorted(set(chapter.does_not_hold) - words)
        assert not stale, f"attnlib.evidence.{slug}.DOES_NOT_HOLD names no claim: {stale}"
        for claim, seeds in chapter.does_not_hold.items():
            assert 0 not in seeds, (
                f"{slug}: {claim!r} must hold for seed 0, which the chapter shows"
            )


def _kept_models() -> list:
    return [pytest.param(p, id=p.stem) for p in sorted(SEED_MODELS.glob("*.pt"))]


def _name_and_seed(path) -> tuple[str, int]:
    name, _, seed = path.stem.rpartition("_seed")
    assert name, f"{path.name}: a kept model is named <recipe>_seed<seed>.pt"
    assert seed.isdigit(), f"{path.name}: a kept model is named <recipe>_seed<seed>.pt"
    return name, int(seed)


@pytest.mark.parametrize("path", _kept_models())
def test_every_kept_model_was_trained_by_its_recipe_as_the_code_has_it(path) -> None:
    name, seed = _name_and_seed(path)
    assert seed in SEEDS[1:], f"{path.name}: only seeds 1 and 2 are kept"
    kept = pretrained.load_reseeded(name, seed, path)  # refuses a file of another recipe
    assert kept.recipe == pretrained.reseeded(name, seed)


def test_the_folder_keeps_a_model_for_both_other_seeds_of_each_recipe() -> None:
    by_name: dict[str, set[int]] = {}
    for path in SEED_MODELS.glob("*.pt"):
        name, seed = _name_and_seed(path)
        by_name.setdefault(name, set()).add(seed)
    assert by_name, "no kept models in tests/seed_models: run `make seeds`"
    assert {n: s for n, s in by_name.items() if s != {1, 2}} == {}
    assert {n for n, _ in RETRAINED_SAMPLE} <= set(by_name)


def test_a_kept_model_of_another_recipe_is_refused(tmp_path) -> None:
    name, seed = RETRAINED_SAMPLE[0]
    saved = torch.load(SEED_MODELS / f"{name}_seed{seed}.pt", weights_only=True)
    torch.save(saved, tmp_path / "x.pt")
    with pytest.raises(ValueError, match=f"not trained by recipe '{name}' with training seed 2"):
        pretrained.load_reseeded(name, 2, tmp_path / "x.pt")
    with pytest.raises(FileNotFoundError, match="make seeds"):
        pretrained.load_reseeded(name, seed, tmp_path / "missing.pt")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "seed"), RETRAINED_SAMPLE)
def test_retraining_a_sample_gives_the_kept_model_back(name: str, seed: int) -> None:
    """The sample retrained from its recipe: the kept weights (within the tolerance of
    another machine's float32 kernels, as for the shipped models) and the same metrics."""
    live = pretrained.retrain(name, seed=seed, progress=False)
    kept = pretrained.load_reseeded(name, seed, SEED_MODELS / f"{name}_seed{seed}.pt")
    weights = live.model.state_dict()
    for key, value in kept.model.state_dict().items():
        torch.testing.assert_close(
            value, weights[key], rtol=0, atol=pretrained.RETRAIN_ATOL, msg=key
        )
    assert live.metrics == kept.metrics
