"""Single-task molecular classification (a MoleculeNet dataset) with an MLP on 1024-bit fingerprints."""

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)


def load_bbbp(n=200, n_tasks=1):
    """MoleculeNet loaders return features (N, 1024) and labels (N, n_tasks)."""
    X = (rng.random((n, 1024)) < 0.1).astype(np.float32)
    y = rng.integers(0, 2, (n, n_tasks)).astype(np.float32)
    w = np.ones((n, n_tasks), dtype=np.float32)
    return X, y, w


class SparseSoftmaxCrossEntropy:
    """The loss wrapper: integer class labels, logits from the model."""

    def _create_pytorch_loss(self):
        ce_loss = torch.nn.CrossEntropyLoss(reduction="none")

        def loss(output, labels):
            labels = labels.long()
            return ce_loss(output, labels)

        return loss


class MultitaskClassifier(nn.Module):
    def __init__(self, n_features=1024, layer_sizes=(1000,), n_classes=2):
        super().__init__()
        layers, prev = [], n_features
        for size in layer_sizes:
            layers += [nn.Linear(prev, size), nn.ReLU(), nn.Dropout(0.25)]
            prev = size
        self.body = nn.Sequential(*layers)
        self.logits = nn.Linear(prev, n_classes)

    def forward(self, x):
        return self.logits(self.body(x))


X, y, w = load_bbbp()
model = MultitaskClassifier()
loss_fn = SparseSoftmaxCrossEntropy()._create_pytorch_loss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(3):
    for start in range(0, len(X), 50):
        inputs = torch.from_numpy(X[start:start + 50])
        labels = torch.from_numpy(y[start:start + 50])
        weights = torch.from_numpy(w[start:start + 50])
        output = model(inputs)
        batch_loss = (loss_fn(output, labels) * weights.squeeze(-1)).mean()
        optimizer.zero_grad()
        batch_loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {batch_loss.item():.4f}")
