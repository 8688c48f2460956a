"""ember.ao.nn.quantized.functional and the quantized ELU / LeakyReLU / Sigmoid / Softmax / PReLU /
LayerNorm / GroupNorm / InstanceNorm modules against PyTorch 2.13's CPU (x86) build: one script runs
with `T = torch` (in the interpreter EMBER_TORCH_PYTHON names) and with `T = ember`, through the
public API only, and every integer code (with the output's scale and zero point) must be equal,
contiguous and non-contiguous inputs, quint8 and qint8.

Documented exceptions, one code apart at most, in a few elements:
  * elu / celu: PyTorch's vectorized kernel dequantizes with a fused multiply-add and takes
    Sleef's exp, so a value within float32 rounding of a half step may round the other way.
  * avg_pool2d / avg_pool3d with an odd zero point: PyTorch adds the zero point in float32 before
    rounding, so an average that is an exact half rounds by the parity of the whole code; Ember's
    pooling kernel (which these functions use) rounds the centered value. (adaptive_avg_pool2d/3d
    compute PyTorch's way in ember.ao.nn.quantized.functional and are equal.)
A converted model (prepare / calibrate / convert with the new modules) is compared to float32
rounding (its float calibration can move an observed range in the last bit), and its repr and
state dict keys exactly. Without EMBER_TORCH_PYTHON these tests are skipped."""

import os
import subprocess
import sys

import numpy as np
import pytest

TORCH_PYTHON = os.environ.get("EMBER_TORCH_PYTHON")
pytestmark = pytest.mark.skipif(not TORCH_PYTHON, reason="EMBER_TORCH_PYTHON names no Python with torch")

SCRIPT = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")  # PyTorch 2.13 deprecates its quantized tensors
T = __import__(sys.argv[1])
nn, tq, nnq = T.nn, T.ao.quantization, T.ao.nn.quantized
qF = nnq.functional
rng = np.random.default_rng(0)


def arr(*s, scale=1.0):
    return T.tensor((rng.normal(size=s) * scale).astype(np.float32))


def par(*s):
    return T.nn.Parameter(arr(*s))


out = {}


def put(k, r):
    out[k] = np.concatenate([r.int_repr().numpy().astype(np.float64).ravel(), [r.q_scale(), r.q_zero_point()]])


# functional
for k,(s,z,dt) in enumerate([(0.05,128,T.quint8),(0.0173,3,T.quint8),(0.031,-5,T.qint8)]):
    x=T.quantize_per_tensor(arr(3,5,7,9,scale=3),s,z,dt)
    xn=x.permute(0,1,3,2)
    for nm,f in [("elu",lambda q:qF.elu(q,0.04,100,1.3)),("celu",lambda q:qF.celu(q,0.03,90,0.7)),("hswish",lambda q:qF.hardswish(q,0.02,40)),
      ("leaky",lambda q:qF.leaky_relu(q,0.13)),("leaky_s",lambda q:qF.leaky_relu(q,0.2,scale=0.021,zero_point=77)),("thr",lambda q:qF.threshold(q,0.1,-0.37)),
      ("hsig",lambda q:qF.hardsigmoid(q)),("clamp",lambda q:qF.clamp(q,-0.7,1.3)),("htanh",lambda q:qF.hardtanh(q,-0.5,0.8)),
      ("near",lambda q:qF.interpolate(q,scale_factor=1.7)),("near_sz",lambda q:qF.interpolate(q,size=(5,13))),("near2",lambda q:qF.interpolate(q,scale_factor=2)),
      ("bil",lambda q:qF.interpolate(q,scale_factor=1.7,mode="bilinear")),("bil_ac",lambda q:qF.interpolate(q,size=(11,4),mode="bilinear",align_corners=True)),
      ("bil_sz",lambda q:qF.interpolate(q,size=(3,17),mode="bilinear",align_corners=False)),("upb",lambda q:qF.upsample_bilinear(q,scale_factor=2)),
      ("avg",lambda q:qF.avg_pool2d(q,3,2,1)),("aap",lambda q:qF.adaptive_avg_pool2d(q,(3,4))),("aap3",lambda q:qF.adaptive_avg_pool3d(q.reshape(3,5,7,3,3),(2,2,3))),("avgk2",lambda q:qF.avg_pool2d(q,2)),("mp",lambda q:qF.max_pool2d(q,2)),]:
        for tag,q in (("c",x),("n",xn)):
            put(f"{nm}_{k}_{tag}", f(q))
xq=T.quantize_per_tensor(arr(2,6,9,8),0.05,120,T.quint8)
w=T.quantize_per_tensor(arr(4,3,3,3,scale=0.3),0.01,0,T.qint8)
out["conv2d"]=qF.conv2d(xq,w,arr(4),stride=2,padding=1,groups=2,scale=0.2,zero_point=50).int_repr().numpy()
w1=T.quantize_per_tensor(arr(4,6,3,scale=0.3),0.01,0,T.qint8)
out["conv1d"]=qF.conv1d(xq[:,:,0],w1,None,padding=1,scale=0.2,zero_point=50).int_repr().numpy()
w3=T.quantize_per_tensor(arr(4,6,2,2,2,scale=0.3),0.01,0,T.qint8)
out["conv3d"]=qF.conv3d(xq.reshape(2,6,3,3,8),w3,arr(4),scale=0.2,zero_point=50).int_repr().numpy()
wl=T.quantize_per_tensor(arr(5,8,scale=0.3),0.01,0,T.qint8)
out["linear"]=qF.linear(xq,wl,arr(5)).int_repr().numpy()
out["linear_s"]=qF.linear(xq,wl,None,0.3,10).int_repr().numpy()

