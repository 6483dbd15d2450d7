"""Put a number the code computed into the prose, without myst-nb at run time.

The chapters state their results in the prose through myst-nb's ``{glue:text}`` role: the
code cell calls ``glue("name", value, display=False)`` and the website's build pastes the
value where the role names it. This is that call, written so that a chapter needs nothing
beyond attnlib when it runs: on Binder, on Colab or from the notebooks' zip the learner's
kernel has no myst-nb, and the live copies of the notebooks carry the build's values in their
prose already (``_ext/live_notebooks.py``).

The output has the layout myst-nb reads from an executed notebook: one ``display_data``
whose mime types carry the prefix ``application/papermill.record/`` when the value is not
to be shown, and whose metadata names the value (``{"scrapbook": {"name": ...,
"mime_prefix": ...}}``). ``tests/test_glue.py`` holds the two side by side.

Examples
--------
>>> from attnlib.glue import glue
>>> glue("T_x", 4, display=False)  # outside a kernel: nothing is shown

See Also
--------
The README, "How a claim stays true"; :mod:`attnlib.claims` for the check under a claim.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HIDDEN_PREFIX", "glue"]

HIDDEN_PREFIX = "application/papermill.record/"
"""What a hidden value's mime types start with, so that a notebook front end shows nothing."""


def glue(name: str, variable: Any, display: bool = True) -> None:
    """Record ``variable``'s display under ``name`` for the website's ``{glue:text}`` roles.

    Parameters
    ----------
    name : str
        The name the prose uses, e.g. ``"bn_max_len"`` in ``{glue:text}`bn_max_len```.
    variable : object
        Any value; what is stored is its display (``text/plain`` and any richer form).
    display : bool, default True
        Also show the value under the cell. The chapters pass ``False``: the prose shows it.

    Raises
    ------
    TypeError
        If ``name`` is not a non-empty string.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"glue needs a non-empty name for the value, got {name!r}")
    from IPython.core.formatters import format_display_data
    from IPython.display import display as show

    bundle, metadata = format_display_data(variable)
    prefix = "" if display else HIDDEN_PREFIX
    metadata = dict(metadata)
    metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
    show({prefix + mime: data for mime, data in bundle.items()}, raw=True, metadata=metadata)
