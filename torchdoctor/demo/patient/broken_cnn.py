"""A small image classifier that crashes on its first batch: torchdoctor's demo patient.

The network was written for 28 x 28 digits, where the conv stack ends in a
64 x 12 x 12 map (9216 features). The data here is 3 x 64 x 64, so the same
stack ends in 64 x 30 x 30 = 57600 features and the Linear head refuses
them: ``mat1 and mat2 shapes cannot be multiplied (16x57600 and 9216x128)``.

Run it as a script to see the crash, or hand ``broken_cnn.py:harness`` to
torchdoctor for reruns, bisection and the training checkup.
"""

import torch
import torch.nn.functional as F
from torch import nn

NUM_CLASSES = 10


class SmallCNN(nn.Module):
    def __init__(self, num_classes: int = NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3), nn.ReLU(),
            nn.Conv2d(32, 64, 3), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(),
        )
        self.fc1 = nn.Linear(9216, 128)  # sized for 28 x 28 inputs
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def make_batch(batch_size: int = 16):
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(batch_size, 3, 64, 64, generator=generator)  # the new data is 64 x 64
    labels = torch.randint(0, NUM_CLASSES, (batch_size,), generator=generator)
    return images, labels


def train_step(model, batch, loss_fn, optimizer):
    images, labels = batch
    optimizer.zero_grad()
    loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()
    return loss


def harness():
    torch.manual_seed(0)
    model = SmallCNN()
    return {
        "model": model,
        "batch": make_batch(),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3),
        "train_step": train_step,
        "num_classes": NUM_CLASSES,
    }


def main():
    parts = harness()
    for step in range(3):
        loss = train_step(parts["model"], parts["batch"], parts["loss_fn"], parts["optimizer"])
        print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
