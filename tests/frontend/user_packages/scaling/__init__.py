# A package of the user's environment (not shardproof's, not the system's):
# the harness imports it only when --python-path names this folder.
FACTOR = 5
