"""`make bench`: ctxpack's speed and memory against the raw cost of the same work.

Builds large sessions from the bundled real transcripts (fresh tool-call ids,
same shapes), then times each command in a fresh process, in turns with its
baseline (best of --runs each), and divides by that baseline:

- the raw limit: orjson parse of every line + tiktoken encode_ordinary of every
  model-visible text (what an exact count cannot avoid);
- for --estimate variants: orjson parse alone;
- startup: `python -c "import typer"`;
- a single call on a 100 KB session (median of 20): `python -c "import orjson,
  tiktoken"`, with the import chain of `count` on it;
- a directory of 500 small sessions through one `compress DIR --jobs N`: the
  raw limit of all its files in one process;
- the same directory through `compress DIR --runner ray`: against `--jobs 2`,
  and Ray's own start and stop on this machine.

Prints ratios, targets and peak RSS; writes bench/out/results.json.
"""

from __future__ import annotations

import argparse
import compileall
import functools
import os
import statistics
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
from ctxpack.tokens.encodings import get_encoding
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


@functools.cache
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


# A long session is built by cycling through the bundled sessions, so without
# care each of their texts would come back once a pass: 40 times in the 100 MB
# session. Real sessions seldom repeat a long text verbatim (none of the bundled
# real transcripts repeats more than 15% of its long texts, most none), and a
# memo of equal texts would do less work on the bench than on a user's session.
# So each pass after the first ends its texts with a run of spaces of its own
# length: the same words, shapes and facts, never an equal text. The calls are
# left as they are: an agent does re-run a command and re-read a file.
# The version is in the file's name, so that a session built before is not reused.
INPUT_VERSION = 2


def session_path(size_mb: int) -> Path:
    return OUT / f"session-{size_mb}mb.v{INPUT_VERSION}.jsonl"


def _distinct(msg: dict[str, Any], serial: int) -> dict[str, Any]:
    """`msg` with each text ended by `serial` spaces (none for 0)."""
    if not serial:
        return msg
    pad = " " * serial
    content = msg.get("content")
    if isinstance(content, str) and content:
        return {**msg, "content": content + pad}
    if isinstance(content, list):
        parts = [
            {**part, "text": part["text"] + pad}
            if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]
            else part
            for part in content
        ]
        return {**msg, "content": parts}
    return msg


def build_input(target_bytes: int, path: Path, *, first: int = 0) -> None:
    """One long session: system prompt once, then real turns with fresh ids,
    from the `first`-th bundled session on; each pass through them with
    texts of its own."""
    sessions = source_messages()
    first %= len(sessions)
    sessions = sessions[first:] + sessions[:first]
    written = 0
    serial = 0
    passes = 0
    with path.open("wb") as out:
        out.write(orjson.dumps({"role": "system", "content": "You are a coding agent."}) + b"\n")
        while written < target_bytes:
            for messages in sessions:
                ids: dict[str, str] = {}
                for msg in messages:
                    if msg.get("role") in ("system", "developer"):
                        continue
                    msg = _distinct(dict(msg), passes)
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
            passes += 1
        out.write(orjson.dumps({"role": "user", "content": "Please continue."}) + b"\n")


