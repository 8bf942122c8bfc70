"""torch.version: the simulated build is a CUDA build."""
__version__ = "2.4.0+shardproof"
cuda = "12.4"
hip = None
git_version = "shardproof"
debug = False
