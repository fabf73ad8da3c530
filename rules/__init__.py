"""Rules as data: one versioned, schema-validated file per benchmark (``rules/<version>/``)."""
from trainmark.rules.ruleset import (  # noqa: F401
    LATEST_VERSION,
    BenchmarkRules,
    RulesError,
    get_rules,
    known_versions,
    load_file,
    load_ruleset,
)
