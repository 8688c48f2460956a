"""TorchVision's side of bench_vision.py, run in a child interpreter that has torch + torchvision
(PyPI's TorchVision does not load beside the torch 2.13 of the bench session, so the peer is the
seeds' torch 2.2.2 + torchvision 0.17.2 in a venv of its own; `nox -s bench` makes it).

Protocol: one JSON object a line on stdin, one JSON answer a line on stdout.
    {"cmd": "setup", "name", "kind": "nms"|"roi_align"|"model", "inputs": npz, "args": {...}, "out": npz}
        builds the call, runs it once and saves its result to "out"
    {"cmd": "time", "name", "number": n} -> {"seconds": s/call over n calls}
    {"cmd": "quit"}
Arrays travel as .npz files, so both sides run on the very same inputs (and weights).
"""

from __future__ import annotations

import json
import os
import sys
import time

# One thread, set before torch loads its OpenMP runtime.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402


def build(kind, arrays, args):
    """A no-argument callable running the op on `arrays` (TorchVision's API, same arguments as
    the Ember row)."""
    if kind == "nms":
        boxes, scores = torch.from_numpy(arrays["boxes"]), torch.from_numpy(arrays["scores"])
        return lambda: torchvision.ops.nms(boxes, scores, args["iou"])
    if kind == "roi_align":
        features, rois = torch.from_numpy(arrays["features"]), torch.from_numpy(arrays["rois"])
        return lambda: torchvision.ops.roi_align(features, rois, args["output_size"], args["spatial_scale"],
                                                 args["sampling_ratio"], args["aligned"])
    if kind == "model":
        model = getattr(torchvision.models, args["arch"])().eval()
        # Ember's random weights, so the two forwards compute the same function.
        state = {key[len("param:"):]: torch.from_numpy(value) for key, value in arrays.items()
                 if key.startswith("param:")}
        model.load_state_dict(state)
        x = torch.from_numpy(arrays["x"])

        def forward():
            with torch.no_grad():
                return model(x)
        return forward
    raise ValueError(f"unknown kind {kind!r}")


def main():
    torch.set_num_threads(1)
    calls = {}
    print(json.dumps({"torch": torch.__version__, "torchvision": torchvision.__version__}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "quit":
            break
        try:
            if request["cmd"] == "setup":
                with np.load(request["inputs"]) as data:
                    arrays = {key: data[key] for key in data.files}
                fn = calls[request["name"]] = build(request["kind"], arrays, request["args"])
                np.savez(request["out"], out=fn().numpy())
                answer = {"ok": True}
            elif request["cmd"] == "time":
                fn, number = calls[request["name"]], request["number"]
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                answer = {"seconds": (time.perf_counter() - start) / number}
            else:
                answer = {"error": f"unknown command {request['cmd']!r}"}
        except Exception as error:  # noqa: BLE001 - reported to the parent, which skips the row
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
