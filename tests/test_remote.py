"""Remote checkpoints and fleet audits, against real servers on 127.0.0.1 (issue 18).

A range-capable HTTP server (a stdlib `http.server` subclass) serves the sample models and files written
here by the real libraries; it counts the body bytes it sends, so the transfer the report shows is checked
against the server's own count. Another server ignores Range; another answers with errors. An S3 server
(moto's server mode) holds a bucket with a sharded model. Every remote report must equal the local one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import shutil
import socket
import struct
import subprocess
import sys
import termios
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inspector.recordtype import asdict

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")

from inspector import remote  # noqa: E402
from inspector.audit import AuditRow, audit  # noqa: E402
from inspector.cli import main  # noqa: E402
from inspector.errors import InputError  # noqa: E402
from inspector.probe import Probe  # noqa: E402
from inspector.registry import detect_probe  # noqa: E402
from inspector.render import report_dict  # noqa: E402
from inspector.report import inspect  # noqa: E402
from tests.conftest import SAMPLES  # noqa: E402
from tests.servers import FaultHandler, NoRangeHandler, RangeHandler, Server, serving  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 64 << 10  # issue 18: at most the structures plus 64 KiB for these formats


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the servers serve: the sample models, and files written here by the real libraries."""
    root = tmp_path_factory.mktemp("site")
    (root / "samples").symlink_to(SAMPLES)
    made = root / "made"
    made.mkdir()
    arrays = {f"layer{i}.weight": np.full((64, 1024), i, dtype=np.float32) for i in range(8)}  # 2 MiB
    from safetensors.numpy import save_file

    save_file(arrays, str(made / "big.safetensors"), metadata={"format": "np"})
    np.savez(made / "big_stored.npz", **{f"a{i}": np.full((16, 1024), i, np.float32) for i in range(40)})
    np.savez_compressed(
        made / "big_deflated.npz", **{f"a{i}": np.arange(16 * 1024, dtype=np.float32) for i in range(40)}
    )
    alone = made / "shard-alone"
    alone.mkdir()
    shutil.copy(SAMPLES / "hf_rau/bert-tiny-sharded/model-00001-of-00004.safetensors", alone)
    return root


@pytest.fixture(scope="module")
def http_site(site: Path) -> Iterator[tuple[str, Server]]:
    with serving(site, RangeHandler) as served:
        yield served


# -- helpers ------------------------------------------------------------------------------------------


