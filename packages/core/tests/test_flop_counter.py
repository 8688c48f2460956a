"""ember.utils.flop_counter.FlopCounterMode: FLOPs by op and by module, forward and backward."""

from __future__ import annotations

import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.utils.flop_counter import (
    FlopCounterMode,
    conv_flop_count,
    convert_num_with_suffix,
    convert_to_percent_str,
    get_suffix_str,
    register_flop_formula,
)

aten = ember.ops.aten


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(F.relu(self.conv(x)).flatten(1))))


CONV = 2 * 2 * (8 * 8) * (8 * 3 * 3 * 3)  # batch 2, 8x8 outputs, 8x3x3x3 weights
FC1 = 2 * 2 * 512 * 32
FC2 = 2 * 2 * 32 * 10


def test_forward_counts_by_op_and_module():
    ember.manual_seed(0)
    net = Net()
    with FlopCounterMode(display=False) as counter:
        net(ember.randn(2, 3, 8, 8))
    assert counter.get_total_flops() == CONV + FC1 + FC2
    counts = counter.get_flop_counts()
    assert list(counts) == ["Global", "Net", "Net.conv", "Net.fc1", "Net.fc2"]
    assert counts["Global"] == {aten.convolution: CONV, aten.matmul: FC1 + FC2}
    assert counts["Net.conv"] == {aten.convolution: CONV}
    assert counts["Net.fc1"] == {aten.matmul: FC1} and counts["Net.fc2"] == {aten.matmul: FC2}


def test_backward_counts_and_attribution():
    ember.manual_seed(0)
    net = Net()
    with FlopCounterMode(display=False) as counter:
        net(ember.randn(2, 3, 8, 8)).sum().backward()
    counts = counter.get_flop_counts()
    # every layer computes its weight gradient; the input gradient of all but the first
    assert counts["Net.conv"] == {aten.convolution: CONV, aten.convolution_backward: CONV}
    assert counts["Net.fc1"] == {aten.matmul: 3 * FC1}
    assert counts["Net.fc2"] == {aten.matmul: 3 * FC2}
    assert counter.get_total_flops() == 2 * CONV + 3 * FC1 + 3 * FC2


def test_batched_products_attention_and_convolutions():
    a, b = ember.randn(4, 5, 6), ember.randn(4, 6, 7)
    with FlopCounterMode(display=False) as counter:
        ember.bmm(a, b)
        ember.baddbmm(ember.zeros(4, 5, 7), a, b)
        ember.addmm(ember.zeros(5, 7), a[0], b[0])
        ember.mm(a[0], b[0])
        ember.randn(3, 5, 6) @ ember.randn(6, 7)  # broadcast matmul: 3*5*7 dots of 6
        ember.randn(6) @ ember.randn(6, 7)  # a 1-d operand: not counted (PyTorch's mv/dot)
    expected_bmm = 2 * 4 * 5 * 7 * 6
    counts = counter.get_flop_counts()["Global"]
    assert counts[aten.bmm] == expected_bmm and counts[aten.baddbmm] == expected_bmm
    assert counts[aten.addmm] == 2 * 5 * 7 * 6 and counts[aten.mm] == 2 * 5 * 7 * 6
    assert counts[aten.matmul] == 2 * 3 * 5 * 7 * 6
    q = ember.randn(2, 4, 5, 8)
    with FlopCounterMode(display=False) as counter:
        F.scaled_dot_product_attention(q, q, q)
    assert counter.get_total_flops() == 2 * (2 * 2 * 4 * 5 * 5 * 8)  # scores and their product with v
    assert conv_flop_count((2, 8, 8, 8), (8, 2, 2, 2), (2, 4, 16, 16), transposed=True) == 2 * 2 * 64 * 64
    with FlopCounterMode(display=False) as counter:
        nn.ConvTranspose2d(8, 4, 2, stride=2, groups=2)(ember.randn(2, 8, 8, 8))
    assert counter.get_total_flops() == 2 * 2 * 64 * (8 * 2 * 2 * 2)


def test_table_display_and_helpers(capsys):
    ember.manual_seed(0)
    net = Net()
    with FlopCounterMode(depth=1):
        net(ember.randn(2, 3, 8, 8))
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["Module", "FLOP", "%", "Total"]
    assert " Net " in table and "Net.fc1" not in table  # depth 1
    assert " - aten.matmul" in table and "100.00%" in table
    assert get_suffix_str(999) == "" and get_suffix_str(1_234_567) == "K" and get_suffix_str(12_345_678) == "M"
    assert convert_num_with_suffix(1_234_567, "M") == "1.235M"
    assert convert_to_percent_str(1, 4) == "25.00%" and convert_to_percent_str(1, 0) == "0%"


def test_custom_formulas_and_errors():
    def exp_flop(x_shape, out_shape=None, **kwargs):
        return x_shape[0]

    with FlopCounterMode(display=False, custom_mapping={aten.exp: exp_flop}) as counter:
        ember.randn(7).exp()
    assert counter.get_flop_counts()["Global"] == {aten.exp: 7}
    with pytest.raises(ValueError, match="expected ember.ops ops"):
        register_flop_formula("aten::exp")(exp_flop)
    with pytest.warns(UserWarning, match="mods argument is not needed anymore"):
        FlopCounterMode(mods=nn.Linear(1, 1), display=False)
    assert ember.ones(2).exp().tolist()[0] == pytest.approx(2.718281828)  # no mode left behind


def test_sdpa_formula_helpers():
    from ember.utils.flop_counter import normalize_tuple, sdpa_backward_flop_count, sdpa_flop_count

    n = 2 * 4
    assert sdpa_flop_count((2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 6)) == 2 * n * 5 * 7 * 8 + 2 * n * 5 * 7 * 6
    # the scores again, then dScores, dV, dQ, dK: five products
    assert sdpa_backward_flop_count((2, 4, 5, 6), (2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 6)) == (
        2 * n * (5 * 7 * 8 + 5 * 7 * 6 + 7 * 5 * 6 + 5 * 7 * 8 + 7 * 5 * 8))
    with pytest.raises(ValueError, match="do not match"):
        sdpa_flop_count((2, 4, 5, 8), (2, 4, 7, 9), (2, 4, 7, 6))
    assert normalize_tuple(3) == (3,) and normalize_tuple((1, 2)) == (1, 2)
