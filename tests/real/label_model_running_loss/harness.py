"""A naive-Bayes label model for weak supervision: learns labelling-function accuracies from votes."""

import torch
from torch import nn

NUM_CLASSES, NUM_LFS = 3, 20


class NaiveBayes(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES, num_lfs=NUM_LFS, init_acc=0.7):
        super().__init__()
        self.class_balance = nn.Parameter(torch.zeros(num_classes))
        logit = torch.log(torch.tensor(init_acc / (1 - init_acc)))
        self.accuracy = nn.Parameter(torch.full((num_lfs, num_classes), float(logit)))
        self.propensity = nn.Parameter(torch.zeros(num_lfs))

    def forward(self, votes):
        """Log marginal likelihood of each example's votes (0 = abstain, 1..k = a class)."""
        log_acc = torch.nn.functional.logsigmoid(self.accuracy)
        log_err = torch.nn.functional.logsigmoid(-self.accuracy) - torch.log(torch.tensor(NUM_CLASSES - 1.0))
        voted = (votes > 0).float()
        per_class = []
        for c in range(NUM_CLASSES):
            agree = (votes == c + 1).float()
            per_class.append((agree * log_acc[:, c] + (voted - agree) * log_err[:, c]).sum(1))
        log_prop = voted * torch.nn.functional.logsigmoid(self.propensity)
        log_prop = log_prop + (1 - voted) * torch.nn.functional.logsigmoid(-self.propensity)
        joint = torch.stack(per_class, 1) + log_prop.sum(1, keepdim=True)
        joint = joint + torch.log_softmax(self.class_balance, 0)
        return torch.logsumexp(joint, 1)


def negative_log_likelihood(log_likelihood, _unused_targets):
    return -log_likelihood.mean()


def make():
    torch.manual_seed(0)
    model = NaiveBayes()
    votes = torch.randint(0, NUM_CLASSES + 1, (256, NUM_LFS))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    running_loss = 0.0

    def train_step(model, batch, loss_fn, optimizer):
        nonlocal running_loss
        votes, targets = batch
        optimizer.zero_grad()
        loss = loss_fn(model(votes), targets)
        loss.backward()
        optimizer.step()
        running_loss += loss
        return loss

    return {
        "model": model,
        "batch": (votes, torch.zeros(256)),
        "loss_fn": negative_log_likelihood,
        "optimizer": optimizer,
        "train_step": train_step,
    }