def comparable(report: dict[str, Any], prefix: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The report with `prefix` cut from every path, and the remote.* attributes taken out."""
    doc = json.loads(json.dumps(report, default=str).replace(prefix, ""))
    transfer = {k: doc["attributes"].pop(k) for k in list(doc["attributes"]) if k.startswith("remote.")}
    return doc, transfer


def local_bytes_read(path: Path) -> int:
    """What the loaders read of a local file: the structures (the probe counts every byte asked for)."""
    with Probe(path) as probe:
        detect_probe(probe).load(probe)
        return probe.bytes_read


def npz_structures(path: Path) -> int:
    """Bytes of a stored npz that are not array data: local headers, npy headers, directory, end records."""
    import zipfile

    data = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        total = len(data) - sum(i.compress_size for i in infos)  # every byte outside the members' payloads
        for info in infos:
            with z.open(info) as member:
                np.lib.format.read_magic(member)
                np.lib.format.read_array_header_1_0(member)
                total += member.tell()  # the npy header inside the payload
    return total


def rows_without(rows: list[AuditRow], prefix: str) -> list[dict[str, Any]]:
    """Audit rows as dicts, `prefix` cut from paths and messages."""
    return [json.loads(json.dumps(asdict(r)).replace(prefix, "")) for r in rows]


SAMPLE_FILES = sorted(
    str(p.relative_to(SAMPLES))
    for p in SAMPLES.rglob("*")
    if p.is_file()
    and p.suffix in (".npz", ".safetensors", ".pt", ".bin", ".keras", ".h5", ".params")
    and "sharded" not in str(p)  # a shard is reported with its local index beside it (see the index test)
)


# -- HTTP ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("relative", SAMPLE_FILES)
def test_every_sample_reads_the_same_over_http(http_site: tuple[str, Server], relative: str) -> None:
    base, server = http_site
    local = report_dict(inspect(SAMPLES / relative))
    server.sent = 0
    remote_report = report_dict(inspect(f"{base}/samples/{relative}"))
    doc, transfer = comparable(remote_report, f"{base}/samples/")
    assert doc == comparable(local, f"{SAMPLES}/")[0]
    assert int(transfer["remote.bytes_transferred"]) == server.sent  # the server's own count
    if not relative.endswith((".h5", ".keras")):
        assert server.sent <= local_bytes_read(SAMPLES / relative) + BUDGET


@pytest.mark.parametrize("name", ["big.safetensors", "big_stored.npz", "big_deflated.npz"])
def test_large_files_cost_their_structures_plus_64k(site: Path, http_site: tuple[str, Server], name: str) -> None:
    base, server = http_site
    server.sent = server.requests = 0
    doc, transfer = comparable(report_dict(inspect(f"{base}/made/{name}")), f"{base}/made/")
    assert doc == comparable(report_dict(inspect(site / "made" / name)), f"{site}/made/")[0]
    sent, size = server.sent, (site / "made" / name).stat().st_size
    assert int(transfer["remote.bytes_transferred"]) == sent and int(transfer["remote.requests"]) == server.requests
    structures = local_bytes_read(site / "made" / name)  # counts a range read twice twice: an upper bound
    assert sent <= structures + BUDGET and sent < size / 10, (sent, structures, size)
    shapes = {t["name"]: t["shape"] for t in doc["tensors"]}
    if name.endswith(".safetensors"):
        from safetensors import safe_open

        with safe_open(site / "made" / name, "np") as f:
            assert shapes == {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
        (header_len,) = np.frombuffer((site / "made" / name).read_bytes()[:8], "<u8")
        assert sent <= 8 + int(header_len) + 4096 + 1  # the head, the JSON header, the one-byte Range check
    else:
        with np.load(site / "made" / name) as z:
            assert shapes == {k: list(z[k].shape) for k in z.files}
    if name == "big_stored.npz":  # the structures counted by zipfile and numpy themselves
        assert sent <= npz_structures(site / "made" / name) + BUDGET


def test_pytorch_zip_costs_its_structures_plus_64k(site: Path, http_site: tuple[str, Server]) -> None:
    torch = pytest.importorskip("torch")
    path = site / "made" / "state.pt"
    state = {f"block{i}.weight": torch.full((32, 512), float(i)) for i in range(32)}  # 2 MiB, 32 storages
    torch.save(state, path)
    base, server = http_site
    server.sent = 0
    report = report_dict(inspect(f"{base}/made/state.pt"))
    assert report["parameters"]["total"] == sum(t.numel() for t in torch.load(path, weights_only=True).values())
    assert comparable(report, f"{base}/made/")[0] == comparable(report_dict(inspect(path)), f"{site}/made/")[0]
    assert server.sent <= local_bytes_read(path) + BUDGET
    assert server.sent < path.stat().st_size / 20


def test_hdf5_through_the_file_object_driver_is_bounded(site: Path, http_site: tuple[str, Server]) -> None:
    keras = pytest.importorskip("keras")
    path = site / "made" / "wide.weights.h5"
    with warnings.catch_warnings():  # keras' torch backend warns about numpy 2's copy keyword
        warnings.simplefilter("ignore", DeprecationWarning)
        model = keras.Sequential([keras.Input((512,)), keras.layers.Dense(1024), keras.layers.Dense(16)])
        model.save_weights(path)  # 2 MiB of weights
    base, server = http_site
    server.sent = 0
    report = report_dict(inspect(f"{base}/made/wide.weights.h5"))
    assert report["parameters"]["total"] == model.count_params()
    assert comparable(report, f"{base}/made/")[0] == comparable(report_dict(inspect(path)), f"{site}/made/")[0]
    assert int(report["attributes"]["remote.bytes_transferred"]) == server.sent < path.stat().st_size / 8


def test_a_lone_shard_reads_the_same(site: Path, http_site: tuple[str, Server]) -> None:
    base, _ = http_site
    name = "model-00001-of-00004.safetensors"
    remote_doc = comparable(report_dict(inspect(f"{base}/made/shard-alone/{name}")), f"{base}/made/shard-alone/")[0]
    local_doc = comparable(report_dict(inspect(site / "made" / "shard-alone" / name)), f"{site}/made/shard-alone/")[0]
    assert remote_doc == local_doc and remote_doc["files"] == [{"path": name, "bytes": 32904}]


def test_sharded_model_by_index_url_over_http(http_site: tuple[str, Server]) -> None:
    base, server = http_site
    folder = "samples/hf_rau/bert-tiny-sharded"
    server.sent = 0
    doc, transfer = comparable(
        report_dict(inspect(f"{base}/{folder}/model.safetensors.index.json")), f"{base}/samples/"
    )
    local = comparable(report_dict(inspect(SAMPLES / "hf_rau/bert-tiny-sharded/model.safetensors.index.json")),
                       f"{SAMPLES}/")[0]  # fmt: skip
    assert doc == local and doc["parameters"]["total"] == 28_512 and len(doc["files"]) == 5
    assert int(transfer["remote.bytes_transferred"]) == server.sent  # index and four shards, one meter


def test_cli_shows_the_transfer_and_never_imports_fsspec_locally(http_site: tuple[str, Server]) -> None:
    base, _ = http_site
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    url = f"{base}/samples/basic/mlp_fp16.safetensors"
    proc = subprocess.run([sys.executable, "-m", "inspector", url], capture_output=True, text=True, env=env, timeout=60)
    shown = re.search(r"remote\.bytes_transferred: (\d+)\n  remote\.requests: (\d+)", proc.stdout)
    assert proc.returncode == 0 and shown, proc.stderr
    # the Range check, the head holding the header, then the config.json looked for beside it (absent: a GET); the
    # TensorFlow index's magic in the last 8 bytes is sniffed only for a file no loader claims by its head (issue 16)
    assert (int(shown[1]), int(shown[2])) == (1 + 4096, 3)
    check = (
        "import sys; from inspector.cli import main; "
        f"assert main([{str(SAMPLES / 'basic/mlp_fp16.safetensors')!r}, '--json']) == 0; "
        "assert not {'fsspec', 'aiohttp', 'inspector.remote'} & set(sys.modules), 'imported'"
    )
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_http_folder_audit_equals_the_local_one(http_site: tuple[str, Server]) -> None:
    base, _ = http_site
    local = rows_without(audit([str(SAMPLES / "mxnet")], jobs=1), f"{SAMPLES}/")
    over_http = rows_without(audit([f"{base}/samples/mxnet/"], jobs=1), f"{base}/samples/")
    assert over_http == local
    forked = rows_without(audit([f"{base}/samples/mxnet/"], jobs=2), f"{base}/samples/")  # fsspec after a fork
    assert forked == local
    assert {r["status"] for r in local} == {"ok", "not recognised"}  # the .py, .json and manifest are listed too


# -- failures: one line each --------------------------------------------------------------------------


def _one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    status = main(argv)
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_server_ignoring_range_is_stopped_not_downloaded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.safetensors"
    with open(big, "wb") as fh:  # 64 MiB, sparse
        fh.truncate(64 << 20)
    with serving(tmp_path, NoRangeHandler) as (base, server):
        err = _one_line(capsys, [f"{base}/big.safetensors"])
        assert "ignores Range" in err
        time.sleep(0.5)  # the handler finds the client gone
        assert server.sent < 16 << 20  # what the kernel buffers took before the client hung up, not 64 MiB


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("status/403/x.safetensors", "access denied (HTTP 403)"),
        ("status/401/x.safetensors", "unauthorised (HTTP 401)"),
        ("nothing-here.safetensors", "not found (HTTP 404)"),
        ("truncated/x.safetensors", "truncated response"),
        ("nosize/x.safetensors", "does not give the file's size"),
    ],
)
def test_http_failures_are_one_line(
    site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, path: str, expected: str
) -> None:
    monkeypatch.setattr(remote, "BACKOFF_S", 0.01)
    with serving(site, FaultHandler) as (base, _):
        err = _one_line(capsys, [f"{base}/{path}"])
    assert err.startswith(f"inspector: {base}/{path}: ") and expected in err


def test_transient_failures_are_retried(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "BACKOFF_S", 0.01)
    FaultHandler.failures.clear()
    with serving(site, FaultHandler) as (base, _):
        report = inspect(f"{base}/flaky/2/samples/basic/mlp_fp16.safetensors")  # two 503s, then the file
        assert report.checkpoint.n_parameters == inspect(SAMPLES / "basic/mlp_fp16.safetensors").checkpoint.n_parameters
        with pytest.raises(InputError, match=r"HTTP 503 \(server error\) \(after 4 attempts\)"):
            inspect(f"{base}/flaky/9/samples/basic/mlp_fp16.safetensors")


def test_refused_and_timeout(site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert "connection refused" in _one_line(capsys, [f"http://127.0.0.1:{port}/model.safetensors"])
    monkeypatch.setattr(remote, "TIMEOUT_S", 1)
    monkeypatch.setattr(remote, "RETRIES", 0)
    with serving(site, FaultHandler) as (base, _):
        err = _one_line(capsys, [f"{base}/slow/samples/basic/mlp_fp16.safetensors"])
    assert "timed out" in err


def test_credentials_are_never_shown(http_site: tuple[str, Server], capsys: pytest.CaptureFixture[str]) -> None:
    base, _ = http_site
    secret_base = base.replace("http://", "http://reader:s3cret-pw@")
    assert main([f"{secret_base}/samples/basic/mlp_fp16.safetensors?X-Amz-Signature=abc123&v=1", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["path"] == f"{base}/samples/basic/mlp_fp16.safetensors?X-Amz-Signature=***&v=1"
    err = _one_line(capsys, [f"{secret_base}/missing.safetensors?token=abc123"])
    assert "s3cret" not in out.out + out.err + err and "abc123" not in out.out + err
    assert (
        remote.redact("s3://k:v@bucket/a.pt?X-Amz-Credential=AKIA&x=1") == "s3://bucket/a.pt?X-Amz-Credential=***&x=1"
    )
    message = "url='https://u:pw@h/a.pt?X-Amz-Signature=abc&v=1' failed"  # a library's own text, shown as is
    assert (
        remote.explain(RuntimeError(message))[0] == "RuntimeError: url='https://h/a.pt?X-Amz-Signature=***&v=1' failed"
    )


# -- S3 (moto's server mode) ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bucket() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 with bucket 'models': the sharded BERT, a PyTorch file, a readme."""
    pytest.importorskip("s3fs")
    boto3 = pytest.importorskip("boto3")
    moto_server = pytest.importorskip("moto.server")
    import fsspec.config

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "FSSPEC_S3_ENDPOINT_URL": endpoint}  # fmt: skip
    saved_env, saved_conf = {k: os.environ.get(k) for k in env}, fsspec.config.conf.get("s3")
    os.environ.update(env)
    fsspec.config.conf["s3"] = {"endpoint_url": endpoint}  # the usual fsspec configuration, as the env var gives
    try:
        s3 = boto3.client("s3", endpoint_url=endpoint)
        s3.create_bucket(Bucket="models")
        for path in (SAMPLES / "hf_rau" / "bert-tiny-sharded").iterdir():
            s3.upload_file(str(path), "models", f"bert/{path.name}")
        s3.upload_file(str(SAMPLES / "torch" / "lstm_tied.pt"), "models", "lstm_tied.pt")
        s3.put_object(Bucket="models", Key="README.md", Body=b"models for the audit\n")
        s3.create_bucket(Bucket="formats")
        for relative in S3_SAMPLES:
            s3.upload_file(str(SAMPLES / relative), "formats", relative)
        yield "s3://models"
    finally:
        server.stop()
        for k, v in saved_env.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        fsspec.config.conf.pop("s3", None) if saved_conf is None else fsspec.config.conf.__setitem__("s3", saved_conf)


