"""Written for a GPU: hard-codes CUDA everywhere, and prints a seeded draw."""
import torch
from torch import nn

print("draw", torch.rand(3).tolist())
device = torch.device("cuda")
model = nn.Linear(4, 2).cuda().to("cuda")
x = torch.randn(5, 4, device="cuda")
y = torch.zeros(5, dtype=torch.long).to(device)
out = model(x.to(device))
print("devices", out.device, y.device, next(model.parameters()).device)
emb = nn.Embedding(10, 3).to(device)
emb(torch.tensor([3, 12], device="cuda"))
