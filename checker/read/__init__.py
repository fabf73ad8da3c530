"""Reading a submitted folder without trusting it: bounded, no links, nothing imported or run.

Which level a path is (``levels.py``), the capped folder reader (``safefs.py``), MLLOG lines into validated
events (``mllog_read.py``), small JSON files, safetensors headers, archives, and each trial's figures
recomputed from its events (``trial_record.py``).
"""
