"""Stand-in for tenstorrent/tt-metal models/common/sampling/tt_log_probs.py
(tests only): LogProbsResult and reformat_logprobs, as
models/tt_transformers/tt/generator.py imports and calls them at
50868c00281366b286bdf5ccb7b50c4b7b56cef1. The stand-in never asks for log
probabilities (on TT, logprobs force the synchronous path)."""


class LogProbsResult:
    topk_logprobs = None
    topk_indices = None
    topk_logprobs_host = None
    topk_indices_host = None

    def extract_user(self, idx):
        return None


def reformat_logprobs(log_probs, batch_size):
    return log_probs
