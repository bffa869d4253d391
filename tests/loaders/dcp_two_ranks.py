"""Save a distributed checkpoint from two CPU ranks (gloo on 127.0.0.1): a DTensor sharded on dim 0, one replicated.

python tests/loaders/dcp_two_ranks.py OUT_FOLDER
"""

from __future__ import annotations

import os
import socket
import sys
import warnings

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor


def _rank(rank: int, port: int, out: str) -> None:
    warnings.simplefilter("ignore")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    mesh = init_device_mesh("cpu", (2,))
    torch.manual_seed(0)
    w = distribute_tensor(torch.arange(40, dtype=torch.float32).reshape(10, 4), mesh, [Shard(0)])
    b = distribute_tensor(torch.ones(4, dtype=torch.bfloat16), mesh, [Replicate()])
    dcp.save({"w": w, "b": b}, checkpoint_id=out)
    dist.destroy_process_group()


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    mp.spawn(_rank, args=(port, sys.argv[1]), nprocs=2, join=True)


if __name__ == "__main__":
    main()
