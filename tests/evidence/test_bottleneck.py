"""attnlib.evidence.bottleneck: the longer strings its models are tested on."""

from __future__ import annotations

from attnlib import pretrained
from attnlib.evidence import bottleneck
from attnlib.tasks import make_task


def test_longer_copy_strings_are_longer_than_any_the_bottleneck_models_saw():
    longer = bottleneck.longer_copy_task(n_test=50)
    lengths = [len(s) for s, _ in longer.test]
    assert min(lengths) == bottleneck.LONGER_BUCKETS[0]
    assert max(lengths) <= bottleneck.LONGER_MAX
    for name in bottleneck.LONG_COPY.values():
        recipe = pretrained.RECIPES[name]
        assert recipe.task["max_len"] < bottleneck.LONGER_BUCKETS[0]
        assert longer.src_vocab.itos == make_task(**recipe.task).src_vocab.itos  # the same ids
