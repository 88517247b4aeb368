"""MNIST MLP in the skorch style: the module returns probabilities and the loss takes their log."""

import torch
import torch.nn.functional as F
from torch import nn


class ClassifierModule(nn.Module):
    def __init__(self, input_dim=784, hidden_dim=98, output_dim=10, dropout=0.5):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.hidden = nn.Linear(input_dim, hidden_dim)
        self.output = nn.Linear(hidden_dim, output_dim)

    def forward(self, X):
        X = F.relu(self.hidden(X))
        X = self.dropout(X)
        return F.softmax(self.output(X), dim=-1)


def get_loss(y_pred, y_true):
    return F.nll_loss(torch.log(y_pred), y_true)


def make():
    torch.manual_seed(0)
    model = ClassifierModule()
    X = torch.rand(64, 784)
    y = torch.randint(0, 10, (64,))
    return {
        "model": model,
        "batch": (X, y),
        "loss_fn": get_loss,
        "optimizer": torch.optim.Adam(model.parameters(), lr=0.1),
        "num_classes": 10,
    }
