"""World Models: train the MDN-RNN on rollouts encoded into latents by a (frozen) VAE."""

import torch
import torch.nn.functional as f
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
BSIZE, SEQ_LEN, LSIZE, ASIZE, RSIZE, SIZE, RED_SIZE = 16, 32, 32, 3, 64, 64, 64


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 4, stride=2)
        self.conv2 = nn.Conv2d(8, 16, 4, stride=2)
        self.fc_mu = nn.Linear(16 * 14 * 14, LSIZE)
        self.fc_logsigma = nn.Linear(16 * 14 * 14, LSIZE)

    def forward(self, x):
        x = f.relu(self.conv2(f.relu(self.conv1(x)))).flatten(1)
        return self.fc_mu(x), self.fc_logsigma(x)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = nn.Linear(LSIZE, 3 * SIZE * SIZE)

    def forward(self, x):
        mu, logsigma = self.encoder(x)
        z = mu + logsigma.exp() * torch.randn_like(mu)
        return self.decoder(z), mu, logsigma


class MDRNN(nn.Module):
    def __init__(self, gaussians=5):
        super().__init__()
        self.rnn = nn.LSTM(LSIZE + ASIZE, RSIZE)
        self.gmm_linear = nn.Linear(RSIZE, (2 * LSIZE + 1) * gaussians + 2)

    def forward(self, actions, latents):
        outs, _ = self.rnn(torch.cat([actions, latents], dim=-1))
        return self.gmm_linear(outs)


class RolloutSequenceDataset(Dataset):
    def __init__(self, n_sequences=43):
        self.n = n_sequences

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        obs = torch.rand(SEQ_LEN + 1, 3, SIZE, SIZE)
        action = torch.rand(SEQ_LEN, ASIZE) * 2 - 1
        return obs[:-1], action, obs[1:]


vae = VAE().eval()
mdrnn = MDRNN()
optimizer = torch.optim.RMSprop(mdrnn.parameters(), lr=1e-3, alpha=0.9)
train_loader = DataLoader(RolloutSequenceDataset(), batch_size=BSIZE, shuffle=True)


def to_latent(obs, next_obs):
    with torch.no_grad():
        obs, next_obs = [
            f.interpolate(x.view(-1, 3, SIZE, SIZE), size=RED_SIZE, mode="bilinear", align_corners=True)
            for x in (obs, next_obs)]
        (obs_mu, obs_logsigma), (next_obs_mu, next_obs_logsigma) = [vae(x)[1:] for x in (obs, next_obs)]
        latent_obs, latent_next_obs = [
            (x_mu + x_logsigma.exp() * torch.randn_like(x_mu)).view(BSIZE, SEQ_LEN, LSIZE)
            for x_mu, x_logsigma in [(obs_mu, obs_logsigma), (next_obs_mu, next_obs_logsigma)]]
    return latent_obs, latent_next_obs


def data_pass(epoch):
    mdrnn.train()
    for i, (obs, action, next_obs) in enumerate(train_loader):
        latent_obs, latent_next_obs = to_latent(obs, next_obs)
        latent_obs, action, latent_next_obs = [x.transpose(1, 0) for x in (latent_obs, action, latent_next_obs)]
        out = mdrnn(action, latent_obs)
        loss = f.mse_loss(out[..., :LSIZE], latent_next_obs)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")


for e in range(2):
    data_pass(e)