def measure(cmd: list[str]) -> tuple[float, int, float]:
    """Wall seconds, peak RSS bytes and CPU seconds (user + sys) of one run,
    its children included."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return seconds, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def paired(
    cmd: list[str], base: list[str], runs: int, *, fresh: Path | None = None
) -> tuple[float, float, int]:
    """Best-of-`runs` seconds of a command and of its baseline, run in turns so
    that both see the same machine (shared machines drift by tens of percent
    over a minute), and the command's peak RSS. `fresh`: an archive removed
    before each run of the command, so that every run is a first one."""
    cmd_times, base_times, peak = [], [], 0
    for _ in range(runs):
        base_times.append(measure(base)[0])
        if fresh is not None:
            emptied(fresh)
        seconds, rss, _ = measure(cmd)
        cmd_times.append(seconds)
        peak = max(peak, rss)
    return min(cmd_times), min(base_times), peak


def emptied(archive: Path) -> None:
    """No archive at `archive`: the file and its journals removed."""
    for path in archive.parent.glob(f"{archive.name}*"):
        path.unlink()


# Peak RSS at most this many times the file, for files of this size and up.
RSS_TARGET = 4.0
RSS_TARGET_FROM_MB = 100

SMALL_BYTES = 100_000
SMALL_RUNS = 20
IMPORT_BASE = [sys.executable, "-c", "import orjson, tiktoken"]


def small_rows(out: Path) -> dict[str, Any]:
    """One call on a 100 KB session, the median of 20 in turns with importing
    orjson and tiktoken (what any exact count starts with)."""
    path = out / "session-100kb.jsonl"
    if not path.exists():
        build_input(SMALL_BYTES, path)
    cases = [
        ("count", ["count", str(path)], 3.0),
        (
            "compress --offline --force",
            [
                *("compress", "--offline", "--force", str(path), "-o", str(out / "s.jsonl")),
                *("--archive", str(out / "small.db")),
            ],
            5.0,
        ),
    ]
    rows: dict[str, Any] = {"bytes": path.stat().st_size}
    print(f"\n100 KB session ({rows['bytes']:,} bytes), median of {SMALL_RUNS}:")
    for name, argv, target in cases:
        times, bases, cpus, base_cpus, peak = [], [], [], [], 0
        for _ in range(SMALL_RUNS):
            base_seconds, _, base_cpu = measure(IMPORT_BASE)
            # Every compaction a first one, as for the large sessions.
            emptied(out / "small.db")
            seconds, rss, cpu = measure([*CTXPACK, *argv])
            times.append(seconds)
            bases.append(base_seconds)
            cpus.append(cpu)
            base_cpus.append(base_cpu)
            peak = max(peak, rss)
        seconds, base = statistics.median(times), statistics.median(bases)
        cpu, base_cpu = statistics.median(cpus), statistics.median(base_cpus)
        ratio = seconds / base
        rows[name] = {
            "seconds": seconds,
            "baseline_s": base,
            "baseline": "import orjson, tiktoken",
            "ratio": ratio,
            # CPU seconds move less than wall time when others share the machine.
            "cpu_s": cpu,
            "baseline_cpu_s": base_cpu,
            "cpu_ratio": cpu / base_cpu,
            "target": target,
            "peak_rss": peak,
        }
        ok = "ok" if ratio <= target else "OVER"
        print(
            f"  {name:38s} {seconds:6.3f}s vs {base:5.3f}s  {ratio:5.2f}x (<= {target}x)"
            f"  CPU {cpu:5.3f}s vs {base_cpu:5.3f}s {cpu / base_cpu:5.2f}x"
            f"  RSS {peak / 1e6:6.1f} MB  {ok}"
        )
    rows["imports"] = import_chain(["count", str(path)])
    return rows


def import_chain(argv: list[str], top: int = 12) -> list[tuple[str, float]]:
    """The heaviest top-level imports of one command (python -X importtime),
    seconds each, printed as the chain a small call pays for."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ctxpack", *argv],
        capture_output=True,
        text=True,
        check=True,
    )
    totals: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        _, cumulative, name = [*line.split("|"), "", ""][:3]
        if not line.startswith("import time:") or not cumulative.strip().isdigit():
            continue
        if not name.startswith(" " * 2):  # nested imports are in their parent's total
            totals.append((name.strip(), int(cumulative) / 1e6))
    totals.sort(key=lambda item: -item[1])
    summary = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in totals[:top])
    print(
        f"  imports of `count` ({sum(t for _, t in totals):.3f}s in all, heaviest first): {summary}"
    )
    return totals[:top]


MANY_FILES = 500
# The raw limit's script run on each file of a folder, in one process.
LIMIT_OF_DIR = r"""
import sys, runpy
from pathlib import Path
script, folder = sys.argv[1:]
for path in sorted(Path(folder).glob("*.jsonl")):
    sys.argv[1:] = [str(path), "count"]
    runpy.run_path(script, run_name="__main__")
"""


def many_sessions(out: Path) -> Path:
    """The folder of 500 small sessions: each one bundled session, in turn, with fresh ids."""
    folder = out / "many"
    if not folder.is_dir() or len(list(folder.glob("*.jsonl"))) < MANY_FILES:
        folder.mkdir(parents=True, exist_ok=True)
        for number in range(MANY_FILES):
            build_input(1, folder / f"s{number:03d}.jsonl", first=number)
    return folder


def many_files_row(out: Path, runs: int) -> dict[str, Any]:
    """500 small sessions (each one bundled session, in turn, with fresh ids)
    through one `compress DIR --jobs N` call against parsing and tokenizing them
    all in one process."""
    folder = many_sessions(out)
    script = out / "limit.py"
    script.write_text(BASELINE)
    jobs = len(os.sched_getaffinity(0))
    target_dir = out / "many-out"
    argv = [
        *CTXPACK,
        "compress",
        "--offline",
        "--force",
        str(folder),
        "-o",
        str(target_dir),
        "--jobs",
        str(jobs),
        "--archive",
        str(out / "many.db"),
    ]
    limit = [sys.executable, "-c", LIMIT_OF_DIR, str(script), str(folder)]
    seconds, base, rss = paired(argv, limit, runs, fresh=out / "many.db")
    ratio = seconds / base
    row = {
        "files": MANY_FILES,
        "bytes": sum(p.stat().st_size for p in folder.glob("*.jsonl")),
        "jobs": jobs,
        "seconds": seconds,
        "baseline_s": base,
        "baseline": "raw limit, one process",
        "ratio": ratio,
        "target": 1.5,
        "peak_rss": rss,
    }
    ok = "ok" if ratio <= 1.5 else "OVER"
    print(
        f"\n{MANY_FILES} small sessions, compress DIR --jobs {jobs}, best of {runs}:"
        f" {seconds:6.2f}s vs {base:5.2f}s  {ratio:5.2f}x (<= 1.5x)  RSS {rss / 1e6:6.1f} MB  {ok}"
    )
    return row


