"""Rules as data: shipped files validate, broken ones name the field, both sides read one target."""
from pathlib import Path

import pytest
import yaml
from conftest import SHIPPED_RULES

from trainmark.rules import LATEST_VERSION, RulesError, get_rules, known_versions, load_ruleset
from trainmark.rules import ruleset as ruleset_module
from trainmark.rules.docs import render_markdown
from trainmark.rules.ruleset import validate

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def test_every_shipped_rule_file_validates():
    """Against the schema itself: loading a released file skips the schema (the release is this test)."""
    for version in known_versions():
        ruleset = load_ruleset(version)
        assert ruleset, version
        for name, r in ruleset.items():
            assert r.name == name and r.version == version
            assert r.scoring["max_not_converged"] < r.trials
            validate(yaml.safe_load(r.path.read_text(encoding="utf-8")), r.path, schema_checked=False)


def test_only_a_file_byte_identical_to_its_release_skips_the_schema(rules_copy):
    shipped = SHIPPED_RULES / LATEST_VERSION / "resnet-mini.yaml"
    raw = shipped.read_bytes()
    assert ruleset_module._is_released(shipped, raw)
    assert not ruleset_module._is_released(shipped, raw + b"\n")                       # edited
    assert not ruleset_module._is_released(rules_copy / LATEST_VERSION / "resnet-mini.yaml", raw)  # not shipped


def test_every_shipped_benchmark_has_a_reference():
    from trainmark.reference import registry
    for r in load_ruleset().values():
        assert registry.get(r.reference_model["id"]).name == r.reference_model["id"]
    for version in known_versions():  # the rule file names the class: every version's, every framework's
        for r in load_ruleset(version).values():
            assert registry.for_rules(r).name == r.reference_model["id"]
            assert set(r.implementations) == {"pytorch", "tensorflow"}, r.path


