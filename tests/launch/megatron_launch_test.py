#!/usr/bin/env python3
"""Reading and planning a Megatron-LM launch (integrations/megatron/
launch_file.py and launch.py's plan), on launches written here: a
functional-test model_config.yaml, a launch script with bash arrays and a
torchrun line, an arguments file; the world each gives, the reduction
(two entries per rank of every sharded dimension), the fallbacks and what
stops it, and errors that name the file and line."""
import os
import sys
import tempfile
import textwrap
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "frontend", "python", "runtime"))
sys.path.insert(0, os.path.join(ROOT, "integrations", "megatron"))
# plan() needs no torch: a module with the one name launch.py's classes use
sys.modules.setdefault("torch", types.SimpleNamespace(nn=types.SimpleNamespace(Module=object)))
import launch  # noqa: E402
import launch_file  # noqa: E402
from shardproof_recipes import LaunchError  # noqa: E402

MODEL_CONFIG = """\
ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
  NCCL_ALGO: Ring
MODEL_ARGS:
  --num-layers: 12
  --hidden-size: 512
  --num-attention-heads: 8
  --micro-batch-size: 4
  --global-batch-size: 32
  --seq-length: 1024
  --max-position-embeddings: 1024
  --lr: 0.00015
  --clip-grad: 1.0
  --transformer-impl: transformer_engine
  --tensor-model-parallel-size: 2
  --pipeline-model-parallel-size: 2
  --sequence-parallel: true
  --use-distributed-optimizer: true
  --bf16: true
  --log-num-zeros-in-grad: false
  --data-path: ${DATA_PATH}/my-gpt3_00_text_document
  --save: ${CHECKPOINT_SAVE_PATH}
TEST_TYPE: regular
"""

LAUNCH_SCRIPT = """\
#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=4
NUM_NODES=2
DATA_PATH=$1
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
)
GPT_MODEL_ARGS=(
    --num-layers 24 # a comment
    --hidden-size 1024
    --num-attention-heads 16
    --seq-length 2048
)
PARALLEL_ARGS=(
    --tensor-model-parallel-size 4
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \\
    ${GPT_MODEL_ARGS[@]} \\
    ${PARALLEL_ARGS[@]} \\
    --micro-batch-size 1 --global-batch-size 64 \\
    --data-path $DATA_PATH
"""

ARGUMENTS = """\
# GPT with experts
--num-layers 4 --hidden-size 64 --num-attention-heads 4
--num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 2
--seq-length 128 --micro-batch-size 1 --global-batch-size 16
--fp8-format hybrid
"""


class LaunchTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.folder.cleanup()

    def write(self, name, text):
        path = os.path.join(self.folder.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_model_config_as_the_functional_tests_run_it(self):
        read = launch_file.read(self.write("model_config.yaml", MODEL_CONFIG))
        self.assertIn("--sequence-parallel", read.args)  # true: the bare flag
        self.assertNotIn("--log-num-zeros-in-grad", read.args)  # false: left off
        self.assertEqual(read.environment["NCCL_ALGO"], "Ring")
        self.assertEqual(read.line("--bf16"), 19)

    def test_model_config_plan(self):
        planned = launch.plan(self.write("model_config.yaml", MODEL_CONFIG), 0, "")
        # tp x pp x 2 data-parallel replicas
        self.assertEqual(planned["world"], 8)
        self.assertEqual(planned["layout"], "tp=2,cp=1,dp=2,pp=2,sp=1")
        summary = planned["summary"]
        self.assertIn("num-layers 12->4", summary)  # two per pipeline stage
        self.assertIn("num-attention-heads 8->4", summary)  # two per tensor-parallel rank
        self.assertIn("seq-length 1024->4", summary)  # two per rank under sp
        self.assertIn("transformer_engine -> local", summary)
        self.assertEqual(planned["environment"]["CUDA_DEVICE_MAX_CONNECTIONS"], "1")

    def test_reduced_arguments(self):
        read = launch_file.read(self.write("model_config.yaml", MODEL_CONFIG))
        layout = launch.layout_of(launch.Arguments(read.args))
        args = launch.Arguments(launch.reduce(read, layout, 2).words)
        self.assertEqual(args.value("--hidden-size"), "8")
        self.assertEqual(args.value("--ffn-hidden-size"), "4")
        self.assertEqual(args.value("--vocab-size"), "4")
        # micro-batches at least the pipeline stages, the same global batch
        # at world 1 (the reference) as on the ranks
        self.assertEqual(args.value("--global-batch-size"), str(2 * 2 * 2))
        self.assertEqual(args.value("--lr"), "0.00015")
        self.assertTrue(args.has("--use-distributed-optimizer"))
        self.assertFalse(args.has("--data-path"))
        self.assertFalse(args.has("--tensor-model-parallel-size"))  # set per run

    def test_launch_script_world_from_torchrun(self):
        path = self.write("train.sh", LAUNCH_SCRIPT)
        read = launch_file.read(path)
        self.assertEqual(read.script, "pretrain_gpt.py")
        self.assertEqual(read.world, 8)
        self.assertEqual(read.environment, {"CUDA_DEVICE_MAX_CONNECTIONS": "1"})
        self.assertEqual(launch.Arguments(read.args).value("--num-layers"), "24")
        planned = launch.plan(path, 0, "")
        self.assertEqual(planned["layout"], "tp=4,cp=1,dp=2,pp=1,sp=0")
        self.assertEqual(launch.plan(path, 12, "")["world"], 12)  # --world wins

    def test_arguments_file_and_what_stops_it(self):
        path = self.write("gpt_moe.args", ARGUMENTS)
        planned = launch.plan(path, 0, "")
        self.assertEqual(planned["world"], 2)  # ep 2 within 2 data-parallel ranks
        self.assertIn("moe_ep=2", planned["layout"])
        self.assertIn("num-experts 8->4", planned["summary"])
        self.assertIn("not modelled: --fp8-format", planned["summary"])

    def test_virtual_stages_fold_to_two_and_mla_widths_reduce(self):
        path = self.write("vpp.args", "--pipeline-model-parallel-size 4\n"
                          "--num-layers 32 --num-layers-per-virtual-pipeline-stage 1\n"
                          "--multi-latent-attention --kv-lora-rank 512 --v-head-dim 128\n"
                          "--micro-batch-size 1 --global-batch-size 64\n")
        planned = launch.plan(path, 0, "")
        self.assertIn("vpp=2", planned["layout"])
        self.assertIn("virtual pipeline stages 8->2", planned["summary"])
        self.assertIn("num-layers 32->16", planned["summary"])  # 2 per virtual stage
        read = launch_file.read(path)
        args = launch.Arguments(launch.reduce(read, launch.layout_of(
            launch.Arguments(read.args)), 2).words)
        self.assertEqual(args.value("--kv-lora-rank"), "2")
        self.assertEqual(args.value("--v-head-dim"), "2")
        self.assertEqual(args.value("--num-virtual-stages-per-pipeline-rank"), "2")
        # micro-batches a multiple of the stages under interleaving
        self.assertEqual(int(args.value("--global-batch-size")) % (4 * 2), 0)

    def test_errors_name_file_and_line(self):
        bad = self.write("model_config.yaml", "MODEL_ARGS:\n  --num-layers: [1\n")
        with self.assertRaises(LaunchError) as raised:
            launch_file.read(bad)
        self.assertEqual(raised.exception.file, bad)
        self.assertGreater(raised.exception.line, 0)
        uneven = self.write("uneven.args", "--tensor-model-parallel-size 4\n--num-layers 2\n")
        with self.assertRaises(LaunchError) as raised:
            launch.plan(uneven, 6, "")
        self.assertEqual(raised.exception.line, 1)
        self.assertIn("not a multiple", str(raised.exception))
        no_run = self.write("empty.sh", "#!/bin/bash\necho hello\n")
        with self.assertRaises(LaunchError):
            launch_file.read(no_run)



class OwnedGradients(unittest.TestCase):
    """_mark_owned_gradients reads each parameter's owned elements from the
    distributed optimizer's own gbuf_ranges (chained optimizers included):
    a parameter split across two buckets owns both parts, one the rank's
    shard does not reach owns none, one without main_grad is left alone."""

    def test_ranges_come_from_the_optimizers_own_maps(self):
        class Param:
            def __init__(self, grad=True):
                self.main_grad = object() if grad else None

        class Chunk:
            def __init__(self, params):
                self._params = params

            def parameters(self):
                return list(self._params)

        split, whole, unreached, frozen = Param(), Param(), Param(), Param(grad=False)
        span = lambda a, b: {"param": types.SimpleNamespace(start=a, end=b)}  # noqa: E731
        dense = types.SimpleNamespace(gbuf_ranges=[{("fp32", "fp32"): [
            {"param_map": {split: span(0, 3)}},
            {"param_map": {split: span(5, 8), whole: span(0, 4)}}]}])
        expert = types.SimpleNamespace(gbuf_ranges=[])
        chained = types.SimpleNamespace(chained_optimizers=[dense, expert])
        launch._mark_owned_gradients(chained, [Chunk([split, whole, unreached, frozen])])
        self.assertEqual(split.shardproof_grad_ranges, [(0, 3), (5, 8)])
        self.assertEqual(whole.shardproof_grad_ranges, [(0, 4)])
        self.assertEqual(unreached.shardproof_grad_ranges, [])
        self.assertFalse(hasattr(frozen, "shardproof_grad_ranges"))

if __name__ == "__main__":
    unittest.main()
