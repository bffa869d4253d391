"""Mutation fuzzing of every loader and of the analysis of whatever loads (longer runs than the property tests).

    python scripts/fuzz.py --seconds 600 [--out fuzz-crashes] [--seed 1] [--only .gguf,.onnx]

Takes every real file the hostile tests use (shared fixtures and sample_models), mutates it (truncate,
flip bytes, overwrite with 0x00/0xFF, duplicate or delete a chunk, splice two files, blow up a length
field) and loads and analyses it in this process under a per-case time limit and an address-space cap. Any outcome
other than a report or an InspectorError (another exception, a hang past the limit, running out of memory)
is a finding: the input is saved to --out and counted. Prints one summary line per minute and a total.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inspector import load  # noqa: E402
from inspector.errors import InspectorError  # noqa: E402
from inspector.report import analyse  # noqa: E402
from loaders._hdf5 import MAX_SECONDS  # noqa: E402
from tests.conftest import FIXTURES, SAMPLES  # noqa: E402
from tests.hostile import seed_files  # noqa: E402

# A case's bound: past the HDF5 child's own limit, so a corrupt HDF5 file that libhdf5 loops on shows as the
# inspector's bounded refusal (a FormatError after MAX_SECONDS), not as this script's timeout.
CASE_SECONDS = MAX_SECONDS + 5
# Checkpoints of several files: one member is mutated, its siblings are copied beside it unchanged.
MULTI_FILE_DIRS = (
    SAMPLES / "tf" / "keras_adam",
    SAMPLES / "tf" / "tf1_adam",
    SAMPLES / "dcp" / "adam_step",
    FIXTURES / "tf",
)
MEMORY_CAP = 4 << 30


class CaseTimeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise CaseTimeout


def mutate(rng: random.Random, data: bytes, other: bytes) -> bytes:
    b = bytearray(data)
    op = rng.randrange(7)
    if not b:
        return bytes(rng.randbytes(rng.randrange(64)))
    if op == 0:
        return bytes(b[: rng.randrange(len(b) + 1)])
    if op == 1:
        for _ in range(rng.randint(1, 16)):
            pos = rng.randrange(min(len(b), 1024)) if rng.random() < 0.6 else rng.randrange(len(b))
            b[pos] = rng.randrange(256)
    elif op == 2:
        pos = rng.randrange(len(b))
        b[pos : pos + 8] = (b"\xff" if rng.random() < 0.5 else b"\x00") * 8
    elif op == 3:
        pos, n = rng.randrange(len(b)), rng.randint(1, 256)
        b[pos:pos] = b[pos : pos + n]
    elif op == 4:
        pos, n = rng.randrange(len(b)), rng.randint(1, 256)
        del b[pos : pos + n]
    elif op == 5:
        cut = rng.randrange(len(b))
        return bytes(b[:cut]) + other[rng.randrange(len(other) + 1) :]
    else:  # a length field far beyond the file
        pos = rng.randrange(min(len(b), 512))
        b[pos : pos + 8] = rng.choice([2**31, 2**32 - 1, 2**60, 2**64 - 1]).to_bytes(8, "little")
    return bytes(b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--out", default="fuzz-crashes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="comma-separated file suffixes to fuzz (default: every seed file)")
    args = ap.parse_args()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    signal.signal(signal.SIGALRM, _alarm)
    rng = random.Random(args.seed)
    only = tuple(s for s in args.only.split(",") if s)
    seeds = [(p, p.read_bytes()) for p in seed_files() if not only or p.name.endswith(only)]
    seeds += [(p, p.read_bytes()) for d in MULTI_FILE_DIRS if d.is_dir() for p in sorted(d.iterdir())
              if p.is_file() and (not only or p.name.endswith(only))]  # fmt: skip
    out = Path(args.out)
    cases = errors = reports = crashes = 0
    slowest = (0.0, "")
    start = last = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        while time.monotonic() - start < args.seconds:
            path, data = rng.choice(seeds)
            blob = mutate(rng, data, rng.choice(seeds)[1])
            case = Path(tmp) / f"case{cases}"
            case.mkdir()
            if path.parent in MULTI_FILE_DIRS:
                for sibling in path.parent.iterdir():
                    shutil.copy(sibling, case / sibling.name)
            target = case / path.name
            target.write_bytes(blob)
            t0 = time.monotonic()
            signal.alarm(CASE_SECONDS)
            try:
                ckpt = load(target)
                assert sum(r.length for r in ckpt.regions) == ckpt.file_size, "regions do not tile the file"
                analyse(ckpt)  # roles, kinds, the expectation and the byte accounting on whatever loaded
                reports += 1
            except InspectorError:
                errors += 1
            except BaseException as exc:  # noqa: BLE001 - everything else is what we are hunting
                if isinstance(exc, KeyboardInterrupt):
                    raise
                crashes += 1
                out.mkdir(exist_ok=True)
                name = f"{crashes:04d}-{type(exc).__name__}-{path.name}"
                (out / name).write_bytes(blob)
                (out / f"{name}.txt").write_text("".join(traceback.format_exception(exc)))
            finally:
                signal.alarm(0)
                shutil.rmtree(case, ignore_errors=True)
            took = time.monotonic() - t0
            if took > slowest[0]:
                slowest = (took, path.name)
            cases += 1
            if time.monotonic() - last > 60:
                last = time.monotonic()
                print(f"{last - start:6.0f}s {cases:,} cases, {crashes} crashes", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{cases:,} cases in {time.monotonic() - start:.0f} s over {len(seeds)} seed files: {reports:,} reports, "
        f"{errors:,} clean errors, {crashes} crashes/hangs; slowest case {slowest[0]:.2f} s ({slowest[1]}); "
        f"peak RSS {peak:.0f} MiB"
    )
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
