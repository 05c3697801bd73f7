"""Compaction engines and summarizers: the built-in ones and the plugins that
installed packages declare under the `ctxpack.engines` and
`ctxpack.summarizers` entry points, used only when named."""
