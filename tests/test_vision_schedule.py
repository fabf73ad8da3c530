"""The vision minis' learning-rate shape: warm-up from a tenth, the peak held, then a decay to 0."""
import pytest

from trainmark.reference.fashion_mnist_classifier import warmup_hold_decay_to_zero


def factors(warmup, start, end, steps_per_epoch=10, epochs=6):
    return [warmup_hold_decay_to_zero(s, steps_per_epoch, warmup, start, end) for s in range(epochs * steps_per_epoch)]


def test_resnet_mini_holds_the_peak_and_decays_in_the_last_epoch():
    f = factors(1, 4, 5)                           # resnet-mini's rules: warm-up 1, hold to 4, 0 at 5
    assert f[0] == pytest.approx(0.1) and f[5] == pytest.approx(0.55)
    assert f[10:40] == [1.0] * 30                  # epochs 1-4 at the peak
    assert f[45] == pytest.approx(0.5) and f[50:] == [0.0] * 10


def test_without_a_hold_the_decay_starts_after_the_warm_up():
    """Rules without opt_learning_rate_decay_start_epochs (inception-mini) keep the first shape."""
    f = factors(1, 0, 5)
    assert f[10] == pytest.approx(1.0) and f[30] == pytest.approx(0.5) and f[50] == 0.0
    assert f == factors(1, 1, 5)                   # a start inside the warm-up means its end
