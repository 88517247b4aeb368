"""Fine-tuning: weights saved from a 1000-class model loaded into a 7-class one."""

from torch import nn


def make_net(classes):
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(8, classes))


pretrained = make_net(1000)
checkpoint = pretrained.state_dict()
model = make_net(7)  # FIX
model.load_state_dict(checkpoint)  # RAISES
