"""Healthy: a small transformer encoder classifying token sequences."""

import torch
from torch import nn


class TinyEncoder(nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 32, classes: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=64, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


def harness():
    torch.manual_seed(0)
    model = TinyEncoder()
    return {
        "model": model,
        "batch": (torch.randint(0, 50, (16, 12)), torch.randint(0, 4, (16,))),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.AdamW(model.parameters(), lr=3e-3),
        "num_classes": 4,
    }
