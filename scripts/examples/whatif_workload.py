"""A small training loop with one flag per change the replay predicts (docs/whatif.md, "Checking
the predictions"): `scripts/whatif_check.py` records it before and after each change.

    python scripts/examples/whatif_workload.py --steps 20                       # the "before" of every pair
    python scripts/examples/whatif_workload.py --steps 20 --compile-mode reduce-overhead
    python scripts/examples/whatif_workload.py --steps 20 --precision tf32      # or bf16
    python scripts/examples/whatif_workload.py --steps 20 --attention sdpa
    python scripts/examples/whatif_workload.py --steps 20 --workers 4 --pin-memory
    python scripts/examples/whatif_workload.py --steps 20 --item-every 10
    python scripts/examples/whatif_workload.py --steps 20 --pinned-copies
    python scripts/examples/whatif_workload.py --steps 20 --compile-pointwise

The model: token embedding, `--layers` blocks of attention (written out: matmul, scale, mask,
softmax, matmul; or `scaled_dot_product_attention`) and an MLP whose GELU is a chain of pointwise
ops (tanh approximation, one op at a time; or the same chain under `torch.compile`), a linear head.
Batches come from a DataLoader over a dataset that does some CPU work per sample.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


def pointwise_gelu(x: torch.Tensor) -> torch.Tensor:
    """GELU (tanh approximation) as separate pointwise ops: one kernel each, unfused."""
    inner = (x + 0.044715 * x * x * x) * math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + torch.tanh(inner))


class Block(nn.Module):
    def __init__(self, width: int, heads: int, sdpa: bool, gelu) -> None:
        super().__init__()
        self.heads, self.sdpa, self.gelu = heads, sdpa, gelu
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            mask = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
            y = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(batch, length, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.down(self.gelu(self.up(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, vocab: int, width: int, layers: int, sdpa: bool, gelu) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(Block(width, max(width // 32, 1), sdpa, gelu) for _ in range(layers))
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class Tokens(Dataset):
    """Random token sequences, each after `work` rounds of CPU work (a stand-in for decoding and
    augmenting a sample: what `num_workers` moves off the training loop)."""

    def __init__(self, size: int, context: int, vocab: int, work: int) -> None:
        self.size, self.context, self.vocab, self.work = size, context, vocab, work

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(index)
        sample = torch.randint(self.vocab, (self.context + 1,), generator=generator)
        noise = torch.randn(self.work, 64, generator=generator)
        for _ in range(4):
            noise = torch.tanh(noise @ noise.T[:64, :64] if noise.shape[0] >= 64 else noise)
        return sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--sample-work", type=int, default=64, help="CPU work per sample (rows of noise)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--compile-mode", default=None, help="torch.compile the model with this mode "
                        "(reduce-overhead: CUDA graphs)")
    parser.add_argument("--precision", choices=("fp32", "tf32", "bf16"), default="fp32",
                        help="fp32 (TF32 off), tf32 (matmuls in TF32), bf16 (autocast)")
    parser.add_argument("--attention", choices=("unfused", "sdpa"), default="unfused")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader num_workers")
    parser.add_argument("--pin-memory", action="store_true", help="DataLoader pin_memory")
    parser.add_argument("--item-every", type=int, default=1, help="read the loss with .item() every N steps")
    parser.add_argument("--pinned-copies", action="store_true",
                        help="copy each batch from a pinned buffer, non_blocking (else from pageable memory)")
    parser.add_argument("--compile-pointwise", action="store_true", help="torch.compile the GELU chain only")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    gelu = torch.compile(pointwise_gelu) if args.compile_pointwise else pointwise_gelu
    model = Model(args.vocab, args.width, args.layers, args.attention == "sdpa", gelu).to(device)
    step_model = torch.compile(model, mode=args.compile_mode) if args.compile_mode else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = Tokens(args.steps * args.batch_size, args.context, args.vocab, args.sample_work)
    loader = DataLoader(data, batch_size=args.batch_size, num_workers=args.workers,
                        pin_memory=args.pin_memory and device.type == "cuda")
    staging = torch.empty(args.batch_size, args.context + 1, dtype=torch.long)
    if args.pinned_copies and device.type == "cuda":
        staging = staging.pin_memory()
    for step, batch in enumerate(loader):
        staging[: batch.shape[0]].copy_(batch)
        tokens = staging[: batch.shape[0]].to(device, non_blocking=args.pinned_copies or args.pin_memory)
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            logits = step_model(inputs)
            loss = F.cross_entropy(logits.float().reshape(-1, args.vocab), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if (step + 1) % args.item_every == 0:
            print(f"step {step}: loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
