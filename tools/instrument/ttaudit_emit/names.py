"""ttaudit_emit.names - what the kit wraps and reads, by module and name: one table.

Upstream renames things, so every name the kit depends on is here and only
here, and a small JSON file (TTAUDIT_EMIT_CONFIG) can override any of them
without touching the kit (docs/instrumenting.md, "The name table"). Each
default was read in upstream source; docs/instrumenting.md names the file
and commit of each.

A target is one function the kit wraps:

  role       what the wrapper does with it (the keys of ROLES below)
  module     the module it lives in, wrapped when that module is imported
  name       its qualified name inside the module ("Class.method" or "function")
  args       the wrapper's value -> the real parameter's name, or a list of
             names tried in order (revisions name a parameter differently)
  signature  a function of the same module whose signature binds the
             arguments when the target takes only (*args, **kwargs)
             (tt-metal's prefill_forward_text wraps _prefill_forward_text_impl)
  returns    for the helper keep: the wrapper's value -> the index in the
             returned tuple
  optional   true: not reported when its module is never imported (another
             model's code, e.g. Gemma4's)

`attrs` names the generator attributes the wrappers read, `inline` the local
names of the inline keep (ttaudit_emit.inline), and `trigger` the modules
whose import marks the engine process (the banners are printed then).
"""

import copy
import json

from .inline import DEFAULT_NAMES as INLINE_NAMES

# What each role reads: the wrapper's value names, with their default
# parameter names. A value whose parameter the signature lacks is reported.
ROLES = {
    # vLLM's engine-core entry: learns the data-parallel rank of the process
    "engine": {"dp_rank": "dp_rank"},
    # the TT plugin's decode submission: the request ids of the batch rows
    "batch": {"model_input": "model_input"},
    # the TT plugin's prefill submission: the request ids of the prefilled rows
    "prefill_batch": {"model_input": "model_input", "batch_size_per_dp": "batch_size_per_dp"},
    # the generator's prefill: the step clock and the prefill slot starts
    "prefill": {"tokens": "tokens", "empty_slots": "empty_slots"},
    # the generator's decode: the step clock, the inline keep (observed in its
    # frame), the capability gate
    "decode": {"tokens": "tokens", "start_pos": "start_pos", "enable_trace": "enable_trace",
               "sampling_params": "sampling_params",
               "defer_device_sampling": "defer_device_sampling",
               "reset_batch": "reset_batch", "slot_remap": "slot_remap"},
    # the trace replay / restage of one decode: when the device buffers were written
    "trace": {"tokens": "tokens", "current_pos": "current_pos",
              "on_device_sampling": ["on_device_sampling", "sampling_on_device"],
              "restage": ["reload_inputs", "reset_batch"]},
    # the host-to-device copy: a copy into a trace's inputs is a restage
    "restage": {"host_tensors": "host_tensors", "device_tensors": "device_tensors"},
    # a keep helper: compares, applies use_dev, returns tokens, positions, source
    "keep": {"host_tok": "host_toks", "host_pos": "host_pos", "dev_tok": "dev_toks_full",
             "dev_pos": "dev_pos_full", "slot_remap": "slot_remap_local",
             "prefilled": "prefilled_local"},
}

# Values a role cannot do without: a target whose signature lacks one is not wrapped.
REQUIRED = {
    "engine": (), "batch": ("model_input",), "prefill_batch": ("model_input",),
    "prefill": ("tokens",), "decode": ("start_pos",), "trace": ("tokens",),
    "restage": ("host_tensors",), "keep": ("host_pos", "dev_pos"),
}

GENERATOR = "models.tt_transformers.tt.generator"
COMMON = "models.tt_transformers.tt.common"
GEMMA4 = "models.demos.gemma4.tt.generator"
GEMMA4_KEEP = "models.demos.gemma4.tt.async_decode"
GEMMA4_MIXIN = "ChunkedPrefillPageTableGuardMixin"

DEFAULT = {
    "targets": {
        "engine": [{"module": "vllm.v1.engine.core", "name": "EngineCoreProc.run_engine_core"}],
        "batch": [{"module": "vllm_tt_plugin.async_decode",
                   "name": "TTAsyncDecodeController.submit_decode"}],
        "prefill_batch": [{"module": "vllm_tt_plugin.model_runner",
                           "name": "TTModelRunner.submit_prefill"}],
        "prefill": [{"module": GENERATOR, "name": "Generator.prefill_forward_text",
                     "signature": "Generator._prefill_forward_text_impl"}],
        "decode": [{"module": GENERATOR, "name": "Generator.decode_forward"},
                   {"module": GEMMA4, "name": GEMMA4_MIXIN + ".decode_forward",
                    "optional": True}],
        "trace": [{"module": GENERATOR, "name": "Generator._decode_forward_trace_text"},
                  {"module": GEMMA4, "name": GEMMA4_MIXIN + "._decode_forward_trace_text",
                   "optional": True}],
        "restage": [{"module": COMMON, "name": "copy_host_to_device"}],
        "keep": [{"module": GEMMA4_KEEP, "name": "merge_async_ahead_decode_tokens",
                  "returns": {"tok": 0, "pos": 1, "source": 2}, "optional": True}],
    },
    "attrs": {
        "capabilities": "model_capabilities",
        "capability": "supports_async_decode",
        "trace_inputs": "trace_inputs_decode",
        "trace_ids": "trace_ids_decode",
        "prefilled": "_slots_prefilled_since_decode",
        "mode": "mode",
        "mode_decode": "DECODE",
        "data_parallel": "data_parallel",
        "max_model_len": "model_args.0.max_seq_len",
        "batch_width": "model_args.0.max_batch_size",
        "runner": "runner",
        "input_batch": "input_batch",
        "req_ids": "req_ids",
        "num_reqs": "num_reqs",
        "unpadded_batch_size": "unpadded_batch_size",
    },
    "inline": dict(INLINE_NAMES),
    "trigger": [GENERATOR],
}


