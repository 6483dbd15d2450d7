"""Part IV, attention on real sentences: the English–French pairs and the models trained on them.

The wing serves the chapters "From text to tensors" (``chapters/text_to_tensors``), "Training
and decoding" (``chapters/training_and_decoding``) and "Real alignments"
(``chapters/real_alignments``):

* :mod:`.tatoeba`: the pairs shipped in ``data/`` read, normalised, tokenised (Moses), split by
  English sentence, turned into vocabularies with ``<unk>`` and length-bucketed batches;
* :mod:`.scoring`: corpus BLEU and chrF with sacrebleu, per source-length bucket;
* :mod:`.translation`: the models' recipes, training to convergence, the shipped checkpoints,
  translating with case restored, test BLEU;
* :mod:`.examples` and :mod:`.alignments`: the chapters' studies of those models (example
  tables picked by rule, alignments, the least monotonic sentences).

The translate-your-own-sentence widget is in :mod:`attnlib.explorables.translate`.
"""
