"""Benchmark: start-up and scale of `inspector FILE --json` (issue 16), and the full-load baselines.

    pip install -e '.[test]' 'torch==2.13.0'
    python bench/benchmark.py [--out DIR] [--keep] [--runs 11] [--formats a,b]   start-up table and scaling
    python bench/benchmark.py --baselines [--sizes 1,2] [--repeat 2]         the full-load baselines table
    python bench/benchmark.py --html         the HTML page's cost on a file of 100,000 tensors

The default run makes a 1 GiB file of each format with 128 tensors (safetensors, npz, PyTorch zip, Keras-2-style
HDF5, MXNet .params written by a small writer of the documented layout, GGUF by gguf-py, ONNX with external data,
a TensorFlow checkpoint, a PyTorch distributed checkpoint, a TF Lite model laid out by tests/hostile.py's FlatBuffers
writer; --formats picks a subset) and prints, per format:
the median whole-process wall time of `inspector FILE --json` over --runs runs alternating with the reference
`python -c pass` in the same venv (HDF5: `python -c "import h5py"`), as a ratio to the reference's median; peak
RSS (VmHWM); bytes the process read through system calls (rchar, the interpreter's own files included) and bytes
pulled from storage for the file after its pages were evicted from the page cache (read_bytes of a run after
posix_fadvise(DONTNEED): the cold-file cost, page-cache readahead included). Then the 1,000 / 10,000 / 100,000
tiny-tensor scaling of safetensors and PyTorch zip files with the growth exponents log10(t10k / t1k) and
log10(t100k / t10k). Targets (issue 16): <= 3x `python -c pass`, <= 1.3x `import h5py`, <= 20 MiB peak (non-HDF5),
100,000 tensors <= 1.5 s and <= 200 MiB, exponent 10k -> 100k <= 1.05.
`--instructions` adds, per format, the instructions of one run and of the reference counted by valgrind's cachegrind
(`apt-get install valgrind`), and their ratio: exact and the same on a loaded machine, where the wall-time ratio is
not (the interpreter's hash seed fixed, so that one run is every run).

`--baselines`: a 1 GiB and a 2 GiB file of each format with 130 tensors, plus 10,000-tensor files; wall time
(best of --repeat), peak memory and rchar of the inspector against each library's full load, and the targets
(under a tenth of the baseline's time; 2 GiB within 1.2x of 1 GiB).

`--data` (issue 17): `inspector diff A B --data` between two 1 GiB files of different formats holding the
same values, and `inspector FILE --data`, with their peak memory (target: under 200 MiB). `--data-only`
runs just these.
With --remote (needs the [remote] extra), the same files are also read over HTTP from a range-capable
server on 127.0.0.1 (tests/servers.py), and a second table gives, per file, the bytes and requests the
remote read cost against the bytes the loaders read locally (the structures), and its wall time.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N_TENSORS = 130
GIB = 1 << 30
# Printed by every measured process at exit: bytes it read through system calls, and its own peak memory
# (VmHWM; the parent's ru_maxrss would include the memory a forked child inherits before exec).
PRELUDE = (
    "import atexit, sys\n"
    "def _io():\n"
    "    for line in open('/proc/self/io'):\n"
    "        if line.startswith('rchar'): sys.stderr.write('RCHAR ' + line.split()[1] + '\\n')\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM'): sys.stderr.write('HWM ' + line.split()[1] + '\\n')\n"
    "atexit.register(_io)\n"
)
# The same for the start-up table, with the bytes pulled from storage (read_bytes: page-cache misses).
PRELUDE_IO = (
    "import atexit, sys\n"
    "def _io():\n"
    "    for line in open('/proc/self/io'):\n"
    "        key, _, value = line.partition(':')\n"
    "        if key in ('rchar', 'read_bytes'): sys.stderr.write(key.upper() + ' ' + value.strip() + '\\n')\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM'): sys.stderr.write('HWM ' + line.split()[1] + '\\n')\n"
    "atexit.register(_io)\n"
)


def arrays(total_bytes: int, n: int = N_TENSORS) -> dict[str, np.ndarray]:
    """n float32 tensors adding up to about total_bytes: two small ones and n-2 equal matrices."""
    rows = max(1, (total_bytes // (n - 2)) // (1024 * 4))
    out = {f"layer_{i:03d}.weight": np.full((rows, 1024), 0.5, dtype=np.float32) for i in range(n - 2)}
    out["norm.weight"] = np.ones(1024, dtype=np.float32)
    out["norm.bias"] = np.zeros(1024, dtype=np.float32)
    return out


def write_mxnet(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """MXNet 1.x NDArray list (FORMATS.md 1.2): list magic, V2 dense float32 records, names at the end."""
    with open(path, "wb") as fh:
        fh.write(struct.pack("<QQQ", 0x112, 0, len(tensors)))
        for a in tensors.values():
            fh.write(struct.pack("<Ii", 0xF993FAC9, 0) + struct.pack(f"<i{a.ndim}q", a.ndim, *a.shape))
            fh.write(struct.pack("<iii", 1, 0, 0))
            fh.write(np.ascontiguousarray(a).tobytes())
        fh.write(struct.pack("<Q", len(tensors)))
        for name in tensors:
            raw = f"arg:{name}".encode()
            fh.write(struct.pack("<Q", len(raw)) + raw)


def write_keras_h5(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """A Keras 2 save_weights layout: root layer_names, /<layer>/<layer>/<var>:0 datasets."""
    import h5py

    with h5py.File(path, "w") as f:
        layers = [name.split(".")[0] for name in tensors]
        f.attrs["layer_names"] = np.array(sorted(set(layers)), dtype="S")
        f.attrs["keras_version"] = "2.21.0"
        f.attrs["backend"] = "tensorflow"
        groups: dict[str, list[str]] = {}
        for name, a in tensors.items():
            layer, var = name.split(".")
            var = {"weight": "kernel", "bias": "bias"}[var]
            f.create_dataset(f"{layer}/{layer}/{var}:0", data=a)
            groups.setdefault(layer, []).append(f"{layer}/{var}:0")
        for layer, names in groups.items():
            f[layer].attrs["weight_names"] = np.array(names, dtype="S")


def write_torch(path: Path, tensors: dict[str, np.ndarray]) -> None:
    import torch

    torch.save({k: torch.from_numpy(v) for k, v in tensors.items()}, path)


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    from safetensors.numpy import save_file

    save_file(tensors, path)


def write_npz(path: Path, tensors: dict[str, np.ndarray]) -> None:
    np.savez(path, **tensors)


def write_gguf(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """gguf-py's writer, float32 tensors (quantizing a gigabyte in numpy would take minutes)."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    for name, a in tensors.items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_onnx(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """A chain of MatMul nodes whose weights are external data (a protobuf cannot exceed 2 GiB): the data file is
    streamed by numpy, the model by onnx.helper with each initializer's location, offset and length."""
    from onnx import TensorProto, helper

    location = path.name + ".data"
    inits, nodes, offset = [], [], 0
    with open(path.parent / location, "wb") as fh:
        for i, (name, a) in enumerate(tensors.items()):
            fh.write(a.tobytes())
            t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=a.shape)
            t.data_location = TensorProto.EXTERNAL
            for key, value in (("location", location), ("offset", offset), ("length", a.nbytes)):
                t.external_data.add(key=key, value=str(value))
            offset += a.nbytes
            inits.append(t)
            nodes.append(helper.make_node("MatMul", ["x", name], [f"y{i}"]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1024])
    graph = helper.make_graph(
        nodes, "bench", [x], [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None)], inits
    )
    path.write_bytes(helper.make_model(graph).SerializeToString())