class ConfigError(ValueError):
    pass


def _is_dotted(v):
    return isinstance(v, str) and v and all(p.isidentifier() for p in v.split("."))


def _entry(role, e, where):
    if not isinstance(e, dict):
        raise ConfigError("%s: a target is a JSON object, got %r" % (where, e))
    unknown = set(e) - {"module", "name", "args", "returns", "signature", "optional"}
    if unknown:
        raise ConfigError("%s: unknown key(s) %s" % (where, ", ".join(sorted(unknown))))
    for k in ("module", "name"):
        if not _is_dotted(e.get(k)):
            raise ConfigError("%s: %s must be a dotted Python name, got %r" % (where, k, e.get(k)))
    args = copy.deepcopy(ROLES[role])
    extra = e.get("args", {})
    if not isinstance(extra, dict):
        raise ConfigError("%s: args must be an object" % where)
    for k, v in extra.items():
        if k not in ROLES[role]:
            raise ConfigError("%s: role %s reads no value %r (it reads %s)"
                              % (where, role, k, ", ".join(sorted(ROLES[role]))))
        names = v if isinstance(v, list) else [v]
        if v is not None and (not names or any(not isinstance(n, str) or not n.isidentifier()
                                               for n in names)):
            raise ConfigError("%s: args.%s must be a parameter name, a list of them, or null"
                              % (where, k))
        args[k] = v
    out = {"role": role, "module": e["module"], "name": e["name"], "args": args,
           "optional": bool(e.get("optional", False))}
    if "signature" in e:
        if not _is_dotted(e["signature"]):
            raise ConfigError("%s: signature must be a dotted Python name" % where)
        out["signature"] = e["signature"]
    if role == "keep":
        ret = {"tok": 0, "pos": 1, "source": 2}
        r = e.get("returns", {})
        if not isinstance(r, dict) or any(k not in ret for k in r) or \
                any(v is not None and (type(v) is not int or v < 0) for v in r.values()):
            raise ConfigError("%s: returns maps tok, pos, source to tuple indices (or null)"
                              % where)
        ret.update(r)
        out["returns"] = ret
    elif "returns" in e:
        raise ConfigError("%s: only the keep takes 'returns'" % where)
    return out


def _names_map(cfg, key, where_known):
    base = dict(DEFAULT[key])
    a = cfg.get(key, {})
    if not isinstance(a, dict) or any(k not in base or not isinstance(v, str) or not v
                                      for k, v in a.items()):
        raise ConfigError("%s maps known names (%s) to strings" % (key, ", ".join(sorted(base))))
    base.update(a)
    return base


def build(config=None):
    """The table as a dict {targets: [entry...], attrs: {...}, inline: {...},
    trigger: [...]}, from DEFAULT with `config` (a parsed TTAUDIT_EMIT_CONFIG)
    over it: a role given in config replaces that role's default targets (an
    empty list switches the role off); attrs and inline are merged; trigger
    replaces. Raises ConfigError naming what is wrong."""
    cfg = config if config is not None else {}
    if not isinstance(cfg, dict):
        raise ConfigError("the config is a JSON object")
    unknown = set(cfg) - {"targets", "attrs", "inline", "trigger"}
    if unknown:
        raise ConfigError("unknown key(s) %s (want targets, attrs, inline, trigger)"
                          % ", ".join(sorted(unknown)))
    targets = copy.deepcopy(DEFAULT["targets"])
    over = cfg.get("targets", {})
    if not isinstance(over, dict):
        raise ConfigError("targets maps a role to a target or a list of them")
    for role, v in over.items():
        if role not in ROLES:
            raise ConfigError("targets: unknown role %r (roles: %s)"
                              % (role, ", ".join(sorted(ROLES))))
        targets[role] = v if isinstance(v, list) else [v]
    entries = []
    for role in ROLES:
        for i, e in enumerate(targets.get(role, [])):
            entries.append(_entry(role, e, "targets.%s[%d]" % (role, i)))
    attrs = _names_map(cfg, "attrs", None)
    inline = _names_map(cfg, "inline", None)
    trig = cfg.get("trigger", DEFAULT["trigger"])
    if not isinstance(trig, list) or not all(isinstance(t, str) and t for t in trig):
        raise ConfigError("trigger is a list of module names")
    return {"targets": entries, "attrs": attrs, "inline": inline, "trigger": list(trig)}


def load(path):
    """build() over the JSON file at `path`; ConfigError or OSError on trouble."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        cfg = json.loads(text)
    except ValueError as e:
        raise ConfigError("%s: not JSON: %s" % (path, e)) from None
    try:
        return build(cfg)
    except ConfigError as e:
        raise ConfigError("%s: %s" % (path, e)) from None
