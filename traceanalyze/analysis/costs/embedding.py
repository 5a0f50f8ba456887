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
    """embedding_backward / embedding_dense_backward(grad_output, indices, num_weights, ...): one
    accumulate per gradient element into a `[num_weights, D]` weight gradient."""
    grad = args.need(0, "grad_output")
    args.need(1, "indices")  # recorded, or the op is not modelled
    num_weights = args.scalar(2)
    if not isinstance(num_weights, int) or isinstance(num_weights, bool):
        raise Unmodelled("shape arguments incomplete: num_weights not recorded")
    dim = grad.shape[-1] if grad.shape else 1
    out = grad.like([num_weights, dim])
    composite = name == "embedding_backward"
    return OpCost(float(grad.numel), total_bytes(args.tensors()) + out.nbytes, EMBEDDING, composite, grad.cls)


# name → (argument positions of num_weights, mode and sparse (None: always dense), composite)
_BAG_BACKWARD: dict[str, tuple[int, int, int | None, bool]] = {
    "_embedding_bag_dense_backward": (5, 7, None, False),
    "_embedding_bag_backward": (6, 8, 9, True),
}
_MAX_MODE = 2  # EmbeddingBagMode: 0 sum, 1 mean, 2 max


def _embedding_bag_backward(args: Args, name: str) -> OpCost:
    """The weight gradient of an embedding bag from the bags' gradient `[bags, D]`: every looked-up
    row accumulates its bag's D values (sum, mean: lookups × D FLOPs); in max mode each output
    element came from one row (bags × D). Reads every tensor argument once; writes the dense
    `[num_weights, D]` gradient, or for `sparse=True` one row of D values and one int64 row index
    per lookup."""
    num_weights_at, mode_at, sparse_at, composite = _BAG_BACKWARD[name]
    grad, indices = args.need(0, "grad"), args.need(1, "indices")
    if len(grad.shape) != 2:
        raise Unmodelled(f"shape arguments inconsistent: embedding bag gradient {list(grad.shape)}")
    bags, dim = grad.shape
    mode = args.scalar(mode_at)
    note = ""
    if not isinstance(mode, int) or isinstance(mode, bool):
        mode, note = 0, "mode not recorded: sum assumed"
    flops = float((bags if mode == _MAX_MODE else indices.numel) * dim)
    if sparse_at is not None and args.flag(sparse_at, False):
        written = [grad.like([indices.numel, dim]), Tensor((indices.numel,), "long int")]
    else:
        num_weights = args.scalar(num_weights_at)
        if not isinstance(num_weights, int) or isinstance(num_weights, bool):
            raise Unmodelled("shape arguments incomplete: num_weights not recorded")
        written = [grad.like([num_weights, dim])]
    return OpCost(flops, total_bytes(args.tensors()) + total_bytes(written), EMBEDDING, composite, grad.cls, note)


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
    Op("_embedding_bag_dense_backward", _embedding_bag_backward, 11),
    Op("_embedding_bag_backward", _embedding_bag_backward, 12), Op("embedding_bag", _embedding_bag, 9),
    Op("_embedding_bag", _embedding_bag, 13), Op("_embedding_bag_forward_only", _embedding_bag, 13),
)
