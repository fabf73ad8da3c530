"""The command lines README.md and docs/*.md show still work (issue 32, item 5).

Docs drift from the CLI silently: a flag renamed in trainmark/cli/ leaves every page that shows it wrong.
Here each command in a ```bash/```sh/```console block is parsed by the real parser, so a removed or
renamed flag fails naming the file, the line and the command; the cheap read-only ones (check, report,
table, compare, list, rules list/show/compliance, --help) also run on the committed example submissions
with the exit status the doc implies (0, the `# exit N` its comment names, 2 for a transcript's error).
Training and measuring commands (run, calibrate, sweep, ops, scale, data) are parsed only: each needs
minutes, a dataset, several processes or a GPU (PARSE_ONLY says which kinds, ALLOWLIST which lines could
not work here at all). Options named in prose (`trainmark CMD --flag` in a code span or a synopsis), finding
codes, tests, paths, links and scripts a page names must exist.
"""
from __future__ import annotations

import argparse
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from trainmark.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = ROOT / "submissions"
SHELL_FENCES = {"bash", "sh", "shell", "console"}

# Commands the test never runs, by kind, and why (the doc line is still parsed).
PARSE_ONLY = {
    "run": "trains a model to its target: minutes to hours (tests/test_end_to_end.py runs the tiny benchmark)",
    "calibrate": "ten trainings",
    "sweep": "trains over batch sizes (tests/test_sweep.py on the tiny benchmark)",
    "ops": "times kernels for minutes; --op allreduce starts several processes (tests/test_ops.py)",
    "scale": "one torchrun launch per world size, or MLPerf round checkouts for `validate` (tests/test_scale*.py)",
    "data": "needs the benchmark's dataset",
    "profile": "profiles training steps for a minute or more (tests/test_profile.py profiles resnet-mini)",
    "package": "writes an archive of the whole folder (tests/test_archive.py)",
    "rules docs": "rewrites docs/rules.md and docs/checker.md in place",
    "rules code-hashes": "rewrites rules/<version>/reference-code.json",
    "rules flops": "counts every reference's FLOPs (minutes) and rewrites rules/<version>/reference-work.json",
    "rules peaks": "rewrites rules/peaks.json (tests/test_rules_evidence_38.py runs it with --check)",
}

# Lines that could not work on this machine whatever their kind: (file, text the command starts with) -> reason.
# They are parsed like every other line; an entry whose line left the docs fails test_allowlist_names_doc_lines.
ALLOWLIST: dict[tuple[str, str], str] = {
    ("docs/scale.md", "trainmark scale resnet-mini --nproc 1,2,4 --data real --data-dir DIR"):
        "DIR stands for a prepared Fashion-MNIST folder",
    ("docs/scale.md", "trainmark scale resnet50 --device cuda"): "needs CUDA GPUs and ImageNet-sized memory",
    ("docs/scale.md", "trainmark scale validate training_results_v"):
        "needs checkouts of mlcommons/training_results_vX.Y (GBs each)",
    ("docs/scale.md", "torchrun --nnodes 2"): "two nodes with 8 GPUs each, rendezvous at node0.example",
    ("docs/scale.md", "srun torchrun"): "a Slurm cluster with GPU nodes",
    ("docs/scale.md", "trainmark ops --op allreduce --nproc 4"): "four processes timing all-reduces for minutes",
}


