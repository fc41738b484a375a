# ttaudit arm compares a /v1/models field with the spec's value exactly: as
# int64 integers and byte strings, through the one JSON reader. Through a
# double, 2^53 + 1 and 2^53 were the same number and a wrong context length
# was "met". The server is a few lines of Python answering /v1/models.
. tests/e2e/lib.sh
cat >"$T/spec.json" <<'JSON'
{"version": 1, "arms": {
  "exact": {"requires": [{"models": "max_model_len", "equals": 9007199254740993}]},
  "near":  {"requires": [{"models": "max_model_len", "equals": 9007199254740992}]},
  "real":  {"requires": [{"models": "max_model_len", "equals": 9007199254740992.0}]},
  "name":  {"requires": [{"models": "root", "equals": "/m/q\u0000x"}]}
}}
JSON
cat >"$T/srv.py" <<'PY'
import http.server, sys
BODY = b'{"object":"list","data":[{"id":"m","object":"model","root":"/m/q\\u0000y","max_model_len":9007199254740993}]}'
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
"$PYTHON" "$T/srv.py" "$T/port.tmp" &
E2E_PIDS="$E2E_PIDS $!"
n=0
while [ ! -s "$T/port.tmp" ]; do n=$((n + 1)); [ $n -lt 600 ] || fail "server did not start in 30 s"; sleep 0.05; done
URL="http://127.0.0.1:$(cat "$T/port.tmp")"
expect_rc 0 "$TTAUDIT" arm --json --spec "$T/spec.json" --arm exact --url "$URL"
eq "$(jget "$T/out" '.items[0].verdict')" met "the same integer"
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/spec.json" --arm near --url "$URL"
eq "$(jget "$T/out" '.items[0].verdict')" absent "2^53 is not 2^53 + 1"
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/spec.json" --arm real --url "$URL"
eq "$(jget "$T/out" '.items[0].verdict')" absent "a real 2^53 is not the integer 2^53 + 1"
expect_rc 1 "$TTAUDIT" arm --json --spec "$T/spec.json" --arm name --url "$URL"
eq "$(jget "$T/out" '.items[0].verdict')" absent "strings compared with their length, past a NUL"
