"""fbgemm's custom ops (sparse-feature permutations, cumsums, bounds checks, FP8 and HFP8
quantisation) and the backward node of `permute_pooled_embs` (docs/flops.md). Table-batched
embeddings: embedding_tbe.py."""

from __future__ import annotations

import math

from traceanalyze.analysis.costs.copies import COPY
from traceanalyze.analysis.costs.family import Op, OpCost
from traceanalyze.analysis.costs.pointwise import ELEMENTWISE
from traceanalyze.analysis.costs.reductions import REDUCTION
from traceanalyze.analysis.costs.tensors import Args, Tensor, Unmodelled, total_bytes

def _fbgemm_permute(args: Args, name: str) -> OpCost:
    """A permutation of tensors (copies in a new order): read every tensor argument, write the
    permuted ones — (permute, lengths, indices[, weights]) → permuted lengths, indices, weights;
    permute_pooled_embs(pooled, offsets…, permute…) → a pooled tensor of the same shape;
    recat_embedding_grad_output_mixed_D_batch(grad, …) → a grad of the same shape."""
    tensors = args.tensors()
    if not tensors:
        raise Unmodelled("shape arguments incomplete: no tensor arguments recorded")
    moved = tensors[1:] if name in ("fbgemm::permute_2D_sparse_data",
                                    "fbgemm::permute_sparse_features") else tensors[:1]
    return OpCost(0.0, total_bytes(tensors) + total_bytes(moved), COPY, False, moved[0].cls if moved
                  else tensors[0].cls)


def _fbgemm_cumsum(args: Args, name: str) -> OpCost:
    """fbgemm::asynchronous_complete_cumsum(t): a scan with a leading zero, numel + 1 written."""
    x = args.need(0, "t")
    return OpCost(float(x.numel), x.nbytes + x.like((x.numel + 1,)).nbytes, REDUCTION, False, x.cls)


def _fbgemm_bounds_check(args: Args, name: str) -> OpCost:
    """fbgemm::bounds_check_indices(rows_per_table, indices, offsets, mode, warning, weights, ...):
    one comparison per index against its table's row count; every tensor argument read, nothing
    written (only out-of-bounds indices, none in a healthy run, are fixed in place)."""
    indices = args.need(1, "indices")
    return OpCost(float(indices.numel), total_bytes(args.tensors()), ELEMENTWISE, False, indices.cls)


# fbgemm SparseType codes of `output_dtype` arguments → `Input type` strings
_SPARSE_TYPES = {0: "float", 1: "c10::Half", 5: "c10::BFloat16"}


def _fbgemm_fp8_rowwise(args: Args, name: str) -> OpCost:
    """Row-wise FP8 (de)quantisation. FloatToFP8RowwiseQuantized(input[..., C]) writes one byte per
    value, the row padded to a multiple of 4, then a float scale and bias: C' = ⌈C/4⌉·4 + 8 bytes
    per row; 2 FLOPs per element (the row's absolute maximum, the scaling).
    FP8RowwiseQuantizedToFloat(input[..., C'] uint8, forward, output_dtype) writes C' − 8 values per
    row at `output_dtype` (float when not recorded); 1 FLOP per element."""
    x = args.need(0, "input")
    if not x.shape:
        raise Unmodelled("shape arguments inconsistent: row-wise quantisation of a 0-dim tensor")
    rows, columns = math.prod(x.shape[:-1]), x.shape[-1]
    if name == "fbgemm::FloatToFP8RowwiseQuantized":
        out = Tensor(tuple(x.shape[:-1]) + (math.ceil(columns / 4) * 4 + 8,), "unsigned char")
        return OpCost(float(2 * x.numel), x.nbytes + out.nbytes, ELEMENTWISE, False, x.cls)
    if columns <= 8:
        raise Unmodelled(f"shape arguments inconsistent: quantised rows of {columns} bytes")
    code = args.scalar(2)
    out_type = _SPARSE_TYPES.get(code, "float") if isinstance(code, int) else "float"
    out = Tensor(tuple(x.shape[:-1]) + (columns - 8,), out_type)
    note = "" if isinstance(code, int) else "output_dtype not recorded: float assumed"
    return OpCost(float(rows * (columns - 8)), x.nbytes + out.nbytes, ELEMENTWISE, False, out.cls, note)


def _fbgemm_hfp8(args: Args, name: str) -> OpCost:
    """FloatToHFP8Quantized(input, ebits, exponent_bias, max_pos) → one byte per element;
    HFP8QuantizedToFloat(input, ebits, exponent_bias) → a float per element; 1 FLOP per element."""
    x = args.need(0, "input")
    out = x.like(type="unsigned char" if name == "fbgemm::FloatToHFP8Quantized" else "float")
    return OpCost(float(x.numel), x.nbytes + out.nbytes, ELEMENTWISE, False, x.cls)


def _permute_pooled_embs_backward(args: Args, name: str) -> OpCost:
    """The autograd node of fbgemm's permute_pooled_embs: the gradient [B, total_D] permuted back,
    read once and written once."""
    grad = args.need(0, "grad_output")
    return OpCost(0.0, 2 * grad.nbytes, COPY, False, grad.cls)


# custom ops: full recorded names; no PyTorch schema, so no argument limit
CUSTOM_OPS: tuple[Op, ...] = (
    Op("fbgemm::bounds_check_indices", _fbgemm_bounds_check, None),
    Op("fbgemm::FloatToFP8RowwiseQuantized", _fbgemm_fp8_rowwise, None),
    Op("fbgemm::FP8RowwiseQuantizedToFloat", _fbgemm_fp8_rowwise, None),
    Op("fbgemm::FloatToHFP8Quantized", _fbgemm_hfp8, None), Op("fbgemm::HFP8QuantizedToFloat", _fbgemm_hfp8, None),
    Op("fb::asynchronous_complete_cumsum", _fbgemm_cumsum, None),
    Op("fbgemm::permute_2D_sparse_data", _fbgemm_permute, None),
    Op("fbgemm::permute_sparse_features", _fbgemm_permute, None),
    Op("fbgemm::permute_pooled_embs_auto_grad", _fbgemm_permute, None),
    Op("fbgemm::permute_pooled_embs", _fbgemm_permute, None),
    Op("fbgemm::recat_embedding_grad_output_mixed_D_batch", _fbgemm_permute, None),
    Op("fbgemm::asynchronous_complete_cumsum", _fbgemm_cumsum, None),
)
# autograd nodes (recorded with their name as the op), by name prefix
PREFIX_OPS: tuple[Op, ...] = (
    Op("torch::autograd::CppNode<fbgemm_gpu::PermutePooledEmbsFunction", _permute_pooled_embs_backward, None),
)
