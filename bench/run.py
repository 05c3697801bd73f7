"""`make bench`: ctxpack's speed and memory against the raw cost of the same work.

Builds large sessions from the bundled real transcripts (fresh tool-call ids,
same shapes), then times each command in a fresh process, in turns with its
baseline (best of --runs each), and divides by that baseline:

- the raw limit: orjson parse of every line + tiktoken encode_ordinary of every
  model-visible text (what an exact count cannot avoid);
- for --estimate variants: orjson parse alone;
- startup: `python -c "import typer"`.

Prints ratios and targets; writes bench/out/results.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
OUT = ROOT / "bench" / "out"
CTXPACK = [sys.executable, "-m", "ctxpack"]

BASELINE = r"""
import sys, orjson
from ctxpack.tokens.counter import get_encoding
enc = None if sys.argv[2] == "parse" else get_encoding("o200k_base")
TEXT = {"text", "input_text", "output_text", "tool_output", "refusal"}
total = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        msg = orjson.loads(line)
        if enc is None:
            continue
        texts = []
        c = msg.get("content")
        if isinstance(c, str):
            texts.append(c)
        elif isinstance(c, list):
            texts += [p["text"] for p in c if isinstance(p, dict) and p.get("type") in TEXT]
        for call in msg.get("tool_calls") or []:
            texts += [call["function"]["name"], call["function"]["arguments"]]
        fc = msg.get("function_call")
        if fc:
            texts += [fc.get("name") or "", fc.get("arguments") or ""]
        for key in ("reasoning_content", "reasoning", "thinking"):
            if isinstance(msg.get(key), str):
                texts.append(msg[key])
        for t in texts:
            total += len(enc.encode_ordinary(t))
print(total)
"""


def source_messages() -> list[list[dict[str, Any]]]:
    """Sessions of OpenAI messages from the bundled transcripts."""
    sys.path.insert(0, str(ROOT))
    from ctxpack import formats

    sessions: list[list[dict[str, Any]]] = []
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.suffix not in (".json", ".jsonl", ".traj"):
            continue
        try:
            transcript = formats.read(path.read_bytes(), path=str(path))
        except Exception:  # a format not readable yet is simply not used
            continue
        sessions += [s.messages for s in transcript.sessions if len(s.messages) > 3]
    return sessions


def build_input(target_bytes: int, path: Path) -> None:
    """One long session: system prompt once, then real turns with fresh ids."""
    sessions = source_messages()
    written = 0
    serial = 0
    with path.open("wb") as out:
        out.write(orjson.dumps({"role": "system", "content": "You are a coding agent."}) + b"\n")
        while written < target_bytes:
            for messages in sessions:
                ids: dict[str, str] = {}
                for msg in messages:
                    if msg.get("role") in ("system", "developer"):
                        continue
                    msg = dict(msg)
                    if msg.get("tool_calls"):
                        calls = []
                        for call in msg["tool_calls"]:
                            serial += 1
                            ids[call.get("id", "")] = f"call_{serial:08d}"
                            calls.append({**call, "id": ids[call.get("id", "")]})
                        msg["tool_calls"] = calls
                    if msg.get("tool_call_id") in ids:
                        msg["tool_call_id"] = ids[msg["tool_call_id"]]
                    line = orjson.dumps(msg) + b"\n"
                    out.write(line)
                    written += len(line)
                if written >= target_bytes:
                    break
        out.write(orjson.dumps({"role": "user", "content": "Please continue."}) + b"\n")


def measure(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS bytes (its children included) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return seconds, usage.ru_maxrss * 1024


def paired(cmd: list[str], base: list[str], runs: int) -> tuple[float, float, int]:
    """Best-of-`runs` seconds of a command and of its baseline, run in turns so
    that both see the same machine (shared machines drift by tens of percent
    over a minute), and the command's peak RSS."""
    cmd_times, base_times, peak = [], [], 0
    for _ in range(runs):
        base_times.append(measure(base)[0])
        seconds, rss = measure(cmd)
        cmd_times.append(seconds)
        peak = max(peak, rss)
    return min(cmd_times), min(base_times), peak


FTS_INDEX = r"""
import sys, orjson
from ctxpack.archive.recall import Recall
with Recall.open(sys.argv[1]) as store:
    run = store.index()
print(orjson.dumps({"blobs": run.blobs, "lines": run.lines, "seconds": run.seconds}).decode())
"""


