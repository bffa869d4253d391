"""ONNX: models written by onnx.helper, onnx.save (external data) and torch.onnx.export, compared with onnx.load."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inspector import load
from inspector.cli import main
from inspector.errors import FormatError, InspectorError, LimitExceededError
from inspector.probe import Probe
from inspector.records import RegionKind, TensorKind
from inspector.report import inspect
from loaders.base import check_invariants
from loaders.onnx import OnnxLoader
from tests.conftest import fixture_path

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

NAMES = {
    "float32": "F32",
    "float16": "F16",
    "float64": "F64",
    "int8": "I8",
    "uint8": "U8",
    "int16": "I16",
    "uint16": "U16",
    "int32": "I32",
    "int64": "I64",
    "uint32": "U32",
    "uint64": "U64",
    "bool": "BOOL",
    "complex64": "C64",
    "complex128": "C128",
}


def _reference(path: Path) -> dict[str, Any]:
    """Every initializer as onnx.load sees it (external data left in place)."""
    model = onnx.load(str(path), load_external_data=False)
    return {t.name: t for t in model.graph.initializer}


def _check_against_onnx(path: Path) -> Any:
    """Names, shapes and dtypes equal onnx.load's; raw bytes at our offsets equal the tensor's raw_data."""
    ckpt = load(path)
    check_invariants(ckpt)
    ours = {t.name: t for t in ckpt.tensors if t.section == "initializer"}
    reference = _reference(path)
    assert list(ours) == list(reference)
    for name, ref in reference.items():
        t = ours[name]
        assert t.shape == tuple(ref.dims)
        assert t.dtype == dtype_name(ref.data_type)
        if ref.data_location == TensorProto.EXTERNAL:
            info = {e.key: e.value for e in ref.external_data}
            data = (path.parent / info["location"]).read_bytes()
            assert ckpt.files[t.file][0].endswith(info["location"])
            assert t.offset == int(info.get("offset", 0))
            full = numpy_helper.to_array(ref, base_dir=str(path.parent))
            assert data[t.offset : t.offset + t.nbytes] == full.tobytes()
        elif ref.HasField("raw_data"):
            assert path.read_bytes()[t.offset : t.offset + t.nbytes] == ref.raw_data
        elif not t.n_elements:
            assert t.nbytes == 0
        elif ref.data_type in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.COMPLEX64, TensorProto.COMPLEX128):
            assert path.read_bytes()[t.offset : t.offset + t.nbytes] == numpy_helper.to_array(ref).tobytes()
        else:
            packed = (t.n_elements + 1) // 2 if t.dtype in ("I4", "U4", "F4") else numpy_helper.to_array(ref).nbytes
            assert t.offset is None and t.nbytes == packed  # 4-bit types: two per byte, as in raw_data
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]
    return ckpt


def dtype_name(data_type: int) -> str:
    np_name = np.dtype(helper.tensor_dtype_to_np_dtype(data_type)).name
    return (
        NAMES.get(np_name)
        or {
            TensorProto.BFLOAT16: "BF16",
            TensorProto.FLOAT8E4M3FN: "F8_E4M3",
            TensorProto.FLOAT8E5M2: "F8_E5M2",
            TensorProto.INT4: "I4",
            TensorProto.UINT4: "U4",
            TensorProto.FLOAT4E2M1: "F4",
        }[data_type]
    )


def test_fixtures_match_the_reference_walker() -> None:
    text = fixture_path("tool-output/onnx.txt").read_text()
    for block in re.split(r"^== ", text, flags=re.M)[1:]:
        name = block.split()[0]
        ckpt = load(fixture_path(name))
        check_invariants(ckpt)
        rows = [ast.literal_eval(line.strip()) for line in block.splitlines()[1:] if line.strip()]
        assert [t.name for t in ckpt.tensors] == [r["name"] for r in rows]
        for t, r in zip(ckpt.tensors, rows, strict=True):
            assert list(t.shape) == r["dims"] and t.nbytes == r["logical_bytes"]
            if r["raw"]:
                assert (t.offset, t.nbytes) == tuple(r["raw"])
            if r["external"]:
                assert (t.file, t.offset, t.nbytes) == (1, int(r["external"]["offset"]), int(r["external"]["length"]))
        typed = sum(r.length for r in ckpt.regions if r.kind is RegionKind.COMPRESSED)
        assert typed == 12  # H_typed: 4 float16 values as int32 varints (FORMATS.md section 8)


def _all_types_model(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    inits = []
    for np_name in NAMES:
        a = (rng.standard_normal((2, 3)) * 10).astype(np_name)
        inits.append(numpy_helper.from_array(a, f"raw_{np_name}"))  # raw_data
        dt = helper.np_dtype_to_tensor_dtype(a.dtype)
        inits.append(helper.make_tensor(f"typed_{np_name}", dt, a.shape, a.flatten().tolist()))  # typed fields
    inits.append(helper.make_tensor("bf16", TensorProto.BFLOAT16, [4], [1.0, 2.0, 3.0, 4.0]))
    inits.append(helper.make_tensor("int4", TensorProto.INT4, [5], [1, -2, 3, -4, 5]))
    inits.append(helper.make_tensor("f8", TensorProto.FLOAT8E4M3FN, [3], [1.0, 2.0, 0.5], raw=False))
    inits.append(helper.make_tensor("empty", TensorProto.FLOAT, [0, 4], []))
    node = helper.make_node("Identity", ["raw_float32"], ["y"])
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    model = helper.make_model(graph, producer_name="tests", opset_imports=[helper.make_opsetid("", 21)])
    helper.set_model_props(model, {"author": "me", "note": "x" * 500})
    path = tmp_path / "types.onnx"
    onnx.save(model, str(path))
    return path


def test_every_data_type_raw_and_typed_equals_onnx_load(tmp_path: Path) -> None:
    path = _all_types_model(tmp_path)
    ckpt = _check_against_onnx(path)
    attrs = ckpt.attributes
    assert attrs["onnx.producer"] == "tests" and attrs["onnx.opset"] == "ai.onnx 21"
    assert attrs["onnx.metadata.author"] == "me" and len(attrs["onnx.metadata.note"]) == 200
    by = {t.name: t for t in ckpt.tensors}
    assert by["int4"].nbytes == 3 and by["typed_float16"].notes[0].startswith("values as varints in int32_data")
    assert by["raw_float32"].kind is TensorKind.OTHER  # consumed by Identity only: no weight input
    assert ckpt.n_parameters == 0


def test_constant_nodes_sparse_initializers_and_subgraphs(tmp_path: Path) -> None:
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(w, "ignored"))
    shape = helper.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(np.array([4, 3]), "s"))
    mm = helper.make_node("MatMul", ["x", "c"], ["h"])
    rs = helper.make_node("Reshape", ["h", "shape"], ["r"])
    branch_w = numpy_helper.from_array(np.ones((4,), dtype=np.float32), "branch_bias")
    then = helper.make_graph(
        [helper.make_node("Add", ["r", "branch_bias"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
        [branch_w],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["r"], ["e"])],
        "else",
        [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)],
    )
    cond = numpy_helper.from_array(np.array(True), "cond")
    iff = helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)
    values = numpy_helper.from_array(np.array([5.0, 6.0], dtype=np.float32), "sp")
    indices = numpy_helper.from_array(np.array([1, 7], dtype=np.int64), "sp_idx")
    sparse = helper.make_sparse_tensor(values, indices, [2, 5])
    graph = helper.make_graph(
        [const, shape, mm, rs, iff],
        "g",
        [helper.make_tensor_value_info("x", 1, [2, 3])],
        [helper.make_tensor_value_info("y", 1, None)],
        [cond],
        sparse_initializer=[sparse],
    )
    path = tmp_path / "graph.onnx"
    onnx.save(helper.make_model(graph), str(path))
    ckpt = _check_against_onnx(path)
    by = {t.name: t for t in ckpt.tensors}
    assert (by["c"].shape, by["c"].section, by["c"].kind) == ((3, 4), "constant", TensorKind.PARAMETER)
    assert path.read_bytes()[by["c"].offset : by["c"].offset + 48] == w.tobytes()
    assert (by["shape"].kind, by["shape"].dtype) == (TensorKind.OTHER, "I64")
    assert by["branch_bias"].kind is TensorKind.PARAMETER  # a subgraph initializer feeding an Add
    assert (by["sp"].shape, by["sp"].offset, by["sp#values"].shape, by["sp#indices"].dtype) == (
        (2, 5),
        None,
        (2,),
        "I64",
    )
    assert ckpt.attributes["onnx.op_types"].startswith("Constant x2")


def _linear_model(tmp_path: Path, shapes: list[tuple[int, int]]) -> Any:
    nodes, inits, x = [], [], "x"
    for i, (n_in, n_out) in enumerate(shapes):
        inits += [
            numpy_helper.from_array(np.full((n_in, n_out), i + 1, np.float32), f"w{i}"),
            numpy_helper.from_array(np.full((n_out,), -i, np.float32), f"b{i}"),
        ]
        nodes += [
            helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
        ]
        x = f"a{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", 1, [1, shapes[0][0]])],
        [helper.make_tensor_value_info(x, 1, None)],
        inits,
    )
    return helper.make_model(graph)


def test_external_data_one_file(tmp_path: Path) -> None:
    model = _linear_model(tmp_path, [(16, 32), (32, 8)])
    path = tmp_path / "mlp.onnx"
    onnx.save(
        model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="mlp.bin", size_threshold=0
    )
    ckpt = _check_against_onnx(path)
    assert [p for p, _ in ckpt.files] == [str(path), str(tmp_path / "mlp.bin")]
    assert ckpt.n_parameters == 16 * 32 + 32 + 32 * 8 + 8
    data = [r for r in ckpt.regions if r.file == 1]
    assert all(r.kind is RegionKind.TENSOR_DATA for r in data)
    assert sum(r.length for r in data) == (tmp_path / "mlp.bin").stat().st_size


def test_external_data_with_aligned_offsets(tmp_path: Path) -> None:
    from onnx.external_data_helper import convert_model_to_external_data, set_external_data

    model = _linear_model(tmp_path, [(5, 3), (3, 7)])
    convert_model_to_external_data(model, location="w.bin", size_threshold=0)
    offset = 0
    for t in model.graph.initializer:
        set_external_data(t, "w.bin", offset=offset)
        offset = -(-(offset + len(t.raw_data)) // 4096) * 4096  # a 4 KiB-aligned writer
    path = tmp_path / "aligned.onnx"
    onnx.save_model(model, str(path))
    ckpt = _check_against_onnx(path)
    assert [t.offset for t in ckpt.tensors] == [0, 4096, 8192, 12288]
    padding = [r for r in ckpt.regions if r.file == 1 and r.kind is RegionKind.PADDING]
    assert len(padding) == 3 and not ckpt.findings


def test_external_data_problems_are_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _linear_model(tmp_path, [(4, 4)])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="m.bin", size_threshold=0)
    blob = path.read_bytes()
    (tmp_path / "m.bin").write_bytes((tmp_path / "m.bin").read_bytes()[:40])  # w0 needs 64 bytes
    ckpt = load(path)
    check_invariants(ckpt)
    assert {f.code for f in ckpt.findings} >= {"EXTERNAL_DATA_RANGE"}
    evil = tmp_path / "evil.onnx"
    evil.write_bytes(blob.replace(b"m.bin", b"../xx"))
    ckpt = load(evil)
    assert [f.code for f in ckpt.findings].count("UNSAFE_CONTENT") == 1 and len(ckpt.files) == 1
    assert main([str(evil)]) == 3
    capsys.readouterr()
    outside = tmp_path.parent / f"{tmp_path.name}-secret.bin"
    outside.write_bytes(b"\0" * 64)
    (tmp_path / "l.bin").symlink_to(outside)  # a name inside the folder that leads out of it
    linked = tmp_path / "linked.onnx"
    linked.write_bytes(blob.replace(b"m.bin", b"l.bin"))
    assert [f.code for f in load(linked).findings] == ["UNSAFE_CONTENT"]
    missing = tmp_path / "missing.onnx"
    missing.write_bytes(blob.replace(b"m.bin", b"n.bin"))
    assert "MISSING_EXTERNAL_DATA" in {f.code for f in load(missing).findings}


@pytest.mark.parametrize("exporter", ["legacy-folded", "legacy-unfolded", "dynamo"])
def test_torch_export_counts_equal_torch(tmp_path: Path, exporter: str) -> None:
    """Folded, the LSTM's weights are new initializers in ONNX gate order; unfolded, torch's own tensors reach the
    LSTM through Slice and Concat nodes; the dynamo exporter (torch's default) writes its weights as external data.
    Every way, the parameters are torch's."""
    torch = pytest.importorskip("torch")
    if exporter == "dynamo":
        pytest.importorskip("onnxscript", reason="torch's dynamo ONNX exporter needs onnxscript")
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.fc, self.ln = nn.Linear(8 * 6 * 6, 10), nn.LayerNorm(10)
            self.emb, self.lstm = nn.Embedding(20, 10), nn.LSTM(10, 12, batch_first=True)

        def forward(self, x: Any, ids: Any) -> Any:
            y = self.ln(self.fc(torch.relu(self.conv(x)).flatten(1)))
            out, _ = self.lstm(self.emb(ids) + y[:, None, :])
            return out

    torch.manual_seed(0)
    model = Net().eval()
    path = tmp_path / "net.onnx"
    args = (torch.randn(1, 3, 8, 8), torch.randint(0, 20, (1, 5)))
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporters' chatter
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            torch.onnx.export(model, args, str(path), dynamo=True)
        else:
            torch.onnx.export(model, args, str(path), dynamo=False, do_constant_folding=exporter == "legacy-folded")
    ckpt = _check_against_onnx(path)
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())
    assert {t.name for t in ckpt.tensors if t.kind is TensorKind.PARAMETER} >= {"fc.weight", "emb.weight"}
    # every weight has a role: a name a rule reads, or what the graph does with it (the folded LSTM's onnx::LSTM_*)
    report = inspect(path)
    pairs = zip(report.checkpoint.tensors, report.roles, strict=True)
    roles = {r.name: r.role for t, r in pairs if t.kind is TensorKind.PARAMETER}
    assert "unmatched" not in roles.values(), roles
    assert ckpt.attributes["onnx.producer"] == "pytorch"
    if exporter == "dynamo":
        assert len(ckpt.files) == 2 and ckpt.files[1][0].endswith("net.onnx.data")


