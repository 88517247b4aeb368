"""Multimodal emotion recognition on CMU-MOSEI-like data: text, audio and visual streams, 6 emotions."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
EMOTIONS = ["happy", "sad", "angry", "fear", "disgust", "surprise"]

parser = argparse.ArgumentParser()
parser.add_argument("--dataset", default="mosei_senti")
parser.add_argument("--loss", default="ce", choices=["ce", "bce"])
parser.add_argument("--batch-size", type=int, default=16)
args = parser.parse_args()


class EmotionModel(nn.Module):
    def __init__(self, dims=(300, 74, 35), hidden=32, num_classes=len(EMOTIONS)):
        super().__init__()
        self.encoders = nn.ModuleList(nn.LSTM(d, hidden, batch_first=True) for d in dims)
        self.fusion = nn.Sequential(nn.Linear(3 * hidden, hidden), nn.ReLU(), nn.Dropout(0.1))
        self.out = nn.Linear(hidden, num_classes)

    def forward(self, text, audio, visual):
        finals = [enc(x)[1][0][-1] for enc, x in zip(self.encoders, (text, audio, visual))]
        return self.out(self.fusion(torch.cat(finals, dim=1)))


def load_split(n=64, seq=20):
    labels = (torch.rand(n, len(EMOTIONS)) < 0.3).long()  # an utterance may carry several emotions
    return TensorDataset(torch.randn(n, seq, 300), torch.randn(n, seq, 74), torch.randn(n, seq, 35),
                         labels)


train_loader = DataLoader(load_split(), batch_size=args.batch_size, shuffle=True)
model = EmotionModel()
criterion = nn.CrossEntropyLoss() if args.loss == "ce" else nn.BCEWithLogitsLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    for text, audio, visual, y in train_loader:
        logits = model(text, audio, visual)
        loss = criterion(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
