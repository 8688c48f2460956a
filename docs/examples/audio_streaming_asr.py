"""Streaming speech recognition end to end with emberaudio, no downloads:

1. synthesize utterances of a small vocabulary (digits and a few commands) with espeak-ng
   (Debian's `espeak-ng`; `ci/setup.sh` installs it) in several voices, speeds and pitches, and
   read them back with `emberaudio.load`;
2. train a tiny Emformer RNN-T (`models.emformer_rnnt_model`, `functional.rnnt_loss`) on word
   tokens over log-mel features;
3. stream each held-out file chunk by chunk from `io.StreamReader` through
   `RNNTBeamSearch.infer` (the state and hypotheses carried between chunks), printing the partial
   transcript as it grows, and report the word error rate;
4. train a small CTC model on letters and decode it with `models.decoder.ctc_decoder`, lexicon
   constrained, with a bigram KenLM model written here as an ARPA file from the training text's
   counts (KenLM's `lmplz` is not on pip), and report greedy vs beam-search word error rates.

    python docs/examples/audio_streaming_asr.py [--train 320] [--test 40] [--epochs 12]
"""

from __future__ import annotations

import argparse
import collections
import math
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import emberaudio
from emberaudio import functional as AF
from emberaudio import transforms
from emberaudio.io import StreamReader
from emberaudio.models import RNNTBeamSearch, emformer_rnnt_model
from emberaudio.models.decoder import ctc_decoder

import ember
from ember import nn

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "yes", "no", "stop", "go")
BLANK = 0  # RNN-T token 0 is blank; word i is token i + 1
SAMPLE_RATE, HOP, N_MELS = 16000, 160, 40
SEGMENT, RIGHT_CONTEXT = 16, 4  # Emformer segment and look-ahead, in feature frames (10 ms each)
TRAIN_VOICES = ["en-us", "en-gb", "en-us+m3", "en-gb+f2", "en-us+f3", "en-gb-x-rp+m2"]
TEST_VOICES = ["en-us+m1", "en-gb+f1", "en-gb-x-rp"]


def synthesize(directory: Path, count: int, voices: list[str], rng: random.Random) -> list[tuple[Path, list[str]]]:
    """`count` WAV files of one to three words each, with their transcripts."""
    items = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 3))]
        path = directory / f"{i:04d}.wav"
        subprocess.run(["espeak-ng", "-v", rng.choice(voices), "-s", str(rng.randint(130, 190)),
                        "-p", str(rng.randint(30, 70)), "-g", str(rng.randint(1, 8)), "-w", str(path), " ".join(words)],
                       check=True)
        items.append((path, words))
    return items


class Features(nn.Module):
    """Log-mel features at 16 kHz, normalized with the training set's statistics."""

    def __init__(self):
        super().__init__()
        self.mel = transforms.MelSpectrogram(sample_rate=SAMPLE_RATE, n_fft=400, hop_length=HOP, n_mels=N_MELS)
        self.register_buffer("mean", ember.zeros(N_MELS))
        self.register_buffer("std", ember.ones(N_MELS))

    def forward(self, waveform):  # (samples,) -> (frames, N_MELS)
        return ((self.mel(waveform) + 1e-6).log().transpose(0, 1) - self.mean) / self.std


def load_16k(path: Path):
    waveform, rate = emberaudio.load(str(path))
    return AF.resample(waveform[0], rate, SAMPLE_RATE)


def batches(examples, size, rng):
    order = list(range(len(examples)))
    rng.shuffle(order)
    for start in range(0, len(order), size):
        chosen = [examples[i] for i in order[start:start + size]]
        lengths = ember.tensor([f.shape[0] for f, _ in chosen], dtype=ember.int32)
        features = nn.utils.rnn.pad_sequence([f for f, _ in chosen], batch_first=True)
        labels = [t for _, t in chosen]
        yield features, lengths, labels


def tiny_rnnt():
    return emformer_rnnt_model(
        input_dim=N_MELS, encoding_dim=96, num_symbols=len(WORDS) + 1, segment_length=SEGMENT,
        right_context_length=RIGHT_CONTEXT, time_reduction_input_dim=32, time_reduction_stride=4,
        transformer_num_heads=4, transformer_ffn_dim=192, transformer_num_layers=3, transformer_dropout=0.1,
        transformer_activation="gelu", transformer_left_context_length=30, transformer_max_memory_size=0,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True,
        symbol_embedding_dim=48, num_lstm_layers=1, lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-3,
        lstm_dropout=0.0)


