"""Contrastive intrinsic control (CIC) pre-training from pixels: a CNN encoder plus skill discriminator."""

import torch
import torch.nn.functional as F
from torch import nn

SKILL_DIM, REPR = 8, 32


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.convnet = nn.Sequential(
            nn.Conv2d(9, 16, 3, stride=2), nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2), nn.ReLU())
        self.repr = nn.Linear(16 * 7 * 7, REPR)

    def forward(self, obs):
        obs = obs / 255.0 - 0.5
        return self.repr(self.convnet(obs).flatten(1))


class CIC(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.state_net = nn.Sequential(nn.Linear(REPR, hidden), nn.ReLU(), nn.Linear(hidden, SKILL_DIM))
        self.pred_net = nn.Sequential(nn.Linear(2 * SKILL_DIM, hidden), nn.ReLU(), nn.Linear(hidden, SKILL_DIM))
        self.skill_net = nn.Sequential(nn.Linear(SKILL_DIM, hidden), nn.ReLU(), nn.Linear(hidden, SKILL_DIM))

    def forward(self, state, next_state, skill):
        query = self.skill_net(skill)
        key = self.pred_net(torch.cat([self.state_net(state), self.state_net(next_state)], 1))
        return F.normalize(query, dim=1) @ F.normalize(key, dim=1).t() / 0.5


class CICAgent(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.cic = CIC()

    def forward(self, obs, next_obs, skill):
        return self.cic(self.encoder(obs), self.encoder(next_obs), skill)


def compute_cpc_loss(logits, targets):
    return F.cross_entropy(logits, targets)


def train_step(agent, batch, loss_fn, optimizer):
    (obs, next_obs, skill), targets = batch
    with torch.no_grad():
        obs = agent.encoder(obs)
        next_obs = agent.encoder(next_obs)
    logits = agent.cic(obs, next_obs, skill)
    loss = loss_fn(logits, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def make():
    torch.manual_seed(0)
    agent = CICAgent()
    obs = torch.randint(0, 256, (32, 9, 32, 32)).float()
    next_obs = torch.randint(0, 256, (32, 9, 32, 32)).float()
    skill = torch.rand(32, SKILL_DIM)
    return {
        "model": agent,
        "batch": ((obs, next_obs, skill), torch.arange(32)),
        "loss_fn": compute_cpc_loss,
        "optimizer": torch.optim.Adam(agent.parameters(), lr=1e-4),
        "train_step": train_step,
    }
