"""vgg-mini trains through `trainmark run` (a fixed Fashion-MNIST subset) and passes `trainmark check`."""
from vision_mini_run import needs_fashion_mnist, run_then_check


@needs_fashion_mnist
def test_vgg_mini_trains_through_the_harness_then_passes_the_checker(tmp_path, capsys):
    run_then_check("vgg-mini", tmp_path, capsys)  # measured: 0.24, 0.57, 0.71 after epochs 1-3