def train_rnnt(examples, epochs, rng):
    model = tiny_rnnt()
    optimizer = ember.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(epochs):
        model.train()
        start, total, n = time.perf_counter(), 0.0, 0
        for features, lengths, labels in batches(examples, 16, rng):
            tokens = [[WORDS.index(w) + 1 for w in words] for words in labels]
            target_lengths = ember.tensor([len(t) for t in tokens], dtype=ember.int32)
            width = int(target_lengths.max())
            targets = ember.tensor([t + [BLANK] * (width - len(t)) for t in tokens], dtype=ember.int32)
            # The predictor sees blank then the targets; the loss scores the targets.
            prepended = ember.cat([ember.full((len(tokens), 1), BLANK, dtype=ember.int32), targets], dim=1)
            # The encoder needs the right context after the last frame: pad it with silence.
            padded = nn.functional.pad(features, (0, 0, 0, RIGHT_CONTEXT))
            logits, source_lengths, _, _ = model(padded, lengths, prepended, target_lengths + 1)
            loss = AF.rnnt_loss(logits, targets, source_lengths.to(ember.int32), target_lengths, blank=BLANK)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            total += float(loss) * len(tokens)
            n += len(tokens)
        print(f"RNN-T epoch {epoch + 1}: loss {total / n:.3f} ({time.perf_counter() - start:.1f} s)")
    return model.eval()