def test_only_framing_is_read(tmp_path: Path) -> None:
    model = _linear_model(tmp_path, [(1024, 1024), (1024, 8)])  # 4 MiB of raw_data inside the .onnx
    path = tmp_path / "big.onnx"
    onnx.save(model, str(path))
    with Probe(path) as probe:
        assert OnnxLoader().claim(probe) is not None
        OnnxLoader().load(probe)
        assert probe.bytes_read < 300_000 < probe.size // 10


def test_truncated_anywhere_is_one_line_error(tmp_path: Path) -> None:
    path = _all_types_model(tmp_path)
    blob = path.read_bytes()
    cut_path = tmp_path / "cut.onnx"
    for cut in range(2, len(blob) - 1, 5):
        cut_path.write_bytes(blob[:cut])
        try:
            ckpt = load(cut_path)
        except InspectorError as exc:
            assert "\n" not in str(exc)
            continue
        check_invariants(ckpt)  # a cut at a field boundary is a shorter, valid message


def test_corrupt_messages(tmp_path: Path) -> None:
    path = _all_types_model(tmp_path)
    blob = bytearray(path.read_bytes())
    raw = numpy_helper.from_array(np.zeros((2, 3), np.float32)).raw_data
    bad = tmp_path / "bad.onnx"
    at = bytes(blob).index(b"\x4a\x18")  # raw_data tag + length 24 of the first float32 tensor
    blob[at + 1] = 20
    bad.write_bytes(bytes(blob))
    with pytest.raises(InspectorError):
        load(bad)
    assert len(raw) == 24
    deep = b"\x08\x07" + b"\x3a\x02\x08\x01"  # ir_version 7, a graph holding one varint
    bad.write_bytes(deep)
    assert load(bad).tensors == ()
    bad.write_bytes(b"\x08\x07\x3a\x0b" + b"\xff" * 11)
    with pytest.raises(FormatError, match="varint"):
        load(bad)


