"""Make session fixtures with the real clients against the stub:
`python -m resume.record CLIENT NAME` writes resume/fixtures/CLIENT/NAME.jsonl.

Each turn is one prompt; the stub answers it with one shell command (the
client runs it for real) and then a short final text, so the session holds
real call/result pairs written by the client itself.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from resume.clients import CLIENTS, ROOT, RUNS, Client
from resume.stubs import serve

TURNS = (
    (
        "Task: build a tally of the numbers 1 to 300 in tally.txt. Constraint: keep every "
        "file inside this directory and never delete anything. Start by printing the numbers.",
        "seq 1 300 | tr '\\n' ' '",
    ),
    ("Now write them to tally.txt, one per line.", "seq 1 300 > tally.txt && wc -l tally.txt"),
    (
        "Show me the first and last forty lines of tally.txt.",
        "head -n 40 tally.txt; tail -n 40 tally.txt",
    ),
    (
        "Count the even numbers in tally.txt and list them.",
        "awk '$1 % 2 == 0' tally.txt | tr '\\n' ' '; echo; awk '$1 % 2 == 0' tally.txt | wc -l",
    ),
    (
        "Add a header line 'TALLY v1' to a copy called tally-v1.txt and show it.",
        "{ echo 'TALLY v1'; cat tally.txt; } > tally-v1.txt && head -n 60 tally-v1.txt",
    ),
    ("Check both files exist and report their sizes.", "ls -l tally.txt tally-v1.txt"),
    (
        "Write the squares of 1 to 120 to squares.txt and show them.",
        'for i in $(seq 1 120); do echo "$i $((i*i))"; done | tee squares.txt',
    ),
    ("Which squares end in 6? List them.", "awk '$2 % 10 == 6' squares.txt"),
    (
        "Make a combined report of tally-v1.txt and squares.txt with line numbers.",
        "cat -n tally-v1.txt squares.txt | head -n 200",
    ),
    ("Summarize the sizes of every .txt file so far.", "wc -l *.txt; ls -l *.txt"),
)


def session_file(client: Client, home: Path) -> Path:
    roots = {
        "claude-code": ".claude/projects",
        "codex": ".codex/sessions",
        "pi": ".pi/agent/sessions",
    }
    found = sorted((home / roots[client.name]).rglob("*.jsonl"))
    if len(found) != 1:
        raise SystemExit(f"expected one session under {home}, found {len(found)}")
    return found[0]


def record(client: Client, dest: Path) -> None:
    RUNS.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix=f"record-{client.name}-", dir=RUNS))
    cwd = home / "work"
    cwd.mkdir()
    sid: str | None = None
    for prompt, command in TURNS:
        with serve(lifetime=200, tool_command=command) as stub:
            run = client.command(
                home=home, base_url=stub.base_url, prompt=prompt, sid=sid, model=client.model(None)
            )
            rc, stderr = run(cwd=cwd, timeout=180)
        if rc != 0:
            raise SystemExit(f"{client.name} exited {rc}: {stderr[-2000:]}")
        sid = client.session_id(session_file(client, home))
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(session_file(client, home).read_bytes())
    print(f"wrote {dest} (session {sid})")


if __name__ == "__main__":
    name, stem = sys.argv[1], sys.argv[2]
    record(CLIENTS[name], ROOT / "resume" / "fixtures" / name / f"{stem}.jsonl")
