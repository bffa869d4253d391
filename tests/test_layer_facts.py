"""Facts read from the file, never assumed: files written by torch and Keras with the layer options people use."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.architectures import parse_spec
from inspector.errors import SpecError
from inspector.report import inspect


def _torch_model():  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(0)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(  # numeric names: a BatchNorm is known by its running statistics
                nn.Conv2d(3, 8, 3, bias=False),
                nn.BatchNorm2d(8),
                nn.PReLU(8),
                nn.Conv2d(8, 8, 3, groups=8),
                nn.GroupNorm(2, 8),
                nn.InstanceNorm2d(8, affine=True),
                nn.ConvTranspose2d(8, 4, 3),
            )
            self.conv1_BN = nn.BatchNorm1d(4)  # upper-case name
            self.rnn = nn.LSTM(4, 6, num_layers=2, bias=False, bidirectional=True)
            self.cell = nn.LSTMCell(6, 5)
            self.gcell = nn.GRUCell(5, 3, bias=False)
            self.head = nn.Linear(3, 2, bias=False)
            self.ln = nn.LayerNorm(2, elementwise_affine=False)
            self.emb = nn.Embedding(10, 4, padding_idx=0)

    return torch, Model()


@pytest.mark.parametrize("writer", ["torch.save", "safetensors"])
def test_torch_layers_without_defaults(tmp_path: Path, writer: str) -> None:
    torch, model = _torch_model()
    path = tmp_path / "model.bin"
    if writer == "torch.save":
        torch.save(model.state_dict(), path)
    else:
        from safetensors.torch import save_file

        save_file(model.state_dict(), path)
    report = inspect(path)
    exp = report.expectation
    assert report.checkpoint.n_parameters == sum(p.numel() for p in model.parameters()) == 2_374
    assert sum(t.n_elements for t in report.checkpoint.unique() if t.kind == "buffer") == sum(
        b.numel() for b in model.buffers()
    )
    assert exp is not None and exp.total == 2_374 and exp.matches
    rows = {c.layer: (c.kind, c.expected) for c in exp.layers}
    assert rows["features.1"] == ("BatchNorm", 16) and rows["conv1_BN"] == ("BatchNorm", 8)
    assert rows["features.0"] == ("Conv", 216)  # no bias
    assert rows["features.3"] == ("Conv", 80)  # depthwise: 8 x 1 x 3 x 3 + 8
    assert rows["rnn.l0"] == rows["rnn.l0_reverse"] == ("LSTM", 240)  # bias=False: no bias vectors at all
    assert rows["cell"] == ("LSTM", 260) and rows["gcell"] == ("GRU", 72)  # cells, with and without biases
    assert rows["head"] == ("Dense", 6)


def _keras_model():  # type: ignore[no-untyped-def]
    keras = pytest.importorskip("keras")
    layers = keras.layers
    return keras, keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            layers.Conv2D(8, 3, use_bias=False, strides=2, padding="same"),
            layers.BatchNormalization(center=False),
            layers.SeparableConv2D(8, 3),
            layers.DepthwiseConv2D(3),
            layers.Conv2DTranspose(4, 3),
            layers.Reshape((-1, 4)),
            layers.Bidirectional(layers.LSTM(5, return_sequences=True)),
            layers.GRU(6, reset_after=False),
            layers.Dense(3, use_bias=False),
            layers.PReLU(),
        ]
    )


KERAS_LIST = (
    "Input(16,16,3) Conv2D(8,3,use_bias=false,strides=2,padding=same) BatchNormalization(center=false) "
    "SeparableConv2D(8,3) DepthwiseConv2D(3) Conv2DTranspose(4,3) Bidirectional(LSTM(5,return_sequences=true)) "
    "GRU(6,reset_after=false) Dense(3,use_bias=false) PReLU"
)


@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # keras's torch backend on save
def test_keras_config_and_layer_list_equal_keras_counts(tmp_path: Path) -> None:
    keras, model = _keras_model()
    model.save(tmp_path / "model.keras")
    model.save_weights(tmp_path / "model.weights.h5")
    per_layer = {layer.name: layer.count_params() for layer in model.layers if layer.count_params()}
    for path, expect in ((tmp_path / "model.keras", None), (tmp_path / "model.weights.h5", KERAS_LIST)):
        report = inspect(path, expect)
        exp = report.expectation
        assert report.checkpoint.n_parameters == model.count_params()
        assert exp is not None and exp.total == model.count_params() and exp.matches
        assert exp.source == ("config" if expect is None else "stated")
        rows: dict[str, int] = {}
        for check in exp.layers:
            layer = check.layer.split("/")[0]  # bidirectional/forward and /backward are one Keras layer
            rows[layer] = rows.get(layer, 0) + check.expected
        assert rows == per_layer


def test_layer_list_keywords_are_honoured_or_refused() -> None:
    assert sum(1 for _ in parse_spec("Input(10) Dense(5,use_bias=false)").layers) == 1
    from inspector.architectures import count

    assert count(parse_spec("Input(10) Dense(5,use_bias=false)"))[0] == 50
    assert count(parse_spec("Input(8,8,3) Conv2D(4,kernel_size=(3,1),use_bias=false)"))[0] == 36
    # 'same' padding and stride 2 keep 4 x 4 x 4 = 64 features for the Dense layer: 64 x 2 + 2
    assert count(parse_spec("Input(8,8,3) Conv2D(4,3,strides=2,padding=same) Flatten Dense(2)"))[0] == 112 + 130
    names = [s.name for s in parse_spec("Input(8,8,3) Conv2D(4,3) Conv2D(4,3) Conv1D(2,3)").layers]  # type: ignore[attr-defined]
    assert names == ["conv2d", "conv2d_1", "conv1d"]
    with pytest.raises(SpecError, match="does not take activation="):
        parse_spec("Input(10) Dense(5,activation=relu)")
    with pytest.raises(SpecError, match="unknown Keras layer"):
        parse_spec("Input(10) Densely(5)")


def test_conv_batchnorm_dense_is_not_taken_for_a_column_cnn(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    nn = torch.nn
    model = nn.Sequential(nn.Conv1d(2, 4, 3), nn.BatchNorm1d(4), nn.Flatten(), nn.Linear(8, 3), nn.Linear(3, 1))
    torch.save(model.state_dict(), tmp_path / "m.pt")
    exp = inspect(tmp_path / "m.pt").expectation
    assert exp is not None and exp.architecture == "sequential" and exp.matches
    assert exp.total == sum(p.numel() for p in model.parameters()) == 67


def test_keras_auto_names_of_another_session_pair_in_counter_order() -> None:
    from inspector.checks import auto_name_pairs

    found = ["dense_8", "dense_7", "bidirectional_2/forward", "bidirectional_2/backward", "gru"]
    expected = ["dense", "dense_1", "bidirectional/forward", "bidirectional/backward", "gru", "lstm"]
    assert auto_name_pairs(expected, found) == {
        "dense": "dense_7",
        "dense_1": "dense_8",
        "bidirectional/forward": "bidirectional_2/forward",
        "bidirectional/backward": "bidirectional_2/backward",
    }


def test_flax_style_npz_counts_params_only(tmp_path: Path) -> None:
    """flax.serialization's state-dict layout: params are counted, batch_stats are running statistics."""
    import numpy as np

    arrays = {
        "params/Conv_0/kernel": np.zeros((3, 3, 1, 4), np.float32),
        "params/Conv_0/bias": np.zeros(4, np.float32),
        "params/BatchNorm_0/scale": np.zeros(4, np.float32),
        "params/BatchNorm_0/bias": np.zeros(4, np.float32),
        "batch_stats/BatchNorm_0/mean": np.zeros(4, np.float32),
        "batch_stats/BatchNorm_0/var": np.zeros(4, np.float32),
    }
    np.savez(tmp_path / "flax.npz", **arrays)
    report = inspect(tmp_path / "flax.npz")
    assert report.checkpoint.n_parameters == 36 + 4 + 8
    assert {t.name for t in report.checkpoint.tensors if t.kind == "buffer"} == {
        "batch_stats/BatchNorm_0/mean",
        "batch_stats/BatchNorm_0/var",
    }