def test_nesting_is_bounded(tmp_path: Path) -> None:
    inner = helper.make_graph([], "leaf", [], [])
    for i in range(20):
        node = helper.make_node("If", ["c"], ["y"], then_branch=inner)
        inner = helper.make_graph([node], f"g{i}", [], [])
    path = tmp_path / "deep.onnx"
    path.write_bytes(helper.make_model(inner).SerializeToString())
    with pytest.raises(LimitExceededError, match="nested"):
        load(path)


def test_batch_norm_statistics_are_buffers(tmp_path: Path) -> None:
    stats = [numpy_helper.from_array(np.full(4, i, np.float32), name) for i, name in
             enumerate(["scale", "bias", "mean", "var"])]  # fmt: skip
    node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"])
    graph = helper.make_graph([node], "bn", [helper.make_tensor_value_info("x", 1, [1, 4, 2, 2])],
                              [helper.make_tensor_value_info("y", 1, None)], stats)  # fmt: skip
    path = tmp_path / "bn.onnx"
    onnx.save(helper.make_model(graph), str(path))
    ckpt = _check_against_onnx(path)
    kinds = {t.name: t.kind for t in ckpt.tensors}
    assert kinds == {"scale": TensorKind.PARAMETER, "bias": TensorKind.PARAMETER, "mean": TensorKind.BUFFER,
                     "var": TensorKind.BUFFER}  # fmt: skip


