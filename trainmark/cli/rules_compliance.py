"""``trainmark rules compliance BENCHMARK --division closed|open``: print the generated compliance config.

The config is the one ``trainmark check`` runs through mlperf-logging's compliance engine
(``trainmark.checker.mlperf.compliance_rules.compliance_yaml``), printed so that anyone can run MLPerf's own
checker with it::

    trainmark rules compliance resnet-mini --division closed > resnet-mini-closed.yaml
    python -m mlperf_logging.compliance_checker --usage training --ruleset 4.1.0 \\
        --config "$PWD/resnet-mini-closed.yaml" result_1.txt

(``--ruleset`` only picks mlperf-logging's line parser; ``--config`` needs an absolute path.)
"""
from __future__ import annotations

import sys
from pathlib import Path

from trainmark.errors import UserError


def register_compliance(rules_subparsers, version_args) -> None:
    """Add ``compliance`` under ``trainmark rules`` (``version_args`` adds --rules-version/--rules-dir)."""
    p = rules_subparsers.add_parser("compliance", help="print the mlperf-logging compliance config the checker uses")
    p.add_argument("benchmark", help="benchmark name (trainmark rules list)")
    p.add_argument("--division", default="closed", help="closed or open (default: %(default)s)")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the config to FILE instead of stdout")
    version_args(p)
    p.set_defaults(func=cmd_compliance)


def cmd_compliance(args) -> int:
    from trainmark.checker.mlperf import compliance_rules as compliance
    from trainmark.files import write_text_atomic
    from trainmark.rules import get_rules

    if args.division not in ("closed", "open"):
        raise UserError(f"--division {args.division!r}: use closed or open")
    text = compliance.compliance_yaml(get_rules(args.benchmark, args.rules_version, args.rules_dir), args.division)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        write_text_atomic(args.output, text)
    except OSError as exc:
        raise UserError(f"-o {args.output}: cannot write: {exc.strerror or exc}") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
