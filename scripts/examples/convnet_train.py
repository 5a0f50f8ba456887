"""Train a small conv net on synthetic CIFAR-shaped images (an example for `traceanalyze capture`).

    traceanalyze capture scripts/examples/convnet_train.py -- --steps 20
"""

import argparse

import torch
from torch import nn


def convnet(classes: int = 10) -> nn.Module:
    def block(cin: int, cout: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    return nn.Sequential(
        block(3, 16),
        nn.MaxPool2d(2),
        block(16, 32),
        nn.MaxPool2d(2),
        block(32, 64),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, classes),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--channels-last", action="store_true", help="use the NHWC memory format")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device(args.device)
    model = convnet().to(device)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    model.train()
    for step in range(args.steps):
        images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
        images = images.contiguous(memory_format=memory_format)
        labels = torch.randint(0, 10, (args.batch_size,), device=device)
        loss = loss_fn(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