def test_weights_whose_names_say_nothing_take_their_role_from_the_graph(tmp_path: Path) -> None:
    """Initializers named as exporters name folded constants get the role of the node input they feed (through a
    Transpose too), the name PyTorch gives that input, and the node's scope as layer; what each feeds is what onnx's
    own graph says."""
    rng = np.random.default_rng(0)
    arrays = {"c0": (8, 3, 3, 3), "c1": (8,), "c2": (8,), "c3": (8,), "c4": (8,), "c5": (8,), "c6": (4, 8),
              "c7": (4,), "c8": (1, 16, 4), "c9": (1, 16, 4), "c10": (1, 32), "c11": (10, 4), "c12": (4,)}  # fmt: skip
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), n) for n, shape in arrays.items()]
    nodes = [
        helper.make_node("Transpose", ["c0"], ["w"], "block/conv/Transpose", perm=[0, 1, 2, 3]),
        helper.make_node("Conv", ["x", "w", "c1"], ["h"], "block/conv/Conv2D"),
        helper.make_node("BatchNormalization", ["h", "c2", "c3", "c4", "c5"], ["n"], "block/bn/FusedBatchNorm"),
        helper.make_node("GlobalAveragePool", ["n"], ["p"], "pool"),
        helper.make_node("Flatten", ["p"], ["f"], "flatten"),
        helper.make_node("Gemm", ["f", "c6", "c7"], ["g"], "/head/Gemm", transB=1),
        helper.make_node("Unsqueeze", ["g", "axes"], ["s"], "unsqueeze"),
        helper.make_node("LSTM", ["s", "c8", "c9", "c10"], ["o"], "/rnn/LSTM", hidden_size=4),
        helper.make_node("Gather", ["c11", "ids"], ["e"], "/emb/Gather"),
        helper.make_node("PRelu", ["e", "c12"], ["y"], "/act/PRelu"),
    ]
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", 1, [1, 3, 8, 8]), helper.make_tensor_value_info("ids", 7, [2])],
        [helper.make_tensor_value_info("o", 1, None), helper.make_tensor_value_info("y", 1, None)], [*inits, axes],
    )  # fmt: skip
    path = tmp_path / "opaque.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    report = inspect(path)
    read = {r.name: (r.role, r.param, r.layer) for r in report.roles}
    assert read == {
        "c0": ("conv", "weight", "block/conv"),
        "c1": ("conv", "bias", "block/conv"),
        "c2": ("norm", "weight", "block/bn"),
        "c3": ("norm", "bias", "block/bn"),
        "c4": ("norm_statistic", "running_mean", "block/bn"),
        "c5": ("norm_statistic", "running_var", "block/bn"),
        "c6": ("dense", "weight", "head"),
        "c7": ("dense", "bias", "head"),
        "c8": ("rnn_input_kernel", "weight_ih", "rnn"),
        "c9": ("rnn_recurrent_kernel", "weight_hh", "rnn"),
        "c10": ("rnn_bias", "bias", "rnn"),
        "c11": ("embedding", "weight", "emb"),
        "c12": ("learned_tensor", "slope", "act"),
        "axes": ("graph_constant", "axes", "unsqueeze"),  # (other state: a constant the node takes)
    }
    model = onnx.load(str(path))
    feeds = {name: (n.op_type, i) for n in model.graph.node for i, name in enumerate(n.input)}
    for t in report.checkpoint.tensors:
        if t.use is not None:
            op, index = feeds[t.name] if t.name != "c0" else feeds["w"]  # (c0 reaches the Conv through the Transpose)
            assert (t.use[0], t.use[1]) == (op, onnx.defs.get_schema(op).inputs[index].name), t.name
    assert report.checkpoint.n_parameters == sum(int(np.prod(s)) for n, s in arrays.items() if n not in ("c4", "c5"))


def test_a_gemm_reads_its_b_as_its_trans_b_says(tmp_path: Path) -> None:
    """A Gemm's B is (in, out), a kernel, unless `transB` is set (as exporters write a Linear: (out, in), a weight); the
    expectation reads either as the Dense it is."""
    for trans_b, shape, param in ((0, (3, 4), "kernel"), (1, (4, 3), "weight")):
        weight = numpy_helper.from_array(np.ones(shape, np.float32), "w")
        bias = numpy_helper.from_array(np.ones(4, np.float32), "b")
        node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], "/fc/Gemm", transB=trans_b)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [1, 3])],
                                  [helper.make_tensor_value_info("y", 1, None)], [weight, bias])  # fmt: skip
        path = tmp_path / f"gemm{trans_b}.onnx"
        onnx.save(helper.make_model(graph), str(path))
        report = inspect(path)
        assert [(r.role, r.param, r.layer) for r in report.roles] == [("dense", param, "fc"), ("dense", "bias", "fc")]
        exp = report.expectation
        assert exp is not None and [(c.layer, c.kind, c.expected) for c in exp.layers] == [("fc", "Dense", 16)]


def test_input_names_are_the_operator_schemas() -> None:
    """`INPUT_NAMES` are onnx's own names of each operator's inputs, and onnxruntime's of its contrib ops (where
    onnxruntime is installed)."""
    from loaders.onnx import INPUT_NAMES

    contrib = {"SimplifiedLayerNormalization", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
               "MatMulNBits", "DynamicQuantizeLSTM"}  # fmt: skip
    for op, names in INPUT_NAMES.items():
        if op not in contrib:
            assert names == tuple(i.name for i in onnx.defs.get_schema(op).inputs), op
    runtime = pytest.importorskip("onnxruntime.capi.onnxruntime_pybind11_state")
    schemas = {s.name: tuple(i.name for i in s.inputs) for s in runtime.get_all_operator_schema() if s.name in contrib}
    assert {op: INPUT_NAMES[op] for op in contrib} == schemas


SAMPLES_DIR = Path(__file__).resolve().parents[2] / "sample_models" / "gguf_onnx"
MANIFEST = json.loads((SAMPLES_DIR / "manifest.json").read_text())


@pytest.mark.parametrize("name", sorted(k for k in MANIFEST if k.endswith(".onnx")))
def test_samples_equal_the_manifest(name: str) -> None:
    """Committed samples (made by make_gguf_onnx.py) against what onnx.load and torch reported."""
    entry = MANIFEST[name]
    ckpt = _check_against_onnx(SAMPLES_DIR / name)
    inits = {t.name: [list(t.shape), t.dtype] for t in ckpt.tensors if t.section == "initializer"}
    assert inits == {
        k: [dims, dtype_name(getattr(TensorProto, kind))] for k, (dims, kind) in entry["initializers"].items()
    }
    assert ckpt.n_parameters == entry["torch_parameters"]
    for t in ckpt.tensors:
        if t.name in entry.get("external_bytes", {}):
            assert t.file == 1 and t.nbytes == entry["external_bytes"][t.name]


