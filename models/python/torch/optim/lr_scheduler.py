"""torch.optim.lr_scheduler: learning-rate schedules change no gradient; the
base classes keep PyTorch's bookkeeping so that framework subclasses build."""


class LRScheduler:
    def __init__(self, optimizer, last_epoch=-1, verbose=False):
        self.optimizer = optimizer
        self.last_epoch = last_epoch
        self.base_lrs = [g.get("initial_lr", g.get("lr")) for g in optimizer.param_groups]

    def get_last_lr(self):
        return [g.get("lr") for g in self.optimizer.param_groups]

    def step(self, epoch=None):
        self.last_epoch += 1

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler


class LambdaLR(LRScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose=False):
        self.lr_lambdas = lr_lambda
        super().__init__(optimizer, last_epoch, verbose)
