"""Print the README's retention table: `compress --force --offline` on every
bundled real transcript, then `ctxpack eval` of the result (region retention)."""

from __future__ import annotations

from pathlib import Path

from ctxpack import formats
from ctxpack.evaluate.retention import CATEGORIES, combine, evaluate_transcripts
from ctxpack.pipeline.compaction import CompressSettings, compress_transcript
from ctxpack.tokens.counter import TokenCounter

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    counter = TokenCounter()
    print("| fixture | compacted sessions | " + " | ".join(CATEGORIES) + " | tokens after |")
    print("|---|---|" + "---|" * len(CATEGORIES) + "---|")
    for path in sorted((ROOT / "fixtures").glob("*/*")):
        if path.suffix not in (".json", ".jsonl", ".traj"):
            continue
        original = formats.read(path.read_bytes(), path=str(path))
        result, report = compress_transcript(
            original, counter=counter, settings=CompressSettings(force=True)
        )
        fmt = None if formats.get(original.format).writable else "openai"
        written = formats.read(formats.write(result, counter=counter, fmt=fmt), path="out", fmt=fmt)
        whole = combine(evaluate_transcripts(original, written, counter=counter))
        cells = []
        for key in CATEGORIES:
            found, kept = whole.found(key), whole.kept(key)
            cells.append(f"{kept}/{found}" if found else "–")
        changed = sum(1 for s in report.sessions if s.status == "compacted")
        ratio = report.after.tokens / report.before.tokens if report.before.tokens else 1.0
        name = f"{path.parent.name}/{path.name}"
        print(
            f"| {name} | {changed}/{len(report.sessions)} | "
            + " | ".join(cells)
            + f" | {ratio:.1%} |"
        )


if __name__ == "__main__":
    main()
