"""`ctxpack engines`: the compaction engines and summarizers there are to name."""

from __future__ import annotations

from ctxpack.cli.app import JsonOpt, app, print_json


@app.command(
    "engines",
    epilog="Examples:\n\n\b\n  ctxpack engines"
    "\n\n\b\n  ctxpack compress s.jsonl --engine NAME --summarizer NAME",
)
def list_engines(json_out: JsonOpt = False) -> None:
    """List the compaction engines and summarizers: the built-in ones and those that
    installed packages declare (entry points ctxpack.engines, ctxpack.summarizers).

    A plugin is used only when named: --engine, --summarizer or the config file."""
    from ctxpack.cli.render import listing
    from ctxpack.engines import registry

    plugins = [p for kind in registry.GROUPS for p in registry.installed(kind)]
    if json_out:
        print_json(
            [
                {
                    "kind": p.kind,
                    "name": p.name,
                    "package": p.package,
                    "version": p.version,
                    "builtin": p.builtin,
                    "entry_point": p.target or None,
                    "problem": p.problem or None,
                }
                for p in plugins
            ]
        )
        return
    listing(
        ["kind", "name", "package", "version", "source"],
        [
            [
                p.kind,
                p.name,
                p.package,
                p.version,
                "built-in" if p.builtin else p.problem or f"plugin {p.target}",
            ]
            for p in plugins
        ],
    )
