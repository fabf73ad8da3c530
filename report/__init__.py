"""Reports for people and for CI: ``trainmark report``, ``trainmark compare``, ``trainmark table``.

Every figure comes from the checker's own recomputation (``trainmark.checker.check.check_path``,
run by the command layer, trainmark.cli.checked, which hands over its ``trainmark-check/1`` JSON);
the only extra reading is each trial's per-epoch curve, taken from the MLLOG events with the
hardened reader (trainmark.format.mllog_read) out of files the command layer reads the checker's
way, so a submitted folder is treated exactly as hostile as the checker treats it. report/ never
imports the checker or the harness.

collect gathers, summary makes the rows every format shares, page lays out the HTML (overview
first, folded sections), plots and svg draw its charts as SVG text, markdown writes the CI comment.
"""
