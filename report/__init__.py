"""Reports for people and for CI: ``trainmark report``, ``trainmark compare``, ``trainmark table``.

Every figure comes from the checker's own recomputation (``trainmark.checker.check.check_path``);
the only extra reading is each trial's per-epoch curve, taken from the MLLOG events through the
checker's safe reader, so a submitted folder is treated exactly as hostile as the checker treats it.
"""
