"""The result format, in one place: what ``trainmark run`` writes and ``trainmark check`` reads.

One owner so that the writer and the reader cannot disagree (docs/result-format.md):

- ``layout``: folder and file names of a submission, and the patterns the checker matches them with;
- ``labels``: trial statuses, energy methods and precision labels;
- ``epochlog``: the per-epoch text log ``epochs.log``;
- ``structure``: a model's structure description and fingerprint (``structure.json``);
- ``mllog``: the MLLOG event sequence of one trial (keys, a typed writer, a typed reader);
- ``telemetry``: the names the telemetry CSV and its checks share.

Nothing here imports torch at module level, so the checker stays light.
"""