@dataclass(frozen=True)
class DocCommand:
    file: str            # relative to the repository root
    line: int            # where the command starts (a `\` continuation joins the next lines)
    text: str            # the command as the page shows it, continuations joined
    argv: tuple          # what follows `trainmark` (`python -m trainmark`, `torchrun ... -m trainmark`)
    exit_code: int       # 0, N from a `# exit N` comment, 2 when a ```console transcript shows an error
    output: tuple = ()   # the lines a ```console transcript shows after the command

    def where(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"

    def kind(self) -> str:
        two = " ".join(self.argv[:2])
        return two if two in PARSE_ONLY else (self.argv[0] if self.argv else "")


def _shell_lines(path: Path, with_output: bool = False):
    """(line number, line) of every shell fence of ``path``, `\\` continuations joined, `$ ` prompts dropped;
    in a ```console fence only `$ ` lines are commands, and ``with_output`` adds the lines shown after each."""
    fence, start, pending, shown = None, 0, "", None
    for number, raw in enumerate([*path.read_text(encoding="utf-8").splitlines(), "```"], 1):
        stripped = raw.strip()
        if stripped.startswith("```") or (fence == "console" and stripped.startswith("$ ") and not pending):
            if shown is not None:
                yield (*shown[:2], tuple(shown[2])) if with_output else shown[:2]
                shown = None
            if stripped.startswith("```"):
                fence = None if fence is not None else stripped[3:].strip().lower()
                continue
        if fence not in SHELL_FENCES:
            continue
        if fence == "console" and not pending and not stripped.startswith("$ "):
            if shown is not None:
                shown[2].append(stripped)
            continue
        if not pending:
            start = number
            stripped = stripped[2:] if stripped.startswith("$ ") else stripped
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        if shown is not None:
            yield (*shown[:2], tuple(shown[2])) if with_output else shown[:2]
        shown, pending = (start, pending + stripped, []), ""


def _trainmark_argv(tokens: list[str]) -> tuple | None:
    """What follows the `trainmark` program in a shell command, or None when it does not run trainmark."""
    if tokens and tokens[0] in ("trainmark", ".venv/bin/trainmark"):  # the README's quick start calls the venv's
        return tuple(tokens[1:])
    for i in range(len(tokens) - 1):
        if tokens[i] in ("-m", "--no-python") and tokens[i + 1] == "trainmark" and any(
                t.rsplit("/", 1)[-1] in ("torchrun", "python", "python3") for t in tokens[:i]):
            return tuple(tokens[i + 2:])  # `torchrun ... --no-python trainmark`: the console script
    return None


def _exit_code(line: str) -> int:
    comment = re.search(r"\s#\s.*$", line)
    found = re.search(r"\bexit (\d)\b", comment.group(0)) if comment else None
    return int(found.group(1)) if found else 0


def doc_commands() -> list[DocCommand]:
    found = []
    for path in DOCS:
        for number, line, output in _shell_lines(path, with_output=True):
            tokens = shlex.split(line, comments=True)
            argv = _trainmark_argv(tokens) if tokens else None
            if argv is not None:
                shown = " ".join(line.split(" #")[0].split())
                code = 2 if any(re.match(r"trainmark( \w+)?: error:", o) for o in output) else _exit_code(line)
                found.append(DocCommand(str(path.relative_to(ROOT)), number, shown, argv, code, output))
    return found


COMMANDS = doc_commands()


def _allowlisted(cmd: DocCommand) -> str | None:
    for (file, prefix), reason in ALLOWLIST.items():
        if cmd.file == file and cmd.text.startswith(prefix):
            return reason
    return None


# Commands of a parse-only kind that end before any work, so they run: (file, text) -> why.
REFUSED_BEFORE_WORK = {
    ("docs/scale.md", "trainmark scale resnet-mini --nproc 3"): "refused before torchrun is launched",
}


def _is_runnable(cmd: DocCommand) -> bool:
    if (cmd.file, cmd.text) in REFUSED_BEFORE_WORK:
        return True
    return cmd.kind() not in PARSE_ONLY and _allowlisted(cmd) is None


RUNNABLE = [c for c in COMMANDS if _is_runnable(c)]


def _subparser(argv) -> tuple[argparse.ArgumentParser, int]:
    """The deepest parser ``argv``'s leading command words reach, and how many words that took."""
    parser, used = build_parser(), 0
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or used >= len(argv) or argv[used] not in subs[0].choices:
            return parser, used
        parser, used = subs[0].choices[argv[used]], used + 1


def test_the_docs_show_commands():
    """The extraction itself works: the pages show commands of every kind this test knows."""
    kinds = {c.kind() for c in COMMANDS}
    assert {"check", "run", "scale", "list"} <= kinds, kinds
    assert RUNNABLE, "no doc command is run"


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: f"{c.file}:{c.line}")
def test_doc_command_parses(cmd, capsys):
    try:
        build_parser().parse_args(list(cmd.argv))
    except SystemExit as exc:
        if exc.code not in (0, None):
            pytest.fail(f"{cmd.where()}\n  the parser refuses it (exit {exc.code}): {capsys.readouterr().err.strip()}")


def _existing(token: str) -> str | None:
    path = ROOT / token
    return str(path) if token and not token.startswith("-") and ("/" in token or path.exists()) \
        and path.exists() else None


_OUTPUT_OPTIONS = ("-o", "--output", "--output-file", "--json", "--csv")


def _rewrite(cmd: DocCommand, tmp_path: Path) -> list[str]:
    """``cmd.argv`` made runnable here: outputs into ``tmp_path``, a folder the repository lacks
    (`submission/`, `results/`) replaced by the example submissions, the repository's paths made absolute."""
    parser, used = _subparser(cmd.argv)
    takes_value = {o: a.nargs != 0 for a in parser._actions for o in a.option_strings}
    out, previous = list(cmd.argv[:used]), None
    for token in cmd.argv[used:]:
        option = previous if previous is not None and takes_value.get(previous.split("=")[0]) else None
        if token.startswith("-") and token != "-":
            out.append(token)
        elif option in _OUTPUT_OPTIONS and token != "-":
            out.append(str(tmp_path / Path(token).name))
        elif option is None and cmd.argv[0] in ("check", "report", "table", "compare", "package"):
            out.append(_existing(token) or str(EXAMPLES))
        else:
            out.append(_existing(token) or token)
        previous = token
    return out


