"""``trainmark profile``: why a training step takes the time it takes (issue 37).

A few steps of a benchmark after warm-up under the framework's own profiler (harness/frameworks/
pytorch_profile.py, tensorflow_profile.py), turned here into a table of operators with their roofs
(``analysis.py``), the step's phases, the consistency figures, and the workload characterization of
every benchmark (``characterize.py``). ``session.py`` runs one profile, ``output.py`` prints it.
docs/profile.md says what each column means and what a profile cannot see.
"""
