import torch

def entry(:
    pass
