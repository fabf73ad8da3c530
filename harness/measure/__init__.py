"""Measurement: what a run records beside its metric.

Energy meters by domain (``energy.py``), measurement windows over one clock and one meter (``windows.py``),
the 1 Hz telemetry series (``telemetry.py``), other processes' load (``other_load.py``), achieved FLOP
rates and peak rates (``flops.py``, ``peaks.py``; the FLOP count is the framework's), the system
description (``system.py``) and several nodes summed at the same instants (``nodes.py``).
"""
