"""Few-shot font generation: a style encoder on 1-channel 128x128 glyph images, with validation."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)


def load_glyph(stored, mode):
    """Mimics PIL: mode "L" is one gray channel, "RGB" three."""
    if mode == "L":
        array = stored[..., 0] if stored.ndim == 3 else stored
        return torch.from_numpy(array).float().div(255).unsqueeze(0)
    array = stored if stored.ndim == 3 else np.repeat(stored[..., None], 3, axis=2)
    return torch.from_numpy(array).float().div(255).permute(2, 0, 1)


TRAIN_GLYPHS = [rng.integers(0, 256, (128, 128), dtype=np.uint8) for _ in range(32)]
VAL_GLYPHS = [rng.integers(0, 256, (128, 128, 3), dtype=np.uint8) for _ in range(16)]


class StyleEncoder(nn.Module):
    def __init__(self, C_in=1, C=16):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(C_in, C, 3, 1, 1), nn.ReLU(),
            nn.Conv2d(C, C * 2, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(C * 2, C * 4, 4, 2, 1), nn.ReLU())
        self.decode = nn.Sequential(
            nn.ConvTranspose2d(C * 4, C * 2, 4, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(C * 2, C_in, 4, 2, 1), nn.Sigmoid())

    def forward(self, x):
        return self.decode(self.layers(x))


def train(gen, optimizer, glyphs):
    batch = torch.stack([load_glyph(g, "L") for g in glyphs])
    recon = gen(batch)
    loss = F.l1_loss(recon, batch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def validate(gen, glyphs):
    gen.eval()
    with torch.no_grad():
        batch = torch.stack([load_glyph(g, "RGB") for g in glyphs])
        out = gen(batch)
    gen.train()
    return F.l1_loss(out, batch).item()


gen = StyleEncoder()
optimizer = torch.optim.Adam(gen.parameters(), lr=2e-4)
for step in range(1, 5):
    loss = train(gen, optimizer, TRAIN_GLYPHS)
    if step % 2 == 0:
        print(f"step {step}: train {loss:.4f}  val {validate(gen, VAL_GLYPHS):.4f}")
