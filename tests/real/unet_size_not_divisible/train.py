"""U-Net (5 pooling stages) for binary lesion segmentation, trained on resized images."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
IMAGE_SIZE = (540, 760)  # (height, width) the images are resized to


class ConvBlock(nn.Module):
    def __init__(self, ch_in, ch_out):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(ch_in, ch_out, 3, 1, 1), nn.BatchNorm2d(ch_out), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.conv(x)


class UpConv(nn.Module):
    def __init__(self, ch_in, ch_out):
        super().__init__()
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), ConvBlock(ch_in, ch_out))

    def forward(self, x):
        return self.up(x)


class UNet(nn.Module):
    def __init__(self, img_ch=3, output_ch=1, base=4):
        super().__init__()
        chs = [base * 2 ** i for i in range(6)]
        self.Maxpool = nn.MaxPool2d(2, 2)
        self.Conv1 = ConvBlock(img_ch, chs[0])
        self.Conv2 = ConvBlock(chs[0], chs[1])
        self.Conv3 = ConvBlock(chs[1], chs[2])
        self.Conv4 = ConvBlock(chs[2], chs[3])
        self.Conv5 = ConvBlock(chs[3], chs[4])
        self.Conv6 = ConvBlock(chs[4], chs[5])
        self.Up6, self.Up_conv6 = UpConv(chs[5], chs[4]), ConvBlock(chs[5], chs[4])
        self.Up5, self.Up_conv5 = UpConv(chs[4], chs[3]), ConvBlock(chs[4], chs[3])
        self.Up4, self.Up_conv4 = UpConv(chs[3], chs[2]), ConvBlock(chs[3], chs[2])
        self.Up3, self.Up_conv3 = UpConv(chs[2], chs[1]), ConvBlock(chs[2], chs[1])
        self.Up2, self.Up_conv2 = UpConv(chs[1], chs[0]), ConvBlock(chs[1], chs[0])
        self.Conv_1x1 = nn.Conv2d(chs[0], output_ch, 1)

    def forward(self, x):
        x1 = self.Conv1(x)
        x2 = self.Conv2(self.Maxpool(x1))
        x3 = self.Conv3(self.Maxpool(x2))
        x4 = self.Conv4(self.Maxpool(x3))
        x5 = self.Conv5(self.Maxpool(x4))
        x6 = self.Conv6(self.Maxpool(x5))

        d6 = self.Up6(x6)
        d6 = torch.cat((x5, d6), dim=1)
        d6 = self.Up_conv6(d6)
        d5 = self.Up5(d6)
        d5 = torch.cat((x4, d5), dim=1)
        d5 = self.Up_conv5(d5)
        d4 = self.Up_conv4(torch.cat((x3, self.Up4(d5)), dim=1))
        d3 = self.Up_conv3(torch.cat((x2, self.Up3(d4)), dim=1))
        d2 = self.Up_conv2(torch.cat((x1, self.Up2(d3)), dim=1))
        return self.Conv_1x1(d2)


class LesionDataset(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        image = torch.rand(3, 600, 800)
        mask = (torch.rand(1, 600, 800) > 0.5).float()
        image = F.interpolate(image[None], size=IMAGE_SIZE, mode="bilinear", align_corners=False)[0]
        mask = F.interpolate(mask[None], size=IMAGE_SIZE, mode="nearest")[0]
        return image, mask


loader = DataLoader(LesionDataset(), batch_size=1, shuffle=True)
model = UNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
criterion = nn.BCEWithLogitsLoss()
for epoch in range(1):
    for images, masks in loader:
        outputs = model(images)
        loss = criterion(outputs, masks)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
