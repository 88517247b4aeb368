"""Fine-tune an ImageNet-pretrained SE-ResNet on a 50-class dataset."""

import os
import tempfile

import torch
from torch import nn

torch.manual_seed(0)
CACHE = os.path.join(tempfile.gettempdir(), "seresnet_imagenet_weights.pkl")


class SELayer(nn.Module):
    def __init__(self, channel, reduction=16):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Linear(channel, channel // reduction, bias=False), nn.ReLU(inplace=True),
            nn.Linear(channel // reduction, channel, bias=False), nn.Sigmoid())

    def forward(self, x):
        b, c, _, _ = x.size()
        return x * self.fc(self.avg_pool(x).view(b, c)).view(b, c, 1, 1)


class SEBottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(inplanes, planes, 1, bias=False), nn.BatchNorm2d(planes), nn.ReLU(True),
            nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes), nn.ReLU(True),
            nn.Conv2d(planes, planes * 4, 1, bias=False), nn.BatchNorm2d(planes * 4))
        self.se = SELayer(planes * 4)
        self.downsample = nn.Sequential(
            nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False), nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        return torch.relu(self.se(self.body(x)) + self.downsample(x))


class ResNet(nn.Module):
    def __init__(self, num_classes=1000, width=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU(True), nn.MaxPool2d(3, 2, 1))
        layers, inplanes = [], width
        for i, planes in enumerate([width, width * 2, width * 4, width * 8]):
            layers.append(SEBottleneck(inplanes, planes, stride=1 if i == 0 else 2))
            inplanes = planes * 4
        self.layers = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(inplanes, num_classes)

    def forward(self, x):
        return self.fc(self.avgpool(self.layers(self.stem(x))).flatten(1))


def load_state_dict_from_url(url):
    """Stands in for the download: the released ImageNet checkpoint (1000 classes)."""
    if not os.path.exists(CACHE):
        torch.save(ResNet(num_classes=1000).state_dict(), CACHE)
    return torch.load(CACHE)


def se_resnet50(num_classes=1_000, pretrained=False):
    model = ResNet(num_classes=num_classes)
    if pretrained:
        model.load_state_dict(load_state_dict_from_url(
            "https://github.com/moskomule/senet.pytorch/releases/download/archive/seresnet50.pkl"))
    return model


net = se_resnet50(num_classes=50, pretrained=True)
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
images, labels = torch.randn(8, 3, 64, 64), torch.randint(0, 50, (8,))
loss = nn.functional.cross_entropy(net(images), labels)
loss.backward()
optimizer.step()
print(f"loss {loss.item():.3f}")
