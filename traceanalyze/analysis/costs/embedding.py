"""aten embedding lookups, bags and their backward ops (docs/flops.md)."""

from __future__ import annotations

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.tensors import Args, Tensor, Unmodelled, total_bytes

EMBEDDING = CostFamily("embedding")


def _embedding(args: Args, name: str) -> OpCost:
    """embedding(weight, indices, ...) (composite): the looked-up rows gathered, then written."""
    weight, indices = args.need(0, "weight"), args.need(1, "indices")
    if len(weight.shape) != 2:
        raise Unmodelled(f"shape arguments inconsistent: embedding table {list(weight.shape)}")
    out = weight.like(list(indices.shape) + [weight.shape[1]])
    return OpCost(0.0, indices.nbytes + 2 * out.nbytes, EMBEDDING, True, weight.cls)


def _embedding_backward(args: Args, name: str) -> OpCost:
    grad, indices = args.need(0, "grad_output"), args.need(1, "indices")
    num_weights = args.scalar(2 if name != "_embedding_bag_dense_backward" else 5)
    if not isinstance(num_weights, int) or isinstance(num_weights, bool):
        raise Unmodelled("shape arguments incomplete: num_weights not recorded")
    dim = grad.shape[-1] if grad.shape else 1
    out = grad.like([num_weights, dim])
    composite = name in ("embedding_backward", "_embedding_bag_backward")
    return OpCost(float(grad.numel), total_bytes(args.tensors()) + out.nbytes, EMBEDDING, composite, grad.cls)


def _embedding_bag(args: Args, name: str) -> OpCost:
    weight, indices, offsets = args.need(0, "weight"), args.need(1, "indices"), args.need(2, "offsets")
    if len(weight.shape) != 2:
        raise Unmodelled(f"shape arguments inconsistent: embedding table {list(weight.shape)}")
    dim = weight.shape[1]
    bags = offsets.numel - (1 if args.flag(7, False) else 0)
    gathered = indices.numel * dim
    per_sample = args.tensor(6)
    read = total_bytes([indices, offsets, per_sample]) + gathered * weight.itemsize
    written = total_bytes([weight.like([bags, dim]), Tensor((indices.numel,), "long int"), Tensor((bags,), "long int")])
    return OpCost(float(gathered), read + written, EMBEDDING, name == "embedding_bag", weight.cls)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("embedding", _embedding, 6), Op("embedding_backward", _embedding_backward, 6),
    Op("embedding_dense_backward", _embedding_backward, 6),
    Op("_embedding_bag_dense_backward", _embedding_backward, 11), Op("embedding_bag", _embedding_bag, 9),
    Op("_embedding_bag", _embedding_bag, 13), Op("_embedding_bag_forward_only", _embedding_bag, 13),
)
