"""inception-mini trains one epoch through `trainmark run` and the result passes `trainmark check`."""
from vision_mini_run import needs_fashion_mnist, run_then_check


@needs_fashion_mnist
def test_inception_mini_one_epoch_through_the_harness_then_check(tmp_path, capsys):
    run_then_check("inception-mini", tmp_path, capsys)
