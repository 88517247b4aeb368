"""Training is fine; the accuracy helper takes argmax over the batch dimension."""

import torch
from torch import nn


def accuracy(logits, labels):
    preds = logits.argmax(dim=0)  # FIX: argmax over the batch, not the classes
    return (preds == labels).float().mean()  # RAISES


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(12, 20)
y = torch.randint(0, 5, (12,))
for epoch in range(2):
    opt.zero_grad()
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    loss.backward()
    opt.step()
    print(f"epoch {epoch} loss {loss.item():.3f} acc {accuracy(out, y):.2f}")
