"""FactorVAE on 64x64 binary shapes: a VAE plus a total-correlation discriminator."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)

Z_DIM = 10
GAMMA = 6.4
BATCH = 64


class VAE(nn.Module):
    def __init__(self, z_dim=Z_DIM):
        super().__init__()
        self.encode = nn.Sequential(
            nn.Linear(4096, 1200), nn.ReLU(True),
            nn.Linear(1200, 1200), nn.ReLU(True),
            nn.Linear(1200, 2 * z_dim),
        )
        self.decode = nn.Sequential(
            nn.Linear(z_dim, 1200), nn.Tanh(),
            nn.Linear(1200, 1200), nn.Tanh(),
            nn.Linear(1200, 4096),
        )

    def forward(self, x, no_dec=False):
        stats = self.encode(x.view(x.size(0), -1))
        mu, logvar = stats.chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        if no_dec:
            return z
        return self.decode(z).view(x.size()), mu, logvar, z


class Discriminator(nn.Module):
    def __init__(self, z_dim=Z_DIM):
        super().__init__()
        layers = [nn.Linear(z_dim, 1000), nn.LeakyReLU(0.2, True)]
        for _ in range(4):
            layers += [nn.Linear(1000, 1000), nn.LeakyReLU(0.2, True)]
        layers.append(nn.Linear(1000, 2))
        self.net = nn.Sequential(*layers)

    def forward(self, z):
        return self.net(z)


def permute_dims(z):
    return torch.stack([col[torch.randperm(z.size(0))] for col in z.t()], dim=1)


def kl_divergence(mu, logvar):
    return (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp())).sum(1).mean()


vae = VAE()
disc = Discriminator()
optim_vae = torch.optim.Adam(vae.parameters(), lr=1e-4, betas=(0.9, 0.999))
optim_d = torch.optim.Adam(disc.parameters(), lr=1e-4, betas=(0.5, 0.9))

ones = torch.ones(BATCH, dtype=torch.long)
zeros = torch.zeros(BATCH, dtype=torch.long)

for it in range(100):
    x_true1 = (torch.rand(BATCH, 1, 64, 64) > 0.7).float()
    x_true2 = (torch.rand(BATCH, 1, 64, 64) > 0.7).float()

    x_recon, mu, logvar, z = vae(x_true1)
    recon = F.binary_cross_entropy_with_logits(x_recon, x_true1, reduction="sum") / BATCH
    kld = kl_divergence(mu, logvar)
    D_z = disc(z)
    tc = (D_z[:, :1] - D_z[:, 1:]).mean()
    vae_loss = recon + kld + GAMMA * tc

    optim_vae.zero_grad()
    vae_loss.backward(retain_graph=True)
    optim_vae.step()

    z_prime = vae(x_true2, no_dec=True)
    z_pperm = permute_dims(z_prime).detach()
    D_z_pperm = disc(z_pperm)
    D_tc_loss = 0.5 * (F.cross_entropy(D_z, zeros) + F.cross_entropy(D_z_pperm, ones))

    optim_d.zero_grad()
    D_tc_loss.backward()
    optim_d.step()

    if it % 20 == 0:
        print(f"iter {it}: vae {vae_loss.item():.2f}  D {D_tc_loss.item():.3f}")
