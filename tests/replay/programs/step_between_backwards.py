"""A GAN-style loop: the discriminator steps between two backward passes
through a graph both losses share, so the second backward finds the
discriminator's saved weights changed.
"""

import torch
from torch import nn

torch.manual_seed(0)
gen = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
disc = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4)
opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4)
bce = nn.BCEWithLogitsLoss()

real = torch.randn(16, 8)
for step in range(2):
    noise = torch.randn(16, 4)
    fake = gen(noise)
    d_fake = disc(fake)
    loss_d = bce(disc(real), torch.ones(16, 1)) + bce(d_fake, torch.zeros(16, 1))
    loss_g = bce(d_fake, torch.ones(16, 1))
    opt_d.zero_grad()
    loss_d.backward(retain_graph=True)
    opt_d.step()  # FIX: bumps the discriminator weights loss_g still needs
    opt_g.zero_grad()
    loss_g.backward()  # RAISES
    opt_g.step()
