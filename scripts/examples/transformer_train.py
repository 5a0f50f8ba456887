"""Train a small GPT-style transformer on random tokens (an example for `traceanalyze capture`).

    traceanalyze capture scripts/examples/transformer_train.py -- --steps 20
"""

import argparse
import contextlib

import torch
from torch import nn

from tiny_transformer import TinyGPT  # next to this script: found through sys.path[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--amp", action="store_true", help="autocast to bfloat16")
    parser.add_argument("--width", type=int, default=128, help="model width (heads of 32 channels)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (Triton kernels on a GPU)")
    parser.add_argument("--compile-mode", default=None, help="torch.compile's mode, e.g. reduce-overhead (CUDA graphs)")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device(args.device)
    model = TinyGPT(vocab=args.vocab, width=args.width, heads=max(1, args.width // 32), context=args.context).to(device)
    if args.compile or args.compile_mode:
        model = torch.compile(model, mode=args.compile_mode)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    loss_fn = nn.CrossEntropyLoss()
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if args.amp else contextlib.nullcontext()

    for step in range(args.steps):
        tokens = torch.randint(0, args.vocab, (args.batch_size, args.context + 1), device=device)
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        with autocast:
            logits = model(inputs)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
