# The projection of `ttaudit replay --json` that fixtures' .expected.json files pin.
{
  rules: (.rules | map_values({merges, taken, substitutions, unverified, prevented, forgone,
                               fired, skipped, shape_fallback, rejected_unverified, evaluable})),
  garbage: (.garbage | {count, float32_like}),
  fingerprint: (.fingerprint | {consistent, verdict}),
  malformed,
  capture_lost: .input.capture_lost
}