_RESULTS: dict = {}


@pytest.mark.parametrize("cmd", RUNNABLE, ids=lambda c: f"{c.file}:{c.line}")
def test_doc_command_runs(cmd, tmp_path, monkeypatch, capsys):
    """Each distinct runnable command runs once (the check of the examples is what costs)."""
    monkeypatch.chdir(tmp_path)
    key = (cmd.argv, cmd.exit_code)
    if key not in _RESULTS:
        argv = _rewrite(cmd, tmp_path)
        try:
            status = main(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
        captured = capsys.readouterr()
        outputs = [Path(argv[i + 1]) for i, a in enumerate(argv[:-1]) if a in _OUTPUT_OPTIONS and argv[i + 1] != "-"]
        wrote = all(p.is_file() and p.stat().st_size for p in outputs)  # now: a passing test's tmp_path goes
        _RESULTS[key] = (status, argv, captured.err[-2000:], " ".join((captured.out + captured.err).split()),
                         outputs, wrote)
    status, argv, err, printed, outputs, wrote = _RESULTS[key]
    assert status == cmd.exit_code, (f"{cmd.where()}\n  ran as: trainmark {' '.join(argv)}\n  exit {status}, "
                                     f"the doc implies {cmd.exit_code}\n  stderr: {err}")
    differs = [line for line in cmd.output if " ".join(line.split()) not in printed]
    assert differs == [], f"{cmd.where()}\n  the page shows output the command does not print: {differs}"
    assert wrote, f"{cmd.where()}\n  wrote nothing to {outputs}"


def test_the_examples_in_trainmark_help_parse():
    """`trainmark --help` shows example command lines too; they are docs a user copies first."""
    lines = [line for line in build_parser().description.splitlines() if line.startswith("  trainmark ")]
    # the explanation starts at one column; a command as long as its field leaves a single space before it
    column = max(m.end() for m in (re.match(r"  trainmark .*?\S  +", line) for line in lines) if m)
    examples = [line[:column].strip() for line in lines]
    assert examples
    for example in examples:
        argv = shlex.split(example)[1:]
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            assert exc.code in (0, None), f"trainmark --help shows `{example}`, which the parser refuses"


def test_allowlist_names_doc_lines():
    """An allowlist entry whose line left the docs is stale."""
    stale = [key for key in [*ALLOWLIST, *REFUSED_BEFORE_WORK]
             if not any(c.file == key[0] and c.text.startswith(key[1]) for c in COMMANDS)]
    assert stale == []


def _prose_commands():
    """(file, line, text) of every `trainmark CMD ...` a page names outside shell fences: code spans and
    synopsis blocks."""
    for path in DOCS:
        rel = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"(?<!`)`([^`\n]+)`(?!`)", text):
            yield rel, text.count("\n", 0, match.start()) + 1, match.group(1)
        fence, synopsis = None, None  # a synopsis continues on lines that start with `[`
        for number, line in enumerate([*text.splitlines(), ""], 1):
            if synopsis and fence == "" and line.lstrip().startswith("["):
                synopsis = (synopsis[0], synopsis[1] + " " + line.strip())
                continue
            if synopsis:
                yield rel, *synopsis
                synopsis = None
            if line.strip().startswith("```"):
                fence = None if fence is not None else line.strip()[3:].strip()
            elif fence == "" and line.lstrip().startswith("trainmark "):
                synopsis = (number, line.strip())


def _named_options(text: str):
    """The parser words and the options a prose command names, or None when it is not a command."""
    words = text.split()
    if "-m" in words and "trainmark" in words[words.index("-m"):]:
        words = words[words.index("-m") + 1:]
    if not words or words[0] != "trainmark":
        return None
    options = []
    for word in words[1:]:
        for piece in re.split(r"[|\[\](),]", word):
            if re.fullmatch(r"--?[a-z][a-z0-9-]*(=.*)?", piece):
                options.append(piece.split("=")[0])
    return words[1:], options


def test_options_named_in_prose_exist():
    """`trainmark check --json` in a sentence is a promise too: every option it names must exist."""
    wrong = []
    for file, line, text in _prose_commands():
        named = _named_options(text)
        if named is None:
            continue
        words, options = named
        parser, used = _subparser(words)
        if used == 0:
            continue  # `trainmark` alone or a message such as `trainmark run: error: ...`
        known = {o for a in parser._actions for o in a.option_strings}
        wrong += [f"{file}:{line}: `{text}`: trainmark {' '.join(words[:used])} has no {o}" for o in options
                  if o not in known]
    assert wrong == [], "\n".join(wrong)