def test_sniffing(tmp_path: Path) -> None:
    """A ModelProto is claimed up to its graph field; a SavedModel (field 2 is its large meta graph) is not."""
    path = _all_types_model(tmp_path)
    with Probe(path) as probe:
        assert OnnxLoader().claim(probe) is not None
    saved_model = tmp_path / "saved_model.pb"
    saved_model.write_bytes(b"\x08\x01\x12\x90\x4e" + b"\x0a\x05hello" * 2000)
    with Probe(saved_model) as probe:
        assert OnnxLoader().claim(probe) is None


def test_quantized_weights(tmp_path: Path) -> None:
    """QDQ (int8 -> DequantizeLinear -> MatMul) and QLinearMatMul: integer weights are parameters, scales and zero
    points are not."""
    inits = [
        numpy_helper.from_array(np.ones((4, 3), np.int8), "wq"),
        numpy_helper.from_array(np.array(0.1, np.float32), "w_scale"),
        numpy_helper.from_array(np.array(0, np.int8), "w_zp"),
        numpy_helper.from_array(np.ones((3, 2), np.int8), "w2"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["wq", "w_scale", "w_zp"], ["w"]),
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("QuantizeLinear", ["h", "w_scale", "w_zp"], ["hq"]),
        helper.make_node("QLinearMatMul", ["hq", "w_scale", "w_zp", "w2", "w_scale", "w_zp", "w_scale", "w_zp"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", 1, [1, 4])],
                              [helper.make_tensor_value_info("y", 3, None)], inits)  # fmt: skip
    path = tmp_path / "q.onnx"
    onnx.save(helper.make_model(graph), str(path))
    kinds = {t.name: t.kind for t in _check_against_onnx(path).tensors}
    assert kinds == {"wq": TensorKind.PARAMETER, "w_scale": TensorKind.OTHER, "w_zp": TensorKind.OTHER,
                     "w2": TensorKind.PARAMETER}  # fmt: skip


def _exporting(dynamo: bool) -> tuple[Any, Any]:
    """torch and transformers, to export a transformers model (the dynamo exporter needs onnxscript): else a skip."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    if dynamo:
        pytest.importorskip("onnxscript", reason="torch's dynamo ONNX exporter needs onnxscript")
    return torch, transformers


@pytest.mark.parametrize("dynamo", [False, True])
def test_transformers_vit_export(tmp_path: Path, dynamo: bool) -> None:
    """A tiny ViT (random weights) as both exporters write it: the initializers are onnx.load's; those that keep the
    name of a torch parameter are parameters (the TorchScript exporter broadcasts the class token with Expand before
    concatenating it), and a file holding what the exporter wrote gets no warning."""
    torch, transformers = _exporting(dynamo)
    words = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=32,
                 patch_size=8)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.ViTModel(transformers.ViTConfig(**words)).eval()
    path = tmp_path / "vit.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporters' chatter
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(1, 3, 32, 32),), str(path), dynamo=dynamo)
    ckpt = _check_against_onnx(path)
    kinds = {t.name: t.kind for t in ckpt.tensors}
    kept = [name for name, _ in model.named_parameters() if name in kinds]
    assert "embeddings.cls_token" in kept or dynamo
    assert kept and all(kinds[name] is TensorKind.PARAMETER for name in kept)
    assert not [f for f in inspect(path).findings if f.severity.value != "info"]


def test_relative_position_bias_table_is_a_parameter(tmp_path: Path) -> None:
    """Swin's attention bias: a parameter table indexed by a buffer of positions. The dynamo exporter, unoptimized,
    writes the indexing as GatherND on the transposed table; the table is a weight, the index is not. (Optimized,
    the exporter folds the bias into a constant: the table is no longer in the file.)"""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript", reason="torch's dynamo ONNX exporter needs onnxscript")
    nn = torch.nn

    class Attention(nn.Module):
        def __init__(self, window: int = 3, heads: int = 2) -> None:
            super().__init__()
            self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
            coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
            relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + window - 1
            self.register_buffer("index", (relative[..., 0] * (2 * window - 1) + relative[..., 1]).flatten())
            self.window, self.qkv = window, nn.Linear(4, 3 * 4)

        def forward(self, x: Any) -> Any:
            n = self.window**2
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            bias = self.table[self.index].view(n, n, -1).permute(2, 0, 1)
            return (q @ k.transpose(-1, -2) + bias[:1]).softmax(-1) @ v

    torch.manual_seed(0)
    model = Attention().eval()
    path = tmp_path / "attention.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's chatter
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(1, 9, 4),), str(path), dynamo=True, optimize=False)
    ckpt = _check_against_onnx(path)
    kinds = {t.name: t.kind for t in ckpt.tensors}
    assert kinds["table"] is TensorKind.PARAMETER and kinds["index"] is not TensorKind.PARAMETER
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "way", [{"dynamo": False}, {"dynamo": False, "do_constant_folding": False}, {"dynamo": True, "optimize": False}]
)
def test_export_beside_its_config_json(tmp_path: Path, way: dict[str, Any]) -> None:
    """model.onnx with the model's config.json beside it (as optimum-cli writes it): the config gives the family,
    the exporter renamed, transposed or merged weights (constant folding; merged equal norms; GPT-2's tied head
    kept under lm_head's name), which the family check says in words, not a warning. A config.json of another
    size is still one."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    if way["dynamo"]:
        pytest.importorskip("onnxscript", reason="torch's dynamo ONNX exporter needs onnxscript")
    words = dict(n_embd=32, n_layer=2, n_head=4, vocab_size=128, n_positions=64, use_cache=False)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**words)).eval()
    path = tmp_path / "model.onnx"
    ids = torch.randint(0, 128, (1, 8))
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporters' chatter
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (), str(path), kwargs={"input_ids": ids, "attention_mask": torch.ones_like(ids)}, **way
        )
    model.config.to_json_file(tmp_path / "config.json")
    _check_against_onnx(path)
    report = inspect(path)
    exp = report.expectation
    assert exp is not None and (exp.source, exp.architecture) == ("config", "gpt2")
    assert not [f for f in report.findings if f.severity.value != "info"]
    assert any("ONNX export" in note for note in exp.notes)
    model.config.n_embd = 64  # a config of a wider model: the embeddings the file names are of another size
    model.config.to_json_file(tmp_path / "config.json")
    assert "COUNT_MISMATCH" in {f.code for f in inspect(path).findings}


