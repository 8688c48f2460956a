"""emberaudio beside its peers, in one process, same inputs, one thread each: decoding one minute
of MP3 and of FLAC to float32 samples beside PyAV (FFmpeg's libraries bound for Python), and
MelSpectrogram on one minute of 16 kHz speech-band audio beside the same computation in
PyTorch 2.13 (torch.stft, power, mel filterbank matmul: what TorchAudio's MelSpectrogram runs;
TorchAudio itself does not install beside that PyTorch build).

    python bench_audio.py [--only mp3,flac,mel]

Ratios are Ember time / peer time (lower is better; 1.00 is parity): the median of
per-repetition ratios of interleaved runs. The media are made by the ffmpeg CLI first.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import ember
import emberaudio
from emberaudio import transforms

try:
    import av
except ImportError:
    av = None
try:
    import torch
except ImportError:
    torch = None


def _per_call(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def side_by_side(ours, theirs, reps=5, seconds=0.5):
    """(ours s/call, theirs s/call, median ratio) over interleaved repetitions."""
    ours(), theirs()
    n_ours = max(1, int(seconds / _per_call(ours, 1)))
    n_theirs = max(1, int(seconds / _per_call(theirs, 1)))
    times = [(_per_call(ours, n_ours), _per_call(theirs, n_theirs)) for _ in range(reps)]
    return (statistics.median(a for a, _ in times), statistics.median(b for _, b in times),
            statistics.median(a / b for a, b in times))


def row(name, peer, ours, theirs):
    a, b, ratio = side_by_side(ours, theirs)
    print(f"{name:46s} {a * 1e3:9.2f} ms {b * 1e3:9.2f} ms  {ratio:6.2f}  ({peer})")


def skip(name, why):
    print(f"{name:46s} {'-':>12s} {'-':>12s}  {'-':>6s}  ({why})")


def make_media(directory: Path) -> dict[str, Path]:
    """One minute of 44.1 kHz stereo music-like audio (tones and noise) as MP3 and FLAC."""
    source = "sine=frequency=440:sample_rate=44100:duration=60,aformat=channel_layouts=stereo"
    made = {}
    for suffix, codec in (("mp3", ["-c:a", "libmp3lame", "-b:a", "192k"]), ("flac", ["-c:a", "flac"])):
        path = directory / f"minute.{suffix}"
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source, "-f", "lavfi", "-i",
                        "anoisesrc=color=pink:sample_rate=44100:duration=60:amplitude=0.2",
                        "-filter_complex", "[0][1]amix=inputs=2", *codec, str(path)], check=True)
        made[suffix] = path
    return made


def pyav_decode(path: Path) -> np.ndarray:
    """Every sample of the first audio stream as float32 (channels, frames), as load() returns."""
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        stream.thread_type = "NONE"
        chunks = []
        for frame in container.decode(stream):
            samples = frame.to_ndarray()
            if samples.dtype == np.int16:
                samples = samples.astype(np.float32) / 32768.0
            elif samples.dtype == np.int32:
                samples = samples.astype(np.float32) / 2147483648.0
            if not frame.format.is_planar:
                samples = samples.reshape(-1, stream.channels).T
            chunks.append(samples)
        return np.concatenate(chunks, axis=1)


def bench_decode(media, only):
    if av is None:
        skip("decode mp3/flac", "PyAV (av) is not installed")
        return
    for suffix in ("mp3", "flac"):
        if suffix in only:
            path = media[suffix]
            ours, _ = emberaudio.load(str(path))
            theirs = pyav_decode(path)
            assert abs(ours.shape[1] - theirs.shape[1]) <= 2 * 1152, (ours.shape, theirs.shape)
            row(f"load 60 s {suffix} 44.1 kHz stereo", "PyAV", lambda p=path: emberaudio.load(str(p)),
                lambda p=path: pyav_decode(p))


def bench_mel():
    if torch is None:
        skip("MelSpectrogram", "PyTorch is not installed")
        return
    wave = np.random.default_rng(0).standard_normal((1, 16000 * 60)).astype(np.float32)
    mel = transforms.MelSpectrogram(sample_rate=16000, n_fft=400, hop_length=160, n_mels=80)
    fb = torch.from_numpy(mel.mel_scale.fb.numpy())
    window = torch.hann_window(400)
    ours_in, theirs_in = ember.from_numpy(wave), torch.from_numpy(wave)

    def theirs():
        spec = torch.stft(theirs_in, 400, 160, 400, window, center=True, pad_mode="reflect",
                          return_complex=True).abs().pow(2.0)
        return torch.matmul(spec.transpose(-1, -2), fb).transpose(-1, -2)

    ours_out, theirs_out = mel(ours_in).numpy(), theirs().numpy()
    assert np.allclose(ours_out, theirs_out, rtol=1e-3, atol=1e-3 * float(np.abs(theirs_out).max()))
    row("MelSpectrogram 60 s 16 kHz n_fft 400 80 mels", "PyTorch stft+matmul", lambda: mel(ours_in), theirs)


def _words(rng, count):
    letters = "abcdefghijklmnopqrstuvwxyz'"
    words = set()
    while len(words) < count:
        words.add("".join(rng.choice(list(letters[:-1]), size=int(rng.integers(2, 9)))))
    return sorted(words)


def _bigram_arpa(words, rng) -> str:
    """A valid bigram ARPA model over `words` with random probabilities (log10) and back-offs."""
    vocab = ["<s>", "</s>", "<unk>", *words]
    lines = ["\\data\\", f"ngram 1={len(vocab)}", f"ngram 2={len(words) * 5}", "", "\\1-grams:"]
    for w in vocab:
        prob = -99.0 if w == "<s>" else float(np.log10(rng.uniform(1e-5, 1e-3)))
        lines.append(f"{prob:.4f}\t{w}\t{float(np.log10(rng.uniform(0.3, 0.9))):.4f}")
    lines += ["", "\\2-grams:"]
    pairs = set()
    while len(pairs) < len(words) * 5:
        pairs.add((str(rng.choice(["<s>", *words])), str(rng.choice([*words, "</s>"]))))
    lines += [f"{float(np.log10(rng.uniform(1e-3, 1e-1))):.4f}\t{a} {b}" for a, b in sorted(pairs)]
    lines += ["", "\\end\\", ""]
    return "\n".join(lines)


def bench_ctc(directory: Path):
    try:
        from flashlight.lib.text import decoder as fl
        from flashlight.lib.text.decoder.kenlm import KenLM
        from flashlight.lib.text.dictionary import Dictionary
    except ImportError:
        skip("ctc_decoder lexicon + KenLM", "flashlight-text is not installed")
        return
    from emberaudio.models.decoder import ctc_decoder

    rng = np.random.default_rng(0)
    tokens = ["-", "|", *"abcdefghijklmnopqrstuvwxyz'"]
    words = _words(rng, 2000)
    (directory / "lexicon.txt").write_text("".join(f"{w} {' '.join(w)} |\n" for w in words))
    (directory / "lm.arpa").write_text(_bigram_arpa(words, rng))
    frames, batch, beam = 300, 4, 50
    emissions = rng.standard_normal((batch, frames, len(tokens))).astype(np.float32) * 3
    emissions = emissions - np.log(np.exp(emissions).sum(-1, keepdims=True))
    options = dict(beam_size=beam, beam_size_token=len(tokens), beam_threshold=25.0, lm_weight=2.0,
                   word_score=0.0, unk_score=float("-inf"), sil_score=0.0, log_add=False)
    ours = ctc_decoder(str(directory / "lexicon.txt"), tokens, lm=str(directory / "lm.arpa"), **options)
    word_list = [*words, "<unk>"]
    dictionary = Dictionary()
    for w in word_list:
        dictionary.add_entry(w)
    lm = KenLM(str(directory / "lm.arpa"), dictionary)
    trie = fl.Trie(len(tokens), 1)
    start = lm.start(False)
    for i, w in enumerate(words):
        trie.insert([tokens.index(c) for c in w] + [1], i, lm.score(start, i)[1])
    trie.smear(fl.SmearingMode.MAX)
    fl_options = fl.LexiconDecoderOptions(**options, criterion_type=fl.CriterionType.CTC)
    theirs = fl.LexiconDecoder(fl_options, trie, lm, 1, 0, word_list.index("<unk>"), [], False)
    batch_in = ember.from_numpy(emissions)

    def run_theirs():
        return [theirs.decode(e.ctypes.data, frames, len(tokens)) for e in emissions]

    best_ours = [hyps[0].words for hyps in ours(batch_in)]
    best_theirs = [[word_list[w] for w in results[0].words if w >= 0] for results in run_theirs()]
    assert best_ours == best_theirs, (best_ours, best_theirs)
    row(f"ctc_decoder {batch}x{frames} frames, 2000 words, beam {beam}", "flashlight-text",
        lambda: ours(batch_in), run_theirs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="mp3,flac,mel,ctc")
    args, _ = parser.parse_known_args()
    only = set(args.only.split(","))
    ember.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print(f"{'emberaudio benchmark (1 thread)':46s} {'ember':>12s} {'peer':>12s}  {'ratio':>6s}")
    if {"mp3", "flac"} & only:
        if shutil.which("ffmpeg") is None:
            skip("decode mp3/flac", "the ffmpeg CLI that makes the media is not installed")
        else:
            with tempfile.TemporaryDirectory() as tmp:
                bench_decode(make_media(Path(tmp)), only)
    if "mel" in only:
        bench_mel()
    if "ctc" in only:
        with tempfile.TemporaryDirectory() as tmp:
            bench_ctc(Path(tmp))


if __name__ == "__main__":
    main()
