"""Tests for attnlib.tasks: vocabularies, splits, and the correctness of every target."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib import tasks
from attnlib.tasks import make_task

SMALL = {"n_train": 300, "n_valid": 50, "n_test": 100}
ALL = sorted(tasks.TASKS)


@pytest.fixture(scope="module")
def small_tasks() -> dict[str, tasks.Task]:
    return {name: make_task(name, **SMALL) for name in ALL}


# --------------------------------------------------------------------------- splits
@pytest.mark.parametrize("name", ALL)
def test_split_sizes_and_no_leak(name: str, small_tasks: dict[str, tasks.Task]) -> None:
    task = small_tasks[name]
    assert (len(task.train), len(task.valid), len(task.test)) == (300, 50, 100)
    train_src = {s for s, _ in task.train}
    held_out = [s for s, _ in task.valid + task.test]
    assert len(train_src) == 300
    assert len(set(held_out)) == 150
    assert train_src.isdisjoint(held_out)


def test_dates_hold_out_the_date_itself() -> None:
    task = make_task("dates", **SMALL)
    train_dates = {t for _, t in task.train}
    assert train_dates.isdisjoint(t for _, t in task.valid + task.test)


@pytest.mark.parametrize("name", ALL)
def test_same_seed_same_task_other_seed_other_task(name: str) -> None:
    a = make_task(name, n_train=50, n_valid=10, n_test=10, seed=3)
    b = make_task(name, n_train=50, n_valid=10, n_test=10, seed=3)
    c = make_task(name, n_train=50, n_valid=10, n_test=10, seed=4)
    assert (a.train, a.valid, a.test) == (b.train, b.valid, b.test)
    assert a.train != c.train


def test_held_out_splits_do_not_depend_on_n_train() -> None:
    a = make_task("reverse", n_train=50, n_valid=10, n_test=20)
    b = make_task("reverse", n_train=500, n_valid=10, n_test=20)
    assert a.test == b.test
    assert a.valid == b.valid


@pytest.mark.parametrize("name", ALL)
def test_vocabularies_cover_every_pair(name: str, small_tasks: dict[str, tasks.Task]) -> None:
    task = small_tasks[name]
    for src, tgt in task.train + task.valid + task.test:
        assert task.src_vocab.decode(task.src_vocab.encode(src)) == list(src)
        assert task.tgt_vocab.decode(task.tgt_vocab.encode(tgt)) == list(tgt)


@pytest.mark.parametrize("name", ALL)
def test_text_round_trip(name: str, small_tasks: dict[str, tasks.Task]) -> None:
    task = small_tasks[name]
    for src, _ in task.test:
        assert task.tokenize(task.src_text(src)) == src


@pytest.mark.parametrize(
    ("name", "lo", "hi"), [("copy", 5, 15), ("reverse", 3, 30), ("majority", 5, 9)]
)
def test_lengths_follow_min_len_and_max_len(name: str, lo: int, hi: int) -> None:
    task = make_task(name, n_train=400, n_valid=0, n_test=0, min_len=lo, max_len=hi)
    lens = Counter(len(s) for s, _ in task.train)
    assert min(lens) == lo
    assert max(lens) == hi
    assert len(lens) == hi - lo + 1  # every length occurs: variable lengths


def test_describe_mentions_sizes_and_examples(small_tasks: dict[str, tasks.Task]) -> None:
    text = small_tasks["dates"].describe()
    assert "300 train / 50 valid / 100 test" in text
    assert "→" in text
    assert "dates" in text


# --------------------------------------------------------------------------- targets
def test_copy_and_reverse_targets(small_tasks: dict[str, tasks.Task]) -> None:
    for src, tgt in small_tasks["copy"].train:
        assert tgt == src
    for src, tgt in small_tasks["reverse"].train:
        assert tgt == tuple(reversed(src))


STRPTIME = ["%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%b %d %Y", "%d/%m/%Y", "%d.%m.%Y",
            "%Y/%m/%d"]  # fmt: skip


def _parse_all(text: str) -> set[dt.date]:
    found = set()
    for fmt in STRPTIME:
        with contextlib.suppress(ValueError):
            found.add(dt.datetime.strptime(text, fmt).date())
    return found


def test_date_targets_are_the_iso_form_of_the_source() -> None:
    task = make_task("dates", n_train=600, n_valid=0, n_test=0)
    forms = set()
    for src, tgt in task.train:
        text = task.src_text(src)
        assert _parse_all(text) == {dt.date.fromisoformat(task.tgt_text(tgt))}, text
        forms.add((*(c.isdigit() for c in text[:3]), text.count(" "), text[2:3]))
    assert len(forms) >= 8  # many surface forms, not one


def test_date_examples_from_the_issue() -> None:
    may3 = dt.date(1979, 5, 3)
    written = {tasks.format_date(may3, f) for f in tasks.DATE_FORMATS}
    assert {"3 May 1979", "may 3, 1979", "03/05/1979"} <= written


def test_svo_sov_targets(small_tasks: dict[str, tasks.Task]) -> None:
    lex = {**tasks.SVO_NOUNS, **tasks.SVO_ADJECTIVES, **tasks.SVO_VERBS, **tasks.SVO_ADVERBS,
           **tasks.SVO_PLACES}  # fmt: skip
    for src, tgt in small_tasks["svo_sov"].train:
        verbs = [w for w in src if w in tasks.SVO_VERBS]
        assert len(verbs) == 1
        assert tgt[-1] == tasks.SVO_VERBS[verbs[0]]  # the verb goes to the end
        content = Counter(lex[w] for w in src if w in lex)
        assert Counter(w for w in tgt if w not in ("ga", "o", "de")) == content
        # the subject (before the verb in English) is marked with "ga", the object with "o"
        subj = [w for w in src[: src.index(verbs[0])] if w in tasks.SVO_NOUNS]
        obj = [w for w in src[src.index(verbs[0]) :] if w in tasks.SVO_NOUNS]
        assert tgt[tgt.index("ga") - 1] == tasks.SVO_NOUNS[subj[0]]
        assert tgt[tgt.index("o") - 1] == tasks.SVO_NOUNS[obj[0]]
        assert tgt.index("ga") < tgt.index("o")
        assert "the" not in tgt
        assert "a" not in tgt


def test_majority_target_is_the_unique_mode(small_tasks: dict[str, tasks.Task]) -> None:
    for src, tgt in small_tasks["majority"].train:
        (top, k1), *rest = Counter(src).most_common()
        assert tgt == (top,)
        assert all(k < k1 for _, k in rest)


# --------------------------------------------------------------------------- errors
def test_unknown_task_name() -> None:
    with pytest.raises(ValueError, match=r"unknown task 'sort'.*copy"):
        make_task("sort")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "copy", "min_len": 9, "max_len": 3}, "min_len ≤ max_len"),
        ({"name": "copy", "min_len": 0}, "min_len ≤ max_len"),
        ({"name": "dates", "max_len": 20}, "do not pass min_len or max_len"),
        ({"name": "svo_sov", "min_len": 14, "max_len": 20}, "5–13 words"),
        ({"name": "copy", "n_train": 0}, "n_train"),
        ({"name": "copy", "n_test": -1}, "n_test"),
        (
            {"name": "copy", "min_len": 1, "max_len": 1, "n_train": 30, "n_valid": 0, "n_test": 0},
            "distinct copy pairs",
        ),
    ],
)
def test_bad_task_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_task(**kwargs)


def test_split_name_is_checked(small_tasks: dict[str, tasks.Task]) -> None:
    with pytest.raises(ValueError, match="'train', 'valid' or 'test'"):
        small_tasks["copy"].split("dev")


@settings(max_examples=25)
@given(st.integers(0, 10_000))
def test_any_seed_gives_valid_copy_tasks(seed: int) -> None:
    task = make_task("copy", n_train=20, n_valid=5, n_test=5, seed=seed)
    srcs = [s for s, _ in task.train + task.valid + task.test]
    assert len(set(srcs)) == 30
    assert all(5 <= len(s) <= 15 and set(s) <= set(tasks.LETTERS) for s in srcs)