def fts_row(path: Path) -> dict[str, Any]:
    """The full-text index of one compaction of `path`: built from scratch in a
    fresh process (what the first `search` of `ctxpack mcp` does)."""
    archive = OUT / f"fts-{path.stem}.db"
    for stale in OUT.glob(f"{archive.name}*"):
        stale.unlink()
    compress = ["compress", "--offline", "--force", str(path), "-o", str(OUT / "out.jsonl")]
    measure([*CTXPACK, *compress, "--archive", str(archive)])
    before = archive.stat().st_size
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", FTS_INDEX, str(archive)], capture_output=True, check=True
    )
    wall = time.perf_counter() - start
    run = orjson.loads(done.stdout)
    row = {
        **run,
        "wall_s": wall,
        "archive_bytes": before,
        "index_bytes": _db_size(archive) - before,
    }
    print(
        f"  {'FTS index build (first search)':38s} {run['seconds']:6.2f}s ({wall:.2f}s with"
        f" startup): {run['blobs']:,} blobs, {run['lines']:,} lines,"
        f" +{row['index_bytes'] / 1e6:.1f} MB on a {before / 1e6:.1f} MB archive"
    )
    return row


def _db_size(archive: Path) -> int:
    return sum(p.stat().st_size for p in archive.parent.glob(f"{archive.name}*"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100", help="input sizes in MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--fts-only", action="store_true", help="only the full-text index build, per size"
    )
    args = parser.parse_args()
    if args.fts_only:
        OUT.mkdir(parents=True, exist_ok=True)
        for size in [int(s) for s in args.sizes.split(",")]:
            path = OUT / f"session-{size}mb.jsonl"
            if not path.exists() or path.stat().st_size < size * 1_000_000:
                build_input(size * 1_000_000, path)
            print(f"{size} MB session ({path.stat().st_size:,} bytes):")
            fts_row(path)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"sizes": {}}
    startup, typer_import, _ = paired(
        [*CTXPACK, "--version"], [sys.executable, "-c", "import typer"], 7
    )
    results["startup"] = {
        "ctxpack": startup,
        "import_typer": typer_import,
        "ratio": startup / typer_import,
    }
    print(
        f"startup: ctxpack --version {startup:.3f}s vs import typer {typer_import:.3f}s "
        f"-> {startup / typer_import:.2f}x (target <= 1.5x)"
    )
    for size in [int(s) for s in args.sizes.split(",")]:
        path = OUT / f"session-{size}mb.jsonl"
        if not path.exists() or path.stat().st_size < size * 1_000_000:
            build_input(size * 1_000_000, path)
        limit_cmd = [sys.executable, "-c", BASELINE, str(path), "count"]
        parse_cmd = [sys.executable, "-c", BASELINE, str(path), "parse"]
        rows: dict[str, Any] = {"bytes": path.stat().st_size}
        cases = [
            ("count", ["count", str(path)], limit_cmd, 1.3),
            ("prune --dry-run", ["prune", "--dry-run", str(path)], limit_cmd, 1.3),
            ("align", ["align", str(path)], limit_cmd, 1.3),
            (
                "compress --offline --force",
                ["compress", "--offline", "--force", str(path), "-o", str(OUT / "out.jsonl")],
                limit_cmd,
                1.5,
            ),
            ("count --estimate", ["count", "--estimate", str(path)], parse_cmd, 2.0),
            (
                "prune --dry-run --estimate",
                ["prune", "--dry-run", "--estimate", str(path)],
                parse_cmd,
                2.0,
            ),
            (
                "compress --offline --force --estimate",
                [
                    "compress",
                    "--offline",
                    "--force",
                    "--estimate",
                    str(path),
                    "-o",
                    str(OUT / "out.jsonl"),
                ],
                parse_cmd,
                2.0,
            ),
        ]
        print(f"\n{size} MB session ({rows['bytes']:,} bytes), best of {args.runs}:")
        for name, argv, base_cmd, target in cases:
            seconds, base, rss = paired(CTXPACK + argv, base_cmd, args.runs)
            ratio = seconds / base
            rss_ratio = rss / rows["bytes"]
            ok = "ok" if ratio <= target and rss_ratio <= 4 else "OVER"
            rows[name] = {
                "seconds": seconds,
                "baseline_s": base,
                "baseline": "raw limit" if base_cmd is limit_cmd else "orjson parse",
                "ratio": ratio,
                "target": target,
                "peak_rss": rss,
                "rss_ratio": rss_ratio,
            }
            print(
                f"  {name:38s} {seconds:6.2f}s vs {base:5.2f}s  {ratio:5.2f}x (<= {target}x)"
                f"  RSS {rss / 1e6:6.1f} MB = {rss_ratio:4.2f}x file  {ok}"
            )
        rows["fts index"] = fts_row(path)
        results["sizes"][f"{size}mb"] = rows
    (OUT / "results.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    print(f"\nwrote {OUT / 'results.json'}")


if __name__ == "__main__":
    main()
