"""BERT and RoBERTa encoders against a NumPy transformer written from the public checkpoint
layout (not from our modules), the fast path on padded batches, the bundles, the converters,
and all-MiniLM-L6-v2's sentence embeddings from its real weights."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import nn
from embertext.models import (
    ROBERTA_BASE_ENCODER,
    XLMR_BASE_ENCODER,
    BertEncoder,
    BertEncoderConf,
    RobertaBundle,
    RobertaClassificationHead,
    RobertaEncoderConf,
    RobertaModel,
    bert_state_dict_from_hf,
    load_bert,
    mean_pooling,
    roberta_state_dict_from_hf,
)

_erf = np.vectorize(math.erf)


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _np_encoder(t: dict[str, np.ndarray], x: np.ndarray, mask: np.ndarray, heads: int, eps: float) -> np.ndarray:
    """Post-norm transformer layers in float64, from the public (Hugging Face) tensor names."""
    batch, length, hidden = x.shape
    d = hidden // heads
    n_layers = len({k.split(".")[2] for k in t if k.startswith("encoder.layer.")})
    for i in range(n_layers):
        p = f"encoder.layer.{i}."

        def lin(v, name, p=p):
            return v @ t[p + name + ".weight"].T + t[p + name + ".bias"]

        q, k, v = (lin(x, f"attention.self.{n}").reshape(batch, length, heads, d).transpose(0, 2, 1, 3)
                   for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + np.where(mask[:, None, None, :], 0.0, -1e30)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attn = scores / scores.sum(-1, keepdims=True)
        ctx = (attn @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        x = _ln(x + lin(ctx, "attention.output.dense"), t[p + "attention.output.LayerNorm.weight"],
                t[p + "attention.output.LayerNorm.bias"], eps)
        inner = lin(x, "intermediate.dense")
        inner = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
        x = _ln(x + lin(inner, "output.dense"), t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"], eps)
    return x


def np_bert(t: dict[str, np.ndarray], ids: np.ndarray, mask: np.ndarray, heads: int) -> np.ndarray:
    length = ids.shape[1]
    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][np.arange(length)]
    x = x + t["embeddings.token_type_embeddings.weight"][0]
    x = _ln(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], 1e-12)
    return _np_encoder(t, x, mask, heads, 1e-12)


def np_roberta(t: dict[str, np.ndarray], ids: np.ndarray, heads: int, pad: int = 1) -> np.ndarray:
    mask = ids != pad
    positions = np.cumsum(mask, axis=1) * mask + pad
    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][positions]
    x = x + t["embeddings.token_type_embeddings.weight"][0]
    x = _ln(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], 1e-5)
    return _np_encoder(t, x, mask, heads, 1e-5)


def random_checkpoint(rng, vocab, hidden, inner, layers, positions, types=2) -> dict[str, np.ndarray]:
    """A checkpoint in the public layout with random float32 weights."""

    def w(*shape, scale=0.2):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    t = {
        "embeddings.word_embeddings.weight": w(vocab, hidden, scale=1.0),
        "embeddings.position_embeddings.weight": w(positions, hidden, scale=1.0),
        "embeddings.token_type_embeddings.weight": w(types, hidden),
        "embeddings.LayerNorm.weight": 1 + w(hidden), "embeddings.LayerNorm.bias": w(hidden),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name, (o, n) in {"attention.self.query": (hidden, hidden), "attention.self.key": (hidden, hidden),
                             "attention.self.value": (hidden, hidden), "attention.output.dense": (hidden, hidden),
                             "intermediate.dense": (inner, hidden), "output.dense": (hidden, inner)}.items():
            t[p + name + ".weight"], t[p + name + ".bias"] = w(o, n), w(o)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + name + ".weight"], t[p + name + ".bias"] = 1 + w(hidden), w(hidden)
    return t


def _to_ember(t: dict[str, np.ndarray], prefix: str = "") -> dict[str, ember.Tensor]:
    return {prefix + k: ember.from_numpy(np.ascontiguousarray(v)) for k, v in t.items()}


IDS = np.array([[2, 7, 9, 4, 11, 3], [2, 5, 3, 0, 0, 0], [2, 8, 8, 8, 3, 0]])


def test_bert_matches_numpy_and_takes_the_fast_path():
    rng = np.random.default_rng(0)
    t = random_checkpoint(rng, vocab=16, hidden=32, inner=64, layers=2, positions=20)
    model = BertEncoder(BertEncoderConf(vocab_size=16, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                                        num_hidden_layers=2, max_position_embeddings=20))
    model.load_state_dict(bert_state_dict_from_hf(_to_ember(t, prefix="bert.")))
    model.eval()
    ids = ember.from_numpy(IDS)
    mask = IDS != 0
    expected = np_bert({k: v.astype(np.float64) for k, v in t.items()}, IDS, mask, heads=4)
    with ember.no_grad():
        fast = model(ids).numpy()
    assert model.layers.why_not_fast_path == ""  # padding skipped in the fused path
    np.testing.assert_allclose(fast[mask], expected[mask], rtol=1e-4, atol=1e-4)
    slow = model(ids).detach().numpy()  # autograd on: the layer-by-layer path
    assert model.layers.why_not_fast_path != ""
    np.testing.assert_allclose(slow[mask], expected[mask], rtol=1e-4, atol=1e-4)


def test_roberta_matches_numpy_with_converted_weights():
    rng = np.random.default_rng(1)
    t = random_checkpoint(rng, vocab=16, hidden=32, inner=48, layers=2, positions=12, types=1)
    ids = np.where(IDS == 0, 1, IDS)  # RoBERTa pads with 1
    conf = RobertaEncoderConf(vocab_size=16, embedding_dim=32, ffn_dimension=48, padding_idx=1, max_seq_len=12,
                              num_attention_heads=4, num_encoder_layers=2, dropout=0.0)
    model = RobertaModel(conf)
    model.load_state_dict(roberta_state_dict_from_hf(_to_ember(t, prefix="roberta.")))
    model.eval()
    expected = np_roberta({k: v.astype(np.float64) for k, v in t.items()}, ids, heads=4)
    with ember.no_grad():
        out = model(ember.from_numpy(ids)).numpy()
    assert model.encoder.layers.why_not_fast_path == ""
    real = ids != 1
    np.testing.assert_allclose(out[real], expected[real], rtol=1e-4, atol=1e-4)


def test_classification_head_and_bundle_round_trip(tmp_path):
    conf = RobertaEncoderConf(vocab_size=20, embedding_dim=16, ffn_dimension=32, max_seq_len=18,
                              num_attention_heads=2, num_encoder_layers=1)
    bundle = RobertaBundle(conf, "tiny.safetensors", "gpt2-bpe")
    head = RobertaClassificationHead(num_classes=3, input_dim=16)
    model = bundle.get_model(head=head, load_weights=False).eval()
    tokens = ember.tensor([[0, 5, 6, 2], [0, 7, 2, 1]])
    with ember.no_grad():
        logits = model(tokens)
    assert tuple(logits.shape) == (2, 3)
    ember.save(model.state_dict(), tmp_path / "tiny.safetensors")
    again = bundle.get_model(head=RobertaClassificationHead(3, 16), checkpoint=tmp_path / "tiny.safetensors").eval()
    with ember.no_grad():
        np.testing.assert_allclose(again(tokens).numpy(), logits.numpy(), rtol=1e-6, atol=1e-6)
    encoder_only = bundle.get_model(checkpoint=tmp_path / "tiny.safetensors")  # the head's tensors are ignored
    assert encoder_only.head is None
    frozen = bundle.get_model(load_weights=False, freeze_encoder=True)
    assert not any(p.requires_grad for p in frozen.encoder.parameters())


def test_bundles_and_their_errors(tmp_path, monkeypatch):
    assert ROBERTA_BASE_ENCODER.encoderConf.vocab_size == 50265
    assert XLMR_BASE_ENCODER.encoderConf.vocab_size == 250002
    monkeypatch.setattr(ember.hub, "get_dir", lambda: str(tmp_path))
    with pytest.raises(FileNotFoundError, match="roberta.base.encoder.safetensors.*Ember does not download"):
        ROBERTA_BASE_ENCODER.get_model()
    with pytest.raises(NotImplementedError, match="XLM-R tokenizes with a SentencePiece model"):
        XLMR_BASE_ENCODER.transform()
    conf = RobertaEncoderConf(vocab_size=20, embedding_dim=16, ffn_dimension=32, max_seq_len=18,
                              num_attention_heads=2, num_encoder_layers=1)
    ember.save({"encoder.token_embedding.weight": ember.zeros(20, 16)}, tmp_path / "partial.safetensors")
    with pytest.raises(RuntimeError, match="does not fit RobertaBundle: missing"):
        RobertaBundle(conf, "x", "gpt2-bpe").get_model(checkpoint=tmp_path / "partial.safetensors")


def test_roberta_transform_from_local_files(gpt2_files):
    enc, bpe, encoder, _ = gpt2_files
    transform = ROBERTA_BASE_ENCODER.transform(enc, bpe)
    out = transform(["hello world", "x " * 400])
    assert out[0][0] == 0 and out[0][-1] == 2
    assert len(out[1]) == 256  # truncated to 254, plus <s> and </s>


def test_input_errors():
    model = BertEncoder(BertEncoderConf(vocab_size=10, hidden_size=8, intermediate_size=16, num_attention_heads=2,
                                        num_hidden_layers=1, max_position_embeddings=4))
    with pytest.raises(TypeError, match="expects integer token IDs"):
        model(ember.zeros(1, 3))
    with pytest.raises(ValueError, match=r"expects token IDs of shape \(batch, length\)"):
        model(ember.tensor([1, 2]))
    with pytest.raises(ValueError, match="sequence of 5 tokens is longer than the model's 4 positions"):
        model(ember.tensor([[1, 2, 3, 4, 5]]))
    with pytest.raises(ValueError, match="not divisible by num_attention_heads"):
        BertEncoder(BertEncoderConf(hidden_size=10, num_attention_heads=3))
    roberta = RobertaModel(RobertaEncoderConf(vocab_size=10, embedding_dim=8, ffn_dimension=16, max_seq_len=4,
                                              num_attention_heads=2, num_encoder_layers=1))
    with pytest.raises(ValueError, match="longer than the model's 2 positions"):
        roberta(ember.tensor([[0, 5, 6, 2]]))
    with pytest.raises(ValueError, match="the checkpoint lacks 'embeddings.LayerNorm.bias'"):
        t = random_checkpoint(np.random.default_rng(0), 10, 8, 16, 1, 4)
        del t["embeddings.LayerNorm.bias"]
        bert_state_dict_from_hf(_to_ember(t))
    with pytest.raises(ValueError, match="no encoder.layer"):
        bert_state_dict_from_hf({"embeddings.word_embeddings.weight": ember.zeros(2, 2)})


def test_training_step_changes_the_weights():
    model = BertEncoder(BertEncoderConf(vocab_size=12, hidden_size=8, intermediate_size=16, num_attention_heads=2,
                                        num_hidden_layers=1, max_position_embeddings=8, dropout=0.0))
    head = nn.Linear(8, 2)
    opt = ember.optim.AdamW([*model.parameters(), *head.parameters()], lr=1e-2)
    ids = ember.tensor([[1, 4, 5, 2, 0], [1, 6, 2, 0, 0]])
    labels = ember.tensor([0, 1])
    losses = []
    for _ in range(20):
        logits = head(model(ids)[:, 0, :])
        loss = nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0] * 0.5


# -- all-MiniLM-L6-v2, its real weights ---------------------------------------------------------


def test_minilm_sentence_embeddings_match_numpy(minilm_dir):
    from embertext.transforms import BERTTokenizer, ToTensor

    model = load_bert(minilm_dir / "model.safetensors", num_attention_heads=12).eval()
    assert model.conf.num_hidden_layers == 6 and model.conf.hidden_size == 384
    tokenizer = BERTTokenizer(minilm_dir / "vocab.txt")
    sentences = ["This is an example sentence.", "Each sentence is converted to a vector!",
                 "Ember runs BERT on its Transformer fast path.", "short"]
    ids = [[101, *t, 102] for t in tokenizer(sentences)]
    tokens = ToTensor(padding_value=0)(ids)
    mask = tokens.ne(0)
    with ember.no_grad():
        hidden = model(tokens, attention_mask=mask)
    assert model.layers.why_not_fast_path == ""
    ours = mean_pooling(hidden, mask).numpy()
    ours /= np.linalg.norm(ours, axis=1, keepdims=True)

    weights = {k: v.numpy().astype(np.float64) for k, v in ember.load(minilm_dir / "model.safetensors").items()}
    ids_np, mask_np = tokens.numpy(), mask.numpy()
    ref_hidden = np_bert(weights, ids_np, mask_np, heads=12)
    ref = (ref_hidden * mask_np[..., None]).sum(1) / mask_np.sum(1, keepdims=True)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(ours, ref, atol=2e-5)
    similarity = ours @ ours.T
    assert similarity[0, 1] > similarity[0, 3]  # related sentences are closer than unrelated ones
