import torch


def scale(x, factor):
    return x * factor


def entry():
    return torch.nn.Identity(), (scale(torch.randn(2), factr=2.0),)


class Linear(torch.nn.Module):  # its forward shares torch.nn.Linear.forward's name
    def forward(self, x):
        return x * 2


def shared_name():
    layer = Linear()
    return layer, (layer.forward(y=torch.randn(2)),)