# modules
rng = np.random.default_rng(1)
for k,(s,z,dt) in enumerate([(0.05,128,T.quint8),(0.0173,3,T.quint8),(0.031,-5,T.qint8)]):
    x=T.quantize_per_tensor(arr(4,6,5,8,scale=3),s,z,dt)
    for tag,q in (("c",x),("n",x.permute(0,1,3,2))):
        put(f"elu_{k}{tag}", nnq.ELU(0.04,100,1.3)(q))
        put(f"leaky_{k}{tag}", nnq.LeakyReLU(0.021,77,0.2)(q))
        put(f"sig_{k}{tag}", nnq.Sigmoid(1/256.,0)(q))
        put(f"softmax_{k}{tag}", nnq.Softmax(1,1/256.,0)(q))
        put(f"softmax3_{k}{tag}", nnq.Softmax(3,1/256.,0)(q))
        put(f"ln_{k}{tag}", nnq.LayerNorm([q.shape[-1]],par(q.shape[-1]),par(q.shape[-1]),0.03,120)(q))
        put(f"ln2_{k}{tag}", nnq.LayerNorm(list(q.shape[-2:]),None,None,0.03,120,elementwise_affine=False)(q))
        put(f"gn_{k}{tag}", nnq.GroupNorm(3,6,par(6),par(6),0.03,120)(q))
        put(f"in2_{k}{tag}", nnq.InstanceNorm2d(6,par(6),par(6),0.03,120,affine=True)(q))
        put(f"in1_{k}{tag}", nnq.InstanceNorm1d(6,None,None,0.03,120)(q.reshape(4,6,40)))
        if dt != T.quint8: continue
        p=nnq.PReLU(0.02,90,6); p.set_weight(T.quantize_per_tensor(arr(6,scale=0.3),0.004,128,T.quint8)); put(f"prelu_{k}{tag}", p(q))
        p1=nnq.PReLU(0.02,90,1); p1.set_weight(T.quantize_per_tensor(arr(1,scale=0.3),0.004,128,T.quint8)); put(f"prelu1_{k}{tag}", p1(q))

# prepare / calibrate / convert
rng = np.random.default_rng(2)
def arr(*s, scale=1.0): return T.tensor((rng.normal(size=s)*scale).astype(np.float32))
class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.q=tq.QuantStub(); s.elu=nn.ELU(0.7); s.lr=nn.LeakyReLU(0.1); s.pr=nn.PReLU(4); s.ln=nn.LayerNorm(6); s.gn=nn.GroupNorm(2,4); s.in2=nn.InstanceNorm2d(4, affine=True); s.in1=nn.InstanceNorm1d(4); s.dq=tq.DeQuantStub()
    def forward(s,x):
        x=s.q(x); x=s.ln(s.gn(s.in2(s.pr(s.lr(s.elu(x)))))); y=s.in1(x.reshape(2,4,30)); return s.dq(y)
m=Net().eval()
with T.no_grad():
    for k,p in sorted(m.state_dict().items()):
        if p.dtype==T.float32: p.copy_(arr(*p.shape,scale=0.5)+ (1.0 if k.endswith("weight") else 0.0))
m.qconfig=tq.default_qconfig
p=tq.prepare(m)
for _ in range(3): p(arr(2,4,5,6,scale=2))
c=tq.convert(p)

out["converted"] = c(arr(2, 4, 5, 6, scale=2)).numpy()
out["converted_repr"] = np.array([repr(c).replace("torch.", "").replace("ember.", "")])
out["converted_keys"] = np.array(sorted(c.state_dict().keys()))
np.savez(sys.argv[2], **out)
"""

ONE_APART = ("elu_", "celu_", "avgk2_")


def test_same_codes_as_torch(tmp_path):
    path = tmp_path / "more_quantized_parity.py"
    path.write_text(SCRIPT)
    for lib, python in (("torch", TORCH_PYTHON), ("ember", sys.executable)):
        done = subprocess.run([python, str(path), lib, str(tmp_path / f"{lib}.npz")], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
    theirs, ours = np.load(tmp_path / "torch.npz"), np.load(tmp_path / "ember.npz")
    assert sorted(theirs.files) == sorted(ours.files)
    apart = {}
    for key in theirs.files:
        if key == "converted":
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6, err_msg=key)
        elif key.startswith("converted_"):
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
        elif key.startswith(ONE_APART):
            diff = np.abs(ours[key] - theirs[key])
            assert diff.max() <= 1 and (diff[-2:] == 0).all(), key  # the same scale and zero point
            apart[key] = int((diff > 0).sum())
            assert apart[key] <= 0.25 * diff.size, (key, apart[key])
        else:
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
    # elu / celu: a handful of codes in all (exact halves under average pooling are common)
    assert sum(v for k, v in apart.items() if not k.startswith("avgk2_")) <= 20, apart
