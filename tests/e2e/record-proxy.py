"""A recording proxy for the end-to-end tests: forwards every request to an
upstream server and streams the answer back as it comes, and logs each
request's method, path, X-Request-Id and JSON body (one line per request, in
arrival order) so a test can hold the client to what it sent.
usage: record-proxy.py UPSTREAM_PORT PORTFILE LOG  (binds 127.0.0.1 on a free port)"""
import http.client
import http.server
import json
import sys
import threading

UPSTREAM, PORTFILE, LOG = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lock = threading.Lock()
seq = [0]


class Handler(http.server.BaseHTTPRequestHandler):
    # close-delimited answers: the stream passes through as it arrives
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def forward(self, body):
        with lock:
            seq[0] += 1
            try:
                parsed = json.loads(body) if body else None
            except ValueError:
                parsed = None
            with open(LOG, "a") as f:
                f.write(json.dumps({"seq": seq[0], "method": self.command, "path": self.path,
                                    "xid": self.headers.get("X-Request-Id"), "body": parsed}) + "\n")
        conn = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=600)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(self.command, self.path, body=body, headers=hdrs)
        r = conn.getresponse()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "keep-alive"):
                self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        while True:
            d = r.read1(65536)
            if not d:
                break
            self.wfile.write(d)
            self.wfile.flush()
        conn.close()

    def do_GET(self):
        self.forward(None)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.forward(self.rfile.read(n))


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
