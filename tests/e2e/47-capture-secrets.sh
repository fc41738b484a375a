# Nothing secret leaves the process: argv values after options that name a
# secret (--api-key V, --hf-token=V, --db-password V, *-key, *-secret,
# *-token) and URL credentials (scheme://user:pass@host, in an option's
# value or on their own) are "<redacted>" in the start record, listed by
# option name in argv_redacted; under --env '*' the names that hold
# secrets (MY_PASS, PGPASS, GITHUB_PAT, SENTRY_DSN, a DATABASE_URL holding
# a password, ...) are listed in env_redacted without their value, and
# names that merely contain the letters (PATH) are recorded as usual.
. tests/e2e/lib.sh
case "$BUILD" in *asan*) skip "shim is not preloadable into ASan processes";; esac
. tests/progs/capcheck.inc

C="$T/s.cap"
expect_rc 0 env MY_PASS=s3cret-pass PGPASS=s3cret-pg "DATABASE_URL=postgres://app:s3cret-db@db:5432/x" \
	GITHUB_PAT=s3cret-pat SENTRY_DSN=https://s3cret-dsn@o1.ingest.sentry.io/1 HF_TOKEN=s3cret-hf \
	AWS_SECRET_ACCESS_KEY=s3cret-aws TT_METAL_HOME=/opt/tt-metal PATH="$PATH" \
	"$TTAUDIT" capture -o "$C" --env '*' -- "$PYTHON" -c 'print("hello")' serve M \
	--api-key s3cret-key1 --hf-token=s3cret-key2 --db-password s3cret-key3 --aws-secret s3cret-key4 \
	--tokenizer tok --redis=redis://:s3cret-key5@cache:6379/0 https://u:s3cret-key6@example.com/x \
	--max-num-batched-tokens 8192 --port 8000
clacks "$C" s3cret
start() { jq -c "select(.src==\"start\") | $1" "$C"; }
ceq "$(start .argv)" '["/usr/bin/python3","-c","print(\"hello\")","serve","M","--api-key","<redacted>","--hf-token=<redacted>","--db-password","<redacted>","--aws-secret","<redacted>","--tokenizer","tok","--redis=redis://<redacted>@cache:6379/0","https://<redacted>@example.com/x","--max-num-batched-tokens","8192","--port","8000"]' "argv"
ceq "$(start .argv_redacted)" '["--api-key","--hf-token","--db-password","--aws-secret","--redis","argv[15]"]' "argv_redacted"
for name in MY_PASS PGPASS DATABASE_URL GITHUB_PAT SENTRY_DSN HF_TOKEN AWS_SECRET_ACCESS_KEY; do
	ceq "$(start ".env_redacted | index(\"$name\") != null")" true "env_redacted has $name"
	ceq "$(start ".env | has(\"$name\")")" false "env lacks $name"
done
ceq "$(start '.env.PATH')" "\"$PATH\"" "PATH recorded"
ceq "$(start '.env.TT_METAL_HOME')" '"/opt/tt-metal"' "TT_METAL_HOME recorded"
ceq "$(stat -c %a "$C")" 600 "capture file mode"
check_done
echo ok
