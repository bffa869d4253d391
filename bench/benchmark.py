"""Benchmark: `inspector FILE --json` against the full-load baselines, on 1 GiB and 2 GiB files of each format.

    pip install -e '.[test]' 'torch==2.13.0'
    python bench/benchmark.py [--out DIR] [--keep] [--sizes 1,2] [--repeat 2]

Makes, in a temporary folder (or --out), a 1 GiB and a 2 GiB file of each format with 130 tensors
(safetensors, npz, PyTorch zip, Keras-2-style HDF5, MXNet .params written by a small writer of the
documented layout), plus a 10,000-tensor safetensors file and PyTorch file. Each measurement runs in a
fresh process: wall time (best of --repeat), peak resident memory (ru_maxrss of the child) and bytes
the process read through system calls (rchar from /proc/self/io at exit). Prints one table and the
targets (inspector under 0.5 s and 100 MB; under a tenth of the baseline's time; 2 GiB within 1.2x of
1 GiB; 10,000 tensors well under 2 s).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
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


WRITERS = {
    "safetensors": (".safetensors", write_safetensors),
    "npz": (".npz", write_npz),
    "pytorch-zip": (".pt", write_torch),
    "keras-h5": (".h5", write_keras_h5),
    "mxnet-params": (".params", write_mxnet),
}
MANY_FORMATS = ("safetensors", "pytorch-zip")


def make_files(out: Path, sizes: list[int]) -> list[tuple[str, str, Path]]:
    """(format, size label, path) of every benchmark file."""
    files = []
    for gib in sizes:
        tensors = arrays(gib * GIB)
        for fmt, (suffix, write) in WRITERS.items():
            path = out / f"model_{gib}g{suffix}"
            if not path.exists():
                write(path, tensors)
            files.append((fmt, f"{gib} GiB", path))
    many = {f"block.{i}.weight": np.full(64, 0.5, dtype=np.float32) for i in range(10_000)}
    for fmt in MANY_FORMATS:
        suffix, write = WRITERS[fmt]
        path = out / f"many{suffix}"
        if not path.exists():
            write(path, many)
        files.append((fmt, "10,000 tensors", path))
    return files


READ_H5 = (
    "import h5py\nwith h5py.File(P) as f: f.visititems(lambda n, o: (o[()], None)[1] if hasattr(o, 'shape') else None)"
)
SAFE_OPEN = (
    "from safetensors import safe_open\nwith safe_open(P, 'np') as f: [f.get_slice(k).get_shape() for k in f.keys()]"
)
BASELINES = {
    "safetensors": ("safetensors.numpy.load_file", "from safetensors.numpy import load_file; load_file(P)"),
    "npz": ("np.load every array", "import numpy as np\nwith np.load(P) as z: [z[k] for k in z.files]"),
    "pytorch-zip": ("torch.load", "import torch; torch.load(P)"),
    "keras-h5": ("h5py read every dataset", READ_H5),
    "mxnet-params": ("read the whole .params", "open(P, 'rb').read()"),
}  # fmt: skip
EXTRAS = {
    "safetensors": ("safe_open (keys, shapes)", SAFE_OPEN),
    "pytorch-zip": ("torch.load(mmap, meta)", "import torch; torch.load(P, mmap=True, map_location='meta')"),
}  # fmt: skip
INSPECTOR = "import sys; from inspector.cli import main; raise SystemExit(main([P, '--json']))"


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hostile", action="store_true", help="only the safety bounds on small hostile pickles")
    ap.add_argument("--out", help="folder for the files (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the files")
    ap.add_argument("--sizes", default="1,2", help="file sizes in GiB")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="inspector-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.hostile:
        return hostile(out)
    need = sum(sizes) * 5 * GIB * 1.1
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
        files = make_files(out, sizes)
        rows = []
        inspector_times: dict[tuple[str, str], float] = {}
        for fmt, label, path in files:
            try:
                t, m, r = measure(INSPECTOR, path, args.repeat)
            except RuntimeError as exc:
                rows.append([fmt, label, "inspector --json", "failed", "", "", str(exc)[-80:], path.stat().st_size])
                continue
            inspector_times[(fmt, label)] = t
            rows.append([fmt, label, "inspector --json", f"{t:.3f}", f"{m:.0f}", f"{r:.2f}", "", path.stat().st_size])
            for entry in (BASELINES.get(fmt), EXTRAS.get(fmt)):
                if entry is None or (label.startswith("10,000") and entry is EXTRAS.get(fmt)):
                    continue
                name, code = entry
                bt, bm, br = measure(code, path, 1 if entry is BASELINES.get(fmt) else args.repeat)
                rows.append([fmt, label, name, f"{bt:.3f}", f"{bm:.0f}", f"{br:.2f}", f"{bt / t:.1f}x", ""])
        print(tabulate(rows, headers=["format", "file", "run", "wall s", "peak MB", "read MB", "baseline / inspector",
                                      "bytes"], disable_numparse=True))  # fmt: skip
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
