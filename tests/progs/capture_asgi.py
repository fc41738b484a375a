"""capture_asgi.py - a FastAPI app for Debian's uvicorn under ttaudit capture
(tests/e2e/49-capture-uvicorn.sh), shaped like vLLM's API server: uvicorn
writes its own lines to stderr (startup, access log on stdout), and each
GET /step/N logs one merge audit line through a stdlib logger on stdout, as
vLLM's logger does. GET /health logs nothing (the test's readiness probe).

usage: python3 -m uvicorn --app-dir tests/progs capture_asgi:app ...
"""
import logging
import os
import sys

from fastapi import FastAPI

log = logging.getLogger("generator")
if not log.handlers:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(levelname)s %(asctime)s [generator.py:1930] %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False

app = FastAPI()


@app.get("/step/{n}")
def step(n: int):
    log.info('MERGE_AUDIT {"ev":"merge","step":%d,"pid":%d,"host_pos":[22,25],"dev_pos":[23,26]}',
             n, os.getpid())
    return {"step": n}


@app.get("/health")
def health():
    return {}
