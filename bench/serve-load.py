#!/usr/bin/env python3
"""A bounded load on an OpenAI-compatible server, loopback only.

For each client count C (--clients, default 1,4,8) it runs C clients for
--duration seconds (60); each client loops streamed chat (or completion)
requests of fixed max_tokens with varied prompts, and stops starting new
ones when the time is up (those under way finish). It reports per C:
requests answered, errors, aggregate decode tokens/s (completion tokens of
all requests over the wall time), time to first token p50 and p99, and the
server's RSS before and after (VmRSS from /proc/PID/status).

The server is either started here from --server-cmd (a command with {port}
where the port goes: a free loopback port is picked; it must answer GET
/health with 200 within --start-timeout seconds) and stopped with SIGTERM
at the end, or given with --url and --pid. So mhsa-server and llama.cpp's
llama-server can be measured on the same model file side by side
(bench/serve-load.sh).

  serve-load.py --server-cmd 'build/mhsa-server --model M --port {port}
      --parallel 8' --duration 10
"""
import argparse
import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

TOPICS = ["a lighthouse keeper", "the moon", "a lost cat", "an old clock",
          "a dragon who cannot fly", "the sea", "a robot gardener",
          "a mountain village", "a library at night", "a comet",
          "a violin", "winter", "a baker", "a desert road", "a kite",
          "a small boat"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def wait_ready(host, port, proc, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode})")
        try:
            c = http.client.HTTPConnection(host, port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                c.close()
                return
            c.close()
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not answer /health in time")


def one_request(host, port, args, n):
    """One streamed request: (ok, completion tokens, ttft seconds)."""
    prompt = f"Write a short story about {TOPICS[n % len(TOPICS)]}."
    body = {"max_tokens": args.max_tokens, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}
    if args.endpoint == "chat":
        path = "/v1/chat/completions"
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        path = "/v1/completions"
        body["prompt"] = prompt
    t0 = time.time()
    ttft, chunks, usage = None, 0, None
    c = http.client.HTTPConnection(host, port, timeout=300)
    try:
        c.request("POST", path, body=json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            r.read()
            return False, 0, None
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            ev = json.loads(data)
            if "error" in ev:
                return False, 0, None
            if ev.get("usage"):
                usage = ev["usage"].get("completion_tokens")
            for ch in ev.get("choices") or []:
                piece = (ch.get("delta") or {}).get("content") \
                    if args.endpoint == "chat" else ch.get("text")
                if piece:
                    chunks += 1
                    if ttft is None:
                        ttft = time.time() - t0
    except (OSError, ValueError, http.client.HTTPException):
        return False, 0, None
    finally:
        c.close()
    return True, usage if usage is not None else chunks, ttft


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def run_level(host, port, args, clients, pid, seq):
    stats = {"ok": 0, "err": 0, "tokens": 0, "ttft": []}
    lock = threading.Lock()
    end = time.time() + args.duration

    def client(i):
        n = i
        while time.time() < end:
            ok, toks, ttft = one_request(host, port, args, seq[0] + n)
            n += clients
            with lock:
                if ok:
                    stats["ok"] += 1
                    stats["tokens"] += toks
                    if ttft is not None:
                        stats["ttft"].append(ttft)
                else:
                    stats["err"] += 1

    rss0 = rss_mb(pid)
    t0 = time.time()
    threads = [threading.Thread(target=client, args=(i,))
               for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    seq[0] += 1000
    return {"label": args.label, "clients": clients,
            "requests": stats["ok"], "errors": stats["err"],
            "tokens": stats["tokens"],
            "tokens_per_s": stats["tokens"] / wall,
            "ttft_p50_ms": 1e3 * pct(stats["ttft"], 50),
            "ttft_p99_ms": 1e3 * pct(stats["ttft"], 99),
            "rss_before_mb": rss0, "rss_after_mb": rss_mb(pid),
            "wall_s": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--server-cmd", help="command with {port}")
    g.add_argument("--url", help="a running server (loopback only)")
    ap.add_argument("--pid", type=int, help="its PID, for the RSS (--url)")
    ap.add_argument("--clients", default="1,4,8")
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--endpoint", choices=["chat", "completions"],
                    default="chat")
    ap.add_argument("--label", default="server")
    ap.add_argument("--start-timeout", type=float, default=120.0)
    ap.add_argument("--json", action="store_true", help="JSON lines out")
    args = ap.parse_args()
    if args.duration <= 0 or args.duration > 3600:
        ap.error("--duration must be in (0, 3600] seconds")
    levels = [int(x) for x in args.clients.split(",")]
    if any(c < 1 or c > 256 for c in levels):
        ap.error("--clients: counts in 1..256")

    proc = None
    if args.server_cmd:
        host, port = "127.0.0.1", free_port()
        cmd = shlex.split(args.server_cmd.replace("{port}", str(port)))
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        pid = proc.pid
    else:
        u = urllib.parse.urlparse(args.url)
        host, port, pid = u.hostname, u.port, args.pid
        if host not in ("127.0.0.1", "localhost", "::1"):
            ap.error("--url must be a loopback address")
    try:
        wait_ready(host, port, proc, args.start_timeout)
        one_request(host, port, args, 0)   # warm up
        seq = [0]
        if not args.json:
            print(f"{'server':<14} {'C':>2} {'requests':>8} {'errors':>6} "
                  f"{'tok/s':>7} {'ttft p50':>9} {'ttft p99':>9} "
                  f"{'RSS MB before/after':>20}")
        for c in levels:
            r = run_level(host, port, args, c, pid, seq)
            if args.json:
                print(json.dumps(r))
            else:
                print(f"{r['label']:<14} {c:>2} {r['requests']:>8} "
                      f"{r['errors']:>6} {r['tokens_per_s']:>7.1f} "
                      f"{r['ttft_p50_ms']:>7.0f}ms {r['ttft_p99_ms']:>7.0f}ms "
                      f"{r['rss_before_mb']:>9.1f} /{r['rss_after_mb']:>8.1f}")
            sys.stdout.flush()
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
