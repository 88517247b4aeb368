"""Federated learning on MNIST-like data: local updates per user, server-side weighted evaluation."""

import copy

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, 2)
        self.fc = nn.Linear(8 * 13 * 13, 10)

    def forward(self, x):
        return F.log_softmax(self.fc(F.relu(self.conv(x)).flatten(1)), dim=1)


class User:
    def __init__(self, uid, model, n_train=32, n_test=16):
        self.id = uid
        self.model = copy.deepcopy(model)
        self.train_data = (torch.randn(n_train, 1, 28, 28), torch.randint(0, 10, (n_train,)))
        self.test_data = (torch.randn(n_test, 1, 28, 28), torch.randint(0, 10, (n_test,)))
        self.loss = nn.NLLLoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)

    def set_parameters(self, model):
        self.model.load_state_dict(model.state_dict())

    def train(self, local_epochs=2):
        self.model.train()
        x, y = self.train_data
        for _ in range(local_epochs):
            self.optimizer.zero_grad()
            loss = self.loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()

    def test(self):
        self.model.eval()
        test_acc, loss = 0, 0
        x, y = self.test_data
        output = self.model(x)
        test_acc += (torch.sum(torch.argmax(output, dim=1) == y)).item()
        loss += self.loss(output, y)
        return test_acc, loss, y.shape[0]


class Server:
    def __init__(self, num_users=4):
        self.model = Net()
        self.users = [User(i, self.model) for i in range(num_users)]

    def aggregate(self):
        states = [u.model.state_dict() for u in self.users]
        avg = {k: torch.stack([s[k].float() for s in states]).mean(0) for k in states[0]}
        self.model.load_state_dict(avg)

    def test(self):
        num_samples, tot_correct, losses = [], [], []
        for c in self.users:
            ct, c_loss, ns = c.test()
            tot_correct.append(ct)
            num_samples.append(ns)
            losses.append(c_loss)
        return num_samples, tot_correct, losses

    def evaluate(self):
        test_samples, test_accs, test_losses = self.test()
        glob_acc = np.sum(test_accs) * 1.0 / np.sum(test_samples)
        glob_loss = np.sum([x * y for (x, y) in zip(test_samples, test_losses)]).item() / np.sum(test_samples)
        print(f"Average Global Accuracy = {glob_acc:.4f}, Loss = {glob_loss:.2f}.")


server = Server()
for glob_iter in range(3):
    for user in server.users:
        user.set_parameters(server.model)
    server.evaluate()
    for user in server.users:
        user.train()
    server.aggregate()