def test_weights_through_tile_and_gather_elements_are_parameters(tmp_path: Path) -> None:
    """A table indexed by GatherElements and a weight repeated by Tile before a MatMul are weights; a tensor only
    read for its shape is not."""
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.random((6, 4), dtype=np.float32), "table")
    index = numpy_helper.from_array(np.zeros((2, 4), dtype=np.int64), "index")
    weight = numpy_helper.from_array(rng.random((2, 3), dtype=np.float32), "weight")
    repeats = numpy_helper.from_array(np.array([2, 1], dtype=np.int64), "repeats")
    probe = numpy_helper.from_array(rng.random((5, 5), dtype=np.float32), "probe")
    nodes = [
        helper.make_node("GatherElements", ["table", "index"], ["rows"], axis=0),
        helper.make_node("Tile", ["weight", "repeats"], ["tiled"]),
        helper.make_node("MatMul", ["x", "tiled"], ["y"]),
        helper.make_node("Shape", ["probe"], ["s"]),
    ]
    outputs = [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [2, 4])]
    outputs += [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])]
    outputs += [helper.make_tensor_value_info("s", TensorProto.INT64, [2])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])], outputs,
        [table, index, weight, repeats, probe],
    )  # fmt: skip
    path = tmp_path / "tile.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), str(path))
    onnx.checker.check_model(str(path))
    kinds = {t.name: t.kind for t in load(path).tensors}
    assert kinds["table"] is kinds["weight"] is TensorKind.PARAMETER
    assert TensorKind.PARAMETER not in (kinds["index"], kinds["repeats"], kinds["probe"])


@pytest.mark.parametrize("dynamo", [False, True])
def test_exported_weights_belong_to_their_modules(tmp_path: Path, dynamo: bool) -> None:
    """The TorchScript exporter (dynamo=False: Optimum's exports) writes a transformers model's Linear weights as
    `onnx::MatMul_N` initializers, transposed, read by nodes named after their module's scope; the dynamo exporter
    names them `val_N` and says each node's module in its metadata (`pkg.torch.onnx.name_scopes`). Either way each is
    that module's weight (`layer`), with the module's role, and the family check beside the config counts it in its
    module (it counted each such module as missing and the initializers as an exporter's extra row): the TorchScript
    export matches row for row (the model's norms are random, so the exporter merges none of them; its zero biases it
    does merge, as the file then holds), the dynamo export differs only where its exporter folded (explained)."""
    torch, transformers = _exporting(dynamo)
    words = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, vocab_size=128,
                 max_position_embeddings=64)  # fmt: skip
    torch.manual_seed(0)
    config = transformers.BertConfig(**words)
    model = transformers.BertModel(config).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.normal_()
                module.bias.normal_()

    class Outputs(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, ids: Any) -> Any:
            out = self.bert(input_ids=ids)
            return out.last_hidden_state, out.pooler_output

    config.save_pretrained(tmp_path)
    path = tmp_path / "model.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's chatter
        warnings.simplefilter("ignore")
        torch.onnx.export(Outputs().eval(), (torch.ones(1, 8, dtype=torch.long),), str(path), dynamo=dynamo)
    report = inspect(path)
    exported = {t.name: t for t in report.checkpoint.tensors if t.layer is not None}
    assert all(name.startswith("val_" if dynamo else "onnx::MatMul") for name in exported)
    layers = {t.layer for t in exported.values()}
    linears = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
               "intermediate.dense", "output.dense")  # fmt: skip
    assert layers >= {f"bert.encoder.layer.{i}.{linear}" for i in (0, 1) for linear in linears}
    roles = {r.name: r for r in report.roles}
    ffn = {roles[name].role for name, t in exported.items() if t.layer and t.layer.endswith("intermediate.dense")}
    assert ffn == {"feedforward_up"}
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.architecture == "bert"
    assert exp.explained if dynamo else exp.matches
    assert not [f for f in report.findings if f.severity.value != "info"]
    if dynamo:  # (its folded position lookup, and its own merged initializers: the exporter's doing)
        return
    embeddings = ("word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm")
    assert {c.layer for c in exp.layers} == {
        *(f"bert.embeddings.{e}" for e in embeddings), "bert.encoder.layer.0", "bert.encoder.layer.1",
        "bert.pooler.dense",
    }  # fmt: skip


# onnxruntime-genai's model builder on a test-sized llama saved by `save_pretrained` (with a word-level tokenizer: the
# builder writes the tokenizer's files too), run in a process of its own (it imports transformers' vision classes)
GENAI_BUILDER = """
from tests.vision import make_importable
make_importable()  # (transformers imports torchvision where it is installed)
import json, runpy, sys, torch, transformers
from tokenizers import Tokenizer, models
source, out, precision = sys.argv[1], sys.argv[2], sys.argv[3]
torch.manual_seed(0)
config = transformers.AutoConfig.for_model("llama", **json.loads(sys.argv[4]))
model = transformers.AutoModelForCausalLM.from_config(config)
model.config.architectures = ["LlamaForCausalLM"]
model.save_pretrained(source)
words = Tokenizer(models.WordLevel({f"t{i}": i for i in range(config.vocab_size)}, unk_token="t0"))
transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0", bos_token="t1", eos_token="t2"
                                     ).save_pretrained(source)
sys.argv = ["builder", "-i", source, "-o", out, "-p", precision, "-e", "cpu", "-c", out + "-cache"]
runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__")
print(model.num_parameters())
"""
GENAI_LLAMA = {"vocab_size": 256, "hidden_size": 64, "intermediate_size": 320, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 2}  # fmt: skip


def _packed_weights(path: Path) -> dict[str, tuple[int, int]]:
    """Each MatMulNBits node's B and the (N, K) its attributes give, as onnx reads them."""
    graph = onnx.load(str(path), load_external_data=False).graph
    out = {}
    for node in graph.node:
        if node.op_type == "MatMulNBits":
            words = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            out[node.input[1]] = (words["N"], words["K"])
    return out


def _assert_packed_read_as_values(path: Path, packed: dict[str, tuple[int, int]]) -> Any:
    """Every MatMulNBits B a parameter of its (N, K) values, 4-bit, its bytes as stored; its scales and zero points
    not parameters."""
    ckpt = load(path)
    check_invariants(ckpt)
    by_name = {t.name: t for t in ckpt.tensors}
    reference = _reference(path)
    for name, (n, k) in packed.items():
        t = by_name[name]
        assert (t.shape, t.dtype, t.kind) == ((n, k), "U4", TensorKind.PARAMETER) and "MatMulNBits" in t.notes[-1]
        assert tuple(reference[name].dims)[0] == n and t.nbytes == math.prod(reference[name].dims)  # (as stored)
    assert all(by_name[name].kind is not TensorKind.PARAMETER for name in reference if name.endswith("scales"))
    return ckpt


