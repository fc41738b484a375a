"""ttaudit_emit - merge audits from inside the generator, for `ttaudit replay`.

Two ways in (docs/instrumenting.md):

  - by hand: `from ttaudit_emit import MergeAudit, Stamp` and call the
    emitter from the generator's own code (ttaudit_emit.emit);
  - without editing anything: `python3 -m ttaudit_emit.run -- vllm serve ...`
    or the sitecustomize in ttaudit_emit/boot on PYTHONPATH wraps the
    generator's functions by module and name when they are imported, in
    every process (ttaudit_emit.kit, names in ttaudit_emit.names).

Standard library only, Python 3.9 or later.
"""

from .emit import ENV_VAR, MergeAudit, Stamp, enabled, sink_kind

__all__ = ["MergeAudit", "Stamp", "ENV_VAR", "enabled", "sink_kind"]
