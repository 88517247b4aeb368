"""A gated MLP that masks its gate in place; backward fails on every run.

sigmoid saves its output for backward, and ``g.mul_(mask)`` overwrites it.
"""

import torch
from torch import nn


class GatedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.gate = nn.Linear(16, 32)
        self.out = nn.Linear(32, 4)

    def forward(self, x, mask):
        h = self.fc(x)
        g = torch.sigmoid(self.gate(x))
        g.mul_(mask)  # FIX: masks the tensor sigmoid saved
        return self.out(h * g)


torch.manual_seed(0)
model = GatedNet()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
x = torch.randn(8, 16)
mask = (torch.rand(8, 32) > 0.2).float()
y = torch.randint(0, 4, (8,))
for step in range(3):
    opt.zero_grad()
    loss = criterion(model(x, mask), y)
    loss.backward()  # RAISES
    opt.step()
