"""MLPerf's side of the checker: mlperf-logging's compliance engine run only on our own configs.

``compliance_rules.py`` generates a benchmark's config from its rule file, ``compliance_configs.py`` names the
only configs the engine may run, ``engine.py`` runs it on validated events, and ``results.py`` scores MLPerf
Training result folders as MLPerf's summarizer does.
"""
