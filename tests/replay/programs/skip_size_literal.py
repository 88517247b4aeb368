"""The same skip connection, with the odd size written into the resize call itself."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.MaxPool2d(2), nn.Upsample(scale_factor=2))
photo = torch.rand(1, 3, 40, 50)
image = F.interpolate(photo, size=(15, 20), mode="nearest")  # FIX: an odd height
merged = torch.cat((image, model(image)), dim=1)  # RAISES
