"""Loss functions (docs/flops.md)."""

from __future__ import annotations

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.normalization import SOFTMAX_FLOPS
from traceanalyze.analysis.costs.tensors import FLOAT_CLASSES, Args, Tensor, reads, total_bytes

LOSS = CostFamily("loss", fusible=True)


# FLOPs per input element of the elementwise part (the reduction adds 1 per element).
_LOSS_FLOPS = {
    "binary_cross_entropy": 4, "binary_cross_entropy_with_logits": 5, "mse_loss": 2, "l1_loss": 2,
    "smooth_l1_loss": 4, "huber_loss": 4, "kl_div": 3, "soft_margin_loss": 4,
}
_LOSS_COMPOSITE = {"binary_cross_entropy_with_logits", "l1_loss", "kl_div", "soft_margin_loss"}


def _reduction_code(args: Args, i: int) -> tuple[int, str]:
    value = args.scalar(i)
    if isinstance(value, int) and not isinstance(value, bool):
        return value, ""
    return 1, "reduction not recorded: mean assumed"


def _pointwise_loss(args: Args, name: str) -> OpCost:
    if name.endswith("_backward"):
        base = name[: -len("_backward")]
        args.need(0, "grad_output")  # recorded, or the op is not modelled
        x = args.need(1, "self")
        flops = float(x.numel * (_LOSS_FLOPS.get(base, 2)))
        operands = {"binary_cross_entropy": 4, "mse_loss": 3}.get(base, 3)  # then reduction [, beta]
        return OpCost(flops, total_bytes(reads(args, operands)) + x.nbytes, LOSS, False, x.cls)
    x = args.need(0, "self")
    reduction_at = {"binary_cross_entropy": 3, "binary_cross_entropy_with_logits": 4}.get(name, 2)
    reduction, note = _reduction_code(args, reduction_at)
    out = x.like(() if reduction else None)
    flops = float(x.numel * (_LOSS_FLOPS[name] + (1 if reduction else 0)))
    return OpCost(flops, total_bytes(args.tensors()) + out.nbytes, LOSS, name in _LOSS_COMPOSITE, x.cls, note)


def _nll_loss(args: Args, name: str) -> OpCost:
    backward = name.endswith("_backward")
    x = args.need(1 if backward else 0, "self")
    target = args.need(2 if backward else 1, "target")
    weight = args.tensor(3 if backward else 2)
    rows = target.numel
    if backward:
        # grad_input is zero-filled and written in full; `self` is only read for its shape.
        read = [args.tensor(0), target, weight, args.tensor(6)]
        return OpCost(float(rows), total_bytes(read) + x.nbytes, LOSS, False, x.cls)
    reduction, note = _reduction_code(args, 3)
    out = x.like(() if reduction else target.shape)
    gathered = rows * x.itemsize  # one log-probability per target
    read = total_bytes([target, weight]) + gathered
    composite = name in ("nll_loss", "nll_loss_nd")
    return OpCost(float(rows), read + out.nbytes + Tensor((), x.type).nbytes, LOSS, composite, x.cls, note)


def _cross_entropy(args: Args, name: str) -> OpCost:
    """cross_entropy_loss (composite): log_softmax over the class dim, then nll_loss."""
    x, target = args.need(0, "self"), args.need(1, "target")
    reduction, note = _reduction_code(args, 3)
    soft_target = target.cls in FLOAT_CLASSES  # class probabilities instead of indices
    rows = target.numel if not soft_target else x.numel
    flops = float(x.numel * SOFTMAX_FLOPS["forward"] + rows)
    log_probs = x.like()
    out = x.like(() if reduction else (target.shape if not soft_target else x.shape[:1]))
    moved = x.nbytes + log_probs.nbytes  # log_softmax reads logits, writes log-probabilities
    moved += total_bytes([target, args.tensor(2)]) + rows * x.itemsize + out.nbytes
    return OpCost(flops, moved, LOSS, True, x.cls, note)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("binary_cross_entropy", _pointwise_loss, 5), Op("binary_cross_entropy_with_logits", _pointwise_loss, 6),
    Op("mse_loss", _pointwise_loss, 4), Op("l1_loss", _pointwise_loss, 3), Op("smooth_l1_loss", _pointwise_loss, 5),
    Op("huber_loss", _pointwise_loss, 5), Op("kl_div", _pointwise_loss, 4),
    Op("soft_margin_loss", _pointwise_loss, 4), Op("binary_cross_entropy_backward", _pointwise_loss, 6),
    Op("mse_loss_backward", _pointwise_loss, 5), Op("smooth_l1_loss_backward", _pointwise_loss, 6),
    Op("huber_loss_backward", _pointwise_loss, 6), Op("nll_loss", _nll_loss, 6), Op("nll_loss_nd", _nll_loss, 5),
    Op("nll_loss_forward", _nll_loss, 7), Op("nll_loss2d_forward", _nll_loss, 7),
    Op("nll_loss_backward", _nll_loss, 8), Op("nll_loss2d_backward", _nll_loss, 8),
    Op("cross_entropy_loss", _cross_entropy, 6),
)
