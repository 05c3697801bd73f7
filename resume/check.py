"""Resume each fixture, original and compacted, in the real client and check
the request it sends: `python -m resume.check` (or `make resume-check`).

For every client and fixture: the original, ctxpack's compaction of it, and
the compaction of that compaction go into a fresh HOME where the client looks
for sessions; the client resumes with a new prompt against the stub, and the
request it sends is checked. One more Claude Code run checks recall: with
`ctxpack mcp` registered, the stub calls its recall tool on a ref the
compacted session cites, and the tool result must be the archived output
(resume/recall.py). Exit 1 on any failure.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resume import recall
from resume.clients import CLIENTS, ROOT, RUNS, Client, claude_mcp_add
from resume.requests import Item, file_strings
from resume.stubs import serve
from resume.table import Row, table

PROMPT = "ctxpack resume check: what is the next step?"
RECORD = "[ctxpack: compacted history"
TIMEOUT = 150.0
CONTEXT_LENGTHS = (2000, 4000, 8000, 16000)
WARNING = re.compile(r"warn|error|skipping|invalid|fail|could not|unable", re.IGNORECASE)
# resume/fixtures holds sessions only this check resumes (a client's own
# session made against the stub, a large real pi session), kept out of the
# every-fixture tests for their size.
FIXTURES = {
    name: sorted(
        [
            *(ROOT / "fixtures" / name).glob("*.jsonl"),
            *(ROOT / "resume" / "fixtures" / name).glob("*.jsonl"),
        ]
    )
    for name in ("claude-code", "codex", "pi")
}
SKIP_FIXTURES = {
    "openagents__regex-log__subagents__agent-a028728.jsonl": (
        "a subagent sidechain, not a session a client resumes"
    ),
    "openagents__regex-log__opus-raw.jsonl": "3 turns: too short for ctxpack to compact",
}


def ctxpack_bin() -> str:
    return str(Path(sys.executable).with_name("ctxpack"))


def _has_record(path: Path) -> bool:
    return RECORD in path.read_text(encoding="utf-8")


def _compress_at(
    src: Path,
    dest: Path,
    extra: list[str],
    *,
    until: Callable[[Path], bool] = _has_record,
    what: str = "record",
) -> str:
    """Compact at the smallest context length whose output passes `until`; '' or why not."""
    last = ""
    for n in CONTEXT_LENGTHS:
        argv = [
            ctxpack_bin(),
            "compress",
            "--offline",
            "--force",
            "--context-length",
            str(n),
            *extra,
            str(src),
            "-o",
            str(dest),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
        if until(dest):
            return ""
        last = f"no {what} written at any --context-length"
    return last


def compress(src: Path, dest: Path, fmt: str | None) -> tuple[str, str]:
    """Compact `src` into `dest` with the smallest context that compacts it.

    Returns (why it could not, a note): when ctxpack does not recognise the
    format it is retried with --from `fmt`, so the client still gets to judge
    the output, and the note makes the row fail."""
    why = _compress_at(src, dest, [])
    if why and fmt and "no message list" in why:
        retried = _compress_at(src, dest, ["--from", fmt])
        return retried, f"ctxpack did not detect the format ({why}); compacted with --from {fmt}"
    return why, ""


def pairs_problem(items: list[Item]) -> str:
    calls: dict[str, int] = {}
    results: dict[str, int] = {}
    for i, item in enumerate(items):
        if item.kind == "call":
            calls.setdefault(item.call_id, i)
        elif item.kind == "result":
            if item.call_id not in calls:
                return f"result {item.call_id} without an earlier call"
            if item.call_id in results:
                return f"two results for {item.call_id}"
            results[item.call_id] = i
    missing = [cid for cid in calls if cid not in results]
    return f"{len(missing)} call(s) without a result, first {missing[0]}" if missing else ""


def order_problem(items: list[Item], *, head: str, from_file: str) -> str:
    """The first user task before the record, the record before the last kept turns."""
    rec = [i for i, item in enumerate(items) if RECORD in item.text]
    if not rec:
        return ""
    at = rec[0]
    first = next(
        (i for i, item in enumerate(items) if head and head in item.text and i != at), None
    )
    if first is None:
        inside = head and head in items[at].text
        return "first user task only inside the record" if inside else "first user task missing"
    if first > at:
        return f"record (item {at}) before the first user task (item {first})"
    kept = [i for i, item in enumerate(items) if item.text and item.text[:200] in from_file]
    if not any(i > at for i in kept):
        return "no kept turn after the record"
    return ""


def prompt_last(items: list[Item]) -> bool:
    turns = [item for item in items if item.role in ("user", "assistant", "tool")]
    return bool(turns) and turns[-1].kind == "text" and turns[-1].text.strip() == PROMPT


def head_text(items: list[Item], from_file: str) -> str:
    """The first user text the session file itself holds (not one the client adds)."""
    for item in items:
        text = item.text.strip()
        # Tagged blocks (<environment_context>, <system-reminder>) are the
        # client's own context, not the user's task.
        tagged = text.startswith("<") and text.endswith(">")
        if (
            item.role == "user"
            and item.kind == "text"
            and text
            and not tagged
            and (RECORD not in text)
        ):
            probe = text[:200]
            if probe in from_file:
                return probe
    return ""


def resume_once(
    client: Client,
    session: Path,
    home: Path,
    *,
    tool_use: tuple[str, dict[str, Any]] | None = None,
) -> tuple[Row, list[Item]]:
    """Resume `session` with PROMPT; the stub answers it with `tool_use` first, if given."""
    row = Row(client.name, session.name, "")
    cwd = home / "work"
    cwd.mkdir(parents=True, exist_ok=True)
    sid = client.place(session=session, home=home, cwd=cwd)
    allow = (tool_use[0],) if tool_use else ()
    with serve(lifetime=TIMEOUT + 10, tool_use=tool_use) as stub:
        run = client.command(
            home=home,
            base_url=stub.base_url,
            prompt=PROMPT,
            sid=sid,
            model=client.model(session),
            allow=allow,
        )
        rc, stderr = run(cwd=cwd, timeout=TIMEOUT)
        bodies = [r.body for r in stub.requests if r.method == "POST" and isinstance(r.body, dict)]
    path = "messages" if client.api == "anthropic" else "input"
    candidates = [client.parse(b) for b in bodies if path in b]
    candidates = [c for c in candidates if any(PROMPT in i.text for i in c)]
    items = max(candidates, key=len) if candidates else []
    row.accepted = rc == 0 and bool(items)
    if not row.accepted:
        row.detail = f"exit {rc}, {len(bodies)} request(s); " + stderr.strip()[-300:]
    row.warnings = [
        line.strip()
        for line in stderr.splitlines()
        if WARNING.search(line) and not any(n in line for n in client.noise)
    ]
    return row, items


def check_fixture(client: Client, fixture: Path, work: Path) -> list[Row]:
    variants: list[tuple[str, Path | None, str]] = [("original", fixture, "")]
    once, twice = work / f"{fixture.stem}.once.jsonl", work / f"{fixture.stem}.twice.jsonl"
    fmt = None if client.name == "pi" else client.name
    why, note = compress(fixture, once, fmt)
    notes = {"original": "", "compacted": note, "compacted twice": note}
    if why:
        variants += [("compacted", None, why), ("compacted twice", None, why)]
    else:
        why2, note2 = compress(once, twice, fmt)
        notes["compacted twice"] = "; ".join(n for n in (note, note2) if n)
        variants += [
            ("compacted", once, ""),
            ("compacted twice", twice if not why2 else None, why2),
        ]
    rows: list[Row] = []
    head = ""
    for variant, session, why in variants:
        if session is None:
            if client.name == "pi":
                rows.append(
                    Row(
                        client.name,
                        fixture.name,
                        variant,
                        skip=f"ctxpack cannot read pi yet ({why})",
                    )
                )
            else:
                rows.append(Row(client.name, fixture.name, variant, detail=f"ctxpack: {why}"))
            continue
        home = Path(tempfile.mkdtemp(prefix=f"{client.name}-", dir=RUNS))
        row, items = resume_once(client, session, home)
        row.variant, row.fixture, row.note = variant, fixture.name, notes[variant]
        from_file = file_strings(str(session))
        if variant == "original":
            head = head_text(items, from_file)
        row.records = sum(RECORD in item.text for item in items)
        row.order = order_problem(items, head=head, from_file=from_file)
        row.pairs = pairs_problem(items)
        row.prompt_last = prompt_last(items)
        rows.append(row)
        if row.ok:
            shutil.rmtree(home, ignore_errors=True)
        else:
            row.detail = (row.detail + f" (HOME kept: {home})").strip()
    return rows


def check_recall(client: Client, work: Path) -> Row:
    """Claude Code reads a pruned output back through `ctxpack mcp`."""
    row = Row(client.name, recall.FIXTURE.name, "recall (MCP)", recall="")
    archive, once = work / "recall.db", work / f"{recall.FIXTURE.stem}.recall.jsonl"
    extra = ["--recall", "--archive", str(archive)]
    why = _compress_at(
        recall.FIXTURE,
        once,
        extra,
        until=lambda path: bool(recall.cited_ref(path)),
        what="recall placeholder",
    )
    if why:
        row.recall = row.detail = f"ctxpack: {why}"
        return row
    ref = recall.cited_ref(once)
    shown = subprocess.run(
        [ctxpack_bin(), "show", ref, "--archive", str(archive)], capture_output=True, timeout=60
    )
    blob = shown.stdout.decode("utf-8")
    home = Path(tempfile.mkdtemp(prefix=f"{client.name}-recall-", dir=RUNS))
    cwd = home / "work"
    cwd.mkdir()
    server = [ctxpack_bin(), "mcp", "--archive", str(archive)]
    rc, stderr = claude_mcp_add(home=home, name=recall.SERVER, argv=server)(cwd=cwd, timeout=60)
    if shown.returncode or rc:
        row.recall = f"ctxpack show exit {shown.returncode}, claude mcp add exit {rc}: {stderr}"
        return row
    got, items = resume_once(client, once, home, tool_use=(recall.TOOL, {"ref": ref}))
    row.accepted, row.warnings, row.detail = got.accepted, got.warnings, got.detail
    at = recall.recall_call_at(items, ref=ref)
    row.prompt_last = prompt_last(items[:at]) if at is not None else False
    row.pairs = pairs_problem(items)
    row.recall = recall.result_problem(items, ref=ref, blob=blob)
    row.recalled = len(shown.stdout) if not row.recall else 0
    if row.ok:
        shutil.rmtree(home, ignore_errors=True)
    else:
        row.detail = (row.detail + f" (HOME kept: {home})").strip()
    return row


def main(argv: list[str]) -> int:
    wanted = argv or list(CLIENTS)
    RUNS.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="compacted-", dir=RUNS) as tmp:
        for name in wanted:
            client = CLIENTS[name]
            for fixture in FIXTURES[name]:
                if fixture.name in SKIP_FIXTURES:
                    rows.append(Row(name, fixture.name, "all", skip=SKIP_FIXTURES[fixture.name]))
                    continue
                print(f"resuming {name} {fixture.name} ...", file=sys.stderr, flush=True)
                rows += check_fixture(client, fixture, Path(tmp))
            if name == "claude-code":
                print(f"recalling through ctxpack mcp in {name} ...", file=sys.stderr, flush=True)
                rows.append(check_recall(client, Path(tmp)))
    for r in rows:
        for problem in (r.note, r.order, r.pairs, r.recall, r.detail):
            if problem and not r.skip:
                print(f"{r.client} {r.fixture} [{r.variant}]: {problem}")
        for line in r.warnings:
            print(f"{r.client} {r.fixture} [{r.variant}] stderr: {line}")
    print(table(rows))
    failed = [r for r in rows if not r.ok]
    print(
        f"{len(rows) - len(failed)} of {len(rows)} rows ok"
        f" ({sum(bool(r.skip) for r in rows)} skipped)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
