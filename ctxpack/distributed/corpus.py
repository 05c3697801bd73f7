"""`compress SRC --runner ray -o DEST`: a batch compacted on a Ray cluster,
read from and written to local folders or any filesystem pyarrow opens
(s3://, gs://, ...). This process, the driver, writes every output and every
archive record, each once, as the rows come back."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import orjson

from ctxpack import files, formats
from ctxpack.archive.db import resolve_path
from ctxpack.archive.store import Archive
from ctxpack.distributed import compact_rows, record_of
from ctxpack.errors import CtxpackError, InputError, OutputError, UsageError
from ctxpack.pipeline.archiving import archiving, store
from ctxpack.pipeline.batch import Finished
from ctxpack.pipeline.discover import Found, hidden, skip_reason
from ctxpack.pipeline.run import FileJob, chosen_name
from ctxpack.pipeline.stages import Compress

if TYPE_CHECKING:
    import pyarrow as pa
    from pyarrow.fs import FileSystem
    from ray.data import Dataset

INSTALL = "--runner ray needs Ray Data: pip install 'ctxpack[ray]'"


@dataclass(frozen=True)
class Place:
    """A folder or file named on the command line, on the filesystem its URI names."""

    given: str
    fs: FileSystem
    root: str  # its path on that filesystem

    @property
    def local(self) -> bool:
        return "://" not in self.given

    def name(self, rel: str) -> str:
        """A file under it named as the batch names it, in the form the place was given."""
        if not rel:
            return self.given
        if self.local:
            return str(Path(self.given) / rel)
        return self.given.rstrip("/") + "/" + rel

    def path(self, rel: str) -> str:
        return self.root.rstrip("/") + "/" + rel if rel else self.root


def place(given: str) -> Place:
    from pyarrow.fs import FileSystem

    try:
        filesystem, root = FileSystem.from_uri(given if "://" in given else os.path.abspath(given))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot open {given}: {exc}") from None
    return Place(given, filesystem, root)


@dataclass
class Corpus:
    """The files of a batch, as discover.discover finds them, on any filesystem."""

    # (name, path relative to the place it was found under; "" for a file named)
    found: Found = field(default_factory=Found)
    places: dict[str, tuple[Place, str]] = field(default_factory=dict)  # name -> where

    @property
    def files(self) -> list[tuple[str, str]]:
        return self.found.files

    @property
    def skipped(self) -> dict[str, int]:
        return self.found.skipped

    def add(self, where: Place, rel: str) -> None:
        name = where.name(rel)
        self.found.files.append((name, rel or PurePosixPath(where.root).name))
        self.places[name] = (where, rel)


def find(paths: list[str], *, include: tuple[str, ...], exclude: tuple[str, ...]) -> Corpus:
    """The files given, and those under the folders given, kept by batch's rules."""
    _require()
    from pyarrow.fs import FileSelector, FileType

    corpus = Corpus()
    for given in paths:
        where = place(given)
        read_head = _head_reader(where.fs)
        try:
            kind = where.fs.get_file_info(where.root).type
            if kind == FileType.NotFound:
                raise InputError("no such file or directory", path=given)
            if kind != FileType.Directory:
                corpus.add(where, "")
                continue
            infos = where.fs.get_file_info(FileSelector(where.root, recursive=True))
        except OSError as exc:
            raise InputError(f"cannot list: {exc}", path=given) from None
        root = PurePosixPath(where.root)
        children = [PurePosixPath(i.path) for i in infos if i.type == FileType.File]
        for rel in sorted(child.relative_to(root) for child in children):
            if any(hidden(part) for part in rel.parts):
                continue
            reason = skip_reason(
                where.path(str(rel)),
                str(rel),
                read_head=read_head,
                include=include,
                exclude=exclude,
            )
            if reason is None:
                corpus.add(where, str(rel))
            else:
                corpus.found.skip(reason)
    return corpus


def _head_reader(fs: FileSystem) -> Callable[[str], bytes]:
    def read(path: str) -> bytes:
        with fs.open_input_stream(path) as stream:
            return bytes(stream.read(formats.HEAD_BYTES))

    return read


