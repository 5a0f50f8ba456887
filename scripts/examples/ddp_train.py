"""Train a small MLP with DistributedDataParallel (an example for `traceanalyze capture`).

Under torchrun each process is one rank; run alone, it is a job of one rank (NCCL on a GPU, gloo on
a CPU), so the trace still holds the gradient all-reduces:

    traceanalyze capture scripts/examples/ddp_train.py -- --steps 20
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    for name, default in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29511"), ("RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(name, default)
    device = torch.device(args.device, int(os.environ.get("LOCAL_RANK",
                                                          0))) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 10)).to(device)
    model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(args.steps):
        inputs = torch.randn(args.batch_size, 1024, device=device)
        labels = torch.randint(0, 10, (args.batch_size,), device=device)
        loss = loss_fn(model(inputs), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
