"""Flax msgpack checkpoints written by the real libraries (flax 0.12.8, jax 0.10.2, optax 0.2.8, transformers 4.57.6).

    python sample_models/flax/make_flax.py      (transformers 4.x: version 5 has no Flax models)

bert_tiny/flax_model.msgpack   transformers' `FlaxBertForMaskedLM.save_pretrained` of a random tiny BERT (the layout of
                               the `flax_model.msgpack` files on the Hugging Face Hub), with its config.json
resnet_tiny/flax_model.msgpack transformers' `FlaxResNetForImageClassification.save_pretrained`: its variables, `params`
                               and BatchNorm `batch_stats`
llama_tiny/, gpt2_tiny/,       `FlaxLlamaForCausalLM`, `FlaxGPT2LMHeadModel` and `FlaxViTModel` likewise: RMSNorms
vit_tiny/flax_model.msgpack    holding a `weight`, FlaxConv1D kernels stored (out, in), a `cls_token`, each with its
                               config.json
cnn_state.msgpack              `flax.serialization.to_bytes` of a flax.linen Conv/BatchNorm/Dense/LayerNorm/Embed
                               model's TrainState (with its batch_stats) after one Adam step: step, params,
                               opt_state (optax's ScaleByAdamState: count, mu, nu), batch_stats
manifest.json                  what jax counts of each tree (the sum of leaf sizes of `params`, of `batch_stats` and of
                               `opt_state`) and every array leaf as `flax.traverse_util.flatten_dict(sep='/')` names it
                               (shape, numpy dtype name)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import transformers
from flax import serialization
from flax.training import train_state
from flax.traverse_util import flatten_dict

HERE = Path(__file__).resolve().parent


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x: Any, tokens: Any, train: bool = False) -> Any:
        x = nn.Conv(4, (3, 3))(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        x = nn.relu(x).reshape((x.shape[0], -1))
        x = nn.Dense(8)(x)
        x = nn.LayerNorm()(x) + nn.Embed(6, 8)(tokens).sum(axis=1)
        return nn.Dense(3)(x)


class TrainState(train_state.TrainState):
    batch_stats: Any


def cnn_state() -> Any:
    model = CNN()
    x, tokens = jnp.ones((2, 5, 5, 1)), jnp.array([[1, 2], [3, 4]])
    variables = model.init(jax.random.PRNGKey(0), x, tokens)
    state = TrainState.create(
        apply_fn=model.apply, params=variables["params"], tx=optax.adam(1e-2), batch_stats=variables["batch_stats"]
    )

    def loss(params: Any) -> Any:
        out, updates = model.apply(
            {"params": params, "batch_stats": state.batch_stats}, x, tokens, train=True, mutable=["batch_stats"]
        )
        return (out**2).mean(), updates

    grads, updates = jax.grad(loss, has_aux=True)(state.params)
    return state.apply_gradients(grads=grads, batch_stats=updates["batch_stats"])


def size(tree: Any) -> int:
    return int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(tree)))


def describe(state_dict: dict[str, Any]) -> dict[str, Any]:
    """What jax counts of a saved tree, and its array leaves (flax's own restore of the file's bytes)."""
    collections = "params" in state_dict
    counts = (
        {k: size(state_dict.get(k, {})) for k in ("params", "batch_stats", "opt_state")}
        if collections
        else {"params": size(state_dict)}
    )
    leaves = {
        "/".join(path): [list(np.shape(v)), np.asarray(v).dtype.name]
        for path, v in flatten_dict(state_dict).items()
        if isinstance(v, (np.ndarray, np.generic))
    }
    return {"format": "flax-msgpack", **counts, "arrays": leaves}


def main() -> None:
    manifest: dict[str, Any] = {
        "_made_by": f"flax {flax.__version__}, jax {jax.__version__}, optax {optax.__version__}, "
        f"transformers {transformers.__version__}"
    }
    bert = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=24, max_position_embeddings=32)  # fmt: skip
    resnet = transformers.ResNetConfig(embedding_size=4, hidden_sizes=[4, 8], depths=[1, 1], num_labels=3)
    llama = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                                     num_attention_heads=2, num_key_value_heads=1)  # fmt: skip
    gpt2 = transformers.GPT2Config(vocab_size=64, n_embd=16, n_layer=2, n_head=2, n_positions=32)
    vit = transformers.ViTConfig(hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=2,
                                 image_size=16, patch_size=8)  # fmt: skip
    folders = (
        ("bert_tiny", transformers.FlaxBertForMaskedLM, bert),
        ("resnet_tiny", transformers.FlaxResNetForImageClassification, resnet),
        ("llama_tiny", transformers.FlaxLlamaForCausalLM, llama),  # RMSNorms' `weight`
        ("gpt2_tiny", transformers.FlaxGPT2LMHeadModel, gpt2),  # FlaxConv1D kernels (out, in)
        ("vit_tiny", transformers.FlaxViTModel, vit),  # a cls_token (named as the torch model's: no family check)
    )
    for folder, cls, config in folders:
        cls(config, seed=0).save_pretrained(HERE / folder)
    (HERE / "cnn_state.msgpack").write_bytes(serialization.to_bytes(cnn_state()))
    for name in [f"{folder}/flax_model.msgpack" for folder, _, _ in folders] + ["cnn_state.msgpack"]:
        manifest[name] = describe(serialization.msgpack_restore((HERE / name).read_bytes()))
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
