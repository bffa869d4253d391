"""Write Flax msgpack files with flax itself, and what flax and jax say of them (run in its own process: jax, once
imported, warns at every `os.fork`, which the suite's forking tests take as an error).

python tests/loaders/flax_writer.py OUT_FOLDER

vars.msgpack      `to_bytes` of a flax.linen Conv/BatchNorm/Dense/LayerNorm model's variables (params, batch_stats)
state.msgpack     `to_bytes` of its TrainState with optax's AdamW state (step, params, opt_state)
chunked.msgpack   `msgpack_serialize` of a tree whose 400-byte table flax splits into pieces (its MAX_CHUNK_SIZE made
                  64 bytes), bfloat16 and int8 arrays, a numpy scalar and Python scalars
NAME.npz          flax's `msgpack_restore` of each file, its array leaves flattened with '/' (chunked arrays whole)
facts.json        per file, what jax counts: the sum of leaf sizes of each collection
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization
from flax.training import train_state
from flax.traverse_util import flatten_dict


class Net(nn.Module):
    @nn.compact
    def __call__(self, x: Any) -> Any:
        x = nn.Conv(4, (3, 3))(x)
        x = nn.BatchNorm(use_running_average=True)(x)
        x = nn.Dense(5)(x.reshape((x.shape[0], -1)))
        return nn.LayerNorm()(x)


def size(tree: Any) -> int:
    return int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(tree)))


def main(out: Path) -> None:
    model = Net()
    variables = model.init(jax.random.PRNGKey(0), jnp.ones((1, 4, 4, 2)))
    state = train_state.TrainState.create(apply_fn=model.apply, params=variables["params"], tx=optax.adamw(1e-3))
    table = np.arange(100, dtype=np.float32).reshape(25, 4)
    tree = {"params": {"emb": {"embedding": table}, "q": {"kernel": jnp.ones((3, 2), jnp.bfloat16)},
                       "i": {"bias": np.arange(5, dtype=np.int8)}},
            "step": np.int64(7), "z": 1 + 2j, "name": "run", "none": None, "seq": [1, 2.5]}  # fmt: skip
    files = {"vars": serialization.to_bytes(variables), "state": serialization.to_bytes(state)}
    serialization.MAX_CHUNK_SIZE = 64  # (read by flax's `_chunk` when it splits an array)
    files["chunked"] = serialization.msgpack_serialize(tree)
    facts = {
        "vars": {"params": size(variables["params"]), "batch_stats": size(variables["batch_stats"])},
        "state": {"params": size(state.params), "opt_state": size(state.opt_state)},
        "chunked": {"params": size(tree["params"])},
    }
    for name, data in files.items():
        (out / f"{name}.msgpack").write_bytes(data)
        leaves = flatten_dict(serialization.msgpack_restore(data))
        arrays = {"/".join(k): np.asarray(v) for k, v in leaves.items() if isinstance(v, (np.ndarray, np.generic))}
        # (bfloat16 as its raw 16 bits: npz keeps numpy's own dtypes only)
        np.savez(out / f"{name}.npz", **{k: v.view(np.uint16) if v.dtype.name == "bfloat16" else v
                                          for k, v in arrays.items()})  # fmt: skip
        facts[name]["dtypes"] = {k: v.dtype.name for k, v in arrays.items()}
    (out / "facts.json").write_text(json.dumps(facts))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
