"""The checks, one module per part of a result folder; each adds findings and returns nothing.

``benchmark.py`` (one folder up) calls them in order for every trainmark benchmark folder: epochs.log,
the MLLOG beside it and their agreement, trial.json, the trials together (count, seeds, target,
hyperparameters), curves, spread, ranks, energy and telemetry, model conformity, the implementation record
and the system description.
"""
