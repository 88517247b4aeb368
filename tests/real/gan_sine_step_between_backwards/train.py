"""A tiny GAN that learns to draw sine curves (a generator of 15-point paintings)."""

import numpy as np
import torch
from torch import nn

torch.manual_seed(1)
np.random.seed(1)

BATCH_SIZE = 64
LR_G = 1e-4
LR_D = 1e-4
N_IDEAS = 5
ART_COMPONENTS = 15
PAINT_POINTS = np.vstack([np.linspace(-1, 1, ART_COMPONENTS) for _ in range(BATCH_SIZE)])


def real_paintings():
    amplitude = np.random.uniform(1, 2, size=BATCH_SIZE)[:, np.newaxis]
    curves = amplitude * np.sin(PAINT_POINTS * np.pi) + (amplitude - 1)
    return torch.from_numpy(curves).float()


generator = nn.Sequential(
    nn.Linear(N_IDEAS, 128),
    nn.ReLU(),
    nn.Linear(128, ART_COMPONENTS),
)

discriminator = nn.Sequential(
    nn.Linear(ART_COMPONENTS, 128),
    nn.ReLU(),
    nn.Linear(128, 1),
    nn.Sigmoid(),
)

opt_D = torch.optim.Adam(discriminator.parameters(), lr=LR_D)
opt_G = torch.optim.Adam(generator.parameters(), lr=LR_G)

for step in range(200):
    artist = real_paintings()
    ideas = torch.randn(BATCH_SIZE, N_IDEAS)
    fake = generator(ideas)

    prob_real = discriminator(artist)
    prob_fake = discriminator(fake)

    D_loss = -torch.mean(torch.log(prob_real) + torch.log(1.0 - prob_fake))
    G_loss = torch.mean(torch.log(1.0 - prob_fake))

    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)
    opt_D.step()

    opt_G.zero_grad()
    G_loss.backward()
    opt_G.step()

    if step % 50 == 0:
        print(f"step {step}: D {D_loss.item():.3f}  G {G_loss.item():.3f}")
