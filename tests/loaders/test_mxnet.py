"""MXNet .params without MXNet: real files from mxnet 1.9.1, compared with what mx.nd.load returned."""

from __future__ import annotations

import ast
import json
import re
import struct
from pathlib import Path

import pytest

from inspector import load
from inspector.errors import InspectorError
from inspector.records import RegionKind, TensorKind
from inspector.report import inspect
from loaders.base import check_invariants
from tests.conftest import SAMPLES, fixture_path

MX = SAMPLES / "mxnet"
MANIFEST = json.loads((MX / "manifest.json").read_text())
FILES = sorted(k for k in MANIFEST if k.endswith(".params"))
NAMES = {"F32": "float32", "F16": "float16", "I32": "int32"}


@pytest.mark.parametrize("name", FILES)
def test_samples_equal_mx_nd_load(name: str) -> None:
    entry = MANIFEST[name]
    ckpt = load(MX / name)
    check_invariants(ckpt)
    assert {t.name: [list(t.shape), NAMES[t.dtype]] for t in ckpt.tensors} == entry["tensors"]
    aux = sum(t.n_elements for t in ckpt.tensors if t.name.startswith("aux:"))
    assert aux == entry["aux_elements"]
    assert all(not t.trainable for t in ckpt.tensors if t.name.startswith("aux:"))
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]


def test_gluon_tied_parameter_saved_twice() -> None:
    dup = load(MX / "gluon_tied.params")
    dedup = load(MX / "gluon_tied_dedup.params")
    assert dup.n_parameters == dedup.n_parameters == MANIFEST["gluon_model_parameters"]
    (finding,) = [f for f in dup.findings if f.code == "DUPLICATE_TENSOR"]
    assert "saved a second time" in finding.message
    assert finding.severity == "info"  # Gluon's default save of a tied model: a correct file gets no warning
    duplicate = sum(r.length for r in dup.regions if r.kind is RegionKind.DUPLICATE)
    assert duplicate == 20 * 8 * 4  # the (20, 8) float32 embedding, stored again under out.weight
    assert any("second time" in n for n in inspect(MX / "gluon_tied.params").accounting.notes)


@pytest.mark.parametrize(("name", "cell"), [("sockeye_lstm.params", "lstm"), ("sockeye_gru.params", "gru"),
                                            ("sockeye_lstm_arg_fp16.params", "lstm")])  # fmt: skip
def test_sockeye_files_infer_the_architecture(name: str, cell: str) -> None:
    report = inspect(MX / name)
    exp = report.expectation
    assert exp is not None and exp.architecture == "sockeye-rnn" and exp.matches
    assert exp.hyperparameters["cell"] == cell and exp.hyperparameters["embed"] == "16:16"
    assert exp.total == MANIFEST[name]["elements"]
    assert not [f for f in report.findings if f.code == "DUPLICATE_TENSOR"]  # target embed and output are separate
    assert all(r.role != "unmatched" for r in report.roles)


def test_unnamed_list_gets_positional_names() -> None:
    ckpt = load(MX / "unnamed_list.params")
    assert [t.name for t in ckpt.tensors] == ["0", "1"] and ckpt.attributes["mxnet.named"] == "False"


def _walk_accounting() -> dict[str, dict[str, int]]:
    text = fixture_path("tool-output/mxnet_walk.txt").read_text()
    out = {}
    for name, account in re.findall(r"== mxnet/(\S+)\n(?:.*\n)*?\s+ACCOUNT (\{.*?\})", text):
        out[name] = ast.literal_eval(account)  # the reference walker printed a dict literal
    return out


def test_fixtures_match_the_reference_walker() -> None:
    accounts = _walk_accounting()
    assert len(accounts) >= 9
    for name, acc in accounts.items():
        ckpt = load(fixture_path(f"mxnet/{name}"))
        check_invariants(ckpt)
        by = {k: sum(r.length for r in ckpt.regions if r.kind is k) for k in RegionKind}
        assert by[RegionKind.METADATA] == acc["names_block"], name
        assert by[RegionKind.HEADER] == acc["list_header"] + acc["ndarray_headers"], name
        assert by[RegionKind.TENSOR_DATA] + by[RegionKind.DUPLICATE] == acc["tensor_data"] + acc["sparse_aux_data"], (
            name
        )


def test_versions_dtypes_and_sparse() -> None:
    crafted = load(fixture_path("mxnet/crafted_v1_v0.params"))
    assert crafted.attributes["mxnet.records"] == "V0, V1"
    dtypes = {t.name: t.dtype for t in load(fixture_path("mxnet/dtypes.params")).tensors}
    assert dtypes["w_bf16"] == "BF16" and dtypes["w_bool"] == "BOOL" and dtypes["w_f16"] == "F16"
    sparse = {t.name: t for t in load(fixture_path("mxnet/sparse.params")).tensors}
    assert sparse["rsp"].shape == (5, 3) and sparse["rsp#values"].shape == (2, 3)
    assert sparse["csr#indptr"].kind is TensorKind.OTHER and sparse["csr#indices"].dtype == "I64"
    npx = {t.name: t.shape for t in load(fixture_path("mxnet/npx.params")).tensors}
    assert npx == {"z": (2, 2), "s": ()}
    exported = load(fixture_path("mxnet/exported-0007.params"))
    assert exported.attributes["mxnet.checkpoint"].startswith("arg:/aux:")


def test_hostile_counts_and_lengths(tmp_path: Path) -> None:
    path = tmp_path / "x.params"
    path.write_bytes(struct.pack("<QQQ", 0x112, 0, 1 << 40))
    with pytest.raises(InspectorError, match="arrays declared"):
        load(path)
    path.write_bytes(struct.pack("<QQQ", 0x112, 0, 1) + struct.pack("<Ii", 0xF993FAC9, 0) + struct.pack("<i", 1000))
    with pytest.raises(InspectorError):
        load(path)


def test_gluon_blocks_named_by_position_get_roles_from_what_they_hold() -> None:
    """A HybridSequential as the Gluon model zoo builds them names its blocks by position (`1.weight`, `2.gamma`):
    gamma and beta are a norm's, a 4-d weight a convolution's. The count is MXNet's; the running statistics are not
    trainable, as MXNet counts them. The first BatchNorm has scale=False and center=False (the zoo's ResNet v2 input
    norm): MXNet does not train its gamma and beta, which the file does not say (grad_req is not saved), so they
    count as trainable here (README, "MXNet files without MXNet")."""
    report = inspect(MX / "gluon_sequential.params")
    ckpt = report.checkpoint
    roles = {r.name: r.role for r in report.roles}
    assert {roles[n] for n in roles if n.endswith((".gamma", ".beta"))} == {"norm"}
    assert {roles[t.name] for t in ckpt.tensors if t.name.endswith(".weight") and len(t.shape) == 4} == {"conv"}
    assert roles["6.weight"] == "dense" and "unmatched" not in roles.values()
    assert ckpt.n_parameters == MANIFEST["gluon_sequential_parameters"]
    trainable = sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable)
    untrained_affine = sum(t.n_elements for t in ckpt.tensors if t.name in ("0.gamma", "0.beta"))
    assert trainable == MANIFEST["gluon_sequential_trainable"] + untrained_affine
    assert not [f for f in report.findings if f.severity != "info"]
