"""Per-call times of a Python callable, shared by the peer scripts
(tools/torch_latency.py, tools/py_bench.py, bench/torch_peer.py).

rounds_us(fn) warms fn up, sizes a round to about min_time / rounds from a
0.05 s probe (so fast and slow calls both get enough repeats for the
clock), and returns each round's mean microseconds per call: the callers
take the median (a typical figure) or the least (the best the machine
gave, for a noisy shared machine).
"""
import time


def rounds_us(fn, rounds=5, min_time=0.3, warmup=1):
    for _ in range(warmup):
        fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.05:
        fn()
        n += 1
    reps = max(1, int(n * min_time / 0.05 / rounds))
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        out.append((time.perf_counter() - t0) / reps * 1e6)
    return out
