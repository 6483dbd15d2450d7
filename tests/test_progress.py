"""attnlib.progress: the bar's text, and where it goes (a display updated in place, or tqdm)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from attnlib import progress
from attnlib.progress import WIDTH, Bar, line


def _bar_part(text: str) -> str:
    return text.split("|")[1]


@pytest.mark.parametrize("done", [0, 1, 7, 12, 23, 24])
def test_the_bar_fills_in_proportion_to_the_steps_done(done: int) -> None:
    text = line("epoch 2", done, 24)
    inside = _bar_part(text)
    assert len(inside) == WIDTH  # the counts after it never move
    assert inside.count("█") == done  # 24 steps over 24 characters: one full block a step
    assert text.startswith("epoch 2 |")
    assert text.endswith(f"| {done}/24")


def test_a_partial_step_shows_as_a_partial_block() -> None:
    inside = _bar_part(line("", 1, 2 * WIDTH))  # half a character
    assert inside[0] == "▌"
    assert inside[1:].strip() == ""


def test_postfix_values_follow_the_counts_in_order() -> None:
    assert line("e", 3, 4, {"loss": "2.000", "valid": "0.5"}).endswith("3/4, loss=2.000, valid=0.5")


@pytest.mark.parametrize(("done", "total"), [(-1, 4), (5, 4), (0, 0)])
def test_impossible_counts_are_refused(done: int, total: int) -> None:
    with pytest.raises(ValueError, match="0 ≤ done ≤ total"):
        line("e", done, total)
    with pytest.raises(ValueError, match="total ≥ 1"):
        Bar(0, enabled=False)


class _Handle:
    def __init__(self, shown: list[str]) -> None:
        self.shown = shown

    def update(self, bundle: dict[str, str], raw: bool) -> None:
        assert raw
        self.shown.append(bundle["text/plain"])


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Pretend to run in a Jupyter kernel; collect every text the display shows."""
    import IPython.display

    shown: list[str] = []

    def display(bundle: dict[str, str], raw: bool, display_id: bool) -> _Handle:
        assert raw
        assert display_id
        shown.append(bundle["text/plain"])
        return _Handle(shown)

    monkeypatch.setattr(progress, "_in_kernel", lambda: True)
    monkeypatch.setattr(IPython.display, "display", display)
    return shown


def test_in_a_kernel_the_display_ends_on_the_last_state_not_a_widget(kernel: list[str]) -> None:
    with Bar(5, "epoch 1", every=1e9) as bar:  # no redraw by the clock: only forced ones
        for k in range(5):
            bar.update(1)
            bar.set_postfix(loss=f"{1.0 / (k + 1):.3f}")
        bar.reset("epoch 2")
        bar.update(2)
    assert kernel[0] == line("epoch 1", 0, 5)
    # an epoch's last step is always drawn (with the postfix set before it)
    assert line("epoch 1", 5, 5, {"loss": "0.250"}) in kernel
    assert kernel[-1] == line("epoch 2", 2, 5)  # what the executed notebook keeps
    assert len(kernel) <= 5  # opening, epoch 1 done, reset, close (+ the last postfix)


def test_redraws_follow_the_clock(kernel: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(100))
    monkeypatch.setattr(progress.time, "monotonic", lambda: float(next(clock)))
    bar = Bar(10, "e", every=2.0)
    for _ in range(9):
        bar.update(1)
    # opened at t=0, then the updates at t=1..9 redraw every 2 s: at 2, 4, 6, 8
    assert kernel == [line("e", d, 10) for d in (0, 2, 4, 6, 8)]


def test_outside_a_kernel_it_is_tqdms_text_bar(capsys: pytest.CaptureFixture[str]) -> None:
    with Bar(3, "epoch 1") as bar:
        for _ in range(3):
            bar.update(1)
    err = capsys.readouterr().err
    assert "epoch 1" in err
    assert "3/3" in err


def test_disabled_shows_nothing(kernel: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with Bar(3, "e", enabled=False) as bar:
        bar.update(3)
        bar.set_postfix(x=1)
    assert kernel == []
    assert capsys.readouterr().err == ""
    assert bar.text() == line("e", 3, 3, {"x": "1"})


def test_updates_never_count_past_the_total(kernel: list[str]) -> None:
    bar = Bar(2, "e")
    bar.update(5)
    assert bar.done == 2
    assert kernel[-1].endswith("2/2")


def test_translation_training_draws_no_widget(kernel: list[str], capsys: Any) -> None:
    """The English→French loop reports through Bar: the chapter page then needs no widget JS."""
    from attnlib.mt import translation as tr

    recipe = tr.Recipe(limit=300, test_sources=20, valid_sources=20, min_freq=1, batch_size=64,
                       max_steps=3, threads=1)  # fmt: skip
    tr.train_model(recipe, tr.prepare(recipe))
    assert kernel
    assert kernel[-1].startswith("epoch 1 |")
    assert "3/" in kernel[-1]
    # one line per epoch, with no clock time: two builds of the page print the same text
    assert re.fullmatch(
        r"epoch 1: train loss \d+\.\d{3}, valid loss \d+\.\d{3} \(3 steps\)\n",
        capsys.readouterr().out,
    )
