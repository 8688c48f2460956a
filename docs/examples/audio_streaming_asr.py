"""Streaming speech recognition end to end with emberaudio, no downloads:

1. synthesize utterances of a small vocabulary (digits and a few commands) with espeak-ng
   (Debian's `espeak-ng`; `ci/setup.sh` installs it) in several voices, speeds and pitches; the
   held-out utterances use voices never heard in training;
2. train a tiny Emformer RNN-T (`models.emformer_rnnt_model`, `functional.rnnt_loss`) on word
   tokens over log-mel features;
3. stream each held-out file chunk by chunk from `io.StreamReader` through
   `RNNTBeamSearch.infer` (the state and hypotheses carried between chunks), printing the partial
   transcript as it grows, and report the word error rate. Feature frames are not centered, so
   the frames made as samples arrive are exactly those of the whole utterance (the example
   checks this); each Emformer call takes one segment of new frames plus the look-ahead frames
   that the next call starts with;
4. train a small CTC model on letters and decode it with `models.decoder.ctc_decoder`, lexicon
   constrained, with a bigram KenLM model written here as an ARPA file from the training text's
   counts (KenLM's `lmplz` is not on pip), and report greedy vs beam-search word error rates.

    python docs/examples/audio_streaming_asr.py [--train 320] [--test 40] [--epochs 15] [--ctc-epochs 10]

At the defaults it ran in 2.5 minutes on two shared CPU cores (10 minutes when other jobs loaded
them to a load average of 6): RNN-T streamed WER 0.185, CTC greedy 0.074, beam + LM 0.025.
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
SAMPLE_RATE, N_FFT, HOP, N_MELS = 16000, 400, 160, 40
SEGMENT, RIGHT_CONTEXT = 16, 4  # Emformer segment and look-ahead, in feature frames (10 ms each)
# Silence appended to every utterance (training and streaming alike): enough whole frames of it
# that the last full Emformer chunk already reaches past the speech.
TAIL = (SEGMENT + RIGHT_CONTEXT + N_FFT // HOP + 1) * HOP
# No dropout: with dropout this small model learns the alignment several times more slowly.
DROPOUT = 0.0
TRAIN_VOICES = ["en-us", "en-gb", "en-us+m3", "en-gb+f2", "en-us+f3", "en-gb-x-rp+m2", "en-gb-scotland+m4",
                "en-us+f4", "en-029+m5", "en-gb-x-gbclan+f5"]
TEST_VOICES = ["en-us+m1", "en-gb+f1", "en-gb-x-rp", "en-us-nyc+m6"]  # voices never heard in training


def synthesize(directory: Path, count: int, voices: list[str], speeds: tuple[int, int],
               rng: random.Random) -> list[tuple[Path, list[str]]]:
    """`count` WAV files of one to three words each (espeak-ng, 22.05 kHz), with their transcripts."""
    items = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 3))]
        path = directory / f"{i:04d}.wav"
        subprocess.run(["espeak-ng", "-v", rng.choice(voices), "-s", str(rng.randint(*speeds)),
                        "-p", str(rng.randint(25, 75)), "-g", str(rng.randint(0, 8)), "-w", str(path), " ".join(words)],
                       check=True)
        items.append((path, words))
    return items


def read_chunks(path: Path, frames_per_chunk: int):
    """The file as 16 kHz mono chunks from `StreamReader` (FFmpeg resamples), with TAIL samples
    of silence after the last one. Training reads whole files the same way, so that the features
    seen in training and in streaming come from the same samples."""
    reader = StreamReader(str(path))
    reader.add_basic_audio_stream(frames_per_chunk=frames_per_chunk, sample_rate=SAMPLE_RATE, num_channels=1)
    for (chunk,) in reader.stream():
        yield chunk[:, 0]
    yield ember.zeros(TAIL)


class Features(nn.Module):
    """Log-mel features at 16 kHz, normalized with the training set's statistics. Frames are not
    centered (`center=False`): frame k reads samples [k * HOP, k * HOP + N_FFT) only, so frames
    computed from a stream as its samples arrive equal those of the whole utterance."""

    def __init__(self):
        super().__init__()
        self.mel = transforms.MelSpectrogram(sample_rate=SAMPLE_RATE, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS,
                                             center=False)
        self.register_buffer("mean", ember.zeros(N_MELS))
        self.register_buffer("std", ember.ones(N_MELS))

    def forward(self, waveform):  # (samples,) -> (frames, N_MELS)
        return ((self.mel(waveform) + 1e-4).log().transpose(0, 1) - self.mean) / self.std


class StreamingFeatures:
    """Feature frames of a stream, chunk by chunk: each call prepends the samples the previous
    call could not finish a frame with (the look-ahead a frame needs past its hop) to the new
    chunk, and returns the frames that are now complete."""

    def __init__(self, features: Features):
        self.features = features
        self.pending = ember.zeros(0)

    def __call__(self, chunk):
        samples = ember.cat([self.pending, chunk])
        if samples.shape[0] < N_FFT:
            self.pending = samples
            return ember.zeros(0, N_MELS)
        frames = 1 + (samples.shape[0] - N_FFT) // HOP
        self.pending = samples[frames * HOP:]
        return self.features(samples[: (frames - 1) * HOP + N_FFT])


def utterance_features(features: Features, path: Path):
    """Whole-utterance features (speech and TAIL), read through the same `StreamReader` path."""
    return features(ember.cat(list(read_chunks(path, -1))))


def batches(examples, size, rng, pad_frame):
    """Shuffled batches (features padded with the silence frame, lengths, transcripts)."""
    order = list(range(len(examples)))
    rng.shuffle(order)
    for start in range(0, len(order), size):
        chosen = [examples[i] for i in order[start:start + size]]
        width = max(f.shape[0] for f, _ in chosen)
        features = ember.stack([ember.cat([f, pad_frame.expand(width - f.shape[0], N_MELS)]) for f, _ in chosen])
        lengths = ember.tensor([f.shape[0] for f, _ in chosen], dtype=ember.int32)
        yield features, lengths, [t for _, t in chosen]


def tiny_rnnt():
    return emformer_rnnt_model(
        input_dim=N_MELS, encoding_dim=96, num_symbols=len(WORDS) + 1, segment_length=SEGMENT,
        right_context_length=RIGHT_CONTEXT, time_reduction_input_dim=32, time_reduction_stride=4,
        transformer_num_heads=4, transformer_ffn_dim=192, transformer_num_layers=3, transformer_dropout=DROPOUT,
        transformer_activation="gelu", transformer_left_context_length=30, transformer_max_memory_size=0,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True,
        symbol_embedding_dim=48, num_lstm_layers=1, lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-3,
        lstm_dropout=0.0)


def schedule(optimizer, peak: float, total_steps: int, warmup: int):
    """Linear warm-up to `peak`, then cosine decay to zero (transformers from scratch need both)."""
    def set_lr(step: int):
        if step < warmup:
            lr = peak * (step + 1) / warmup
        else:
            lr = 0.5 * peak * (1 + math.cos(math.pi * (step - warmup) / max(1, total_steps - warmup)))
        for group in optimizer.param_groups:
            group["lr"] = lr
    return set_lr


def train_rnnt(examples, epochs, rng, pad_frame, batch_size=8, lr=2e-3):
    model = tiny_rnnt()
    optimizer = ember.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * math.ceil(len(examples) / batch_size)
    set_lr, step = schedule(optimizer, lr, steps, max(1, steps // 10)), 0
    for epoch in range(epochs):
        model.train()
        start, total, n = time.perf_counter(), 0.0, 0
        for features, lengths, labels in batches(examples, batch_size, rng, pad_frame):
            tokens = [[WORDS.index(w) + 1 for w in words] for words in labels]
            target_lengths = ember.tensor([len(t) for t in tokens], dtype=ember.int32)
            width = int(target_lengths.max())
            targets = ember.tensor([t + [BLANK] * (width - len(t)) for t in tokens], dtype=ember.int32)
            # The predictor sees blank then the targets; the loss scores the targets.
            prepended = ember.cat([ember.full((len(tokens), 1), BLANK, dtype=ember.int32), targets], dim=1)
            # Each utterance's last RIGHT_CONTEXT frames (silence) are the look-ahead of its last
            # segment, exactly as when it is streamed.
            logits, source_lengths, _, _ = model(features, lengths - RIGHT_CONTEXT, prepended, target_lengths + 1)
            loss = AF.rnnt_loss(logits, targets, source_lengths.to(ember.int32), target_lengths, blank=BLANK)
            set_lr(step)
            step += 1
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


def stream_file(model, features: Features, path: Path, verbose: bool, beam_width: int = 4):
    """Decodes one file chunk by chunk as `StreamReader` delivers it. Feature frames are made as
    their samples arrive; every Emformer call takes SEGMENT new frames plus the RIGHT_CONTEXT
    frames after them, which begin the next call's input. The transcriber state and the beam's
    hypotheses carry over between calls. Returns the words and all the frames the stream made."""
    decoder = RNNTBeamSearch(model, BLANK)
    make_frames = StreamingFeatures(features)
    buffer, made = ember.zeros(0, N_MELS), []
    state = hypotheses = None
    words: list[str] = []
    with ember.no_grad():
        for chunk in read_chunks(path, SEGMENT * HOP):
            new = make_frames(chunk)
            made.append(new)
            buffer = ember.cat([buffer, new])
            while buffer.shape[0] >= SEGMENT + RIGHT_CONTEXT:
                window = buffer[: SEGMENT + RIGHT_CONTEXT]
                hypotheses, state = decoder.infer(window, ember.tensor([window.shape[0]]), beam_width=beam_width,
                                                  state=state, hypothesis=hypotheses)
                buffer = buffer[SEGMENT:]
                words = [WORDS[t - 1] for t in hypotheses[0][0] if t != BLANK]
                if verbose:
                    print(f"    partial: {' '.join(words)}")
    return words, ember.cat(made)


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


def write_bigram_arpa(sentences: list[list[str]], path: Path, discount: float = 0.5, unk_mass: float = 0.01) -> None:
    """A bigram model in ARPA format (log10 probabilities), interpolated absolute discounting:
    p(b | a) = (c(a b) - D) / c(a) + bo(a) p(b), with bo(a) = D * (distinct successors of a) / c(a),
    the mass discounting freed. Unseen pairs back off to bo(a) p(b), so every context's
    distribution sums to 1. Unigrams are maximum likelihood, `unk_mass` kept for <unk>."""
    unigrams, bigrams = collections.Counter(), collections.Counter()
    for words in sentences:
        padded = ["<s>", *words, "</s>"]
        unigrams.update(padded[1:])  # <s> is never predicted
        bigrams.update(zip(padded, padded[1:], strict=False))
    vocabulary = ["<unk>", "<s>", *sorted(set(unigrams))]
    total = sum(unigrams.values())
    p1 = {w: (1 - unk_mass) * c / total for w, c in unigrams.items()}
    p1["<unk>"] = unk_mass
    following = collections.defaultdict(dict)
    for (a, b), c in bigrams.items():
        following[a][b] = c
    p2, backoff = {}, {}
    for a, nexts in following.items():
        count = sum(nexts.values())
        backoff[a] = discount * len(nexts) / count
        for b, c in nexts.items():
            p2[(a, b)] = (c - discount) / count + backoff[a] * p1[b]
    lines = ["\\data\\", f"ngram 1={len(vocabulary)}", f"ngram 2={len(bigrams)}", "", "\\1-grams:"]
    for w in vocabulary:
        logp = -99.0 if w == "<s>" else math.log10(p1[w])  # ARPA's convention for <s>
        bow = f"\t{math.log10(backoff[w]):.7f}" if w in backoff else ""
        lines.append(f"{logp:.7f}\t{w}{bow}")
    lines += ["", "\\2-grams:"]
    lines += [f"{math.log10(p):.7f}\t{a} {b}" for (a, b), p in sorted(p2.items())]
    lines += ["", "\\end\\", ""]
    path.write_text("\n".join(lines))


def ctc_part(train, test, epochs, rng, work: Path, pad_frame, batch_size=16, lr=2e-3):
    letters = sorted({c for w in WORDS for c in w})
    tokens = ["-", "|", *letters]  # blank, word boundary, letters
    index = {t: i for i, t in enumerate(tokens)}
    model = LetterCTC(len(tokens))
    optimizer = ember.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * math.ceil(len(train) / batch_size)
    set_lr, step = schedule(optimizer, lr, steps, max(1, steps // 10)), 0
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    for epoch in range(epochs):
        model.train()
        start, total, n = time.perf_counter(), 0.0, 0
        for features, lengths, labels in batches(train, batch_size, rng, pad_frame):
            # Every word ends with the boundary token, as the lexicon spells it.
            targets = [[index[c] for c in "".join(w + "|" for w in words)] for words in labels]
            log_probs, out_lengths = model(features, lengths)
            flat = ember.tensor([t for seq in targets for t in seq], dtype=ember.int64)
            loss = ctc(log_probs.transpose(0, 1), flat, out_lengths.to(ember.int64),
                       ember.tensor([len(t) for t in targets], dtype=ember.int64))
            set_lr(step)
            step += 1
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            total += float(loss) * len(targets)
            n += len(targets)
        print(f"CTC epoch {epoch + 1}: loss {total / n:.3f} ({time.perf_counter() - start:.1f} s)")
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
            best = log_probs[0, : int(lengths[0])].argmax(-1).tolist()
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
    parser.add_argument("--epochs", type=int, default=15, help="RNN-T training epochs")
    parser.add_argument("--ctc-epochs", type=int, default=10)
    parser.add_argument("--show", type=int, default=3, help="held-out files whose partial transcripts print")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if shutil.which("espeak-ng") is None:
        raise SystemExit("this example synthesizes its speech with espeak-ng: apt-get install espeak-ng")
    started = time.perf_counter()
    ember.manual_seed(args.seed)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "train").mkdir()
        (work / "test").mkdir()
        # Held out: other voices, and speeds at the edges of and beyond the training range.
        train_files = synthesize(work / "train", args.train, TRAIN_VOICES, (130, 190), rng)
        test_files = synthesize(work / "test", args.test, TEST_VOICES, (120, 200), rng)
        features = Features()
        with ember.no_grad():
            waves = [ember.cat(list(read_chunks(p, -1))) for p, _ in train_files]
            stacked = ember.cat([features(w) for w in waves])
            features.mean.copy_(stacked.mean(0))
            features.std.copy_(stacked.std(0) + 1e-5)
            train = [(features(w), words) for w, (_, words) in zip(waves, train_files, strict=True)]
            test = [(utterance_features(features, p), words) for p, words in test_files]
            pad_frame = features(ember.zeros(N_FFT))  # the frame of silence, (1, N_MELS)
        print(f"synthesized {len(train)} training and {len(test)} held-out utterances with espeak-ng "
              f"({time.perf_counter() - started:.1f} s)")
        model = train_rnnt(train, args.epochs, rng, pad_frame)
        errors = total = 0
        mismatch = 0.0
        for i, ((path, reference), (whole, _)) in enumerate(zip(test_files, test, strict=True)):
            verbose = i < args.show
            if verbose:
                print(f"  streaming {path.name} (said: {' '.join(reference)})")
            words, streamed = stream_file(model, features, path, verbose)
            # The frames made from the stream are the whole utterance's frames.
            mismatch = max(mismatch, float((streamed - whole).abs().max()))
            errors += word_errors(reference, words)
            total += len(reference)
        rnnt_wer = errors / total
        print(f"streamed features vs whole-utterance features: max abs difference {mismatch:.2e}")
        print(f"Emformer RNN-T, streamed: word error rate {rnnt_wer:.3f} on {len(test_files)} held-out utterances")
        greedy_wer, beam_wer = ctc_part(train, test, args.ctc_epochs, rng, work, pad_frame)
    print(f"total {time.perf_counter() - started:.0f} s")
    return {"rnnt_streaming_wer": rnnt_wer, "ctc_greedy_wer": greedy_wer, "ctc_beam_wer": beam_wer,
            "feature_mismatch": mismatch}


if __name__ == "__main__":
    main()
