"""inception-mini trains through `trainmark run` (a fixed Fashion-MNIST subset) and passes `trainmark check`."""
from vision_mini_run import needs_fashion_mnist, run_then_check


@needs_fashion_mnist
def test_inception_mini_trains_through_the_harness_then_passes_the_checker(tmp_path, capsys):
    run_then_check("inception-mini", tmp_path, capsys)  # measured: 0.70, 0.81 after epochs 1-2
