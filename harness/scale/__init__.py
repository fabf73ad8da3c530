"""``trainmark scale``: throughput over world sizes and its projection past this machine.

``saturation.py`` launches one torchrun per world size, ``worker.py`` is what every rank runs,
``projection.py`` is the data-parallel model (step time, efficiency, saturation) and
``mlperf_throughput.py`` reads MLPerf results to validate it.
"""