def test_links_and_scripts_the_docs_name_exist():
    """A relative link or a `bash scripts/...` line that leads nowhere is a doc error as well."""
    missing = []
    for path in DOCS:
        rel = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            target = match.group(1)
            if "://" not in target and not target.startswith("mailto:") and not (path.parent / target).exists():
                missing.append(f"{rel}:{text.count(chr(10), 0, match.start()) + 1}: link {target}")
        for number, line in _shell_lines(path):
            tokens = shlex.split(line, comments=True)
            if tokens[:1] == ["bash"] and len(tokens) > 1 and not (ROOT / tokens[1]).is_file():
                missing.append(f"{rel}:{number}: script {tokens[1]}")
    assert missing == [], "\n".join(missing)


# Paths a page names in a code span that do not exist, and why that is right.
NAMED_ELSEWHERE = {
    "url_checksums/wmt14_translate.txt": "tensorflow-datasets' file, in its package",
}
PACKAGE_FOLDERS = ("", "trainmark", "harness", "checker", "report", "reference", "rules", "docs")


def test_paths_the_docs_name_exist():
    """`harness/run.py` or `tests/test_add_benchmark.py` in a code span points a reader somewhere: it must be
    there (relative to the repository, a design folder, or trainmark/; `<...>` placeholders are skipped)."""
    missing = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"(?<!`)`([^`\n]+)`(?!`)", text):
            for token in match.group(1).split():
                token = token.strip("(),;:")
                if not re.fullmatch(r"[\w.-]+(/[\w.-]+)*/[\w.-]+\.(py|sh|yaml|json|md|toml|txt)", token):
                    continue
                if token not in NAMED_ELSEWHERE and not any((ROOT / base / token).exists()
                                                           for base in PACKAGE_FOLDERS):
                    missing.append(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}: {token}")
        for match in re.finditer(r"\b(?:tests|benchmarks|scripts)/\w+\.(?:py|sh)\b", text):  # in plain prose too
            if match.group(0) not in NAMED_ELSEWHERE and not (ROOT / match.group(0)).is_file():
                missing.append(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}: "
                               f"{match.group(0)}")
    assert missing == [], "\n".join(missing)


def test_tests_the_docs_name_exist():
    """"`test_zeroed_weights_are_work_005`" is offered as proof: the test must be there."""
    defined = {m for f in (ROOT / "tests").glob("*.py")
               for m in re.findall(r"^def (test_\w+)", f.read_text(encoding="utf-8"), flags=re.M)}
    named = {(str(p.relative_to(ROOT)), name) for p in DOCS
             for name in re.findall(r"`(test_\w+)`", p.read_text(encoding="utf-8"))}
    assert sorted(n for n in named if n[1] not in defined) == []


def test_finding_codes_the_docs_name_exist_with_their_severity():
    """`CONVERGE-003` in a sentence must be a code the checker emits, and "`MLPERF-014`, error" its severity
    (the generated table in docs/checker.md is held by `trainmark rules docs`; this covers the prose)."""
    from trainmark.checker.verdict.registry import load_all

    severity = {rule.code: rule.severity for rule in load_all().values()}
    wrong = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"`([A-Z]+-\d{3})`(?: per run)?[,:]? \(?(?:an? )?(error|warning|info)?", text):
            code, said = match.group(1), match.group(2)
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
            if code not in severity:
                wrong.append(f"{where}: no finding code {code}")
            elif said and said != severity[code]:
                wrong.append(f"{where}: {code} is {severity[code]}, the page says {said}")
    assert wrong == [], "\n".join(wrong)


def test_pip_extras_the_docs_name_exist():
    """`pip install -e '.[tensorflow]'` names an extra pyproject.toml must define."""
    import tomllib

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("optional-dependencies", {}))
    wrong = []
    for path in DOCS:
        for number, line in _shell_lines(path):
            for match in re.finditer(r"\.\[([a-z0-9_,-]+)\]", line):
                wrong += [f"{path.relative_to(ROOT)}:{number}: extra {e}" for e in match.group(1).split(",")
                          if e not in extras]
    assert wrong == []


if __name__ == "__main__":  # the counts the report quotes: python tests/test_docs_commands.py
    print(f"{len(COMMANDS)} command lines: {len(RUNNABLE)} run, {len(COMMANDS) - len(RUNNABLE)} parsed only "
          f"({sum(1 for c in COMMANDS if _allowlisted(c))} allowlisted)", file=sys.stderr)
    for c in COMMANDS:
        print(("run   " if _is_runnable(c) else "parse ") + c.where())
