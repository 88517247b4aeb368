"""Keyword spotting: a GRU over 40-dim fbank frames scores 3 keywords plus filler."""

import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_

NUM_KEYWORDS = 4
CLIP = 5.0


class KWSModel(nn.Module):
    def __init__(self, idim=40, hidden=32):
        super().__init__()
        self.preprocessing = nn.Sequential(nn.Linear(idim, hidden), nn.ReLU())
        self.backbone = nn.GRU(hidden, hidden, num_layers=1, batch_first=True)
        self.classifier = nn.Linear(hidden, NUM_KEYWORDS)

    def forward(self, feats):
        x = self.preprocessing(feats)
        x, _ = self.backbone(x)
        return self.classifier(x[:, -1])


def train_step(model, batch, loss_fn, optimizer):
    feats, target = batch
    model.train()
    logits = model(feats)
    loss = loss_fn(logits, target)
    loss.backward()
    grad_norm = clip_grad_norm_(model.parameters(), CLIP)
    if torch.isfinite(grad_norm):
        optimizer.step()
    return loss


def make():
    torch.manual_seed(0)
    model = KWSModel()
    feats = torch.randn(16, 30, 40)
    target = torch.randint(0, NUM_KEYWORDS, (16,))
    return {
        "model": model,
        "batch": (feats, target),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4),
        "train_step": train_step,
        "num_classes": NUM_KEYWORDS,
    }
