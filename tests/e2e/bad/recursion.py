import torch


def entry():
    return entry()
