"""Chinese NER with a span-free token-classification head (CRF-less) over a small encoder."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
VOCAB, NUM_TAGS, MAX_LEN = 5000, 13, 64


class CRFModel(nn.Module):
    def __init__(self, loss_type="ce", hidden=64):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, hidden)
        self.encoder = nn.LSTM(hidden, hidden // 2, batch_first=True, bidirectional=True)
        self.classifier = nn.Linear(hidden, NUM_TAGS)

        reduction = "none"
        if loss_type == "ce":
            self.criterion = nn.CrossEntropyLoss(reduction=reduction)
        else:
            self.criterion = nn.MultiMarginLoss(reduction=reduction)

    def forward(self, token_ids, attention_masks, labels=None):
        seq_out, _ = self.encoder(self.embedding(token_ids))
        logits = self.classifier(seq_out)
        out = (logits,)
        if labels is not None:
            active = attention_masks.view(-1) == 1
            active_logits = logits.view(-1, NUM_TAGS)[active]
            active_labels = labels.view(-1)[active]
            out = (self.criterion(active_logits, active_labels),) + out
        return out


def train(model, loader, optimizer, epochs=1):
    model.train()
    for epoch in range(epochs):
        for token_ids, attention_masks, labels in loader:
            loss = model(token_ids, attention_masks, labels)[0]
            model.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


lengths = torch.randint(10, MAX_LEN, (64,))
masks = (torch.arange(MAX_LEN)[None, :] < lengths[:, None]).long()
data = TensorDataset(torch.randint(1, VOCAB, (64, MAX_LEN)) * masks, masks,
                     torch.randint(0, NUM_TAGS, (64, MAX_LEN)))
model = CRFModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
train(model, DataLoader(data, batch_size=16, shuffle=True), optimizer)
