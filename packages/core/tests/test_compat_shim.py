"""The torch import shim and `python -m ember.compat.run`: PyTorch-style scripts run unchanged."""

import subprocess
import sys
import textwrap

import pytest

import ember
from ember.compat import torch_shim

SCRIPT = '''
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical
from torch.utils.data import DataLoader, TensorDataset

assert torch.__name__ == "ember" and nn is torch.nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
x = torch.randn(256, 3)
y = x @ torch.tensor([[1.5], [-2.0], [0.5]]) + 0.1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, v):
        return self.fc(v)


model = Net().to(device)
opt = optim.SGD(model.parameters(), lr=0.1)
for epoch in range(20):
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True):
        opt.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
w = torch.zeros(3, 1, requires_grad=True)
for _ in range(100):  # the hand-written SGD of old examples, on .data
    step = ((x @ w - y) ** 2).mean()
    w.grad = None
    step.backward()
    w.data -= 0.1 * w.grad.data
policy = Categorical(logits=torch.tensor([0.0, 2.0]))
action = policy.sample()
path = sys.argv[1]
torch.save(model, path)  # the whole module, as scripts do
again = torch.load(path, weights_only=False)
print(f"loss {loss.item():.6f} sgd {step.item():.6f} action {int(action)} same {torch.equal(again(x), model(x))}")
'''


def _run(tmp_path, *args):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    return subprocess.run([sys.executable, "-m", "ember.compat.run", str(script), *args], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)


def test_a_pytorch_script_runs_unchanged(tmp_path):
    done = _run(tmp_path, str(tmp_path / "model.pt"))
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()
    assert float(words[1]) < 1e-3 and float(words[3]) < 0.02  # trained to the floor (0.01: w has no bias)
    assert words[5] in ("0", "1") and words[7] == "True"


SPAWN_SCRIPT = '''
import torch
import torch.multiprocessing as mp
import torch.nn as nn


def train(rank, model, steps):  # Hogwild: each child updates the shared parameters in place
    torch.manual_seed(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x = torch.randn(16, 4)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    model = nn.Linear(4, 1)
    with torch.no_grad():
        model.weight.zero_()
    model.share_memory()
    mp.spawn(train, args=(model, 40), nprocs=2)
    print(model.weight.detach().flatten().tolist())
'''


def test_spawned_children_map_torch_too(tmp_path):
    """torch.multiprocessing.spawn under the runner: the children (new interpreters that import the
    script again) resolve torch to ember, and update the parent's shared parameters."""
    script = tmp_path / "hogwild.py"
    script.write_text(textwrap.dedent(SPAWN_SCRIPT))
    done = subprocess.run([sys.executable, "-m", "ember.compat.run", str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    weights = [float(w) for w in done.stdout.strip().strip("[]").split(",")]
    assert all(0.5 < w < 1.5 for w in weights)  # trained from 0 towards 1 by the children


def test_shim_restores_the_spawn_command_line():
    import multiprocessing.spawn

    original = multiprocessing.spawn.get_command_line
    torch_shim.install()
    try:
        program = multiprocessing.spawn.get_command_line(tracker_fd=3, pipe_handle=4)
        program = program[program.index("-c") + 1]
        assert program.startswith("from ember.compat import torch_shim; torch_shim.install(); ")
        assert "spawn_main(tracker_fd=3, pipe_handle=4)" in program
    finally:
        torch_shim.uninstall()
    assert multiprocessing.spawn.get_command_line is original


def test_run_without_a_script_prints_its_usage():
    done = subprocess.run([sys.executable, "-m", "ember.compat.run"], capture_output=True, text=True)
    assert done.returncode == 2 and "python -m ember.compat.run script.py" in done.stdout


def test_shim_maps_imports_and_uninstalls():
    torch_shim.install()
    try:
        import torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader

        assert torch is ember and F is ember.nn.functional and DataLoader is ember.utils.data.DataLoader
        assert sys.modules["torch.nn"] is ember.nn and torch_shim.installed()
        with pytest.raises(ModuleNotFoundError, match="maps it to 'ember.no_such_module', which Ember does not"):
            import torch.no_such_module  # noqa: F401
    finally:
        torch_shim.uninstall()
    assert not torch_shim.installed()
    assert not any(name == "torch" or name.startswith("torch.") for name in sys.modules
                   if getattr(sys.modules[name], "__name__", "").startswith("ember"))
    assert ember.nn.__spec__.name == "ember.nn"  # the Ember modules keep their own identity
