"""attnlib.glue: the chapters' ``glue`` without myst-nb, held to myst-nb's own ``glue``.

The website's build reads a glued value from the executed notebook's outputs (myst-nb's
``{glue:text}`` role), so the shim must write exactly the outputs myst-nb's ``glue`` writes:
one ``display_data`` per call, with the same mime bundle (prefixed when hidden) and the same
``scrapbook`` metadata. Both are run in one real kernel, side by side, on the same values.
"""

from __future__ import annotations

import nbformat
import pytest

from attnlib.glue import HIDDEN_PREFIX, glue

VALUES = """\
import numpy as np

class Rich:  # a value with richer displays than text
    def __repr__(self):
        return "Rich()"
    def _repr_html_(self):
        return "<b>rich</b>"
    def _repr_latex_(self):
        return r"$\\alpha_{ti}$"

VALUES = {
    "an_int": 868,
    "a_float": 0.1234567891,
    "a_numpy_float": np.float64(2.5),
    "a_string": "the weights are near uniform",
    "an_array": np.array([0.25, 0.75]),
    "a_list": [1, 2.5, "three"],
    "rich": Rich(),
}
"""


def _outputs(call: str) -> list[dict]:
    """The outputs of one cell per (value, display) pair, as the executed notebook stores them."""
    from nbclient import NotebookClient

    cells = [nbformat.v4.new_code_cell(VALUES)]
    for display in (False, True):
        for name in (
            "an_int",
            "a_float",
            "a_numpy_float",
            "a_string",
            "an_array",
            "a_list",
            "rich",
        ):
            cells.append(
                nbformat.v4.new_code_cell(f"{call}({name!r}, VALUES[{name!r}], display={display})")
            )
    nb = nbformat.v4.new_notebook(cells=cells)
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    return [[dict(o) for o in cell.outputs] for cell in nb.cells[1:]]


@pytest.mark.slow
def test_glue_writes_the_outputs_myst_nb_writes_hidden_and_shown():
    ours = _outputs("__import__('attnlib.glue').glue.glue")
    theirs = _outputs("__import__('myst_nb').glue")
    assert len(ours) == len(theirs) == 14
    assert ours == theirs
    for outputs in ours:
        (out,) = outputs  # one display_data per call, nothing printed
        assert out["output_type"] == "display_data"
    hidden, shown = ours[:7], ours[7:]
    assert all(all(k.startswith(HIDDEN_PREFIX) for k in o[0]["data"]) for o in hidden)
    assert not any(k.startswith(HIDDEN_PREFIX) for o in shown for k in o[0]["data"])
    # the values the prose will show: text/plain as IPython displays it, richer forms kept
    assert shown[0][0]["data"]["text/plain"] == "868"
    assert shown[0][0]["metadata"]["scrapbook"] == {"name": "an_int", "mime_prefix": ""}
    assert hidden[6][0]["data"][HIDDEN_PREFIX + "text/html"] == "<b>rich</b>"
    assert hidden[6][0]["metadata"]["scrapbook"] == {"name": "rich", "mime_prefix": HIDDEN_PREFIX}


@pytest.mark.parametrize("name", ["", None, 3, ("T", "x")])
def test_glue_refuses_a_name_that_is_not_a_non_empty_string(name):
    with pytest.raises(TypeError, match="glue needs a non-empty name for the value"):
        glue(name, 4, display=False)
