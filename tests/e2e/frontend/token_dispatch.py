# A token dispatch (tests/fixtures/moe_token_unpermute) whose ranks take the
# sizes they send as the sizes they receive: rank 0 sends 3 rows to rank 1,
# which expects 2. Real PyTorch would hang or fail; shardproof must name the
# all-to-all and both ranks.
import importlib.util
import os

import torch
import torch.distributed as dist

_spec = importlib.util.spec_from_file_location(
    "moe_token_unpermute", os.path.normpath(os.path.join(
        os.path.dirname(__file__), "..", "..", "fixtures", "moe_token_unpermute",
        "correct.py")))
dispatch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dispatch)


class AssumesSymmetricTraffic(dispatch.MoELayer):
    def forward(self, hidden_states, routing_map):
        ep_size = dist.get_world_size()
        sorted_indices = torch.argsort(routing_map, stable=True)
        tokens_per_rank = torch.stack([(routing_map == r).sum() for r in range(ep_size)])
        input_splits = tokens_per_rank.tolist()
        output_splits = input_splits  # the bug: what arrives is what others send
        dispatched = dispatch._AllToAll.apply(hidden_states[sorted_indices], output_splits,
                                              input_splits)
        return self.expert(dispatched)


# At world 2 rank 0 routes [1, 3] tokens to ranks [0, 1], rank 1 [2, 2].
ROUTING = [0, 1, 1, 1, 0, 1, 1, 0]


def entry():
    hidden_states = torch.randn(len(ROUTING), 4)
    world, rank = dist.get_world_size(), dist.get_rank()
    routing_map = torch.tensor(ROUTING) % world
    mine = slice(len(ROUTING) // world * rank, len(ROUTING) // world * (rank + 1))
    return AssumesSymmetricTraffic(4), (hidden_states[mine], routing_map[mine])
