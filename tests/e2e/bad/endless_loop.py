import torch


def entry():
    n = 0
    while True:
        n += 1