def word_errors(reference: list[str], hypothesis: list[str]) -> int:
    """Levenshtein distance between word lists."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i]
        for j, hyp in enumerate(hypothesis, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]


def stream_file(model, features: Features, path: Path, verbose: bool) -> list[str]:
    """Decode one file chunk by chunk as it is read: each chunk is one Emformer segment plus the
    look-ahead that the next chunk starts with (kept from the previous read)."""
    decoder = RNNTBeamSearch(model, BLANK)
    reader = StreamReader(str(path))
    reader.add_basic_audio_stream(frames_per_chunk=SEGMENT * HOP, sample_rate=SAMPLE_RATE, num_channels=1)
    context = ember.zeros(RIGHT_CONTEXT * HOP)
    state, hypothesis, words = None, None, []
    with ember.no_grad():
        chunks = [chunk[:, 0] for (chunk,) in reader.stream()]
        chunks.append(ember.zeros(SEGMENT * HOP))  # flush the look-ahead
        for chunk in chunks:
            chunk = nn.functional.pad(chunk, (0, SEGMENT * HOP - chunk.shape[0]))
            segment = ember.cat([context, chunk])
            context = chunk[-RIGHT_CONTEXT * HOP:]
            feats = features(segment)[: SEGMENT + RIGHT_CONTEXT]
            hypos, state = decoder.infer(feats, ember.tensor([feats.shape[0]]), beam_width=4, state=state,
                                         hypothesis=hypothesis)
            hypothesis = hypos
            words = [WORDS[t - 1] for t in hypos[0][0] if t != BLANK]
            if verbose:
                print(f"    partial: {' '.join(words)}")
    return words


class LetterCTC(nn.Module):
    """Conformer encoder over 4x-stacked log-mels, letters out."""

    def __init__(self, num_tokens):
        super().__init__()
        self.project = nn.Linear(N_MELS * 4, 96)
        self.encoder = emberaudio.models.Conformer(input_dim=96, num_heads=4, ffn_dim=192, num_layers=2,
                                                   depthwise_conv_kernel_size=15, dropout=0.1)
        self.head = nn.Linear(96, num_tokens)

    def forward(self, features, lengths):
        b, t, d = features.shape
        t4 = t // 4
        stacked = features[:, : t4 * 4].reshape(b, t4, d * 4)
        encoded, lengths = self.encoder(self.project(stacked), ember.div(lengths, 4, rounding_mode="floor"))
        return self.head(encoded).log_softmax(-1), lengths


def write_bigram_arpa(sentences: list[list[str]], path: Path, discount: float = 0.5) -> None:
    """A bigram model with absolute discounting and back-off, in ARPA format (log10)."""
    unigrams, bigrams = collections.Counter(), collections.Counter()
    for words in sentences:
        padded = ["<s>", *words, "</s>"]
        unigrams.update(padded[1:])
        bigrams.update(zip(padded, padded[1:]))
    vocabulary = ["<unk>", "<s>", *sorted(set(unigrams) - {"<s>"})]
    total = sum(unigrams.values())
    unk_mass = 0.01
    p1 = {w: (1 - unk_mass) * unigrams[w] / total for w in vocabulary if w not in ("<unk>", "<s>")}
    p1["<unk>"] = unk_mass
    following = collections.defaultdict(dict)
    for (a, b), c in bigrams.items():
        following[a][b] = c
    lines = ["\\data\\", f"ngram 1={len(vocabulary)}", f"ngram 2={len(bigrams)}", "", "\\1-grams:"]
    p2, backoff = {}, {}
    for a, nexts in following.items():
        count = sum(nexts.values())
        left = discount * len(nexts) / count  # mass freed by discounting, given to the unigram
        for b, c in nexts.items():
            p2[(a, b)] = (c - discount) / count + left * p1[b]
        backoff[a] = left / (1 - sum(p1[b] for b in nexts))
    for w in vocabulary:
        logp = -99.0 if w == "<s>" else math.log10(p1[w])
        bow = f"\t{math.log10(backoff[w]):.6f}" if w in backoff else ""
        lines.append(f"{logp:.6f}\t{w}{bow}")
    lines += ["", "\\2-grams:"]
    lines += [f"{math.log10(p):.6f}\t{a} {b}" for (a, b), p in sorted(p2.items())]
    lines += ["", "\\end\\", ""]
    path.write_text("\n".join(lines))


def ctc_part(train, test, epochs, rng, work: Path):
    letters = sorted({c for w in WORDS for c in w})
    tokens = ["-", "|", *letters]  # blank, word boundary, letters
    index = {t: i for i, t in enumerate(tokens)}
    model = LetterCTC(len(tokens))
    optimizer = ember.optim.Adam(model.parameters(), lr=2e-3)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    for epoch in range(epochs):
        model.train()
        total, n = 0.0, 0
        for features, lengths, labels in batches(train, 16, rng):
            targets = [[index[c] for c in "|".join(words)] for words in labels]
            log_probs, out_lengths = model(features, lengths)
            flat = ember.tensor([t for seq in targets for t in seq], dtype=ember.int64)
            loss = ctc(log_probs.transpose(0, 1), flat, out_lengths.to(ember.int64),
                       ember.tensor([len(t) for t in targets], dtype=ember.int64))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss) * len(targets)
            n += len(targets)
        print(f"CTC epoch {epoch + 1}: loss {total / n:.3f}")
    model.eval()
    (work / "tokens.txt").write_text("\n".join(tokens) + "\n")
    (work / "lexicon.txt").write_text("".join(f"{w} {' '.join(w)} |\n" for w in WORDS))
    write_bigram_arpa([words for _, words in train], work / "bigram.arpa")
    beam = ctc_decoder(lexicon=str(work / "lexicon.txt"), tokens=str(work / "tokens.txt"),
                       lm=str(work / "bigram.arpa"), beam_size=20, lm_weight=1.0, word_score=0.0,
                       blank_token="-", sil_token="|")
    greedy_errors = beam_errors = words_total = 0
    with ember.no_grad():
        for features, reference in test:
            log_probs, lengths = model(features[None], ember.tensor([features.shape[0]]))
            best = log_probs[0].argmax(-1).tolist()
            collapsed = [t for i, t in enumerate(best) if t != 0 and (i == 0 or t != best[i - 1])]
            greedy = "".join(tokens[t] for t in collapsed).replace("|", " ").split()
            (hypotheses,) = beam(log_probs.to(ember.float32).contiguous(), lengths.to(ember.int32))
            greedy_errors += word_errors(reference, greedy)
            beam_errors += word_errors(reference, list(hypotheses[0].words))
            words_total += len(reference)
    print(f"CTC on letters: greedy WER {greedy_errors / words_total:.3f}, "
          f"lexicon + bigram KenLM beam search WER {beam_errors / words_total:.3f}")
    return greedy_errors / words_total, beam_errors / words_total


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=320)
    parser.add_argument("--test", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--show", type=int, default=3, help="held-out files whose partial transcripts print")
    args = parser.parse_args(argv)
    if shutil.which("espeak-ng") is None:
        raise SystemExit("this example synthesizes its speech with espeak-ng: apt-get install espeak-ng")
    ember.manual_seed(0)
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "train").mkdir()
        (work / "test").mkdir()
        train_files = synthesize(work / "train", args.train, TRAIN_VOICES, rng)
        test_files = synthesize(work / "test", args.test, TEST_VOICES, rng)
        features = Features()
        train = [(features(load_16k(p)), words) for p, words in train_files]
        stacked = ember.cat([f for f, _ in train])
        features.mean.copy_(stacked.mean(0))
        features.std.copy_(stacked.std(0) + 1e-5)
        with ember.no_grad():
            train = [(features(load_16k(p)), words) for p, words in train_files]
            test = [(features(load_16k(p)), words) for p, words in test_files]
        print(f"synthesized {len(train)} training and {len(test)} held-out utterances with espeak-ng")
        model = train_rnnt(train, args.epochs, rng)
        errors = total = 0
        for i, (path, reference) in enumerate(test_files):
            verbose = i < args.show
            if verbose:
                print(f"  streaming {path.name} (said: {' '.join(reference)})")
            errors += word_errors(reference, stream_file(model, features, path, verbose))
            total += len(reference)
        rnnt_wer = errors / total
        print(f"Emformer RNN-T, streamed: word error rate {rnnt_wer:.3f} on {len(test_files)} held-out utterances")
        greedy_wer, beam_wer = ctc_part(train, test, args.epochs, rng, work)
    return {"rnnt_streaming_wer": rnnt_wer, "ctc_greedy_wer": greedy_wer, "ctc_beam_wer": beam_wer}


if __name__ == "__main__":
    main()
