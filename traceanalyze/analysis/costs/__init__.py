"""FLOPs and bytes of CPU ops, from their names and the shapes the profiler recorded (docs/flops.md).

Modules (this file imports none of them, so that importing one module loads only what it needs):

- `tensors`: the recorded arguments (`Args`, `Tensor`, `Unmodelled`), element sizes, dtype classes;
- `family`: `OpCost`, `CostFamily` (its `tensor_core` and `fusible` flags are what the roofline and
  the attribution read), `Op` (one registration: name, handler, argument limit);
- one module per op family, each defining its `CostFamily` and an `OPS` tuple: `matmul`, `conv`,
  `attention`, `normalization` (norms, softmax), `pointwise` (`POINTWISE`: one row per elementwise
  op), `reductions`, `pooling`, `copies` (copies, fills, views), `indexing` (gathers, scatters),
  `embedding`, `losses`, `optimizers` (`_foreach_*`, fused optimizers), `triton` (Inductor
  kernels), `fbgemm` and `vllm` (custom ops: `CUSTOM_OPS`, `PREFIX_OPS`);
- `registry`: every registered op, the dispatch precedence, `op_cost`, `op_cost_or_reason`;
- `table`: `op_costs` over a `cpu_ops` frame and `OP_COSTS_SCHEMA`;
- costs recovered from other ops of the trace: `embedding_tbe` (fbgemm table-batched embeddings),
  `autograd_pairs` (shapes from the paired autograd node), `conv_geometry` (convolution outputs
  from the backward op).

Adding an op: one `Op(name, handler, max_args)` in its family module's `OPS` (`max_args` from the
PyTorch schemas; tests/analysis/test_cost_registry.py checks it), or a row of `POINTWISE`.
"""