RAY_START = (
    "import ray; ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False); ray.shutdown()"
)


def ray_row(out: Path, runs: int) -> dict[str, Any]:
    """`compress DIR --runner ray` (a local Ray on this machine's cores) against
    `--jobs 2` on the 500 small sessions, in files per second; both include
    their start, and Ray's own is timed alone beside them."""
    folder = many_sessions(out)
    size = sum(p.stat().st_size for p in folder.glob("*.jsonl"))

    def compress(runner: list[str], name: str) -> list[str]:
        archive = out / f"{name}.db"
        for stale in out.glob(f"{archive.name}*"):
            stale.unlink()
        return [
            *CTXPACK,
            *("compress", "--offline", "--force", str(folder), "-o", str(out / name)),
            *("--archive", str(archive), *runner),
        ]

    ray_times, jobs_times, start_times = [], [], []
    for _ in range(runs):
        jobs_times.append(measure(compress(["--jobs", "2"], "many-jobs"))[0])
        ray_times.append(measure(compress(["--runner", "ray"], "many-ray"))[0])
        start_times.append(measure([sys.executable, "-c", RAY_START])[0])
    ray_s, jobs_s, start_s = min(ray_times), min(jobs_times), min(start_times)
    row = {
        "files": MANY_FILES,
        "bytes": size,
        "ray_s": ray_s,
        "jobs2_s": jobs_s,
        "ray_start_s": start_s,
        "ray_files_per_s": MANY_FILES / ray_s,
        "jobs2_files_per_s": MANY_FILES / jobs_s,
        "ratio": ray_s / jobs_s,
    }
    print(f"\n{MANY_FILES} small sessions ({size / 1e6:.1f} MB), best of {runs}:")
    for name, seconds in (("compress DIR --runner ray", ray_s), ("compress DIR --jobs 2", jobs_s)):
        print(f"  {name:38s} {seconds:6.2f}s  {MANY_FILES / seconds:6.1f} files/s")
    print(f"  ray takes {row['ratio']:.2f}x the time; Ray's own start and stop: {start_s:.2f}s")
    return row


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
    parser.add_argument(
        "--small-only", action="store_true", help="only the 100 KB and the 500-file rows"
    )
    parser.add_argument(
        "--ray-only", action="store_true", help="only --runner ray against --jobs 2"
    )
    args = parser.parse_args()
    # What an installed ctxpack runs: its modules compiled once (an editable
    # checkout under PYTHONDONTWRITEBYTECODE would compile them on every call).
    compileall.compile_dir(ROOT / "ctxpack", quiet=1)
    if args.ray_only:
        OUT.mkdir(parents=True, exist_ok=True)
        ray_row(OUT, args.runs)
        return
    if args.fts_only:
        OUT.mkdir(parents=True, exist_ok=True)
        for size in [int(s) for s in args.sizes.split(",")]:
            path = session_path(size)
            if not path.exists() or path.stat().st_size < size * 1_000_000:
                build_input(size * 1_000_000, path)
            print(f"{size} MB session ({path.stat().st_size:,} bytes):")
            fts_row(path)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"sizes": {}}
    results["small"] = small_rows(OUT)
    results["many files"] = many_files_row(OUT, args.runs)
    if args.small_only:
        (OUT / "small.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
        return
    results["ray"] = ray_row(OUT, args.runs)
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
        path = session_path(size)
        if not path.exists() or path.stat().st_size < size * 1_000_000:
            build_input(size * 1_000_000, path)
        limit_cmd = [sys.executable, "-c", BASELINE, str(path), "count"]
        parse_cmd = [sys.executable, "-c", BASELINE, str(path), "parse"]
        rows: dict[str, Any] = {"bytes": path.stat().st_size}
        # A compaction is archived in an empty archive each time: a session is
        # compacted once, and a re-run finds every replaced text stored already.
        fresh = OUT / "first-run.db"
        archived = ["-o", str(OUT / "out.jsonl"), "--archive", str(fresh)]
        cases = [
            ("count", ["count", str(path)], limit_cmd, 1.3),
            ("prune --dry-run", ["prune", "--dry-run", str(path)], limit_cmd, 1.3),
            ("align", ["align", str(path)], limit_cmd, 1.3),
            (
                "compress --offline --force",
                ["compress", "--offline", "--force", str(path), *archived],
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
                ["compress", "--offline", "--force", "--estimate", str(path), *archived],
                parse_cmd,
                2.0,
            ),
        ]
        print(f"\n{size} MB session ({rows['bytes']:,} bytes), best of {args.runs}:")
        for name, argv, base_cmd, target in cases:
            first = fresh if str(fresh) in argv else None
            seconds, base, rss = paired(CTXPACK + argv, base_cmd, args.runs, fresh=first)
            ratio = seconds / base
            rss_ratio = rss / rows["bytes"]
            # The memory target is for large files: at 10 MB the interpreter,
            # its libraries and the tokenizer alone are several times the file.
            memory_ok = rss_ratio <= RSS_TARGET or size < RSS_TARGET_FROM_MB
            ok = "ok" if ratio <= target and memory_ok else "OVER"
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
