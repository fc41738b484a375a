# The projection of `ttaudit replay --json` that fixtures' .expected.json files pin,
# and that scripts/replay_ref.py prints.
{
  rules: (.rules | map_values({merges, taken, substitutions, unverified, prevented, forgone,
                               fired, skipped, shape_fallback, rejected_unverified, evaluable})),
  garbage: (.garbage | {count, float32_like}),
  fingerprint: (.fingerprint | {consistent, verdict, never_evaluated}),
  malformed,
  capture_lost: .input.capture_lost,
  capture_uncertain: .input.capture_uncertain,
  uncertain_events: .input.uncertain_events,
  gate: (.gate | {refused, forced}),
  duplicates: (.input.duplicates | length),
  truncated: (.input.truncated | length)
}
