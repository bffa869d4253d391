"""The command line: the only module that parses argv, prints and chooses exit codes.

    inspector PATH... [--tensors] [--regions] [--json] [--html OUT] [--expect SPEC] [--fail-on LEVEL] [--debug]
    inspector URL     [...]                                the same, read by range (s3://, https://, hf://...)
    inspector DIR...  [--json | --csv] [--html OUT] [--jobs N] [--dask ADDRESS|local]   folder (or URL prefix/) audit
    inspector formula | budget | compare ...               analytic counts (see inspector/cli_design.py)
    inspector diff A B [--json] [--data] [--map RULE] [--tolerance T]   (see inspector/cli_diff.py)
    inspector PATH --data                                  per-tensor value statistics, streamed

Exit status: 0 read fine; 1 findings at or above --fail-on; 2 unreadable file or bad usage;
3 unsafe content refused (nothing of it was run). With several files the worst status wins.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial

from inspector.errors import InspectorError
from inspector.records import SEVERITY_ORDER, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any, NoReturn

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE, EXIT_UNSAFE = 0, 1, 2, 3
EXIT_RANK = {EXIT_OK: 0, EXIT_FINDINGS: 1, EXIT_UNREADABLE: 2, EXIT_UNSAFE: 3}
# `run` sets a list here: the reports are kept in it, not freed object by object when `main` returns (the process
# ends right after); a caller of `main` keeps the usual freeing
_KEPT: list[object] | None = None


class _UsageError(Exception):
    pass


def _columns(fallback: int = 80) -> int:
    """The terminal width as `shutil.get_terminal_size` reads it: COLUMNS, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or fallback


def _parser() -> argparse.ArgumentParser:
    import argparse  # (imported when a run parses its words: `run` imports it first, without gettext)

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:  # usage errors: one line, exit 2
            raise _UsageError(f"{self.prog}: {message}")

    # argparse builds a help formatter for every argument it adds, and its own asks `shutil.get_terminal_size` (with
    # zlib, bz2 and lzma imported) for the width each time: the width is asked here once (about 1 ms, issue 16)
    formatter = partial(argparse.HelpFormatter, width=_columns() - 2)  # (argparse's own margin)
    p = _Parser(
        prog="inspector",
        description="What is really in a model weights file, read from its headers.",
        epilog="Also: inspector formula SPEC | budget ARCH ... | compare SPEC ... | diff A B [--data]",
        formatter_class=formatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="checkpoint files or URLs (or folders, URL/ to audit)")
    p.add_argument("--tensors", action="store_true", help="list every tensor")
    p.add_argument("--regions", action="store_true", help="list every byte region with its offsets")
    p.add_argument("--json", action="store_true", help="JSON: one object per file, an array for several")
    p.add_argument("--csv", action="store_true", help="folder audit as CSV")
    p.add_argument("--html", metavar="OUT", help="also write a self-contained HTML page: treemap of the bytes, tables")
    p.add_argument("--expect", metavar="SPEC", help="check against this architecture (inspector formula syntax)")
    p.add_argument("--fail-on", choices=[s.value for s in Severity], help="exit 1 when a finding is this severe")
    p.add_argument("--data", action="store_true", help="stream the values: statistics, identical and zeroed tensors")
    p.add_argument("--jobs", type=int, default=None, help="parallel workers for a folder audit")
    p.add_argument("--dask", metavar="ADDRESS", help="run a folder audit on a Dask cluster ('local' starts one)")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def _import_argparse_for_the_console() -> None:
    """Import argparse with stand-ins for `gettext` and `re`, for the console script (the process is ours).

    argparse passes its words through `gettext`: importing it imports `locale`, and each word is looked up in the
    catalogs of the user's languages, of which Python ships none for argparse, so the words stay as they are. The
    stand-in's two functions give a word as it is: 8 million instructions fewer, 5% of a PyTorch zip's run (issue 16).
    argparse compiles a pattern for each parser and matches the command line against patterns it builds from the
    arguments' counts (`_match_argument`): `inspector.regexes` stands in for `re` (its `compile`, `match`, `findall`,
    `sub`, the same functions), which makes those from programs written with the package and any other pattern (help
    and usage text, a command line it was not written for) with `re` itself, imported then. With the project's own
    enums, a run imports neither `re` nor `enum`: 15 million instructions fewer. Each stand-in is in `sys.modules` only
    while argparse is imported (a later `import gettext` or `import re` gets the real module); a module a process
    imported before is used as it is, and a process that imported argparse keeps it.
    """
    if "argparse" in sys.modules:
        return
    from inspector import regexes

    gettext = type(sys)("gettext")
    gettext.gettext = str  # type: ignore[attr-defined]  # (a word's own text: `str` of a str is itself)
    gettext.ngettext = _ngettext  # type: ignore[attr-defined]
    added = [name for name in ("gettext", "re") if name not in sys.modules]
    sys.modules.update({name: gettext if name == "gettext" else regexes for name in added})  # type: ignore[misc]
    try:
        import argparse  # noqa: F401  # (kept in sys.modules: `_parser` and the subcommands' parsers use it)
    finally:
        for name in added:
            del sys.modules[name]


