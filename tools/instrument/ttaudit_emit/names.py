"""ttaudit_emit.names - what the kit wraps, by module and name: one table.

Upstream renames things, so every name the kit depends on is here and only
here, and a small JSON file (TTAUDIT_EMIT_CONFIG) can override any of them
without touching the kit (docs/instrumenting.md, "The name table").

A target is one function the kit wraps:

  role      what the wrapper does with it (the keys of ROLES below)
  module    the module it lives in, wrapped when that module is imported
  name      its qualified name inside the module ("Class.method" or "function")
  args      the wrapper's value -> the real parameter's name
  returns   for the keep: the wrapper's value -> the index in the returned tuple

`attrs` names the generator attributes the wrappers read, and `trigger` the
modules whose import marks the engine process (the banners are printed then).
Where a name could not be checked against upstream source, NOTES says so.
"""

import copy
import json

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
    # the generator's decode: the step clock, why the keep runs, the capability gate
    "decode": {"tokens": "tokens", "start_pos": "start_pos", "enable_trace": "enable_trace",
               "sampling_params": "sampling_params",
               "defer_device_sampling": "defer_device_sampling",
               "reset_batch": "reset_batch", "slot_remap": "slot_remap"},
    # the trace replay / restage of one decode: when the device buffers were written
    "trace": {"tokens": "tokens", "current_pos": "current_pos",
              "on_device_sampling": "on_device_sampling", "reset_batch": "reset_batch"},
    # the keep's helper: compares, applies use_dev, returns tokens, positions, source
    "keep": {"host_tok": "host_toks", "host_pos": "host_pos", "dev_tok": "dev_toks_full",
             "dev_pos": "dev_pos_full", "slot_remap": "slot_remap_local",
             "prefilled": "prefilled_local"},
}

# Values a role cannot do without: a target whose signature lacks one is not wrapped.
REQUIRED = {
    "engine": (), "batch": ("model_input",), "prefill_batch": ("model_input",),
    "prefill": ("tokens",), "decode": ("start_pos",), "trace": ("tokens",),
    "keep": ("host_pos", "dev_pos"),
}

GENERATOR = "models.tt_transformers.tt.generator"

DEFAULT = {
    "targets": {
        "engine": [{"module": "vllm.v1.engine.core", "name": "EngineCoreProc.run_engine_core"}],
        "batch": [{"module": "vllm_tt_plugin.async_decode",
                   "name": "TTAsyncDecodeController.submit_decode"}],
        "prefill_batch": [{"module": "vllm_tt_plugin.model_runner",
                           "name": "TTModelRunner.submit_prefill"}],
        "prefill": [{"module": GENERATOR, "name": "Generator.prefill_forward_text"}],
        "decode": [{"module": GENERATOR, "name": "Generator.decode_forward"}],
        "trace": [{"module": GENERATOR, "name": "Generator._decode_forward_trace_text"}],
        "keep": [{"module": GENERATOR, "name": "merge_async_ahead_decode_tokens",
                  "returns": {"tok": 0, "pos": 1, "source": 2}}],
    },
    "attrs": {
        "capabilities": "model_capabilities",
        "capability": "supports_async_decode",
        "force_env": "TT_FORCE_ASYNC_AHEAD_KEEP",
        "trace_inputs": "trace_inputs_decode",
        "prefilled": "_slots_prefilled_since_decode",
        "mode": "mode",
        "mode_decode": "DECODE",
        "data_parallel": "data_parallel",
        "max_model_len": "model_args.0.max_seq_len",
        "runner": "runner",
        "input_batch": "input_batch",
        "req_ids": "req_ids",
        "num_reqs": "num_reqs",
        "unpadded_batch_size": "unpadded_batch_size",
    },
    "trigger": [GENERATOR],
}

# Names not confirmed against an upstream copy (the stored tt-metal copies
# predate PR #47359); docs/instrumenting.md lists them with the evidence.
NOTES = {
    ("keep", GENERATOR, "merge_async_ahead_decode_tokens"):
        "taken from tt-metal's gemma4 helper; docs/instrumenting.md",
}


class ConfigError(ValueError):
    pass


def _entry(role, e, where):
    if not isinstance(e, dict):
        raise ConfigError("%s: a target is a JSON object, got %r" % (where, e))
    unknown = set(e) - {"module", "name", "args", "returns"}
    if unknown:
        raise ConfigError("%s: unknown key(s) %s" % (where, ", ".join(sorted(unknown))))
    for k in ("module", "name"):
        v = e.get(k)
        if not isinstance(v, str) or not v or any(not p.isidentifier() for p in v.split(".")):
            raise ConfigError("%s: %s must be a dotted Python name, got %r" % (where, k, v))
    args = dict(ROLES[role])
    extra = e.get("args", {})
    if not isinstance(extra, dict):
        raise ConfigError("%s: args must be an object" % where)
    for k, v in extra.items():
        if k not in ROLES[role]:
            raise ConfigError("%s: role %s reads no value %r (it reads %s)"
                              % (where, role, k, ", ".join(sorted(ROLES[role]))))
        if v is not None and (not isinstance(v, str) or not v.isidentifier()):
            raise ConfigError("%s: args.%s must be a parameter name or null" % (where, k))
        args[k] = v
    out = {"role": role, "module": e["module"], "name": e["name"], "args": args}
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


def build(config=None):
    """The table as a dict {targets: [entry...], attrs: {...}, trigger: [...]},
    from DEFAULT with `config` (a parsed TTAUDIT_EMIT_CONFIG) over it: a role
    given in config replaces that role's default targets (an empty list
    switches the role off); attrs are merged; trigger replaces. Raises
    ConfigError naming what is wrong."""
    cfg = config if config is not None else {}
    if not isinstance(cfg, dict):
        raise ConfigError("the config is a JSON object")
    unknown = set(cfg) - {"targets", "attrs", "trigger"}
    if unknown:
        raise ConfigError("unknown key(s) %s (want targets, attrs, trigger)"
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
    attrs = dict(DEFAULT["attrs"])
    a = cfg.get("attrs", {})
    if not isinstance(a, dict) or any(k not in attrs or not isinstance(v, str) or not v
                                      for k, v in a.items()):
        raise ConfigError("attrs maps known attribute names (%s) to strings"
                          % ", ".join(sorted(attrs)))
    attrs.update(a)
    trig = cfg.get("trigger", DEFAULT["trigger"])
    if not isinstance(trig, list) or not all(isinstance(t, str) and t for t in trig):
        raise ConfigError("trigger is a list of module names")
    return {"targets": entries, "attrs": attrs, "trigger": list(trig)}


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
