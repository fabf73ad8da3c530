"""FLOP counts of known layers against their closed forms, forward and forward+backward."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from trainmark.harness.frameworks import pytorch_flops as flops
from trainmark.harness.frameworks.pytorch_flops import attention_flops, training_flops_per_step
from trainmark.harness.measure.flops import achieved_tflops, utilization


def _sum_loss(out):
    return out.sum()


@pytest.mark.parametrize("input_grad", [False, True])
def test_linear_matches_closed_form(input_grad):
    b, i, o = 8, 64, 32
    x = torch.randn(b, i, requires_grad=input_grad)
    count = training_flops_per_step(nn.Linear(i, o), x, _sum_loss)
    fwd = 2 * b * i * o
    assert count.method == "meta"
    assert count.forward == fwd
    # backward: weight gradient (2·b·i·o) always, input gradient only when the input needs one
    assert count.total == fwd + fwd + (fwd if input_grad else 0)


@pytest.mark.parametrize("stride,padding", [(1, 1), (2, 0)])
def test_conv2d_matches_closed_form(stride, padding):
    n, cin, cout, h, k = 2, 3, 16, 17, 3
    conv = nn.Conv2d(cin, cout, k, stride=stride, padding=padding)
    x = torch.randn(n, cin, h, h)
    hout = (h + 2 * padding - k) // stride + 1
    fwd = 2 * n * cout * hout * hout * cin * k * k
    count = training_flops_per_step(conv, x, _sum_loss)
    assert count.forward == fwd
    assert count.total == 2 * fwd  # weight gradient only: a first layer needs no input gradient
    x.requires_grad_(True)
    assert training_flops_per_step(conv, x, _sum_loss).total == 3 * fwd


def test_two_layer_mlp_and_cross_entropy_targets():
    b = 4
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    x, y = torch.randn(b, 32), torch.randint(0, 10, (b,))
    count = training_flops_per_step(model, (x,), lambda out, t: F.cross_entropy(out, t), targets=y)
    l1, l2 = 2 * b * 32 * 64, 2 * b * 64 * 10
    assert count.forward == l1 + l2
    assert count.total == (l1 + l2) + l1 + 2 * l2   # first layer: weight grad only
    assert math.isclose(count.total / count.forward, (2 * l1 + 3 * l2) / (l1 + l2))


def test_lstm_counts_every_timestep():
    b, t, i, h = 3, 5, 16, 32
    count = training_flops_per_step(nn.LSTM(i, h, batch_first=True), torch.randn(b, t, i),
                                    lambda out: out[0].sum())
    assert count.forward == t * 2 * b * 4 * h * (i + h)


class _Attention(nn.Module):
    """Attention alone: no projections, so every counted FLOP is the attention's."""

    def __init__(self, force_device=False):
        super().__init__()
        self.force_device = force_device

    def forward(self, q, k, v):
        if self.force_device:
            q.detach().abs().max().item()  # .item() cannot run on meta: forces the device path
        return F.scaled_dot_product_attention(q, k, v)


def _qkv(b=2, h=4, length=10, s=12, e=8, ev=8):
    return (torch.randn(b, h, length, e, requires_grad=True), torch.randn(b, h, s, e, requires_grad=True),
            torch.randn(b, h, s, ev, requires_grad=True))


@pytest.mark.parametrize("force_device", [False, True])
def test_attention_counted_fwd_and_3x_with_backward(force_device):
    b, h, length, s, d = 2, 4, 10, 12, 8
    qkv = _qkv(b, h, length, s, d, d)
    count = training_flops_per_step(_Attention(force_device), qkv, _sum_loss)
    assert all(t.grad is None for t in qkv)  # the caller's tensors keep their (absent) gradients
    fwd = 4 * b * h * length * s * d
    assert count.method == ("device" if force_device else "meta")
    assert count.forward == fwd
    assert count.total == 3 * fwd
    if force_device:
        assert "meta device failed" in count.reason


def test_cpu_attention_kernel_is_counted_by_our_counter():
    """The stock counter gives 0 for the CPU flash kernel; ours counts it exactly once."""
    q, k, v = _qkv(1, 2, 16, 16, 8, 8)
    with flops.counter() as mode:
        F.scaled_dot_product_attention(q, k, v).sum().backward()
    assert mode.get_total_flops() == 3 * 4 * 1 * 2 * 16 * 16 * 8


def test_attention_formula_with_different_value_width():
    assert attention_flops((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)) == 2 * 2 * 3 * 5 * 7 * (8 + 4)


def test_device_fallback_restores_buffers_and_leaves_no_grads():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(8)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            x.abs().max().item()
            return self.fc(self.bn(x))

    net = Net()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    count = training_flops_per_step(net, torch.randn(16, 8) * 5 + 3, _sum_loss)
    fc = 2 * 16 * 8 * 4
    assert count.method == "device" and count.total == 3 * fc  # fc's input comes from bn: it needs a gradient
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert all(p.grad is None for p in net.parameters())


def test_uncountable_model_gives_none_with_reason():
    class Elementwise(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(4))

        def forward(self, x):
            return x * self.w

    count = training_flops_per_step(Elementwise(), torch.randn(3, 4), _sum_loss)
    assert count.total is None and count.method == "unavailable"
    assert "no matmul" in count.reason
    with pytest.raises(ValueError):
        int(count)


def test_meta_count_does_not_touch_the_model():
    model = nn.Linear(4, 4)
    w = model.weight.detach().clone()
    training_flops_per_step(model, torch.randn(2, 4), _sum_loss)
    assert model.weight.device.type == "cpu" and torch.equal(model.weight, w) and model.weight.grad is None


def test_rates():
    assert achieved_tflops(2 * 10**12, 5, 2.0) == pytest.approx(5.0)
    assert achieved_tflops(None, 5, 2.0) is None
    assert achieved_tflops(10**12, 5, 0.0) is None
    assert utilization(250.0, 1000.0) == pytest.approx(0.25)
    assert utilization(None, 1000.0) is None and utilization(1.0, None) is None
