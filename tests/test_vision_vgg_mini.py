"""vgg-mini trains one epoch through `trainmark run` and the result passes `trainmark check`."""
from vision_mini_run import needs_fashion_mnist, run_then_check


@needs_fashion_mnist
def test_vgg_mini_one_epoch_through_the_harness_then_check(tmp_path, capsys):
    run_then_check("vgg-mini", tmp_path, capsys)
