"""The result format, in one place: what ``trainmark run`` writes and ``trainmark check`` reads.

One owner so that the writer and the reader cannot disagree (docs/result-format.md):

- ``layout``: folder and file names of a submission (the implementation record's too), the patterns the
  checker matches them with, and the folder-name rule (``name_refusal``) the checker, run and CLI apply;
- ``labels``: trial statuses, energy methods and precision labels;
- ``epochlog``: the per-epoch text log ``epochs.log``;
- ``structure``: a model's structure description and fingerprint (``structure.json``);
- ``mllog``: the MLLOG event sequence of one trial (keys, the ``:::MLLOG `` marker, a typed writer, a
  reader for files just written);
- ``mllog_read``: the one hardened MLLOG reader of submitted files (bounded, validated, every bad line a
  ``Problem`` with its line and kind), used by the checker, the report and the scale tools;
- ``text``: submitted text made safe to show (``clip``, ``printable``);
- ``telemetry``: the names the telemetry CSV and its checks share;
- ``artifacts``: the outputs of ``sweep``, ``ops``, ``scale`` and ``ops --op allreduce`` (format ids, file
  names, columns), which are not part of a result folder but are read back by the harness and the report.

Nothing here imports torch at module level, so the checker stays light.
"""
