"""vgg-mini and inception-mini train through `trainmark run`; the result passes `trainmark check`."""
import pytest

from vision_mini_run import needs_fashion_mnist, run_then_check


@needs_fashion_mnist
@pytest.mark.parametrize("name", ["vgg-mini", "inception-mini"])
def test_mini_trains_through_the_harness_then_passes_the_checker(name, tmp_path, capsys):
    run_then_check(name, tmp_path, capsys)