@pytest.mark.parametrize("precision", ["int4", "fp32"])
def test_onnxruntime_genai_builds_count_the_model(tmp_path: Path, precision: str) -> None:
    """onnxruntime-genai's builder (the int4 and fp32 ONNX models of Phi, Llama, Qwen... for onnxruntime-genai): its
    int4 linear layers are MatMulNBits nodes, B stored uint8 (N, blocks, block bytes), and its RMSNorms after the
    first are SkipSimplifiedLayerNormalization (the residual add fused). Both read as the model's weights: the count
    is `num_parameters()` of the model the builder read (the int4 file counted only its embedding and first norm;
    the fp32 one missed its fused norms), the inferred layers match, no warning."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("onnxruntime_genai") is None or importlib.util.find_spec("transformers") is None:
        pytest.skip("onnxruntime-genai (and transformers) not installed")
    root = Path(__file__).resolve().parent.parent.parent  # (the builder's process imports tests.vision)
    out = tmp_path / precision
    built = subprocess.run(
        [sys.executable, "-c", GENAI_BUILDER, str(tmp_path / "hf"), str(out), precision, json.dumps(GENAI_LLAMA)],
        capture_output=True, text=True, cwd=root,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    count = int(built.stdout.split()[-1])
    path = out / "model.onnx"
    packed = _packed_weights(path)
    layers = GENAI_LLAMA["num_hidden_layers"]  # (q, k and v fused in one: five projections a layer, and the head)
    assert len(packed) == (5 * layers + 1 if precision == "int4" else 0)
    ckpt = _assert_packed_read_as_values(path, packed)
    assert ckpt.n_parameters == count
    norms = [t for t in ckpt.tensors if t.name.endswith("layernorm.weight")]
    assert len(norms) == 2 * GENAI_LLAMA["num_hidden_layers"] + 1 and all(t.kind is TensorKind.PARAMETER for t in norms)
    report = inspect(path)
    assert report.expectation is not None and report.expectation.matches
    assert not [f for f in report.findings if f.severity.value != "info"]


def test_matmul_nbits_quantizer_keeps_the_export_s_count(tmp_path: Path) -> None:
    """onnxruntime's MatMulNBitsQuantizer (4 bits, blocks of 32) over torch's dynamo export of a llama, beside its
    config.json: each MatMul's weight becomes a MatMulNBits B, read as its values, so the count is the float
    export's (it was the embedding and the norms alone); the family check explains the renamed weights, no warning."""
    torch, transformers = _exporting(True)
    quantizer = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model("llama", **GENAI_LLAMA, use_cache=False)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    path = tmp_path / "model.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's chatter
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (), str(path), kwargs={"input_ids": torch.randint(0, 256, (1, 8))}, dynamo=True)
    model.config.to_json_file(tmp_path / "config.json")
    exported = load(path).n_parameters
    quantized = tmp_path / "q4"
    quantized.mkdir()
    q = quantizer.MatMulNBitsQuantizer(onnx.load(str(path)), block_size=32, is_symmetric=False)
    with contextlib.redirect_stderr(io.StringIO()):  # (its log of each node)
        q.process()
    q.model.save_model_to_file(str(quantized / "model.onnx"))
    model.config.to_json_file(quantized / "config.json")
    packed = _packed_weights(quantized / "model.onnx")
    assert len(packed) == 7 * GENAI_LLAMA["num_hidden_layers"] + 1  # (every projection and the head)
    assert _assert_packed_read_as_values(quantized / "model.onnx", packed).n_parameters == exported
    report = inspect(quantized / "model.onnx")
    assert report.expectation is not None and report.expectation.source == "config"
    assert not [f for f in report.findings if f.severity.value != "info"]


def test_weights_sharing_one_input_name_in_a_layer_count_whole(tmp_path: Path) -> None:
    """A layer norm written as a Mul and an Add (tf2onnx from JAX: magika's model) has two weights that are each their
    node's input 'B', and paddle2onnx names two ConvTranspose weights `auto.cast.95` and `auto.cast.98` (one layer by
    name, each its node's 'W'): each layer counts every weight it holds (it counted one: a COUNT_MISMATCH on a correct
    file). A ConstantOfShape's fill value, a node attribute, is the graph's state with that node's role."""
    rng = np.random.default_rng(0)
    shapes = {
        "ln/Reshape_2:0": (1, 8),
        "ln/Reshape_3:0": (1, 8),
        "auto.cast.95": (8, 8, 2, 2),
        "auto.cast.98": (8, 1, 2, 2),
    }
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in shapes.items()]
    fill = helper.make_tensor("value", TensorProto.FLOAT, [1], [0.0])
    nodes = [
        helper.make_node("Mul", ["x", "ln/Reshape_2:0"], ["m"], "ln/Mul"),
        helper.make_node("Add", ["m", "ln/Reshape_3:0"], ["a"], "ln/AddV2_1"),
        helper.make_node("Reshape", ["a", "to_image"], ["i"], "reshape"),
        helper.make_node("ConvTranspose", ["i", "auto.cast.95"], ["u"], "ConvTranspose.0", strides=[2, 2]),
        helper.make_node("ConvTranspose", ["u", "auto.cast.98"], ["y"], "ConvTranspose.2", strides=[2, 2]),
        helper.make_node("ConstantOfShape", ["dims"], ["zeros"], "/head/ConstantOfShape", value=fill),
    ]
    to_image = numpy_helper.from_array(np.array([1, 8, 1, 1], np.int64), "to_image")
    dims = numpy_helper.from_array(np.array([2], np.int64), "dims")
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])]
    outputs += [helper.make_tensor_value_info("zeros", TensorProto.FLOAT, [2])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])]
    graph = helper.make_graph(nodes, "g", inputs, outputs, [*inits, to_image, dims])
    path = tmp_path / "shared_input_names.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    onnx.checker.check_model(str(path))
    report = inspect(path)
    assert report.checkpoint.n_parameters == sum(math.prod(s) for s in shapes.values())
    exp = report.expectation
    assert exp is not None and exp.matches and exp.total == report.checkpoint.n_parameters
    assert {c.layer: c.expected for c in exp.layers} == {"ln": 16, "auto.cast": 256 + 32}
    assert not [f for f in report.findings if f.severity != "info"]
    value = next(t for t in report.checkpoint.tensors if t.section == "attribute")
    attribute = next(a for n in onnx.load(str(path)).graph.node for a in n.attribute if n.op_type == "ConstantOfShape")
    assert (value.kind, value.shape, value.use) == (
        "other",
        tuple(attribute.t.dims),
        ("ConstantOfShape", "value", "/head/ConstantOfShape", False),
    )
    assert next(r for r in report.roles if r.name == value.name).role == "graph_constant"


