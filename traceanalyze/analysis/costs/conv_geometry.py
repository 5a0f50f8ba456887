"""Convolution outputs that old traces do not record, recovered from the same trace.

Traces before ~2022 record `Input Dims` but not `Concrete Inputs`, so a forward convolution's
stride and padding — and with them its output size — are unknown. The backward op of the same layer
records the gradient of that output. A forward op whose (input shape, weight shape) maps to exactly
one gradient shape among the trace's backward convolutions gets that shape as its output; its cost
is then the usual forward convolution cost (docs/flops.md): FLOPs = 2 · N · ∏(output spatial) ·
∏(weight shape), bytes = every tensor input + the output, at the input's element size.
"""

from __future__ import annotations

import math

import polars as pl

from traceanalyze.analysis.costs.conv import CONV
from traceanalyze.analysis.costs.tensors import dtype_class, element_size

# backward op → (grad_output, input, weight) argument positions
BACKWARD = {
    "aten::convolution_backward": (0, 1, 2),
    "aten::cudnn_convolution_backward": (1, 0, 2),
    "aten::mkldnn_convolution_backward": (1, 0, 2),
    "aten::miopen_convolution_backward": (1, 0, 2),
}
FORWARD = ("aten::cudnn_convolution", "aten::convolution", "aten::_convolution", "aten::miopen_convolution",
           "aten::mkldnn_convolution", "aten::conv2d", "aten::conv1d", "aten::conv3d")


def output_shapes_from_backward(cpu_ops: pl.DataFrame) -> dict[tuple, tuple]:
    """(input shape, weight shape) → output shape, for keys with a single recorded gradient shape."""
    seen: dict[tuple, set[tuple]] = {}
    backward = (cpu_ops.select("name", "input_dims").filter(pl.col("name").is_in(list(BACKWARD)))
                .unique(maintain_order=True))  # each layer once: a training step repeats them
    for name, dims in backward.iter_rows():
        grad, inp, weight = BACKWARD[name]
        if dims is None or len(dims) <= max(grad, inp, weight):
            continue
        if not (dims[grad] and dims[inp] and dims[weight]):
            continue
        seen.setdefault((tuple(dims[inp]), tuple(dims[weight])), set()).add(tuple(dims[grad]))
    return {key: next(iter(values)) for key, values in seen.items() if len(values) == 1}


def recover_forward_costs(costs: pl.DataFrame, cpu_ops: pl.DataFrame) -> pl.DataFrame:
    """`costs` (from `op_costs`) with the forward convolutions whose stride was not recorded
    filled in from the backward ops, `cost_note` saying so."""
    missing = costs.filter(pl.col("unmodeled_reason").str.contains("convolution (stride|padding|`transposed`)"))
    if missing.is_empty():
        return costs
    outputs = output_shapes_from_backward(cpu_ops)
    if not outputs:
        return costs
    rows = []
    ops = (
        cpu_ops.select("op_id", "name", "input_dims", "input_types")  # a filter copies what it keeps
        .filter(pl.col("op_id").is_in(missing["op_id"].implode()) & pl.col("name").is_in(list(FORWARD)))
        .group_by("input_dims", "input_types", maintain_order=True).agg("op_id")  # each layer's shapes once
    )
    for dims, types, op_ids in ops.iter_rows():
        if not dims or len(dims) < 2 or not types:
            continue
        out = outputs.get((tuple(dims[0]), tuple(dims[1])))
        size = element_size(types[0])
        if out is None or size is None:
            continue
        tensors = [d for d, t in zip(dims, types) if d and element_size(t)]
        flops = 2.0 * out[0] * math.prod(out[2:]) * math.prod(dims[1])
        bytes_moved = float(size * (sum(math.prod(t) for t in tensors) + math.prod(out)))
        rows.append({"op_id": op_ids, "flops": flops, "bytes": bytes_moved, "cost_model": CONV.name, "composite": False,
                     "compute_dtype": dtype_class(types[0]), "flops_source": "model",
                     "cost_note": "output size taken from the matching backward op (stride not recorded)",
                     "unmodeled_reason": None})
    if not rows:
        return costs
    recovered = (pl.DataFrame(rows, schema={**costs.schema, "op_id": pl.List(costs.schema["op_id"])})
                 .explode("op_id").sort("op_id").select(costs.columns))
    return pl.concat([costs.filter(~pl.col("op_id").is_in(recovered["op_id"].implode())), recovered])
