"""The torch module a Keras 3 `TorchModuleWrapper` layer carries in its config, judged as `torch.load` would read it.

Keras writes it as ``config["module"]``: `torch.save(module)` into a buffer, base64 text
(keras/src/utils/torch_utils.py, `get_config`). `from_config` decodes it with `base64.b64decode` and unpickles it with
`torch.load(buffer, weights_only=False)` (with `safe_mode=False`; Keras 3.15 refuses it in safe mode). The bytes are
judged by the loader torch.load would read them as (a zip archive, a legacy or tar file, else a bare pickle it
unpickles before anything else), from a temporary file, as joblib's compressed streams are. Imported only for a
config that holds such a layer.
"""

from __future__ import annotations

import os

from inspector.errors import InspectorError
from inspector.probe import Probe
from loaders import _zip

TYPE_CHECKING = False
if TYPE_CHECKING:
    from inspector.records import Checkpoint, Finding, TensorKind
    from loaders.base import Loader


def judged(text: object, layer: str) -> tuple[str, list[Finding]]:
    """What `torch.load` of a wrapper's module would run ('' when nothing of the file's choosing), and the findings
    of its pickle that are not the verdict (the globals it names). A text Keras cannot decode is never unpickled (''):
    a module that cannot be read is judged unsafe, as bytes not read are never called safe."""
    if not isinstance(text, str):  # (Keras: `config["module"].encode` fails before torch.load)
        return "", []
    ckpt = _module(text)
    if ckpt is None:
        return "", []
    if isinstance(ckpt, str):
        return f"its pickled torch module, which could not be read ({ckpt[:120]})", []
    unsafe = [f for f in ckpt.findings if f.code == "UNSAFE_CONTENT"]
    if unsafe:
        return f"its pickled torch module would call {', '.join(unsafe[0].subjects[:10])}", []
    named = [
        type(f)(f.code, f.severity, f"layer {layer[:80]!r}'s torch module: {f.message}", f.subjects)
        for f in ckpt.findings
        if f.code == "PICKLE_GLOBALS"
    ]
    return "", named


def module_kinds(text: object) -> dict[str, TensorKind]:
    """Each tensor of a wrapper's torch module by its state-dict name (what `TorchModuleWrapper.save_own_variables`
    stores under the layer's `vars`): a parameter or a buffer, as the module's pickle holds it in `_parameters` or
    `_buffers`. Empty for a module that cannot be read."""
    ckpt = _module(text) if isinstance(text, str) else None
    if ckpt is None or isinstance(ckpt, str):
        return {}
    return {t.name: t.kind for t in ckpt.tensors}


# the modules read, by their text: a file's config is judged, then its weights' kinds asked, of the same modules
# (at most MAX_KEPT, the table emptied when full: an audit of many files keeps no more)
_read: dict[str, Checkpoint | str | None] = {}
MAX_KEPT = 16


def _module(text: str) -> Checkpoint | str | None:
    """A wrapper's module read as `torch.load` would read its bytes: its checkpoint, the reason it cannot be read, or
    None for a text Keras cannot decode (never unpickled)."""
    if text in _read:
        return _read[text]
    import base64
    import binascii
    import tempfile

    try:
        data = base64.b64decode(text.encode("ascii"))  # (as Keras decodes it: not validated, odd characters dropped)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return None
    handle, temporary = tempfile.mkstemp(prefix="inspector-", suffix=".pt")
    made: Checkpoint | str
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        with Probe(temporary) as probe:
            try:
                made = _loader(probe).load(probe)
            except InspectorError as exc:
                made = getattr(exc, "reason", None) or str(exc)
    finally:
        os.unlink(temporary)
    if len(_read) >= MAX_KEPT:
        _read.clear()
    _read[text] = made
    return made


def _loader(probe: Probe) -> Loader:
    """The loader of bytes as `torch.load` reads them: a zip archive (a TorchScript one goes to torch.jit.load), a
    legacy or tar file, else a bare pickle (its legacy path unpickles the first pickle before checking it)."""
    from loaders.pickle_raw import PickleRawLoader
    from loaders.torch_legacy import TorchLegacyLoader
    from loaders.torch_zip import TorchZipLoader

    if probe.head.startswith(_zip.LOCAL_SIG):
        return TorchZipLoader()
    legacy = TorchLegacyLoader()
    return legacy if legacy.claim(probe) is not None else PickleRawLoader()
