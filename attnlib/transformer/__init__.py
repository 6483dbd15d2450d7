"""Part V, from Bahdanau to Transformers: queries, keys and values, self-attention, gradient paths.

The wing serves the chapters "Queries, keys and values" (``chapters/queries_keys_values``),
"Self-attention" (``chapters/self_attention``) and "Gradient flow and cost"
(``chapters/gradient_flow_and_cost``):

* :mod:`.qkv`: queries, keys, values and scaled dot-product attention, on the numpy reference;
* :mod:`.selfattn`: self-attention and positional encodings in numpy;
* :mod:`.selfattn_models`: the torch models, toy tasks and experiments of self-attention;
* :mod:`.gradflow`: gradients of an output with respect to the source, and what a layer costs.
"""
