"""One job on several processes and machines through torch.distributed (docs/scale-out.md).

`rank_place` reads who this process is from the launcher's environment, `shard` decides (purely)
which rank decodes which sessions and which part of a batch, `group` wraps the collectives and
turns a lost rank into `rank_failed`, `agreement` keeps stop, pause and budget the same on every
rank, and `launch` starts N local ranks through PyTorch's elastic launcher.
"""
