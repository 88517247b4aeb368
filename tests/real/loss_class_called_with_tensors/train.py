"""An MNIST classifier organised like a LightningModule (training_step / configure_optimizers)."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class CoolSystem(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(28 * 28, 10)

    def forward(self, x):
        return torch.relu(self.l1(x.view(x.size(0), -1)))

    def training_step(self, batch, batch_nb):
        x, y = batch
        y_hat = self.forward(x)
        loss = nn.CrossEntropyLoss(y_hat, y)
        return {"loss": loss}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.02)

    def train_dataloader(self):
        data = TensorDataset(torch.rand(256, 1, 28, 28), torch.randint(0, 10, (256,)))
        return DataLoader(data, batch_size=32)


def fit(model, max_epochs=1):
    optimizer = model.configure_optimizers()
    for epoch in range(max_epochs):
        for batch_nb, batch in enumerate(model.train_dataloader()):
            loss = model.training_step(batch, batch_nb)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")


fit(CoolSystem())
