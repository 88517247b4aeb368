"""Neural style transfer: content and style features from a VGG network, Gram-matrix style loss."""

import torch
import torch.optim as optim
from torch import nn

torch.manual_seed(0)


class VGG(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = [(3, 16), (16, 32), (32, 64), (64, 512)]
        layers = []
        for c_in, c_out in cfg:
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU(inplace=False), nn.MaxPool2d(2)]
        layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 64), nn.ReLU(True), nn.Dropout(), nn.Linear(64, 1000))

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def vgg19(pretrained=True):
    return VGG()  # stands in for torchvision's pretrained VGG19


vgg = vgg19(pretrained=True)
for param in vgg.parameters():
    param.requires_grad_(False)


def get_features(image, model, layers=None):
    if layers is None:
        layers = {"0": "conv1_1", "3": "conv2_1", "6": "conv3_1", "9": "conv4_1"}
    features = {}
    x = image
    for name, layer in model._modules.items():
        x = layer(x)
        if name in layers:
            features[layers[name]] = x
    return features


def gram_matrix(tensor):
    _, d, h, w = tensor.size()
    tensor = tensor.view(d, h * w)
    return torch.mm(tensor, tensor.t())


content = torch.rand(1, 3, 400, 444)
style = torch.rand(1, 3, 400, 444)
content_features = get_features(content, vgg)
style_features = get_features(style, vgg)
style_grams = {layer: gram_matrix(style_features[layer]) for layer in style_features}

target = content.clone().requires_grad_(True)
optimizer = optim.Adam([target], lr=0.003)
for ii in range(1, 4):
    target_features = get_features(target, vgg)
    content_loss = torch.mean((target_features["conv4_1"] - content_features["conv4_1"]) ** 2)
    style_loss = sum(torch.mean((gram_matrix(target_features[k]) - style_grams[k]) ** 2)
                     for k in style_grams)
    total_loss = content_loss + 1e6 * style_loss
    optimizer.zero_grad()
    total_loss.backward()
    optimizer.step()
print(total_loss.item())