# Command lines of each shape a run is given (paths, flags, an option's value; `inspector diff`): the patterns argparse
# compiles to parse them are written as programs (`argparse_patterns`, `inspector.regexes.patterns`)
COMMAND_LINES = (
    ("inspector", ["a"]),
    ("inspector", ["a", "b", "--json", "--tensors"]),
    ("inspector", ["--jobs", "2", "--fail-on", "error", "a"]),
    ("diff", ["a", "b", "--json"]),
    ("diff", ["a", "b", "--map", "x=y", "--tolerance", "0.5"]),
)


def argparse_patterns() -> list[tuple[str, int]]:
    """The patterns (and flags) argparse compiles to parse `COMMAND_LINES`, each once, as first met."""
    import argparse

    from inspector.cli_diff import _parser as diff_parser

    seen: dict[tuple[str, int], None] = {}
    real = argparse._re  # type: ignore[attr-defined]

    def compile(pattern: str, flags: int = 0) -> Any:  # noqa: A001 - `re.compile`, recorded
        seen[pattern, int(flags)] = None
        return real.compile(pattern, flags)

    recorder: Any = type(sys)("re")  # (`re` as argparse uses it, its compiles recorded)
    recorder.ASCII, recorder.findall, recorder.sub = real.ASCII, real.findall, real.sub
    recorder.compile = compile
    recorder.match = lambda pattern, string, flags=0: compile(pattern, flags).match(string)
    argparse._re = recorder  # type: ignore[attr-defined]
    try:
        for command, argv in COMMAND_LINES:
            (_parser() if command == "inspector" else diff_parser()).parse_args(argv)
    finally:
        argparse._re = real  # type: ignore[attr-defined]
    return list(seen)


def _ngettext(singular: str, plural: str, n: int) -> str:
    """`gettext.ngettext` without a catalog."""
    return singular if n == 1 else plural


