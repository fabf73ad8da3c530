"""The verdict: finding codes, findings, scores and how they are shown.

``codes.py`` is the catalogue of every rule by stable code (``codes_docs.py`` renders its table),
``findings.py`` collects them with caps, ``scoring.py`` computes scores from recomputed trials,
``result.py`` is the check's result as data (``trainmark check --json``), ``render.py`` and
``ci_formats.py`` show it to people, spreadsheets and CI (JUnit, SARIF).
"""
