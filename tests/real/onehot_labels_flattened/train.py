"""Document classification into 4 classes with a small transformer encoder and a prediction head."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

LABEL_LIST = ["business", "sports", "science", "world"]
VOCAB, MAX_LEN, HIDDEN = 3000, 64, 128


def convert_labels(raw_labels):
    ids = torch.zeros(len(raw_labels), len(LABEL_LIST), dtype=torch.long)
    for row, label in enumerate(raw_labels):
        ids[row, LABEL_LIST.index(label)] = 1
    return ids


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(VOCAB, HIDDEN)
        layer = nn.TransformerEncoderLayer(HIDDEN, nhead=4, dim_feedforward=256, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)

    def forward(self, input_ids):
        return self.encoder(self.embeddings(input_ids))[:, 0]


class TextClassificationHead(nn.Module):
    def __init__(self, num_labels):
        super().__init__()
        self.feed_forward = nn.Sequential(nn.Dropout(0.1), nn.Linear(HIDDEN, num_labels))
        self.loss_fct = nn.CrossEntropyLoss(reduction="none")
        self.num_labels = num_labels

    def forward(self, pooled):
        return self.feed_forward(pooled)

    def logits_to_loss(self, logits, label_ids):
        return self.loss_fct(logits, label_ids.view(-1))


class AdaptiveModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.language_model = LanguageModel()
        self.prediction_head = TextClassificationHead(len(LABEL_LIST))

    def forward(self, input_ids):
        return self.prediction_head(self.language_model(input_ids))

    def logits_to_loss(self, logits, label_ids):
        return self.prediction_head.logits_to_loss(logits, label_ids).mean()


raw = [LABEL_LIST[i % 4] for i in range(64)]
dataset = TensorDataset(torch.randint(0, VOCAB, (64, MAX_LEN)), convert_labels(raw))
loader = DataLoader(dataset, batch_size=8, shuffle=True)

model = AdaptiveModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)

for epoch in range(2):
    for input_ids, label_ids in loader:
        logits = model(input_ids)
        loss = model.logits_to_loss(logits, label_ids)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
