"""CTC decoders in the shape of ``torchaudio.models.decoder``: the beam-search ``ctc_decoder``
(native, lexicon-constrained or lexicon-free, with no LM, an ARPA/KenLM model or a Python
``CTCDecoderLM``) and ``ctc_greedy_decoder``."""

from ._ctc_decoder import (
    CTCDecoder,
    CTCDecoderLM,
    CTCDecoderLMState,
    CTCHypothesis,
    ctc_decoder,
    ctc_greedy_decoder,
)

__all__ = ["CTCDecoder", "CTCDecoderLM", "CTCDecoderLMState", "CTCHypothesis", "ctc_decoder",
           "ctc_greedy_decoder"]
