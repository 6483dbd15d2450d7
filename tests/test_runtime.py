"""attnlib.runtime: the thread count and eval mode come back as they were, errors or not."""

from __future__ import annotations

import pytest
import torch

from attnlib.runtime import eval_mode, torch_threads


def test_torch_threads_sets_and_restores_the_count() -> None:
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError, match="boom"), torch_threads(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with torch_threads(None):  # None leaves the count alone
        assert torch.get_num_threads() == before


@pytest.mark.parametrize("training", [True, False])
def test_eval_mode_hands_the_model_back_in_its_own_mode(training: bool) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
    model.train(training)
    with eval_mode(model) as m:
        assert m is model
        assert not model.training
        assert not model[1].training
    assert model.training is training
    assert model[1].training is training
    with pytest.raises(RuntimeError, match="boom"), eval_mode(model):
        raise RuntimeError("boom")
    assert model.training is training
