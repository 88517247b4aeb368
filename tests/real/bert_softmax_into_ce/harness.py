"""A BERT-style sentence classifier (10 intent classes) trained with CrossEntropyLoss."""

import torch
from torch import nn

VOCAB, HIDDEN, NUM_CLASSES = 500, 32, 10


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(VOCAB, HIDDEN)
        layer = nn.TransformerEncoderLayer(HIDDEN, nhead=2, dim_feedforward=64, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1)
        self.pooler = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.Tanh())

    def forward(self, input_ids):
        hidden = self.encoder(self.embeddings(input_ids))
        return self.pooler(hidden[:, 0])


class BertClassifier(nn.Module):
    def __init__(self, num_labels=NUM_CLASSES):
        super().__init__()
        self.bert = Bert()
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(HIDDEN, num_labels)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, input_ids):
        pooled = self.bert(input_ids)
        logits = self.classifier(self.dropout(pooled))
        return self.softmax(logits)


def train_step(model, batch, loss_fn, optimizer):
    input_ids, labels = batch
    model.train()
    output = model(input_ids)
    loss = loss_fn(output, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def make():
    torch.manual_seed(0)
    model = BertClassifier()
    input_ids = torch.randint(0, VOCAB, (16, 12))
    labels = torch.randint(0, NUM_CLASSES, (16,))
    return {
        "model": model,
        "batch": (input_ids, labels),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=2e-5),
        "train_step": train_step,
        "num_classes": NUM_CLASSES,
    }
