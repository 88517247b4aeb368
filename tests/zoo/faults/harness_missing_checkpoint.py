import torch


def build_model():
    model = torch.nn.Linear(4, 2)
    model.load_state_dict(torch.load("checkpoints/no_such_epoch.pt"))
    return model


def make():
    return {"model": build_model(), "batch": (torch.ones(2, 4), torch.zeros(2, 2)),
            "loss_fn": torch.nn.MSELoss()}
