"""Stage 2: where the verbatim head ends and the verbatim tail begins."""
