import json

import pytest

from trainmark.errors import UserError
from trainmark.harness.measure import system


def test_detected_description_validates_and_user_file_wins(tmp_path):
    f = tmp_path / "sys.json"
    f.write_text(json.dumps({"host_processor_model_name": "Vendor X1", "notes": "liquid cooled"}))
    d = system.build("cpu", "acme", "closed", "box-1", f)
    assert d["host_processor_model_name"] == "Vendor X1" and d["system_name"] == "box-1"
    assert d["software_versions"]["torch"] and d["trainmark_version"]


def test_invalid_user_file_names_file_and_field(tmp_path):
    f = tmp_path / "sys.json"
    f.write_text(json.dumps({"accelerators_per_node": "eight"}))
    with pytest.raises(UserError, match=r"sys.json\): field 'accelerators_per_node'"):
        system.build("cpu", "acme", "closed", None, f)
    f.write_text("{not json")
    with pytest.raises(UserError, match=r"sys.json:1: not valid JSON"):
        system.build("cpu", "acme", "closed", None, f)


def test_default_system_name_is_filesystem_safe():
    name = system.default_system_name({"accelerators_per_node": 8, "accelerator_model_name": "NVIDIA H200 (SXM)/x"})
    assert name == "8xNVIDIA-H200-SXM-x"
