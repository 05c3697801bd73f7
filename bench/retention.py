"""Print the README's retention table: `ctxpack compress --offline --force
--context-length N` on every real transcript, then `ctxpack eval` of the
result: the facts of the compacted region (every original message not kept
verbatim, pruned outputs included) and the region's token ratio (what replaced
it over its own tokens), per file and pooled by sum.

    python bench/retention.py                      # fixtures/, 32,000-token window
    python bench/retention.py ../shared/real-transcripts --context-length 32000
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from ctxpack import formats
from ctxpack.align.budget import Budget
from ctxpack.errors import CtxpackError
from ctxpack.evaluate.retention import EvalReport, FactCache, combine, evaluate_transcripts
from ctxpack.formats.base import ReadOptions
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.tokens.counter import TokenCounter

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = (".json", ".jsonl", ".traj")
# The categories the table shows: the ones a resumed agent works from.
SHOWN = ("paths", "commands", "errors", "identifiers")
CONTEXT_LENGTH = 32_000


def transcripts(roots: Iterable[Path]) -> list[Path]:
    return sorted(path for root in roots for path in root.rglob("*") if path.suffix in SUFFIXES)


def measure(
    path: Path, *, counter: TokenCounter, context_length: int, cache: FactCache
) -> EvalReport:
    """Compress one file as the CLI does, write it, read it back, evaluate. A
    malformed line is read past and kept, as `--skip-invalid` does (pi's older
    session holds two JSON objects on one line)."""
    options = ReadOptions(skip_invalid=True)
    original = formats.read(path.read_bytes(), path=str(path), options=options)
    settings = CompressSettings(budget=Budget(context_length=context_length), force=True)
    result, _ = compress_transcript(original, counter=counter, settings=settings)
    fmt = None if formats.get(original.format).writable else "openai"
    written = formats.read(
        formats.write(result, counter=counter, fmt=fmt), path="out", fmt=fmt, options=options
    )
    report = combine(evaluate_transcripts(original, written, counter=counter, cache=cache))
    report.label = str(path)
    return report


def pooled(paths: list[Path], *, counter: TokenCounter, context_length: int) -> EvalReport:
    cache = FactCache()
    reports = [
        measure(path, counter=counter, context_length=context_length, cache=cache) for path in paths
    ]
    return combine(reports, label="pooled")


def _cells(report: EvalReport) -> str:
    cells = []
    for key in SHOWN:
        found, kept = report.found(key), report.kept(key)
        cells.append(f"{kept}/{found} ({kept / found:.0%})" if found else "–")
    if report.region_tokens_before:
        cells.append(f"{report.region_tokens_before:,} → {report.region_tokens_after:,}")
        cells.append(f"{report.region_ratio:.2f}")
    else:
        cells += ["–", "–"]
    cells.append(f"{report.ratio:.2f}")
    return " | ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", type=Path, default=[ROOT / "fixtures"])
    parser.add_argument("--context-length", type=int, default=CONTEXT_LENGTH)
    args = parser.parse_args()
    counter = TokenCounter()
    cache = FactCache()
    reports = []
    print("| transcript | " + " | ".join(SHOWN) + " | region tokens | region ratio | file ratio |")
    print("|---|" + "---|" * len(SHOWN) + "---|---|---|")
    for path in transcripts(args.roots):
        try:
            report = measure(path, counter=counter, context_length=args.context_length, cache=cache)
        except CtxpackError as exc:
            print(f"skipped {path}: {exc}", file=sys.stderr)
            continue
        reports.append(report)
        name = f"{path.parent.name}/{path.name}"
        print(f"| {name} | {_cells(report)} |")
    whole = combine(reports, label="pooled")
    print(f"| **pooled ({len(reports)} files)** | {_cells(whole)} |")


if __name__ == "__main__":
    main()
