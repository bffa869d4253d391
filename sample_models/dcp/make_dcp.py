"""A PyTorch distributed checkpoint (torch 2.13, one process): a small MLP with BatchNorm after one Adam step.

    python sample_models/dcp/make_dcp.py

Writes adam_step/ (.metadata + __0_0.distcp) and manifest.json with what torch itself reports.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import torch
import torch.distributed.checkpoint as dcp

HERE = Path(__file__).resolve().parent


def main() -> None:
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 4)
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    out = HERE / "adam_step"
    shutil.rmtree(out, ignore_errors=True)
    dcp.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 1}, checkpoint_id=str(out))
    md = dcp.FileSystemReader(str(out)).read_metadata()
    manifest = {
        "_made_by": f"torch {torch.__version__}, torch.distributed.checkpoint.save, one process",
        "adam_step": {
            "n_parameters": sum(p.numel() for p in model.parameters()),
            "buffer_elements": sum(b.numel() for b in model.buffers()),
            "tensors": {k: list(m.size) for k, m in md.state_dict_metadata.items() if hasattr(m, "size")},
        },
    }
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
