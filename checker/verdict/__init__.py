"""The verdict: finding codes, findings, scores and how they are shown.

``registry.py`` holds every rule by stable code, each declared by the module that emits it (``codes.py``
only those with no single emitter; ``codes_docs.py`` renders the table),
``findings.py`` collects them with caps, ``scoring.py`` computes scores from recomputed trials,
``result.py`` is the check's result as data (``trainmark check --json``), ``render.py`` and
``ci_formats.py`` show it to people, spreadsheets and CI (JUnit, SARIF).
"""
