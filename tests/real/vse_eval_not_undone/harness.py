"""VSE++ image-caption retrieval: image and caption encoders trained with a hinge ranking loss."""

import torch
import torch.nn.functional as F
from torch import nn

EMBED, VOCAB, VAL_STEP = 64, 300, 2


class EncoderImage(nn.Module):
    def __init__(self, img_dim=256):
        super().__init__()
        self.fc = nn.Linear(img_dim, EMBED)
        self.bn = nn.BatchNorm1d(EMBED)
        self.drop = nn.Dropout(0.3)

    def forward(self, images):
        return F.normalize(self.drop(self.bn(self.fc(images))), dim=1)


class EncoderText(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.rnn = nn.GRU(32, EMBED, batch_first=True)
        self.drop = nn.Dropout(0.3)

    def forward(self, captions):
        _, hidden = self.rnn(self.embed(captions))
        return F.normalize(self.drop(hidden[-1]), dim=1)


class VSE(nn.Module):
    def __init__(self):
        super().__init__()
        self.img_enc = EncoderImage()
        self.txt_enc = EncoderText()
        self.Eiters = 0

    def train_start(self):
        self.img_enc.train()
        self.txt_enc.train()

    def val_start(self):
        self.img_enc.eval()
        self.txt_enc.eval()

    def forward(self, images, captions):
        return self.img_enc(images) @ self.txt_enc(captions).t()


def contrastive_loss(scores, targets, margin=0.2):
    diagonal = scores.gather(1, targets.view(-1, 1))
    cost_s = (margin + scores - diagonal).clamp(min=0)
    cost_im = (margin + scores - diagonal.t()).clamp(min=0)
    mask = torch.eye(scores.size(0), dtype=torch.bool)
    return cost_s.masked_fill(mask, 0).sum() + cost_im.masked_fill(mask, 0).sum()


def validate(model, val_batch):
    model.val_start()
    with torch.no_grad():
        scores = model(*val_batch)
    return (scores.argmax(1) == torch.arange(scores.size(0))).float().mean().item()


def make():
    torch.manual_seed(0)
    model = VSE()
    images, captions = torch.randn(16, 256), torch.randint(0, VOCAB, (16, 8))
    val_batch = (torch.randn(16, 256), torch.randint(0, VOCAB, (16, 8)))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)

    def train_step(model, batch, loss_fn, optimizer):
        (images, captions), targets = batch
        model.Eiters += 1
        scores = model(images, captions)
        loss = loss_fn(scores, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if model.Eiters % VAL_STEP == 0:
            validate(model, val_batch)
        return loss

    model.train_start()
    return {
        "model": model,
        "batch": ((images, captions), torch.arange(16)),
        "loss_fn": contrastive_loss,
        "optimizer": optimizer,
        "train_step": train_step,
    }
