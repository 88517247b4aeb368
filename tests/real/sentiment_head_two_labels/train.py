"""Fine-tuning a BERT-style sentence classifier (the NSMC recipe) on a 5-level sentiment dataset."""

from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


@dataclass
class BertConfig:
    vocab_size: int = 3000
    hidden_size: int = 64
    num_labels: int = 2


class BertForSequenceClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        layer = nn.TransformerEncoderLayer(config.hidden_size, 4, 128, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.num_labels = config.num_labels

    @classmethod
    def from_pretrained(cls, name, **kwargs):
        return cls(BertConfig(**kwargs))

    def forward(self, input_ids, labels=None):
        pooled = self.encoder(self.embeddings(input_ids))[:, 0]
        logits = self.classifier(self.dropout(pooled))
        if labels is None:
            return (logits,)
        loss = nn.CrossEntropyLoss()(logits.view(-1, self.num_labels), labels.view(-1))
        return loss, logits


class Model(nn.Module):
    def __init__(self, pretrained_model="beomi/kcbert-base"):
        super().__init__()
        self.bert = BertForSequenceClassification.from_pretrained(pretrained_model)

    def forward(self, **kwargs):
        return self.bert(**kwargs)

    def training_step(self, batch, batch_idx):
        data, labels = batch
        loss, logits = self(input_ids=data, labels=labels)
        return loss


# 0 very negative, 1 negative, 2 neutral, 3 positive, 4 very positive
documents = torch.randint(1, 3000, (80, 48))
labels = torch.arange(80) % 5
loader = DataLoader(TensorDataset(documents, labels), batch_size=16, shuffle=True)

model = Model()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-6)
for epoch in range(2):
    for batch_idx, batch in enumerate(loader):
        loss = model.training_step(batch, batch_idx)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
