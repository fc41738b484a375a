"""A stand-in for what can sit in front of a model server: a gateway that answers
/health and lists models before the model can generate. Modes:
  gateway400  /health 200, /metrics valid, /v1/models lists a model, completions 400
  badmetrics  /health 200, /metrics answers 200 with text that is not Prometheus
usage: gateway-stub.py MODE PORTFILE  (binds 127.0.0.1 on a free port, writes it)"""
import http.server
import json
import sys

MODE = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, code, body, ctype="application/json"):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self.reply(200, "")
        elif self.path == "/metrics":
            if MODE == "badmetrics":
                self.reply(200, "<html><body>upstream connect error</body></html>\n", "text/html")
            else:
                self.reply(200, 'vllm:num_requests_running{model_name="m"} 0.0\n', "text/plain")
        elif self.path == "/v1/models":
            self.reply(200, json.dumps({"object": "list", "data": [{"id": "m", "max_model_len": 4096}]}))
        else:
            self.reply(404, json.dumps({"error": "not found"}))

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        self.reply(400, json.dumps({"object": "error", "message": "model is not loaded yet"}))


srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
srv.serve_forever()