S3_SAMPLES = ("basic/cnn_compressed.npz", "keras/adam_trained.weights.h5", "keras/batchnorm.keras",
              "mxnet/sockeye_gru.params", "torch/lstm_tied_legacy.pt")  # fmt: skip


@pytest.mark.parametrize("relative", S3_SAMPLES)
def test_samples_on_s3_equal_local(bucket: str, relative: str) -> None:
    """HDF5 included: the forked child that walks it opens its own S3 client."""
    doc, transfer = comparable(report_dict(inspect(f"s3://formats/{relative}")), "s3://formats/")
    assert doc == comparable(report_dict(inspect(SAMPLES / relative)), f"{SAMPLES}/")[0]
    # HDF5: the forked child's h5py walk and the parent's placing of B-trees and heaps from their own bytes read
    # the same small file through two connections, in 16 KiB blocks: up to three times a 20 KiB file
    bound = 3 if relative.endswith((".h5", ".keras")) else 2
    assert 0 < int(transfer["remote.bytes_transferred"]) <= bound * (SAMPLES / relative).stat().st_size


def test_sharded_model_on_s3_equals_local(bucket: str) -> None:
    local_index = SAMPLES / "hf_rau/bert-tiny-sharded/model.safetensors.index.json"
    doc, transfer = comparable(report_dict(inspect(f"{bucket}/bert/model.safetensors.index.json")), f"{bucket}/bert/")
    assert doc == comparable(report_dict(inspect(local_index)), f"{local_index.parent}/")[0]
    structures = local_bytes_read(local_index) + sum(
        local_bytes_read(p) for p in local_index.parent.glob("model-*.safetensors")
    )
    # the index, each shard's head (its header is inside it) and the config.json beside the index
    assert int(transfer["remote.requests"]) == 6
    assert int(transfer["remote.bytes_transferred"]) <= structures + BUDGET