def write_tf_checkpoint(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """tf.train.Checkpoint.write: PREFIX.index + PREFIX.data-00000-of-00001 (path is the .index)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    variables = {name.replace(".", "_"): tf.Variable(a) for name, a in tensors.items()}
    tf.train.Checkpoint(**variables).write(str(path)[: -len(".index")])


def write_dcp(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """torch.distributed.checkpoint.save in one process: a folder with .metadata (path) and __0_0.distcp."""
    import warnings

    import torch
    import torch.distributed.checkpoint as dcp

    warnings.simplefilter("ignore")
    dcp.save({"model": {k: torch.from_numpy(v) for k, v in tensors.items()}}, checkpoint_id=str(path.parent))


def write_tflite(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """A TF Lite model of the documented layout (the TF Lite schema's FlatBuffer, laid out by tests/hostile.py's
    writer, whose files the loader's tests read beside the real converter's): one FULLY_CONNECTED a matrix over one
    input, each matrix a constant of its own buffer. (TF's converter takes about 19 GB of memory and 100 s to write
    a 1 GiB model.)"""
    sys.path.insert(0, str(ROOT))
    from tests.hostile import Blob, Table, Vector, flatbuffer

    kinds: dict[int, str] = {}

    def table(kind: str, **fields: object) -> Table:
        made = Table(**fields)
        kinds[id(made)] = kind
        return made

    matrices = [(name, a) for name, a in tensors.items() if a.ndim == 2]
    rows = matrices[0][1].shape[0]
    x = table("tensor", shape=Vector("i", [1, rows]), type=("b", 0), buffer=("I", 0), name=Vector("s", "x"))
    tensor_tables = [x]
    buffers, operators = [table("buffer")], []
    for i, (name, a) in enumerate(matrices):
        data = a.tobytes()
        buffers.append(table("buffer", data=Blob(struct.pack("<I", len(data)) + data)))
        tensor_tables.append(table("tensor", shape=Vector("i", [a.shape[1], rows]), type=("b", 0), buffer=("I", i + 1),
                                   name=Vector("s", name)))  # fmt: skip
        tensor_tables.append(table("tensor", shape=Vector("i", [1, a.shape[1]]), type=("b", 0), buffer=("I", 0),
                                   name=Vector("s", f"y{i}")))  # fmt: skip
        operators.append(table("operator", opcode_index=("I", 0), inputs=Vector("i", [0, 2 * i + 1, -1]),
                               outputs=Vector("i", [2 * i + 2])))  # fmt: skip
    code = table("code", deprecated_builtin_code=("b", 9), version=("i", 1), builtin_code=("i", 9))
    outputs = list(range(2, 2 * len(matrices) + 1, 2))
    subgraph = table("subgraph", tensors=Vector("t", tensor_tables), inputs=Vector("i", [0]),
                     outputs=Vector("i", outputs), operators=Vector("t", operators),
                     name=Vector("s", "main"))  # fmt: skip
    model = table("model", version=("I", 3), operator_codes=Vector("t", [code]), subgraphs=Vector("t", [subgraph]),
                  buffers=Vector("t", buffers))  # fmt: skip
    path.write_bytes(flatbuffer(model, kinds))


WRITERS = {
    "safetensors": (".safetensors", write_safetensors),
    "npz": (".npz", write_npz),
    "pytorch-zip": (".pt", write_torch),
    "keras-h5": (".h5", write_keras_h5),
    "mxnet-params": (".params", write_mxnet),
    "gguf": (".gguf", write_gguf),
    "onnx": (".onnx", write_onnx),
    "tensorflow-checkpoint": (".index", write_tf_checkpoint),
    "torch-dcp": ("_dcp/.metadata", write_dcp),
    "tflite": (".tflite", write_tflite),
}
MANY_FORMATS = ("safetensors", "pytorch-zip", "gguf", "onnx", "tensorflow-checkpoint", "torch-dcp")


def checkpoint_bytes(path: Path) -> int:
    """Bytes of the whole checkpoint a path stands for (a TF bundle's shards, a DCP folder)."""
    if path.name == ".metadata":
        return sum(p.stat().st_size for p in path.parent.iterdir())
    if path.suffix == ".index":
        return sum(p.stat().st_size for p in path.parent.glob(path.stem + ".*"))
    external = path.with_name(path.name + ".data")  # ONNX external data
    return path.stat().st_size + (external.stat().st_size if path.suffix == ".onnx" and external.exists() else 0)


def make_files(out: Path, sizes: list[int], formats: list[str]) -> list[tuple[str, str, Path]]:
    """(format, size label, path) of every benchmark file."""
    files = []
    for gib in sizes:
        tensors = arrays(gib * GIB)
        for fmt, (suffix, write) in WRITERS.items():
            if fmt not in formats:
                continue
            path = out / f"model_{gib}g{suffix}"
            if not path.exists():
                write(path, tensors)
            files.append((fmt, f"{gib} GiB", path))
    many = {f"block.{i}.weight": np.full(64, 0.5, dtype=np.float32) for i in range(10_000)}
    for fmt in (f for f in MANY_FORMATS if f in formats):
        suffix, write = WRITERS[fmt]
        path = out / f"many{suffix}"
        path.parent.mkdir(exist_ok=True)
        if not path.exists():
            write(path, many)
        files.append((fmt, "10,000 tensors", path))
    return files


READ_H5 = (
    "import h5py\nwith h5py.File(P) as f: f.visititems(lambda n, o: (o[()], None)[1] if hasattr(o, 'shape') else None)"
)
READ_GGUF = "import gguf, numpy as np\n[np.array(t.data) for t in gguf.GGUFReader(P).tensors]"
SAFE_OPEN = (
    "from safetensors import safe_open\nwith safe_open(P, 'np') as f: [f.get_slice(k).get_shape() for k in f.keys()]"
)
TF_QUIET = "import os; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\nimport tensorflow as tf\n"
TF_READ = TF_QUIET + "r = tf.train.load_checkpoint(P[:-6])\n[r.get_tensor(k) for k in r.get_variable_to_shape_map()]"
TF_LIST = TF_QUIET + "tf.train.list_variables(P[:-6])"
DCP_READ = (
    "import os, warnings; warnings.simplefilter('ignore')\n"
    "from torch.distributed.checkpoint.state_dict_loader import _load_state_dict_from_keys\n"
    "_load_state_dict_from_keys(checkpoint_id=os.path.dirname(P))"
)
DCP_META = (
    "import os\nfrom torch.distributed.checkpoint import FileSystemReader\n"
    "FileSystemReader(os.path.dirname(P)).read_metadata()"
)
TFLITE_READ = "import tensorflow as tf\ni = tf.lite.Interpreter(model_path=P)\ni.allocate_tensors()"
BASELINES = {
    "safetensors": ("safetensors.numpy.load_file", "from safetensors.numpy import load_file; load_file(P)"),
    "npz": ("np.load every array", "import numpy as np\nwith np.load(P) as z: [z[k] for k in z.files]"),
    "pytorch-zip": ("torch.load", "import torch; torch.load(P)"),
    "keras-h5": ("h5py read every dataset", READ_H5),
    "mxnet-params": ("read the whole .params", "open(P, 'rb').read()"),
    "gguf": ("GGUFReader, every tensor copied", READ_GGUF),
    "onnx": ("onnx.load (with external data)", "import onnx; onnx.load(P)"),
    "tensorflow-checkpoint": ("tf load_checkpoint, every tensor", TF_READ),
    "torch-dcp": ("DCP load every tensor", DCP_READ),
    "tflite": ("tf.lite.Interpreter, tensors allocated", TFLITE_READ),
}  # fmt: skip
EXTRAS = {
    "safetensors": ("safe_open (keys, shapes)", SAFE_OPEN),
    "pytorch-zip": ("torch.load(mmap, meta)", "import torch; torch.load(P, mmap=True, map_location='meta')"),
    "gguf": ("GGUFReader (memmap only)", "import gguf; gguf.GGUFReader(P)"),
    "onnx": ("onnx.load(load_external_data=False)", "import onnx; onnx.load(P, load_external_data=False)"),
    "tensorflow-checkpoint": ("tf.train.list_variables", TF_LIST),
    "torch-dcp": ("FileSystemReader.read_metadata", DCP_META),
}  # fmt: skip
# `inspector P --json` as the console script runs it (`cli.run`: the exit handlers, then no teardown)
INSPECTOR = "import sys; sys.argv = ['inspector', P, '--json']; from inspector.cli import run; run()"
WITH_HTML = (
    "import sys; sys.argv = ['inspector', P, '--json', '--html', P + '.html']; from inspector.cli import run; run()"
)


def html_figures(out: Path, repeat: int) -> None:
    """`--html`: the cost of the HTML page on a safetensors file of 100,000 tensors, and the page's size."""
    from safetensors.numpy import save_file

    path = out / "100k.safetensors"
    save_file({f"model.layers.{i // 100}.mlp.{i % 100}.weight": np.zeros(2, np.float32) for i in range(100_000)}, path)
    t_json, m_json, _ = measure(INSPECTOR, path, repeat)
    t_html, m_html, _ = measure(WITH_HTML, path, repeat)
    page = Path(str(path) + ".html")
    print(f"100,000 tensors, {path.stat().st_size:,} bytes: --json {t_json:.2f} s {m_json:.0f} MB; "
          f"--json --html {t_html:.2f} s {m_html:.0f} MB; page {page.stat().st_size:,} bytes")  # fmt: skip


def measure(code: str, path: Path, repeat: int) -> tuple[float, float, float]:
    """(best wall seconds, peak RSS MB, bytes read MB) of running `code` with P = path in a fresh python."""
    script = PRELUDE + f"P = {str(path)!r}\n" + code + "\n"
    best, peak, read = float("inf"), 0.0, 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                cwd=ROOT)  # fmt: skip
        _, status, _usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err = proc.stderr.read().decode() if proc.stderr else ""
        if status != 0:
            raise RuntimeError(f"{code!r} on {path} failed: {err[-500:]}")
        best = min(best, wall)
        peak = max(peak, max((int(x.split()[1]) for x in err.splitlines() if x.startswith("HWM ")), default=0) / 1024)
        read = max(read, max((int(x.split()[1]) for x in err.splitlines() if x.startswith("RCHAR")), default=0) / 1e6)
    return best, peak, read


DATA_TARGET_MB = 200
# exit 1 (differences found) is a successful run here
DIFF_DATA = (
    "from inspector.cli import main\nraise SystemExit(main(['diff', P, {other}, '--data', '--json']) not in (0, 1))"
)
FILE_DATA = "from inspector.cli import main\nraise SystemExit(main([P, '--data', '--json']))"


def data_rows(out: Path, repeat: int) -> list[list[str]]:
    """`--data` runs on the 1 GiB files: diff across formats (values streamed from both) and FILE --data.

    Identical stored blocks are compared byte for byte; the float16 copy makes every block go through the
    float64 arithmetic (the slow path).
    """
    base = out / "model_1g.safetensors"
    half = out / "model_1g_f16.safetensors"
    if not half.exists():
        write_safetensors(half, {k: v.astype(np.float16) for k, v in arrays(GIB).items()})
    runs = [("diff --data vs pytorch-zip", DIFF_DATA, out / "model_1g.pt"),
            ("diff --data vs mxnet-params", DIFF_DATA, out / "model_1g.params"),
            ("diff --data vs keras-h5 (h5py)", DIFF_DATA, out / "model_1g.h5"),
            ("diff --data vs float16 safetensors", DIFF_DATA, half),
            ("FILE --data", FILE_DATA, base)]  # fmt: skip
    rows = []
    for name, code, other in runs:
        t, m, r = measure(code.replace("{other}", repr(str(other))), base, repeat)
        verdict = "ok" if m < DATA_TARGET_MB else "OVER TARGET"
        size = base.stat().st_size + (other.stat().st_size if other != base else 0)
        rows.append(["safetensors 1 GiB", name, f"{t:.3f}", f"{m:.0f}", f"{r:.2f}", verdict, size])
    return rows


def remote_rows(out: Path, files: list[tuple[str, str, Path]]) -> list[list[str]]:
    """Per file: what `inspector URL` transferred from a loopback range server, against the local reads."""
    sys.path.insert(0, str(ROOT))
    from inspector.probe import Probe
    from inspector.registry import detect_probe
    from inspector.report import inspect
    from tests.servers import RangeHandler, serving

    rows = []
    with serving(out, RangeHandler) as (base, server):
        for fmt, label, path in files:
            with Probe(path) as probe:
                detect_probe(probe).load(probe)
                structures = probe.bytes_read
            server.sent = 0
            start = time.perf_counter()
            attributes = inspect(f"{base}/{path.relative_to(out)}").checkpoint.attributes
            wall = time.perf_counter() - start
            sent = int(attributes["remote.bytes_transferred"])
            assert sent == server.sent, (sent, server.sent)
            rows.append([fmt, label, f"{path.stat().st_size:,}", f"{structures:,}", f"{sent:,}",
                         f"{sent - structures:+,}", attributes["remote.requests"], f"{wall:.3f}"])  # fmt: skip
    return rows


def hostile(out: Path) -> int:
    """Safety bounds: wall time and peak memory of the inspector on small hostile pickles (issue 15)."""
    files = {
        "100 MB no-op pickle (N0 x 50M)": b"\x80\x02" + b"N0" * 50_000_000 + b"N.",
        "1 KB key with 2^100 shared leaves": b"\x80\x02}" + b")q\x00" + b"0h\x00h\x00\x86q\x00" * 100 + b"K\x01s.",
        "payload + 150,000 MARKs": b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R0" + b"(" * 150_000,
    }
    for label, data in files.items():
        path = out / "hostile.pkl"
        path.write_bytes(data)
        script = PRELUDE + f"P = {str(path)!r}\n" + INSPECTOR.replace("'--json'", "") + "\n"
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                cwd=ROOT, text=True)  # fmt: skip
        err = proc.stderr.read() if proc.stderr else ""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        peak = max((int(x.split()[1]) for x in err.splitlines() if x.startswith("HWM ")), default=0) / 1024
        cpu = usage.ru_utime + usage.ru_stime
        print(f"{label}: exit {os.waitstatus_to_exitcode(status)}, {cpu:.2f} s CPU ({wall:.2f} s wall), {peak:.0f} MB")
    return 0


STARTUP_TENSORS = 128
SCALES = (1_000, 10_000, 100_000)
SCALE_FORMATS = ("safetensors", "pytorch-zip")
REFERENCE = {"keras-h5": ("python -c 'import h5py'", "import h5py")}
DEFAULT_REFERENCE = ("python -c pass", "pass")

# What any argparse-and-json tool pays: parse the arguments, read a safetensors header, print it as JSON (the
# standard library only). Its ratio is the floor under every figure of the start-up table.
FLOOR = (
    "import argparse, json, struct, sys\n"
    "ap = argparse.ArgumentParser(prog='floor')\n"
    "ap.add_argument('path'); ap.add_argument('--json', action='store_true')\n"
    "a = ap.parse_args([P, '--json'])\n"
    "with open(a.path, 'rb') as f:\n"
    "    header = json.loads(f.read(struct.unpack('<Q', f.read(8))[0]))\n"
    "sys.stdout.write(json.dumps(header, indent=2))\n"
)
PYTHON = sys.executable  # the interpreter of the measured runs (--python: another venv, e.g. a `pip install .` one)
RUN_DIR = ROOT  # their working folder (with --python one outside the checkout, which `python -c` would import first)
STRUCTURE_KINDS = ("header", "metadata")  # regions a header-only reader must read (not data, padding or free space)


def _run(code: str, path: Path | None) -> tuple[float, dict[str, int]]:
    """Wall seconds of one fresh `python -c` (P = path) and what its prelude reported (HWM KiB, RCHAR, READ_BYTES)."""
    script = PRELUDE_IO + (f"P = {str(path)!r}\n" if path else "") + code + "\n"
    start = time.perf_counter()
    proc = subprocess.run([PYTHON, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=RUN_DIR)
    wall = time.perf_counter() - start
    err = proc.stderr.decode()
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{code!r} on {path} failed: {err[-500:]}")
    figures = {
        k: int(v)
        for k, _, v in (line.partition(" ") for line in err.splitlines())
        if k in ("HWM", "RCHAR", "READ_BYTES")
    }
    return wall, figures


def _evict(path: Path) -> None:
    """Drop the checkpoint's pages from the page cache, so the next run reads it cold."""
    files = [path]
    if path.name == ".metadata":
        files = list(path.parent.iterdir())
    elif path.suffix == ".index":
        files = list(path.parent.glob(path.stem + ".*"))
    elif path.suffix == ".onnx":
        files.append(path.with_name(path.name + ".data"))
    for f in files:
        if f.exists():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


@functools.cache  # (a reference's count is the same for every row: counted once)
def instructions(code: str, path: Path | None) -> int:
    """Instructions one fresh `python -c` run (P = path) executes, counted by cachegrind (the hash seed fixed)."""
    script = PRELUDE_IO + (f"P = {str(path)!r}\n" if path else "") + code + "\n"
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    proc = subprocess.run([*valgrind, PYTHON, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          cwd=RUN_DIR, env={**os.environ, "PYTHONHASHSEED": "0"})  # fmt: skip
    counted = [line.rpartition(" ")[2] for line in proc.stderr.decode().splitlines() if " I   refs:" in line]
    if proc.returncode not in (0, 1) or not counted:
        raise RuntimeError(f"{code!r} on {path} under cachegrind failed: {proc.stderr.decode()[-500:]}")
    return int(counted[0].replace(",", ""))


def instruction_cells(code: str, path: Path | None, ref_code: str) -> list[str]:
    """Millions of instructions of a run and of its reference, and their ratio."""
    mine, ref = instructions(code, path), instructions(ref_code, None)
    return [f"{mine / 1e6:.1f}", f"{ref / 1e6:.1f}", f"{mine / ref:.2f}x"]


def startup_row(fmt: str, path: Path, runs: int, counted: bool = False) -> list[str]:
    """Median whole-process time over `runs` alternating runs against the reference, peak RSS, bytes read (and with
    `counted`, the instructions of a run and of the reference)."""
    ref_name, ref_code = REFERENCE.get(fmt, DEFAULT_REFERENCE)
    _run(INSPECTOR, path)  # warm the interpreter's own files
    mine: list[float] = []
    ref: list[float] = []
    peak = rchar = 0
    for _ in range(runs):
        t, figures = _run(INSPECTOR, path)
        mine.append(t)
        peak, rchar = max(peak, figures.get("HWM", 0)), figures.get("RCHAR", 0)
        ref.append(_run(ref_code, None)[0])
    _evict(path)
    _, cold = _run(INSPECTOR, path)
    pulled = cold.get("READ_BYTES", 0)
    pages = structure_pages(path)
    ratio = statistics.median(mine) / statistics.median(ref)
    return [fmt, f"{checkpoint_bytes(path):,}", f"{statistics.median(mine):.3f}", ref_name,
            f"{statistics.median(ref):.3f}", f"{ratio:.2f}x", f"{peak / 1024:.1f}", f"{rchar:,}",
            f"{pulled:,}", f"{pages:,}", f"{(pulled - pages) / 1024:,.0f}",
            *(instruction_cells(INSPECTOR, path, ref_code) if counted else ())]  # fmt: skip


def structure_pages(path: Path) -> int:
    """Bytes of the page-cache pages the file's structures lie in (headers and metadata, from the inspector's own
    byte map): what a reader of exactly those structures pulls from a cold file, the least any header read can."""
    import json

    proc = subprocess.run([PYTHON, "-m", "inspector", str(path), "--json"], capture_output=True, cwd=RUN_DIR)
    report = json.loads(proc.stdout)
    page = os.sysconf("SC_PAGE_SIZE")
    touched = {
        (r.get("file", ""), n)
        for r in report["bytes"]["regions"]
        if r["kind"] in STRUCTURE_KINDS and r["length"]
        for n in range(r["start"] // page, (r["start"] + r["length"] - 1) // page + 1)
    }
    return len(touched) * page


def floor_row(path: Path, runs: int, counted: bool = False) -> list[str]:
    """The standard-library floor (`FLOOR`) on the safetensors file, against `python -c pass`, the same way."""
    _run(FLOOR, path)
    mine, ref = [], []
    for _ in range(runs):
        mine.append(_run(FLOOR, path)[0])
        ref.append(_run("pass", None)[0])
    ratio = statistics.median(mine) / statistics.median(ref)
    return ["(floor: argparse + json)", f"{checkpoint_bytes(path):,}", f"{statistics.median(mine):.3f}",
            "python -c pass", f"{statistics.median(ref):.3f}", f"{ratio:.2f}x", "", "", "", "", "",
            *(instruction_cells(FLOOR, path, "pass") if counted else ())]  # fmt: skip


def make_scaled(out: Path, fmt: str, n: int) -> Path:
    """A file of `n` two-element float32 tensors named like a 100-wide transformer stack."""
    suffix, write = WRITERS[fmt]
    path = out / f"scale_{n}{suffix}"
    if not path.exists():
        write(path, {f"model.layers.{i // 100}.mlp.{i % 100}.weight": np.zeros(2, np.float32) for i in range(n)})
    return path


def scaling_rows(out: Path, runs: int) -> list[list[str]]:
    """Per format: whole-process median time and peak RSS at 1k/10k/100k tensors, and the growth exponents."""
    rows = []
    for fmt in SCALE_FORMATS:
        times, peaks = [], []
        for n in SCALES:
            path = make_scaled(out, fmt, n)
            samples = [_run(INSPECTOR, path) for _ in range(runs if n < 100_000 else max(3, runs // 3))]
            times.append(statistics.median(t for t, _ in samples))
            peaks.append(max(f.get("HWM", 0) for _, f in samples) / 1024)
        growth = [math.log10(b / a) for a, b in zip(times, times[1:], strict=False)]
        rows.append([fmt, *(f"{t:.3f} s / {m:.0f} MiB" for t, m in zip(times, peaks, strict=True)),
                     f"{growth[0]:.2f}", f"{growth[1]:.2f}"])  # fmt: skip
    return rows


def startup(out: Path, formats: list[str], runs: int, counted: bool = False) -> None:
    """The issue-16 tables: start-up per format on 1 GiB files of 128 tensors (with `counted`, their instructions
    too), then the tensor-count scaling."""
    from tabulate import tabulate

    rows = []
    tensors = arrays(GIB, STARTUP_TENSORS)
    for fmt in formats:
        suffix, write = WRITERS[fmt]
        path = out / f"startup_1g_{fmt}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            write(path, tensors)
        rows.append(startup_row(fmt, path, runs, counted))
        if fmt == "safetensors":
            rows.append(floor_row(path, runs, counted))
    print(f"{STARTUP_TENSORS}-tensor 1 GiB files, median of {runs} runs alternating with the reference ({PYTHON}):")
    print(tabulate(rows, headers=["format", "bytes", "inspector s", "reference", "reference s", "ratio",
                                  "peak MiB", "rchar", "cold bytes pulled", "structure pages", "beyond KiB",
                                  *COUNTED_HEADERS[: 3 if counted else 0]], disable_numparse=True))  # fmt: skip
    print()
    scale = [f for f in SCALE_FORMATS if f in formats]
    if scale:
        print("Scaling with the tensor count (whole process, median; exponents: log10 of the time ratio per 10x):")
        print(tabulate(scaling_rows(out, runs), headers=["format", "1,000", "10,000", "100,000",
                                                          "exponent 1k->10k", "exponent 10k->100k"],
                       disable_numparse=True))  # fmt: skip


COUNTED_HEADERS = ("instructions M", "reference M", "ratio (instructions)")


def compile_bytecode() -> None:
    """Write the package's .pyc files first, as `pip install` does: with PYTHONDONTWRITEBYTECODE set (some CI images
    and sandboxes set it) an editable checkout would otherwise compile every module from source on every run, about
    50 ms, and every figure would measure the compiler."""
    code = "import inspector, loaders; print(inspector.__path__[0], loaders.__path__[0])"
    where = subprocess.run([PYTHON, "-c", code], check=True, capture_output=True, text=True, cwd=RUN_DIR).stdout.split()
    subprocess.run([PYTHON, "-m", "compileall", "-q", *where], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hostile", action="store_true", help="only the safety bounds on small hostile pickles")
    ap.add_argument("--out", help="folder for the files (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the files")
    ap.add_argument("--sizes", default="1,2", help="file sizes in GiB")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--html", action="store_true", help="only the HTML page's cost on 100,000 tensors")
    ap.add_argument("--data-only", action="store_true", help="only the --data runs, on 1 GiB files")
    ap.add_argument("--remote", action="store_true", help="also read every file over HTTP from 127.0.0.1")
    ap.add_argument("--remote-only", action="store_true", help="only the remote table")
    ap.add_argument("--formats", default=",".join(WRITERS), help="formats to measure (default: all)")
    ap.add_argument("--runs", type=int, default=11, help="alternating runs per start-up figure (default 11)")
    ap.add_argument("--instructions", action="store_true", help="also count start-up instructions (valgrind)")
    ap.add_argument("--baselines", action="store_true", help="the full-load baselines table instead")
    ap.add_argument(
        "--python", help="interpreter of the start-up runs (default: this one), e.g. a `pip install .` venv's"
    )
    args = ap.parse_args()
    if args.python:
        global PYTHON, RUN_DIR
        # an empty folder: `python -c` puts it first on sys.path (where the console script has its own bin folder)
        PYTHON, RUN_DIR = args.python, Path(tempfile.mkdtemp(prefix="inspector-bench-"))
    compile_bytecode()
    formats = args.formats.split(",")
    if not (args.baselines or args.html or args.data_only or args.remote or args.remote_only):
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="inspector-bench-"))
        out.mkdir(parents=True, exist_ok=True)
        try:
            startup(out, [f for f in formats if f in WRITERS], args.runs, args.instructions)
        finally:
            if not args.keep and not args.out:
                shutil.rmtree(out, ignore_errors=True)
        return 0
    if args.html:
        with tempfile.TemporaryDirectory(prefix="inspector-bench-") as tmp:
            html_figures(Path(tmp), args.repeat)
        return 0
    if args.data_only:
        args.sizes = "1"
    sizes = [int(s) for s in args.sizes.split(",")]
    formats = [f for f in args.formats.split(",") if f in WRITERS]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="inspector-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.hostile:
        return hostile(out)
    need = sum(sizes) * len(formats) * GIB * 1.1
    free = shutil.disk_usage(out).free
    if free < need:
        print(f"need {need / GIB:.0f} GiB free in {out}, have {free / GIB:.0f} GiB", file=sys.stderr)
        return 2
    from tabulate import tabulate

    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {ram:.0f} GiB RAM, Python {platform.python_version()}"
    )
    try:
        files = make_files(out, sizes, formats)
        if 1 in sizes and not args.remote_only:
            headers = ["file A", "run", "wall s", "peak MB", "read MB", f"peak < {DATA_TARGET_MB} MB", "bytes A+B"]
            print(tabulate(data_rows(out, args.repeat), headers=headers, disable_numparse=True))
            print()
        if args.remote or args.remote_only:
            print(tabulate(remote_rows(out, files), headers=["format", "file", "bytes", "structures read locally",
                  "transferred", "difference", "requests", "wall s"], disable_numparse=True))  # fmt: skip
            print()
            if args.remote_only:
                return 0
        rows = []
        inspector_times: dict[tuple[str, str], float] = {}
        for fmt, label, path in [] if args.data_only else files:
            try:
                t, m, r = measure(INSPECTOR, path, args.repeat)
            except RuntimeError as exc:
                rows.append([fmt, label, "inspector --json", "failed", "", "", str(exc)[-80:], checkpoint_bytes(path)])
                continue
            inspector_times[(fmt, label)] = t
            rows.append(
                [fmt, label, "inspector --json", f"{t:.3f}", f"{m:.0f}", f"{r:.2f}", "", checkpoint_bytes(path)]
            )
            for entry in (BASELINES.get(fmt), EXTRAS.get(fmt)):
                if entry is None or (label.startswith("10,000") and entry is EXTRAS.get(fmt)):
                    continue
                name, code = entry
                bt, bm, br = measure(code, path, 1 if entry is BASELINES.get(fmt) else args.repeat)
                rows.append([fmt, label, name, f"{bt:.3f}", f"{bm:.0f}", f"{br:.2f}", f"{bt / t:.1f}x", ""])
        if rows:
            print(tabulate(rows, headers=["format", "file", "run", "wall s", "peak MB", "read MB",
                                          "baseline / inspector", "bytes"], disable_numparse=True))  # fmt: skip
        print()
        for fmt in BASELINES:
            if (fmt, "1 GiB") in inspector_times and (fmt, "2 GiB") in inspector_times:
                ratio = inspector_times[(fmt, "2 GiB")] / inspector_times[(fmt, "1 GiB")]
                print(f"{fmt}: 2 GiB / 1 GiB inspector time = {ratio:.2f} (target <= 1.2)")
    finally:
        if not args.keep and not args.out:
            shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