def _design_commands() -> dict[str, object]:
    from inspector.cli_design import COMMANDS

    return dict(COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    # The cyclic collector is paused for the run: a report of 100,000 tensors allocates millions of acyclic
    # objects, and each collection would walk them all again (about a quarter of such a run). Reference
    # counting still frees everything; the collector is switched back on for a caller that imported main.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and point stdout at /dev/null so the interpreter's
        # final flush cannot raise the same error again at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    finally:
        if collecting:
            gc.enable()


def run() -> NoReturn:
    """The console script and `python -m inspector`: `main`, then the process ends without taking itself apart.

    An interpreter's normal exit frees every object and module one by one: about 3 ms of a 30 ms run, and 0.1 s
    after a report of 100,000 tensors. Here the exit handlers run and the output is flushed, as at any exit, then
    the process ends with `main`'s status (`os._exit`). A caller that imports `main` keeps the usual exit.
    """
    import atexit

    global _KEPT
    _KEPT = []  # (freeing a report of 100,000 tensors object by object: about 0.03 s)
    gc.disable()  # and off for good: `main` switching it back on would have a collection walk all the run made
    _import_argparse_for_the_console()
    status = main()
    atexit._run_exitfuncs()  # (what the interpreter's exit runs first: logging, multiprocessing, Dask)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away during the last write: as in `main`
        pass
    sys.stderr.flush()
    os._exit(status)


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in ("formula", "budget", "compare"):
        command = _design_commands()[args_list[0]]
        return int(command(args_list[1:]))  # type: ignore[operator]
    if args_list and args_list[0] == "diff":
        from inspector.cli_diff import diff_command

        return diff_command(args_list[1:])
    try:
        args = _parser().parse_args(args_list)
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_UNREADABLE
    from inspector.probe import is_url

    try:
        # a local folder is told by a stat; inspector.audit (process pools, Dask) is imported only for an audit
        folders = [p for p in args.paths if (is_url(p) and _is_folder(p)) or os.path.isdir(p)]
        if folders:
            return _audit(args)
    except InspectorError as exc:  # a prefix that cannot be listed, a missing extra, an unreachable cluster
        if args.debug:
            import traceback

            traceback.print_exc()
        print(f"inspector: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    return _inspect_files(args)


def _is_folder(path: str) -> bool:
    from inspector.audit import is_folder

    return is_folder(path)


def _inspect_files(args: argparse.Namespace) -> int:
    from inspector.render import render_text, report_dict, write_json
    from inspector.report import inspect

    if args.data:  # value statistics: numpy and the diff renderers, only when asked for
        from inspector.cli_diff import data_or_none
        from inspector.render_diff import data_dict, render_data_text

    status = EXIT_OK
    dicts = []
    texts = []
    last: object = None  # the last report (for `_KEPT`)
    for path in args.paths:
        if len(args.paths) > 1:
            # the cycles the last file left (the collector is paused); what survives is frozen, so the next
            # collection walks only the next file's objects (linear in the number of files)
            gc.collect()
            gc.freeze()
        try:
            report = last = inspect(path, args.expect)
        except Exception as exc:  # one bad file never stops the others, and never prints a traceback
            if args.debug:
                import traceback

                traceback.print_exc()
            message = (
                str(exc) if isinstance(exc, InspectorError) else f"{path}: internal error: {type(exc).__name__}: {exc}"
            )
            print(f"inspector: {message}", file=sys.stderr)
            status = _worse(status, EXIT_UNREADABLE)
            if args.json or args.html:
                dicts.append({"path": path, "error": message, "error_type": type(exc).__name__})
            continue
        if report.unsafe:
            for f in report.findings:
                if f.code == "UNSAFE_CONTENT":
                    print(f"inspector: {path}: unsafe content, not run: {f.message}", file=sys.stderr)
            status = _worse(status, EXIT_UNSAFE)
        if args.fail_on and any(
            SEVERITY_ORDER[f.severity] >= SEVERITY_ORDER[Severity(args.fail_on)] for f in report.findings
        ):
            status = _worse(status, EXIT_FINDINGS)
        data = data_or_none(report.checkpoint, args.debug) if args.data else None
        if data is None and args.data:
            status = _worse(status, EXIT_UNREADABLE)
        if args.json or args.html:
            # for --json alone the tensors and regions are made as they are written (not all held)
            lazy = args.json and not args.html
            dicts.append(report_dict(report, lazy) | ({"data": data_dict(data)} if data else {}))
        if not args.json:
            texts.append(render_text(report, tensors=args.tensors, regions=args.regions))
            texts[-1] += "\n\n" + render_data_text(data) if data else ""
    if len(args.paths) > 1:
        gc.unfreeze()
    if _KEPT is not None:
        _KEPT.extend((dicts, texts, last))
    if args.html and dicts:
        from inspector.render_html import report_html

        inspected = [*args.paths, *(str(f["path"]) for d in dicts for f in d.get("files", []))]
        status = _worse(status, write_html(args.html, lambda: report_html(dicts), inspected))
    if args.json and dicts:
        write_json(dicts, len(args.paths) > 1, sys.stdout.write)  # in pieces: the text is never whole in memory
        sys.stdout.write("\n")
    elif texts:
        print("\n\n".join(texts))
    return status


def _audit(args: argparse.Namespace) -> int:
    gc.enable()  # an audit reads any number of files in this process: the collector runs as usual
    from inspector.audit import Status, audit
    from inspector.render_audit import rows_to_csv, rows_to_json, rows_to_text

    bar = None
    if sys.stderr.isatty() and os.environ.get("TERM") != "dumb" and not (args.json or args.csv):
        from tqdm import tqdm

        bar = tqdm(total=0, unit="file", file=sys.stderr, leave=False, desc="auditing")

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    try:
        rows = audit(args.paths, jobs=args.jobs, on_progress=progress, dask=args.dask)
    finally:
        if bar is not None:
            bar.close()
    written = EXIT_OK
    if args.html:
        from inspector.recordtype import asdict
        from inspector.render_html import audit_html

        written = write_html(args.html, lambda: audit_html([asdict(r) for r in rows]), [r.path for r in rows])
    if args.json:
        print(rows_to_json(rows))
    elif args.csv:
        print(rows_to_csv(rows), end="")
    else:
        print(rows_to_text(rows))
    status = written
    threshold = SEVERITY_ORDER[Severity(args.fail_on)] if args.fail_on else None
    for r in rows:  # the same status `inspector FILE FILE ...` gives; files that are not checkpoints count for nothing
        if r.status == Status.UNREADABLE:
            status = _worse(status, EXIT_UNREADABLE)
        elif r.status == Status.UNSAFE:
            status = _worse(status, EXIT_UNSAFE)
        if threshold is not None and r.worst and SEVERITY_ORDER[Severity(r.worst)] >= threshold:
            status = _worse(status, EXIT_FINDINGS)
    return status


def write_html(out: str, page: Callable[[], str], inspected: Sequence[str]) -> int:
    """Write the HTML page to `out`, never over a file that was inspected; one line on failure."""
    if os.path.exists(out) and any(os.path.exists(p) and os.path.samefile(out, p) for p in inspected):
        print(f"inspector: {out}: is an inspected file, not overwritten", file=sys.stderr)
        return EXIT_UNREADABLE
    try:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(page())
    except OSError as exc:
        print(f"inspector: {out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    return EXIT_OK


def _worse(a: int, b: int) -> int:
    return a if EXIT_RANK[a] >= EXIT_RANK[b] else b


if __name__ == "__main__":
    raise SystemExit(main())
