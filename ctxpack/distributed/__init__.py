"""Compacting a corpus on Ray Data (pip install 'ctxpack[ray]').

`compact_dataset` maps the per-file compaction of `compress DIR --jobs N`
(pipeline.run.compact_bytes) over a Dataset whose rows hold a file's `path`
and `bytes`. Each row comes back with the compacted bytes, the report as
plain columns and what the archive is to keep; nothing is written on the
workers, so a task that Ray runs again leaves nothing behind twice. Ray and
pyarrow are imported in this package only, and only when it is used.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import orjson

from ctxpack.archive.types import Origin, dump_json, load_json
from ctxpack.errors import CtxpackError
from ctxpack.evaluate.retention import OVERALL
from ctxpack.pipeline.archiving import Record
from ctxpack.pipeline.run import FileJob, compact_bytes
from ctxpack.pipeline.stages import Compress
from ctxpack.report import ERROR, CompressReport, file_status, ratio
from ctxpack.tokens.counter import TokenCounter

if TYPE_CHECKING:
    import pyarrow as pa
    from ray.data import Dataset

    from ctxpack.pipeline.compaction import CompressSettings


def compact_dataset(
    ds: Dataset,
    *,
    settings: CompressSettings,
    min_retention: dict[str, float] | None = None,
    job: FileJob | None = None,
) -> Dataset:
    """Every row's `bytes` compacted as `compress` compacts the file at its `path`.

    `job` carries what every file shares (input and output format, reading,
    token encoding, whether to archive); its source and output are not used.
    A file that fails comes back with status "error", its error and exit code.
    """
    return compact_rows(ds, stage=Compress(settings, min_retention=min_retention), job=job)


def compact_rows(ds: Dataset, *, stage: Compress, job: FileJob | None = None) -> Dataset:
    """compact_dataset with the stage `compress` built from its options."""
    shared = job or FileJob(source="", output=None)
    return ds.map_batches(
        functools.partial(compact_batch, stage=stage, job=shared),
        batch_format="pyarrow",
        # A block at a time: every file is a unit of work of its own already.
        batch_size=None,
    )


def schema() -> pa.Schema:
    """The columns of a compacted row."""
    import pyarrow as pa

    return pa.schema(
        [
            ("path", pa.string()),
            ("bytes", pa.large_binary()),  # the input, as read
            ("output", pa.large_binary()),  # null for a file that failed
            ("format", pa.string()),
            ("output_format", pa.string()),
            ("status", pa.string()),
            ("tokens_before", pa.int64()),
            ("tokens_after", pa.int64()),
            ("ratio", pa.float64()),
            # The lowest share of facts a compacted session kept; null: none was.
            ("retention", pa.float64()),
            ("error", pa.string()),
            ("exit_code", pa.int64()),
            # The error is one --skip-invalid reads past (CtxpackError.skippable).
            ("skippable", pa.bool_()),
            ("report", pa.string()),  # the file's JSON report, as --report writes it
            # What the archive keeps besides the input and the output; false:
            # nothing changed, or the job keeps no archive.
            ("archived", pa.bool_()),
            ("archive_blobs", pa.list_(pa.large_binary())),
            ("archive_origins", pa.list_(pa.string())),
            ("archive_settings", pa.string()),
            ("archive_report", pa.string()),
        ]
    )


def compact_batch(batch: pa.Table, *, stage: Compress, job: FileJob) -> pa.Table:
    import pyarrow as pa

    # Ray runs one task per core: the counter's own processes would only compete.
    counter = TokenCounter(encoding=job.encoding, estimate=job.estimate, workers=1)
    rows = []
    for path, data in zip(
        batch.column("path").to_pylist(), batch.column("bytes").to_pylist(), strict=True
    ):
        rows.append(_row(path, data, stage=stage, job=replace(job, source=path), counter=counter))
        # The memo would keep every finished file's messages alive.
        counter.forget()
    return pa.Table.from_pylist(rows, schema=schema())


def _row(
    path: str, data: bytes, *, stage: Compress, job: FileJob, counter: TokenCounter
) -> dict[str, Any]:
    try:
        done = compact_bytes(data, job=job, stage=stage, counter=counter)
    except CtxpackError as exc:
        return {
            "path": path,
            "bytes": data,
            "status": ERROR,
            "error": exc.describe(),
            "exit_code": exc.exit_code,
            "skippable": exc.skippable,
            "archived": False,
            "archive_blobs": [],
            "archive_origins": [],
        }
    report, record = done.report, done.record
    before, after = report.before.tokens, report.after.tokens
    return {
        "path": path,
        "bytes": data,
        "output": done.data,
        "format": done.source_format,
        "output_format": done.output_format,
        "status": file_status(s.status for s in report.sessions),
        "tokens_before": before,
        "tokens_after": after,
        "ratio": ratio(after, before),
        "retention": _retention(report),
        "exit_code": 0,
        "report": orjson.dumps(report.to_dict()).decode(),
        "archived": record is not None,
        # A column of binary values: a blob made of lines is made here.
        "archive_blobs": [blob if isinstance(blob, bytes) else bytes(blob) for blob in record.blobs]
        if record
        else [],
        "archive_origins": [dump_json(o.to_dict()) for o in record.origins] if record else [],
        "archive_settings": dump_json(record.settings) if record else None,
        "archive_report": dump_json(record.report) if record else None,
    }


def _retention(report: CompressReport) -> float | None:
    kept = [s.retention["region"][OVERALL] for s in report.sessions if s.retention]
    return min(kept) if kept else None


def record_of(row: dict[str, Any]) -> Record | None:
    """The archive record a compacted row carries, for the process that writes the archive."""
    if not row["archived"]:
        return None
    return Record(
        source_path=row["path"],
        input_bytes=row["bytes"],
        output_bytes=row["output"],
        blobs=list(row["archive_blobs"]),
        origins=[Origin.from_dict(load_json(o)) for o in row["archive_origins"]],
        settings=load_json(row["archive_settings"]),
        report=load_json(row["archive_report"]),
    )
