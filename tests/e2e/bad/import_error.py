import torch
import not_a_real_module_xyz


def entry():
    pass
