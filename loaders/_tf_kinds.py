"""Which part of a TensorFlow checkpoint a variable belongs to: model weight, optimizer state or other state.

From the object graph (`_CHECKPOINTABLE_OBJECT_GRAPH`) when the checkpoint has one: each variable's
``full_name`` (``dense/kernel``, ``lstm/lstm_cell/kernel``) gives its Keras layer and meaning; variables reached
from the root only through an optimizer object, and the optimizer's slot variables, are optimizer state; those
under ``save_counter``, ``global_step`` or Keras metrics are other state. Without a graph (TF1 `Saver`), the
names decide, by the tables below.
"""

from __future__ import annotations

import re
from collections import Counter, deque

from inspector.records import TensorKind
from inspector.roles import NORM_STATISTICS
from loaders._tf_proto import GraphNode
from loaders.keras_h5 import FROZEN_VARS

# Edges into an optimizer object (tf.train.Checkpoint(optimizer=...), Keras model.optimizer, TF1 slot keys).
OPTIMIZER_EDGES = {"optimizer", "_optimizer", ".OPTIMIZER_SLOT"}
# Variables that are neither model weights nor optimizer state, by their last path segment or an enclosing one.
OTHER_EDGES = {
    "save_counter": "save counter",
    "global_step": "step counter",
    "step": "step counter",
    "keras_api": "Keras metric state",
    "metrics": "metric state",
}
# TF1 Saver names (no object graph): slot suffixes of tf.compat.v1.train optimizers, and their scalar state.
TF1_SLOT_SUFFIX = re.compile(
    r"/(?:Adam|Adam_1|Momentum|RMSProp|RMSProp_1|Adagrad|AdagradDA|Adadelta|Adadelta_1|"
    r"Ftrl|Ftrl_1|ProximalAdagrad|accumulator|gradient_accumulator)$"
)
TF1_OPTIMIZER_NAMES = re.compile(r"^(?:.*/)?(?:beta1_power|beta2_power)$")
TF1_OTHER_NAMES = re.compile(r"^(?:.*/)?(?:global_step|ExponentialMovingAverage.*|.*/ExponentialMovingAverage)$")
# Children only Keras objects track: tf_keras (layer_with_weights-0, keras_api), Keras 3 (_functional, _operations)
KERAS_EDGE = re.compile(r"^(?:layer_with_weights-\d+|layer-\d+|keras_api|_functional|_operations|_layers)$")
CELL_SUFFIX = "_cell"  # RNN layers hold their weights in a cell: 'lstm/lstm_cell/kernel' is layer 'lstm'
NON_TRAINABLE = frozenset(NORM_STATISTICS["keras"])  # Keras BatchNormalization statistics: parameters, not trained
AUTO_SUFFIX = re.compile(r"_\d+$")  # Keras's auto names: the class in snake case, numbered from the second


def trained(layer: str | None, param: str | None) -> bool:
    """Whether Keras trains a model variable: not the BatchNormalization statistics, nor the variables a layer
    creates untrainable (`FROZEN_VARS`: a Normalization layer's adapted mean, variance and count). A checkpoint
    names no layer classes: the layer's auto name (`normalization`, `normalization_1`) says which it is."""
    if param in NON_TRAINABLE:
        return False
    return param not in FROZEN_VARS.get(AUTO_SUFFIX.sub("", layer or ""), ())


def _keras_layer(full_name: str, whole: bool = False) -> tuple[str, str]:
    """(layer, variable) of a Keras variable path: 'dense/kernel' (tf_keras), 'sequential/dense/kernel' (Keras 3),
    'lstm/lstm_cell/kernel' (an RNN's cell belongs to its layer); ('', '') for a name without a layer. With
    `whole`, the layer is the whole path before the variable (and cell): tf_keras layer names may hold '/'
    (DenseNet's 'conv1/bn' beside its last 'bn')."""
    parts = full_name.split("/")
    if len(parts) < 2:
        return "", ""
    owner = -3 if len(parts) >= 3 and parts[-2].endswith(CELL_SUFFIX) else -2
    return "/".join(parts[: len(parts) + owner + 1]) if whole else parts[owner], parts[-1]


class Kinds:
    """Each checkpoint key's kind, Keras layer and meaning, from the object graph or (TF1) from names."""

    def __init__(self, nodes: tuple[GraphNode, ...]) -> None:
        self.by_key: dict[str, tuple[TensorKind, str | None, str | None, str]] = {}
        if not nodes:
            return
        slots = {slot: (name, original) for node in nodes for original, name, slot in node.slots}
        names = {i: full_name for i, node in enumerate(nodes) for _, full_name, _ in node.attributes[:1]}
        optimizers = {i for i, node in enumerate(nodes) if node.slots}
        optimizers |= {child for node in nodes for child, name in node.children if name in OPTIMIZER_EDGES}
        other: dict[int, str] = {}
        model = self._reachable(nodes, optimizers, other)
        # a layer by the last part of its path, unless two variables of the model would then have one name
        named = Counter(_keras_layer(n) for i in model - other.keys() for _, n, _ in nodes[i].attributes)
        for i, node in enumerate(nodes):
            for _, full_name, key in node.attributes:
                layer, param = _keras_layer(full_name)
                if named[layer, param] > 1:
                    layer, param = _keras_layer(full_name, whole=True)
                if i in slots:
                    slot_name, original = slots[i]
                    of = names.get(original, f"node {original}")
                    self.by_key[key] = (TensorKind.OPTIMIZER, None, slot_name, f"slot {slot_name!r} of {of}")
                elif i in other:
                    self.by_key[key] = (TensorKind.OTHER, None, None, other[i])
                elif i in model:
                    self.by_key[key] = (TensorKind.PARAMETER, layer or None, param or None, "")
                else:
                    self.by_key[key] = (TensorKind.OPTIMIZER, None, param or None, "optimizer variable")

    @staticmethod
    def _reachable(nodes: tuple[GraphNode, ...], optimizers: set[int], other: dict[int, str]) -> set[int]:
        """Nodes reached from the root without passing through an optimizer; `other` gets the OTHER ones."""
        seen = {0}
        queue = deque([(0, "")])
        while queue:
            at, why = queue.popleft()
            if why:
                other[at] = why
            for child, name in nodes[at].children:
                if child in seen or child in optimizers or not 0 <= child < len(nodes):
                    continue
                seen.add(child)
                queue.append((child, why or OTHER_EDGES.get(name, "")))
        return seen

    def classify(self, key: str) -> tuple[TensorKind, str | None, str | None, str]:
        found = self.by_key.get(key)
        if found is not None:
            return found
        name = key.removesuffix("/.ATTRIBUTES/VARIABLE_VALUE")
        parts = name.split("/")
        if any(p in OPTIMIZER_EDGES for p in parts) or TF1_SLOT_SUFFIX.search(name) or TF1_OPTIMIZER_NAMES.match(name):
            return TensorKind.OPTIMIZER, None, None, "optimizer state (by name)"
        why = next((OTHER_EDGES[p] for p in parts if p in OTHER_EDGES), None)
        if why is not None or TF1_OTHER_NAMES.match(name):
            return TensorKind.OTHER, None, None, why or "training state (by name)"
        layer, _, param = name.rpartition("/")
        return TensorKind.PARAMETER, layer or None, param if layer else None, ""
