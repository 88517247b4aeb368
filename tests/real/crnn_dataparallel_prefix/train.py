"""CRNN text recognition: train with DataParallel, save a checkpoint, then load it for the demo."""

import os
import tempfile

import torch
from torch import nn

torch.manual_seed(0)
NCLASS = 37  # 36 characters + blank


class BidirectionalLSTM(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.rnn = nn.LSTM(n_in, n_hidden, bidirectional=True)
        self.embedding = nn.Linear(n_hidden * 2, n_out)

    def forward(self, x):
        recurrent, _ = self.rnn(x)
        t, b, h = recurrent.size()
        return self.embedding(recurrent.view(t * b, h)).view(t, b, -1)


class CRNN(nn.Module):
    def __init__(self, nc=1, nclass=NCLASS, nh=64):
        super().__init__()
        channels = [nc, 16, 32, 64, 64]
        cnn = nn.Sequential()
        for i in range(4):
            cnn.add_module(f"conv{i}", nn.Conv2d(channels[i], channels[i + 1], 3, 1, 1))
            cnn.add_module(f"relu{i}", nn.ReLU(True))
            cnn.add_module(f"pooling{i}", nn.MaxPool2d((2, 2) if i < 2 else (2, 1)))
        self.cnn = cnn
        self.rnn = nn.Sequential(BidirectionalLSTM(64 * 2, nh, nh), BidirectionalLSTM(nh, nh, nclass))

    def forward(self, x):
        conv = self.cnn(x)
        b, c, h, w = conv.size()
        conv = conv.view(b, c * h, w).permute(2, 0, 1)
        return self.rnn(conv)


def train(crnn, steps=2):
    criterion = nn.CTCLoss()
    optimizer = torch.optim.Adam(crnn.parameters(), lr=1e-3)
    for _ in range(steps):
        images = torch.randn(8, 1, 32, 100)
        text = torch.randint(1, NCLASS, (8, 5))
        preds = crnn(images).log_softmax(2)
        preds_size = torch.full((8,), preds.size(0), dtype=torch.long)
        loss = criterion(preds, text, preds_size, torch.full((8,), 5, dtype=torch.long))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


expr_dir = tempfile.mkdtemp()
model_path = os.path.join(expr_dir, "netCRNN.pth")

crnn = CRNN()
crnn = torch.nn.DataParallel(crnn)
print(f"train loss {train(crnn):.3f}")
torch.save(crnn.state_dict(), model_path)

# demo.py
model = CRNN()
print(f"loading pretrained model from {model_path}")
model.load_state_dict(torch.load(model_path))
model.eval()
print(model(torch.randn(1, 1, 32, 100)).argmax(2).view(-1))
