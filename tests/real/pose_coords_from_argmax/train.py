"""Dense 3D-coordinate regression for 6D pose (CDPN-style): per-axis bin classification heads."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
COOR_BIN = 64


class RotHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.ReLU())
        self.head = nn.Conv2d(64, 3 * (COOR_BIN + 1) + 1, 1)

    def forward(self, x):
        out = self.head(self.backbone(x))
        coor_x = out[:, :COOR_BIN + 1]
        coor_y = out[:, COOR_BIN + 1:2 * (COOR_BIN + 1)]
        coor_z = out[:, 2 * (COOR_BIN + 1):3 * (COOR_BIN + 1)]
        conf = out[:, -1:]
        return coor_x, coor_y, coor_z, conf


model = RotHead()
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-4)

for it in range(3):
    inp = torch.randn(1, 3, 256, 256)
    target_coor = torch.rand(64, 64, 3) * 2 - 1

    output_coor_x_, output_coor_y_, output_coor_z_, output_conf_ = model(inp)
    output_coor_x_ = output_coor_x_.squeeze()
    output_coor_y_ = output_coor_y_.squeeze()
    output_coor_z_ = output_coor_z_.squeeze()

    output_coor_ = torch.stack([torch.argmax(output_coor_x_, axis=0),
                                torch.argmax(output_coor_y_, axis=0),
                                torch.argmax(output_coor_z_, axis=0)], axis=2)
    output_coor_[output_coor_ == COOR_BIN] = 0
    output_coor_ = 2.0 * output_coor_.float() / (63.0 - 1.0) - 1.0

    loss = F.l1_loss(output_coor_, target_coor)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4f}")
