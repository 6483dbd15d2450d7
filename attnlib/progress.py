"""A training progress bar that leaves text, not a widget, in a notebook.

``tqdm.auto`` draws its bar in a notebook as an ipywidget. The course's website is built
from the executed notebooks, so one such bar made a chapter page load the 3.6 MB
ipywidgets widget manager just to show a bar that had already finished. :class:`Bar`
shows the same line of text instead:

* in a Jupyter kernel (Jupyter, Binder, Colab, the website's build), as a display that is
  updated in place (IPython's ``display_id``); the executed notebook keeps only its last
  state, which depends on the counts and the numbers shown, not on the clock;
* anywhere else (a terminal, a script), as tqdm's text bar on stderr.

Example::

    with Bar(total=312, desc="epoch 1") as bar:
        for batch in batches:
            ...
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}")
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

__all__ = ["WIDTH", "Bar", "line"]

WIDTH = 24
"""Characters of the bar itself."""

_BLOCKS = " ▏▎▍▌▋▊▉█"


def line(desc: str, done: int, total: int, postfix: dict[str, str] | None = None) -> str:
    """One line of text for ``done`` of ``total`` steps: ``desc |████▌    | done/total, k=v``.

    Parameters
    ----------
    desc : str
        What is being counted, e.g. ``"epoch 3"``.
    done, total : int
        Steps done and steps in all (0 ≤ done ≤ total, total ≥ 1).
    postfix : dict of str to str, optional
        Values shown after the counts, in order.

    Raises
    ------
    ValueError
        If the counts are not 0 ≤ done ≤ total with total ≥ 1.
    """
    if total < 1 or not 0 <= done <= total:
        raise ValueError(f"a progress bar needs 0 ≤ done ≤ total and total ≥ 1, got {done}/{total}")
    eighths = done * WIDTH * 8 // total
    full, part = divmod(eighths, 8)
    bar = "█" * full + (_BLOCKS[part] if full < WIDTH else "")
    text = f"{desc} |{bar.ljust(WIDTH)}| {done}/{total}"
    if postfix:
        text += ", " + ", ".join(f"{k}={v}" for k, v in postfix.items())
    return text


def _in_kernel() -> bool:
    """Whether this code runs in a Jupyter kernel (where displays can be updated in place)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class Bar:
    """A progress bar: a line of text updated in place in a notebook, tqdm's bar elsewhere.

    Parameters
    ----------
    total : int
        Steps in all (≥ 1).
    desc : str
        Shown before the bar.
    enabled : bool
        False: show nothing (every method still works).
    every : float
        Seconds between redraws in a notebook; the last state is always drawn.
    """

    def __init__(self, total: int, desc: str = "", enabled: bool = True, every: float = 0.2):
        if total < 1:
            raise ValueError(f"a progress bar needs total ≥ 1 steps, got {total}")
        self.total, self.desc, self.done = total, desc, 0
        self.postfix: dict[str, str] = {}
        self.every = every
        self._drawn_at = -float("inf")
        self._handle: Any = None
        self._tqdm: Any = None
        if not enabled:
            return
        if _in_kernel():
            from IPython.display import display

            self._handle = display(self._bundle(), raw=True, display_id=True)
            self._drawn_at = time.monotonic()
        else:
            from tqdm.std import tqdm

            self._tqdm = tqdm(total=total, desc=desc)

    def text(self) -> str:
        """The line as it stands."""
        return line(self.desc, self.done, self.total, self.postfix)

    def _bundle(self) -> dict[str, str]:
        return {"text/plain": self.text()}

    def _draw(self, force: bool = False) -> None:
        if self._handle is None:
            return
        now = time.monotonic()
        if force or now - self._drawn_at >= self.every:
            self._handle.update(self._bundle(), raw=True)
            self._drawn_at = now

    def update(self, n: int = 1) -> None:
        """Count ``n`` more steps (never beyond ``total``)."""
        self.done = min(self.done + n, self.total)
        if self._tqdm is not None:
            self._tqdm.update(n)
        self._draw(force=self.done == self.total)

    def set_postfix(self, **values: object) -> None:
        """Show ``name=value`` pairs after the counts (they replace the previous ones)."""
        self.postfix = {k: str(v) for k, v in values.items()}
        if self._tqdm is not None:
            self._tqdm.set_postfix(self.postfix)
        self._draw()

    def reset(self, desc: str | None = None, total: int | None = None) -> None:
        """Start again from 0 (a new epoch), with a new description or total if given."""
        if total is not None:
            if total < 1:
                raise ValueError(f"a progress bar needs total ≥ 1 steps, got {total}")
            self.total = total
        if desc is not None:
            self.desc = desc
        self.done, self.postfix = 0, {}
        if self._tqdm is not None:
            self._tqdm.reset(total=self.total)
            self._tqdm.set_description(self.desc)
        self._draw(force=True)

    def close(self) -> None:
        """Draw the last state (in a notebook) or close tqdm's bar."""
        self._draw(force=True)
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None

    def __enter__(self) -> Bar:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
