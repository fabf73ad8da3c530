"""``trainmark rules code-hashes``: write (or ``--check``) the released reference code's hashes.

``rules/<version>/reference-code.json`` is what the checker compares a closed-division
submission's code with; regenerate it whenever a reference module or rule file changes
(tests/test_implementation_record.py fails while it is stale).
"""
from __future__ import annotations

import sys

from trainmark.errors import UserError


def register_code_hashes(rules_subparsers, version_args) -> None:
    p = rules_subparsers.add_parser("code-hashes", help="write rules/<version>/reference-code.json and "
                                    "reference-structures.json: the released reference's code hashes and model "
                                    "structures the checker compares submissions with")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 when the file is stale")
    version_args(p)
    p.set_defaults(func=cmd_code_hashes)


def cmd_code_hashes(args) -> int:
    from trainmark.files import write_text_atomic
    from trainmark.rules import reference_code, reference_structures

    outputs = [
        (reference_code.hash_file(args.rules_version, args.rules_dir),
         reference_code.render(reference_code.hash_table(args.rules_version, args.rules_dir))),
        (reference_structures.structure_file(args.rules_version, args.rules_dir),
         reference_structures.render(reference_structures.table(args.rules_version, args.rules_dir))),
    ]
    stale = 0
    for path, text in outputs:
        if args.check:
            current = path.read_text(encoding="utf-8") if path.is_file() else ""
            if current != text:
                print(f"{path} is stale: run `trainmark rules code-hashes --rules-version {args.rules_version}`",
                      file=sys.stderr)
                stale = 1
            else:
                print(f"{path} is up to date")
            continue
        try:
            write_text_atomic(path, text)
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
        print(f"wrote {path}")
    return stale
