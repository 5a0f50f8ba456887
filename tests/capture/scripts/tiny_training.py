"""A few optimizer steps of a tiny linear model, shared by the test scripts next to it."""

import torch


def train(steps: int, on_step=None) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        if on_step is not None:
            on_step(step)
        loss = model(torch.randn(8, 16)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
