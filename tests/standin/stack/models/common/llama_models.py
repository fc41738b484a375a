"""Stand-in for tenstorrent/tt-metal models/common/llama_models (tests
only): the names models/tt_transformers/tt/generator.py imports from it at
50868c00281366b286bdf5ccb7b50c4b7b56cef1. Only the chat and vision paths,
which the tests never take, use them."""

from dataclasses import dataclass


class StopReason:
    end_of_turn = "end_of_turn"
    end_of_message = "end_of_message"
    out_of_tokens = "out_of_tokens"


@dataclass
class TokenResult:
    token: int
    text: str


@dataclass
class CompletionMessage:
    content: str


def create_vision_mask(tokens, image_token_id):
    return None


def encode_content(content, images, image_token):
    return content


def extract_images_from_messages(messages):
    return []


def sample_top_p(probs, p):
    raise NotImplementedError("the stand-in samples on its device only")
