"""The stand-in server (tests only): an API-server process on 127.0.0.1
that starts its engine core as a multiprocessing spawn child, as vLLM does,
named as vLLM names it (STANDIN_VLLM=main: "EngineCore" without data
parallelism; dev, the default: "EngineCore_DP0"), and serves

  GET  /health            200 once the engine has run its scenario, else 503
  GET  /scenario          the scenario's outputs {request id: [token ids]}
  POST /v1/completions    {"prompt": "words ...", "max_tokens": N}
                          -> {"id": ..., "choices": [{"text", "token_ids"}]}

usage: standin_serve.py --port-file FILE [--scenario FILE] [--max-model-len N]
Stops on SIGTERM or SIGINT (the engine first), exit 0. Everything the kit
sees comes from the stand-in's modules; this file imports nothing of the
kit."""

import argparse
import http.server
import json
import multiprocessing
import os
import signal
import sys
import threading
import zlib

import paths  # noqa: E402  (beside this file: sys.path[0])

for _root in reversed(paths.roots()):
    if _root not in sys.path:
        sys.path.insert(0, _root)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--scenario")
    ap.add_argument("--max-model-len", type=int, default=4096)
    a = ap.parse_args()

    from vllm.v1.engine.core import EngineCoreProc
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    cfg = {"max_num_seqs": 4, "max_model_len": a.max_model_len,
           "scenario": os.path.abspath(a.scenario) if a.scenario else None}
    name = "EngineCore" if os.environ.get("STANDIN_VLLM") == "main" else "EngineCore_DP0"
    proc = ctx.Process(target=EngineCoreProc.run_engine_core, name=name,
                       kwargs={"vllm_config": cfg, "conn": child, "dp_rank": 0,
                               "local_dp_rank": 0})
    proc.start()
    state = {"ready": False, "outputs": {}, "n": 0}
    lock = threading.Lock()

    def wait_ready():
        msg = parent.recv()
        with lock:
            state["ready"], state["outputs"] = True, msg[1]
    threading.Thread(target=wait_ready, daemon=True).start()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            with lock:
                ready = state["ready"]
            if self.path == "/health":
                self.reply(200 if ready else 503, {"ready": ready})
            elif self.path == "/scenario" and ready:
                self.reply(200, state["outputs"])
            else:
                self.reply(404, {"error": "not found"})

        def do_POST(self):
            if self.path != "/v1/completions":
                self.reply(404, {"error": "not found"})
                return
            try:
                n = int(self.headers.get("Content-Length", "0"))
                req = json.loads(self.rfile.read(n))
                words = str(req["prompt"]).split()
                max_tokens = int(req.get("max_tokens", 8))
            except (ValueError, KeyError) as e:
                self.reply(400, {"error": {"message": str(e)}})
                return
            with lock:
                if not state["ready"]:
                    self.reply(503, {"error": {"message": "loading"}})
                    return
                state["n"] += 1
                external = self.headers.get("X-Request-Id") or "cmpl-%d" % state["n"]
                prompt = [zlib.crc32(w.encode()) % 50021 for w in words] or [1]
                parent.send(("complete", external, prompt, max_tokens))
                msg = parent.recv()
            toks = msg[1]
            self.reply(200, {"id": external, "object": "text_completion",
                             "choices": [{"index": 0, "text": " ".join(map(str, toks)),
                                          "token_ids": toks, "finish_reason": "length"}]})

    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)

    def stop(signum, frame):
        threading.Thread(target=srv.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    srv.serve_forever()
    srv.server_close()
    with lock:
        try:
            parent.send(("stop",))
        except OSError:
            pass
    proc.join(10)
    if proc.is_alive():
        proc.terminate()
        proc.join(5)
    return 0 if proc.exitcode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
