"""The example tour run by `nox -s demo`: each stop uses the installed wheels and says what it did.

    python docs/examples/tour.py
"""

from __future__ import annotations

import importlib.util
import pathlib
import tempfile
import time

import numpy as np

import ember

HERE = pathlib.Path(__file__).resolve().parent


def stop(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def tensors_and_dtypes() -> None:
    stop("1. tensors, dtypes and devices")
    x = ember.tensor([[1.0, 2.5], [-3.0, 4.0]])
    print(f"ember.tensor([[1.0, 2.5], [-3.0, 4.0]]) -> {x.dtype}, shape {x.shape}, strides {x.stride()}")
    print(x)
    print(f"integers become {ember.tensor([1, 2]).dtype}, booleans {ember.tensor([True]).dtype}")
    h = ember.tensor([0.1, 65504.0, 70000.0], dtype=ember.float16)
    print(f"float16 rounds to nearest even and overflows to inf: {h}")
    f8 = ember.tensor([0.3, 448.0, 500.0], dtype=ember.float8_e4m3fn)
    print(f"float8_e4m3fn has no inf (overflow saturates to 448, as PyTorch): {f8}")
    print(f"devices parse like torch.device: {ember.device('cuda:1')!r}")


def tensor_ops() -> None:
    stop("2. ops: broadcasting, promotion, views, reductions")
    x = ember.arange(6, dtype=ember.float32).view(2, 3)
    col = ember.tensor([[10.0], [20.0]])
    print(f"x = arange(6).view(2, 3) =\n{x}")
    print(f"x + [[10], [20]] broadcasts to\n{x + col}")
    ints = ember.tensor([1, 2, 3], dtype=ember.int32)
    print(f"int32 tensor + 2 stays {(ints + 2).dtype}; + 2.5 becomes {(ints + 2.5).dtype} (PyTorch's promotion)")
    print(f"x.t() is a view with strides {x.t().stride()}; x[:, ::2] = {x[:, ::2].tolist()}")
    print(f"x.sum(dim=1) = {x.sum(dim=1).tolist()}, x.mean() = {x.mean().item():.2f}, "
          f"x.std(0) = {[round(v, 4) for v in x.std(0).tolist()]}, x.argmax(1) = {x.argmax(1).tolist()}")
    print(f"div with rounding_mode='floor' follows Python: -7 // 2 = "
          f"{ember.div(ember.tensor([-7]), 2, rounding_mode='floor').item()}")
    x.mul_(2).add_(1)
    print(f"in place: x.mul_(2).add_(1) -> {x.tolist()} (version counter {x._version})")
    print(f"{len(ember._GENERATED_OPS)} ops are declared once and reachable as ember.<op> and "
          f"ember.ops.aten.<op>; kernels run on {ember.get_num_threads()} threads with "
          f"{ember._C._cpu_capability()} code")


def numpy_interop() -> None:
    stop("3. zero-copy NumPy interop")
    a = np.arange(6.0).reshape(2, 3)
    t = ember.from_numpy(a)
    a[0, 0] = 100.0
    print(f"ember.from_numpy shares memory: after a[0, 0] = 100, the tensor holds {t.tolist()[0][0]}")
    view = ember.from_numpy(a.T)
    print(f"a transposed view keeps its strides {view.stride()} (contiguous: {view.is_contiguous()})")
    print(f"and .numpy() hands the same buffer back: {t.numpy().ctypes.data == a.ctypes.data}")


def custom_op() -> None:
    stop("4. an op written outside the core, built against the installed wheel")
    spec = importlib.util.spec_from_file_location("build_and_run", HERE / "custom_op" / "build_and_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory() as build_dir:
        library = module.build(pathlib.Path(build_dir))
        print(f"built {library.name} with CMake find_package(Ember) from {ember.cmake_prefix_path}")
        ember.ops.load_library(library)
    op = ember.ops.example.scale_add
    print(f"ember.ops.example.scale_add: {op.schema}")
    out = op(ember.tensor([1.0, 2.0, 3.0]), ember.tensor([10.0, 20.0, 30.0]), alpha=0.5)
    print(f"scale_add([1, 2, 3], [10, 20, 30], alpha=0.5) = {out}")


def data_pipes() -> None:
    stop("5. emberdata: a sharded, seeded input pipeline")
    try:
        import emberdata
        from emberdata.datapipes.iter import IterableWrapper
        from emberdata.datapipes.utils import apply_random_seed, apply_sharding
    except ImportError as error:
        print(f"emberdata is not installed ({error}); skipping this stop")
        return
    import random

    shards = []
    for worker in range(2):
        pipe = IterableWrapper(range(10)).shuffle(buffer_size=4).sharding_filter().map(lambda v: v * v).batch(2)
        apply_sharding(pipe, 2, worker)
        apply_random_seed(pipe, random.Random(1234))
        shards.append(list(pipe))
        print(f"worker {worker} of 2 reads {shards[-1]}")
    seen = sorted(v for shard in shards for batch in shard for v in batch)
    print(f"together they read each of the 10 squares exactly once: {seen == [v * v for v in range(10)]}"
          f" (emberdata {emberdata.__version__})")


def training() -> None:
    stop("6. training an MLP and a CNN: DataLoader, optimizer, scheduler, checkpoint")
    spec = importlib.util.spec_from_file_location("train_classifiers", HERE / "train_classifiers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, (accuracy, seconds) in module.main().items():
        print(f"{name}: held-out accuracy {accuracy:.3f}, {seconds * 1000:.0f} ms per epoch")


def transformer_inference() -> None:
    stop("7. a transformer encoder's inference fast path: padded tokens skipped")
    import time

    from ember import nn

    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, batch_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=True).eval()
    lengths = [64, 40, 17, 52, 9, 64, 30, 22]
    x = ember.randn(len(lengths), 64, 128)
    padding = ember.from_numpy(np.arange(64)[None, :] >= np.array(lengths)[:, None])

    def timed(run):
        run()
        start = time.perf_counter()
        for _ in range(5):
            out = run()
        return out, (time.perf_counter() - start) / 5

    slow, slow_s = timed(lambda: encoder(x, src_key_padding_mask=padding))  # grad on: the slow path
    print(f"with autograd on: slow path, because {encoder.why_not_fast_path!r}")
    with ember.no_grad():
        fast, fast_s = timed(lambda: encoder(x, src_key_padding_mask=padding))
    print(f"eval + no_grad: fast path taken (why_not_fast_path={encoder.why_not_fast_path!r}), "
          f"{sum(lengths)} of {x.shape[0] * x.shape[1]} tokens computed")
    keep = ~padding.numpy()
    error = np.abs(fast.numpy()[keep] - slow.detach().numpy()[keep]).max()
    print(f"{slow_s * 1000:.1f} ms -> {fast_s * 1000:.1f} ms per call; largest difference on real tokens {error:.1e}")


def text_tokenizers() -> None:
    stop("8. embertext: C++ tokenizers, a vocab and a transform pipeline")
    try:
        import embertext
        import embertext.transforms as T
        from embertext.data.utils import get_tokenizer
        from embertext.vocab import build_vocab_from_iterator
    except ImportError as error:
        print(f"embertext is not installed ({error}); skipping this stop")
        return
    with tempfile.TemporaryDirectory() as tmp:
        vocab_txt = pathlib.Path(tmp) / "vocab.txt"
        vocab_txt.write_text("\n".join(["[PAD]", "[UNK]", "hello", "world", ",", "!", "un", "##aff", "##able"]))
        bert = T.BERTTokenizer(vocab_txt, return_tokens=True)
        print(f"BERTTokenizer (WordPiece in C++): 'Hello, unaffable WORLD!' -> {bert('Hello, unaffable WORLD!')}")
    lines = ["the cat sat", "the dog sat down", "a cat and a dog"]
    tokenize = get_tokenizer("basic_english")
    vocab = build_vocab_from_iterator(map(tokenize, lines), specials=["<pad>", "<unk>", "<bos>"])
    vocab.set_default_index(vocab["<unk>"])
    pipeline = T.Sequential(T.VocabTransform(vocab), T.AddToken(vocab["<bos>"], begin=True),
                            T.ToTensor(padding_value=vocab["<pad>"]))
    print(f"vocab of {len(vocab)} tokens; a padded batch:\n{pipeline([tokenize(s) for s in ['The cat!', 'a bird']])}")
    print(f"(embertext {embertext.__version__}; its C++ library: find_package(EmberText) at "
          f"{embertext.cmake_prefix_path})")


def recommendation() -> None:
    stop("9. emberrec: keyed jagged batches, embedding collections, DLRM trained on Criteo-format rows")
    try:
        import emberrec
        from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
        from emberrec.datasets.criteo import DEFAULT_CAT_NAMES, criteo_batches, criteo_kaggle
        from emberrec.datasets.synthetic import generate_criteo_tsv
        from emberrec.metrics.auc import compute_auc
        from emberrec.models.dlrm import DLRM, DLRMTrain
    except ImportError as error:
        print(f"emberrec is not installed ({error}); skipping this stop")
        return
    kjt = KeyedJaggedTensor.from_lengths_sync(["user", "item"], ember.tensor([3, 1, 4, 1, 5]), ember.tensor([2, 0, 1, 2]))
    print(f"a KJT of 2 features x batch {kjt.stride()}: {kjt}")
    ember.manual_seed(0)
    hashes = [500] * len(DEFAULT_CAT_NAMES)
    tables = [EmbeddingBagConfig(num_embeddings=h, embedding_dim=8, name=f"t_{name}", feature_names=[name])
              for h, name in zip(hashes, DEFAULT_CAT_NAMES, strict=True)]
    model = DLRMTrain(DLRM(EmbeddingBagCollection(tables), dense_in_features=13, dense_arch_layer_sizes=[16, 8],
                           over_arch_layer_sizes=[16, 1]))
    optimizer = ember.optim.Adagrad(model.parameters(), lr=0.05)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "day_0.tsv"
        generate_criteo_tsv(path, 12_000, seed=0)
        batches = list(criteo_batches(criteo_kaggle(str(path)), batch_size=256, hashes=hashes))
    train, held_out = batches[:-8], batches[-8:]
    start = time.perf_counter()
    for batch in train:
        optimizer.zero_grad()
        loss, _ = model(batch)
        loss.backward()
        optimizer.step()
    per_step = (time.perf_counter() - start) / len(train)
    with ember.no_grad():
        scores = ember.cat([model(b)[1][1] for b in held_out])
    labels = ember.cat([b.labels for b in held_out]).double()
    auc = float(compute_auc(1, scores.double()[None], labels[None], ember.ones(1, labels.numel(), dtype=ember.float64))[0])
    print(f"DLRM: {len(train)} steps of 256 rows, {per_step * 1000:.1f} ms per step; held-out AUC {auc:.3f} "
          f"(emberrec {emberrec.__version__})")


def _run_example(name: str, argv: list[str]):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(argv)


def vision() -> None:
    stop("10. embervision: an ImageFolder of PNGs, a small ResNet, a MobileNetV3 FasterRCNN drawing into a PNG")
    try:
        import embervision
    except ImportError as error:
        print(f"embervision is not installed ({error}); skipping this stop")
        return
    with tempfile.TemporaryDirectory() as tmp:
        accuracy, png = _run_example("vision_classify_detect", ["--out", tmp])
        print(f"(embervision {embervision.__version__}; held-out accuracy {accuracy:.3f}; {png.name} written)")


def audio() -> None:
    stop("11. emberaudio: espeak-ng speech, a streamed Emformer RNN-T, CTC beam search with a KenLM model")
    try:
        import emberaudio
    except ImportError as error:
        print(f"emberaudio is not installed ({error}); skipping this stop")
        return
    import shutil

    if shutil.which("espeak-ng") is None:
        print("espeak-ng is not installed (ci/setup.sh installs it); skipping this stop")
        return
    result = _run_example("audio_streaming_asr", [])
    print(f"(emberaudio {emberaudio.__version__}; streamed RNN-T WER {result['rnnt_streaming_wer']:.3f}, "
          f"CTC beam search + bigram LM WER {result['ctc_beam_wer']:.3f})")


def main() -> None:
    print(f"Ember tour: ember {ember.__version__} from {pathlib.Path(ember.__file__).parent}")
    tensors_and_dtypes()
    tensor_ops()
    numpy_interop()
    custom_op()
    data_pipes()
    training()
    transformer_inference()
    text_tokenizers()
    recommendation()
    vision()
    audio()
    print("\ntour complete")


if __name__ == "__main__":
    main()