def test_bucket_audit_equals_local(bucket: str, tmp_path: Path) -> None:
    local_root = tmp_path / "models"
    shutil.copytree(SAMPLES / "hf_rau" / "bert-tiny-sharded", local_root / "bert")
    shutil.copy(SAMPLES / "torch" / "lstm_tied.pt", local_root)
    (local_root / "README.md").write_bytes(b"models for the audit\n")
    local = rows_without(audit([str(local_root)], jobs=1), f"{local_root}/")
    in_bucket = rows_without(audit([f"{bucket}/"], jobs=1), f"{bucket}/")
    assert in_bucket == local
    assert [(r["path"], r["status"]) for r in local] == [
        ("README.md", "not recognised"),
        ("bert/config.json", "not recognised"),
        ("bert/model.safetensors.index.json", "ok"),
        ("lstm_tied.pt", "ok"),
    ]


def test_bucket_audit_on_a_local_dask_cluster(bucket: str) -> None:
    """Sniffing and reading both run on the workers, which find the endpoint and keys in their environment."""
    pytest.importorskip("distributed")
    assert audit([f"{bucket}/"], jobs=2, dask="local") == audit([f"{bucket}/"], jobs=1)


def test_s3_failures_are_one_line(bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "not found" in _one_line(capsys, [f"{bucket}/missing.pt"])
    assert "NoSuchBucket" in _one_line(capsys, ["s3://no-such-bucket/model.pt"])


# -- Dask -----------------------------------------------------------------------------------------------


def test_folder_audit_on_a_local_dask_cluster_equals_the_local_run(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    root = tmp_path / "models"
    shutil.copytree(SAMPLES / "hf_rau" / "bert-tiny-sharded", root / "bert")
    for src in ("basic/cnn_compressed.npz", "torch/adam_checkpoint.pt", "keras/batchnorm.keras",
                "mxnet/sockeye_gru.params"):  # fmt: skip
        shutil.copy(SAMPLES / src, root)
    (root / "broken.safetensors").write_bytes((SAMPLES / "basic/mlp_fp16.safetensors").read_bytes()[:100])
    (root / "notes.txt").write_text("not a model")
    local = audit([str(root)], jobs=1)
    on_dask = audit([str(root)], jobs=2, dask="local")
    assert on_dask == local
    assert {r.status for r in local} == {"ok", "unreadable", "not recognised"}


# -- the progress bar ---------------------------------------------------------------------------------


def test_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "basic/mlp_fp16.safetensors", tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a new pty is 0 columns wide
    proc = subprocess.Popen([sys.executable, "-m", "inspector", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=follower, env=env)  # fmt: skip
    os.close(follower)
    shown = b""
    with contextlib.suppress(OSError):  # EIO once the child has closed the terminal
        while chunk := os.read(leader, 1 << 16):
            shown += chunk
    os.close(leader)
    proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"auditing" in shown, shown
    piped = subprocess.run([sys.executable, "-m", "inspector", str(tmp_path), "--csv"], capture_output=True,
                           env=env, timeout=60)  # fmt: skip
    assert piped.returncode == 0 and piped.stderr == b""