def test_the_rule_file_is_the_only_registry(rules_copy):
    """``implementations`` is required; what it names is imported, or one line says why not."""
    from trainmark.errors import UserError
    from trainmark.reference import registry

    path = rules_copy / LATEST_VERSION / "tiny-test.yaml"
    data = yaml.safe_load(path.read_text())
    del data["implementations"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(RulesError, match=r"tiny-test.yaml: field '<top level>': 'implementations' is a required"):
        get_rules("tiny-test", rules_root=rules_copy)
    for spec, why in [("tiny_reference:NoSuchClass", "cannot be imported"),
                      ("no_such_module_b7:TinyTest", "cannot be imported"),
                      ("trainmark.reference.resnet_mini:ResnetMini", "is named 'resnet-mini', not")]:
        data["implementations"] = {"pytorch": spec}
        path.write_text(yaml.safe_dump(data))
        with pytest.raises(UserError, match=why) as err:
            registry.for_rules(get_rules("tiny-test", rules_root=rules_copy))
        assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_broken_rule_file_names_the_field(rules_copy):
    path = rules_copy / LATEST_VERSION / "resnet-mini.yaml"
    data = yaml.safe_load(path.read_text())
    data["metric"]["direction"] = "up"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(RulesError, match=r"resnet-mini.yaml: field 'metric/direction': 'up' is not one of"):
        get_rules("resnet-mini", rules_root=rules_copy)


def test_invalid_yaml_names_the_line(rules_copy):
    path = rules_copy / LATEST_VERSION / "resnet-mini.yaml"
    path.write_text("benchmark: resnet-mini\nmetric: [unclosed\n")
    with pytest.raises(RulesError, match=r"resnet-mini.yaml: line \d+: not valid YAML"):
        get_rules("resnet-mini", rules_root=rules_copy)


def test_unknown_version_is_refused():
    with pytest.raises(RulesError, match="unknown rules version '9.9'"):
        get_rules("resnet-mini", "9.9")


def test_target_and_direction():
    r = get_rules("resnet-mini")
    assert r.reached(r.target) and not r.reached(r.target - 1e-6) and not r.reached(float("nan"))
    lower = type(r)({**r.data, "metric": {**r.data["metric"], "direction": "lower", "target": 0.1}}, r.path)
    assert lower.reached(0.05) and not lower.reached(0.2)


def test_closed_hyperparameter_limits():
    r = get_rules("resnet-mini")
    assert r.violations(r.defaults(), "closed") == []
    assert r.violations({"global_batch_size": 4096}, "closed") == []  # free
    assert r.violations({"opt_momentum": 0.95}, "closed") == ["opt_momentum=0.95: fixed at 0.9 in the closed division"]
    assert "must lie in" in r.violations({"opt_base_learning_rate": 1.5}, "closed")[0]
    assert "not a hyperparameter" in r.violations({"dropout": 0.1}, "closed")[0]
    assert r.violations({"opt_momentum": 0.95, "dropout": 0.1}, "open") == []


def test_docs_are_generated_from_the_rules_and_up_to_date():
    assert DOCS.read_text(encoding="utf-8") == render_markdown(LATEST_VERSION), \
        "docs/rules.md is out of date: run `trainmark rules docs`"


def test_shipped_rules_folder_is_the_package_one():
    assert (SHIPPED_RULES / "1.0" / "resnet-mini.yaml").exists()


def test_the_rules_schema_is_a_valid_json_schema():
    """The loader skips the meta-schema check for speed (benchmarks/cli_startup.py); this test keeps it."""
    import jsonschema

    from trainmark.rules.ruleset import schema
    jsonschema.validators.validator_for(schema()).check_schema(schema())


def test_include_starts_from_the_shipped_file_and_overrides(tmp_path):
    from trainmark.rules import get_rules

    folder = tmp_path / LATEST_VERSION
    folder.mkdir()
    (folder / "resnet-mini.yaml").write_text(
        f"benchmark: resnet-mini\nrules_version: '{LATEST_VERSION}'\ninclude: resnet-mini\n"
        "metric:\n  target: 0.5\nmax_epochs: 2\ndataset:\n  env_var: null\n")
    got = get_rules("resnet-mini", rules_root=tmp_path)
    shipped = get_rules("resnet-mini")
    assert got.target == 0.5 and got.max_epochs == 2
    assert got.metric["name"] == shipped.metric["name"] and got.hyperparameters == shipped.hyperparameters
    assert "env_var" in shipped.dataset and "env_var" not in got.dataset  # null removes a key


@pytest.mark.parametrize("name", ["../1.0/resnet-mini", "/etc/passwd", "no-such-benchmark", 3])
def test_include_names_a_shipped_benchmark_never_a_path(tmp_path, name):
    from trainmark.rules import get_rules
    from trainmark.rules.ruleset import RulesError

    folder = tmp_path / LATEST_VERSION
    folder.mkdir()
    (folder / "resnet-mini.yaml").write_text(
        f"benchmark: resnet-mini\nrules_version: '{LATEST_VERSION}'\ninclude: {name!r}\n")
    with pytest.raises(RulesError, match="field 'include'"):
        get_rules("resnet-mini", rules_root=tmp_path)


def test_a_reference_is_imported_alone():
    """No discovery: building one benchmark's reference imports its module (and what it imports), no other's."""
    import subprocess
    import sys

    code = ("import sys; from trainmark.reference import registry; from trainmark.rules import get_rules; "
            "registry.for_rules(get_rules('resnet-mini')); "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('trainmark.reference.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(out.split())
    assert "trainmark.reference.resnet_mini" in loaded
    assert not loaded & {"trainmark.reference.lstm", "trainmark.reference.ds2", "trainmark.reference.transformer",
                         "trainmark.reference.vgg16", "trainmark.reference.keras_twins"}



def test_benchmark_names_are_the_names_load_ruleset_gives():
    """The shortcut over released files names exactly the benchmarks loading names, for every shipped version."""
    from trainmark.rules.ruleset import RULES_ROOT, benchmark_names
    for version in known_versions(RULES_ROOT):
        assert benchmark_names(version) == list(load_ruleset(version))
