import os
import sys

import torch

model = torch.nn.Linear(4, 2)
print("cwd", os.getcwd())
print("path0", sys.path[0])
print("argv", sys.argv)
print("out", model(torch.ones(1, 4)).shape)