def test_a_bias_added_to_a_quantized_layers_output_is_that_layers(tmp_path: Path) -> None:
    """onnxruntime's `quantize_dynamic` turns a Conv and a Linear into ConvInteger and MatMulInteger whose outputs are
    cast, scaled (Mul) and then given the float bias by an Add: each bias is its layer's (the layer's operator, input
    `bias`, its node), a conv's and a dense layer's, the count torch's."""
    torch = pytest.importorskip("torch")
    quantization = pytest.importorskip("onnxruntime.quantization")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(128, 5))
    path, quantized = tmp_path / "m.onnx", tmp_path / "m_int8.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's chatter
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), (torch.ones(1, 3, 6, 6),), str(path), dynamo=False)
    with contextlib.redirect_stderr(io.StringIO()):  # (its advice to pre-process the model)
        quantization.quantize_dynamic(path, quantized, op_types_to_quantize=["Conv", "MatMul", "Gemm"])
    graph = onnx.load(str(quantized)).graph
    layers = {n.op_type: n.name for n in graph.node if n.op_type in ("ConvInteger", "MatMulInteger")}
    report = inspect(quantized)
    uses = {t.name: t.use for t in report.checkpoint.tensors}
    assert uses["0.bias"] == ("ConvInteger", "bias", layers["ConvInteger"], False)
    assert uses["3.bias"] == ("MatMulInteger", "bias", layers["MatMulInteger"], False)
    assert {r.name: r.role for r in report.roles if r.name.endswith("bias")} == {"0.bias": "conv", "3.bias": "dense"}
    assert report.checkpoint.n_parameters == sum(p.numel() for p in model.parameters())
    assert not [f for f in report.findings if f.severity.value != "info"]


def test_dynamically_quantized_lstm_counts_its_int8_weights(tmp_path: Path) -> None:
    """onnxruntime's `quantize_dynamic` turns an LSTM into its DynamicQuantizeLSTM (int8 W and R, transposed, float B;
    ddddocr's shipped `common_old.onnx` holds one): those are the LSTM's weights, read as their values, its scales and
    zero points other state; the count is torch's (it was the Linear's 132 of 3,972)."""
    torch = pytest.importorskip("torch")
    quantization = pytest.importorskip("onnxruntime.quantization")
    torch.manual_seed(0)

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm, self.fc = torch.nn.LSTM(12, 16, bidirectional=True), torch.nn.Linear(32, 4)

        def forward(self, x: Any) -> Any:
            return self.fc(self.lstm(x)[0])

    head = Head().eval()
    path, quantized = tmp_path / "lstm.onnx", tmp_path / "lstm_int8.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's chatter
        warnings.simplefilter("ignore")
        torch.onnx.export(head, (torch.ones(5, 1, 12),), str(path), dynamo=False)
    with contextlib.redirect_stderr(io.StringIO()):  # (its advice to pre-process the model)
        quantization.quantize_dynamic(path, quantized, op_types_to_quantize=["LSTM"])
    graph = onnx.load(str(quantized)).graph
    node = next(n for n in graph.node if n.op_type == "DynamicQuantizeLSTM")
    report = inspect(quantized)
    kinds = {t.name: t.kind for t in report.checkpoint.tensors}
    assert [kinds[name] for name in node.input[1:4]] == [TensorKind.PARAMETER] * 3
    assert all(kinds[name] is TensorKind.OTHER for name in node.input[8:] if name)
    assert report.checkpoint.n_parameters == sum(p.numel() for p in head.parameters())
    assert not [f for f in report.findings if f.severity.value != "info"]


@pytest.mark.parametrize("dynamo", [False, True])
def test_decomposed_norms_take_the_norm_role(tmp_path: Path, dynamo: bool) -> None:
    """A LayerNorm and an RMSNorm written as elementwise nodes (a Sqrt of the variance, a Div or a Reciprocal, the
    scale's Mul, the shift's Add: what a model computing its norms by hand exports to, as tf2onnx writes JAX's
    LayerNorm in magika's model): their scale and shift are norms, by the graph (they were learned tensors, each its
    node's operand `B`); the count is torch's; a plain elementwise weight elsewhere stays a learned tensor."""
    torch, _ = _exporting(dynamo)
    nn = torch.nn

    class Block(nn.Module):  # (parameter names no rule reads: the roles come from the graph)
        def __init__(self) -> None:
            super().__init__()
            self.p0, self.p1, self.p2 = (nn.Parameter(torch.randn(8)) for _ in range(3))
            self.p3 = nn.Parameter(torch.randn(8))  # a gate on the input: no norm
            self.fc = nn.Linear(8, 8)

        def forward(self, x: Any) -> Any:
            x = x * self.p3
            centred = x - x.mean(-1, keepdim=True)
            x = centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5) * self.p0 + self.p1  # LayerNorm
            x = self.fc(x)
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.p2  # RMSNorm

    model = Block().eval()
    path = tmp_path / "norms.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, 8),), str(path), dynamo=dynamo)
    report = inspect(path)
    assert report.checkpoint.n_parameters == sum(p.numel() for p in model.parameters())
    roles = {t.name: r.role for t, r in zip(report.checkpoint.tensors, report.roles, strict=True)}
    assert {roles[name] for name in ("p0", "p1", "p2")} == {"norm"}
    assert roles["p3"] == "learned_tensor"
    assert not [f for f in report.findings if f.severity.value != "info"], report.findings
