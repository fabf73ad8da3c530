"""``trainmark scale``: throughput over world sizes, time to train past this machine, and its validation.

``saturation.py`` launches one torchrun per world size, ``worker.py`` is what every rank runs,
``projection.py`` is the data-parallel step model (step time, efficiency, saturation, a two-level
all-reduce), ``time_to_train.py`` turns it into minutes to converge at N accelerators from convergence
points, ``mlperf_throughput.py`` reads MLPerf results and ``mlperf_validate.py`` checks the projection
against every same-system pair in them (``trainmark scale validate``).
"""