def compress_corpus(
    corpus: Corpus,
    *,
    dest: str,
    job: FileJob,
    stage: Compress,
    address: str | None,
    quiet: bool,
    on_done: Callable[[Finished], bool],
) -> list[Finished]:
    """Compact every file on Ray into the mirror at `dest`; on_done returns False to stop."""
    target = place(dest)
    if target.local and Path(dest).is_file():
        raise UsageError("-o must name a directory when compressing several files")
    if job.archive:
        files.check_writable(str(resolve_path(job.archive_path)), create_parents=True)
    done: list[Finished] = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(connected(address, quiet=quiet))
        archive = stack.enter_context(Archive.open(job.archive_path)) if job.archive else None
        rows = compact_rows(_dataset(corpus), stage=stage, job=job)
        for row in rows.iter_rows():
            finished = _land(row, corpus=corpus, target=target, archive=archive)
            done.append(finished)
            if not on_done(finished):
                break
    order = {name: i for i, (name, _) in enumerate(corpus.files)}
    done.sort(key=lambda f: order[f.source])
    return done


def _dataset(corpus: Corpus) -> Dataset:
    import ray.data

    by_place: dict[str, tuple[Place, list[str]]] = {}
    for where, rel in corpus.places.values():
        by_place.setdefault(where.given, (where, []))[1].append(where.path(rel))
    parts = [
        ray.data.read_binary_files(paths, filesystem=where.fs, include_paths=True).map_batches(
            functools.partial(_named, where=where), batch_format="pyarrow", batch_size=None
        )
        for where, paths in by_place.values()
    ]
    return parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0]


def _named(batch: pa.Table, *, where: Place) -> pa.Table:
    """Rows named as the batch names its files (errors and reports say these names)."""
    import pyarrow as pa

    root = PurePosixPath(where.root)
    names = [
        where.name("" if rel == "." else rel)
        for rel in (str(PurePosixPath(p).relative_to(root)) for p in batch["path"].to_pylist())
    ]
    return batch.set_column(batch.schema.get_field_index("path"), "path", pa.array(names))


def _land(
    row: dict[str, Any], *, corpus: Corpus, target: Place, archive: Archive | None
) -> Finished:
    """One compacted row: archived, then written, as run_file does it."""
    source = row["path"]
    if row["error"] is not None:
        return Finished(
            source, error=row["error"], exit_code=row["exit_code"], skippable=bool(row["skippable"])
        )
    where, rel = corpus.places[source]
    name = rel or PurePosixPath(where.root).name
    rel_out = chosen_name(name, source_format=row["format"], output_format=row["output_format"])
    try:
        record = record_of(row)
        if record is not None and archive is not None:
            with archiving():
                store(archive, record)
        output = _write(target, rel_out, row["output"], source=source)
    except CtxpackError as exc:
        return Finished.failed(source, exc)
    report = orjson.loads(row["report"])
    report["output"] = output
    return Finished(source, report=report)


def _write(target: Place, rel: str, data: bytes, *, source: str) -> str:
    name = target.name(rel)
    if target.local:
        try:
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot write: {exc.strerror or exc}", path=name) from None
        files.write_atomic(name, data, inputs=(source,))
        return name
    path = target.path(rel)
    try:
        target.fs.create_dir(str(PurePosixPath(path).parent), recursive=True)
        # An object store makes the object visible whole, when the stream closes.
        with target.fs.open_output_stream(path) as out:
            out.write(data)
    except OSError as exc:
        raise OutputError(f"cannot write: {exc}", path=name) from None
    return name


def _require() -> None:
    try:
        import pyarrow.fs  # noqa: F401
        import ray.data  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL) from None


@contextlib.contextmanager
def connected(address: str | None, *, quiet: bool) -> Iterator[None]:
    """Ray for the run: the cluster at `address` (ray://HOST:10001, auto) or
    $RAY_ADDRESS, else a Ray started on this machine and stopped after; one
    already started by the caller is used as it is."""
    _require()
    import ray
    import ray.data

    context = ray.data.DataContext.get_current()
    # The command line shows a progress bar of its own, following the rows.
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    context.enable_auto_log_stats = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    if ray.is_initialized():
        yield
        return
    # Ray takes RAY_ADDRESS, when set, for the cluster to join: options of a
    # new instance are refused there.
    joining = address is not None or bool(os.environ.get("RAY_ADDRESS"))
    local: dict[str, Any] = {} if joining else {"include_dashboard": False}
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=not quiet, **local)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UsageError(f"cannot connect to Ray at {address}: {exc}") from None
    try:
        yield
    finally:
        ray.shutdown()
