import torch


def make():
    return {"model": torch.nn.Linear(4, 2), "batch": (torch.ones(2, 4), torch.zeros(2))}


def model_not_called():
    return {"model": torch.nn.Linear, "batch": (torch.ones(2, 4), torch.zeros(2)),
            "loss_fn": torch.nn.MSELoss()}


def not_a_dict():
    return [torch.nn.Linear(4, 2)]
