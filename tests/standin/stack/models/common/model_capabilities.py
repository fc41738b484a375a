"""Stand-in for tenstorrent/tt-metal models/common/model_capabilities.py
(tests only), as stored at commit 21a4db487782a45993c21ea6dfab3653ac72f060:
the mixin the Generator derives from at 50868c00. The fact it carries: a
subclass's `model_capabilities` dict replaces the inherited one, so an
absent key means "not supported" (tt-metal PR #54565)."""

FALLBACK_MAX_TOKENS_ALL_USERS = 131_072


class ModelCapabilitiesMixin:
    @classmethod
    def get_max_tokens_all_users(cls, **kwargs) -> int:
        return FALLBACK_MAX_TOKENS_ALL_USERS
