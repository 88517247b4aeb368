"""ESRGAN-style x4 super-resolution training on LR/HR image pairs read from disk."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
rng = np.random.default_rng(0)

# What cv2.imread(path, cv2.IMREAD_UNCHANGED) returns for this dataset: grayscale PNGs, (H, W).
LR_FILES = [rng.integers(0, 256, (32, 32), dtype=np.uint8) for _ in range(64)]
HR_FILES = [rng.integers(0, 256, (128, 128, 3), dtype=np.uint8) for _ in range(64)]


def read_img(stored):
    img = stored.astype(np.float32) / 255.0
    if img.ndim == 2:
        img = np.expand_dims(img, axis=2)
    return img


class LRHRDataset(Dataset):
    def __len__(self):
        return len(LR_FILES)

    def __getitem__(self, index):
        img_HR = read_img(HR_FILES[index])
        img_LR = read_img(LR_FILES[index])
        img_HR = torch.from_numpy(np.ascontiguousarray(np.transpose(img_HR, (2, 0, 1))))
        img_LR = torch.from_numpy(np.ascontiguousarray(np.transpose(img_LR, (2, 0, 1))))
        return {"LR": img_LR, "HR": img_HR}


class ResidualDenseBlock(nn.Module):
    def __init__(self, nf=16, gc=8):
        super().__init__()
        self.conv1 = nn.Conv2d(nf, gc, 3, 1, 1)
        self.conv2 = nn.Conv2d(nf + gc, nf, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(0.2, inplace=True)

    def forward(self, x):
        x1 = self.lrelu(self.conv1(x))
        return x + 0.2 * self.conv2(torch.cat((x, x1), 1))


class RRDBNet(nn.Module):
    def __init__(self, in_nc=3, out_nc=3, nf=16):
        super().__init__()
        self.conv_first = nn.Conv2d(in_nc, nf, 3, 1, 1)
        self.body = nn.Sequential(ResidualDenseBlock(nf), ResidualDenseBlock(nf))
        self.upconv1 = nn.Conv2d(nf, nf, 3, 1, 1)
        self.upconv2 = nn.Conv2d(nf, nf, 3, 1, 1)
        self.conv_last = nn.Conv2d(nf, out_nc, 3, 1, 1)

    def forward(self, x):
        fea = self.conv_first(x)
        fea = fea + self.body(fea)
        fea = F.leaky_relu(self.upconv1(F.interpolate(fea, scale_factor=2, mode="nearest")), 0.2)
        fea = F.leaky_relu(self.upconv2(F.interpolate(fea, scale_factor=2, mode="nearest")), 0.2)
        return self.conv_last(fea)


class SRModel:
    def __init__(self):
        self.netG = RRDBNet()
        self.cri_pix = nn.L1Loss()
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=1e-4)

    def feed_data(self, data):
        self.var_L = data["LR"]
        self.var_H = data["HR"]

    def optimize_parameters(self, step):
        self.optimizer_G.zero_grad()
        self.fake_H = self.netG(self.var_L)
        l_g_pix = self.cri_pix(self.fake_H, self.var_H)
        l_g_pix.backward()
        self.optimizer_G.step()
        return l_g_pix.item()


train_loader = DataLoader(LRHRDataset(), batch_size=16, shuffle=True)
model = SRModel()
current_step = 0
for epoch in range(2):
    for train_data in train_loader:
        current_step += 1
        model.feed_data(train_data)
        loss = model.optimize_parameters(current_step)
    print(f"epoch {epoch}: l_g_pix {loss:.4f}")
