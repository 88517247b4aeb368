"""Captcha recognition: a CNN + GRU reads the characters of 75x300 captcha images (CTC loss)."""

import string

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
rng = np.random.default_rng(0)
CHARS = string.ascii_lowercase + string.digits
CHAR_TO_ID = {c: i + 1 for i, c in enumerate(CHARS)}  # 0 is the CTC blank


def random_text():
    length = 7 if rng.random() < 0.5 else 6
    return "".join(rng.choice(list(CHARS), length))


TEXTS = [random_text() for _ in range(48)]
IMAGES = rng.random((48, 3, 75, 300)).astype(np.float32)


class ClassificationDataset(Dataset):
    def __init__(self, images, targets):
        self.images = images
        self.targets = targets

    def __len__(self):
        return len(self.images)

    def __getitem__(self, item):
        image = torch.tensor(self.images[item], dtype=torch.float)
        targets = torch.tensor([CHAR_TO_ID[c] for c in self.targets[item]], dtype=torch.long)
        return {"images": image, "targets": targets}


class CaptchaModel(nn.Module):
    def __init__(self, num_chars=len(CHARS)):
        super().__init__()
        self.conv_1 = nn.Conv2d(3, 32, kernel_size=3, padding=1)
        self.pool_1 = nn.MaxPool2d(2)
        self.conv_2 = nn.Conv2d(32, 32, kernel_size=3, padding=1)
        self.pool_2 = nn.MaxPool2d(2)
        self.linear_1 = nn.Linear(32 * 18, 64)
        self.gru = nn.GRU(64, 32, bidirectional=True, batch_first=True)
        self.output = nn.Linear(64, num_chars + 1)

    def forward(self, images, targets):
        bs = images.size(0)
        x = self.pool_1(F.relu(self.conv_1(images)))
        x = self.pool_2(F.relu(self.conv_2(x)))
        x = x.permute(0, 3, 1, 2).reshape(bs, x.size(3), -1)
        x, _ = self.gru(F.relu(self.linear_1(x)))
        log_probs = F.log_softmax(self.output(x), 2).permute(1, 0, 2)
        input_lengths = torch.full((bs,), log_probs.size(0), dtype=torch.int32)
        target_lengths = torch.full((bs,), targets.size(1), dtype=torch.int32)
        loss = nn.CTCLoss(blank=0)(log_probs, targets, input_lengths, target_lengths)
        return log_probs, loss


def train_fn(model, data_loader, optimizer):
    model.train()
    fin_loss = 0.0
    for data in data_loader:
        optimizer.zero_grad()
        _, loss = model(**data)
        loss.backward()
        optimizer.step()
        fin_loss += loss.item()
    return fin_loss / len(data_loader)


train_loader = DataLoader(ClassificationDataset(IMAGES, TEXTS), batch_size=8, shuffle=True)
model = CaptchaModel()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
for epoch in range(2):
    print(f"epoch {epoch}: loss {train_fn(model, train_loader, optimizer):.3f}")
