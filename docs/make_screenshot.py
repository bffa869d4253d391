"""Make docs/html-report.png, the README's picture of `inspector FILE --html OUT`.

    python docs/make_screenshot.py [CHECKPOINT]     (default: sample_models/torch/adam_checkpoint.pt)

Writes the page with the CLI, opens it in headless Chromium (tests/chromium.py, the browser the tests use),
hovers over the largest parameter layer and captures the top of the page: the summary and the treemap.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inspector.cli import main  # noqa: E402
from tests.chromium import Browser, chromium_binary  # noqa: E402

OUT = ROOT / "docs" / "html-report.png"


def shoot(checkpoint: Path) -> None:
    binary = chromium_binary()
    if binary is None:
        raise SystemExit("chromium is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "report.html"
        with contextlib.redirect_stdout(io.StringIO()):  # the text report is not wanted here
            main([str(checkpoint.relative_to(ROOT)), "--html", str(page_path)])
        browser = Browser(binary, width=1000, height=760)
        try:
            page = browser.open(page_path.as_uri())
            page.evaluate("document.querySelector('h2').scrollIntoView()")
            x, y = page.evaluate(
                "(() => { const r = [...document.querySelectorAll('.cell.d2.b-parameters')].sort((a, b) =>"
                " b.offsetWidth * b.offsetHeight - a.offsetWidth * a.offsetHeight)[0].getBoundingClientRect();"
                " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
            )
            page.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
            OUT.write_bytes(page.screenshot())
            page.close()
        finally:
            browser.close()
    print(f"{OUT.relative_to(ROOT)}: {os.path.getsize(OUT):,} bytes")


if __name__ == "__main__":
    shoot(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT / "sample_models" / "torch" / "adam_checkpoint.pt")
