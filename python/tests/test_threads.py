"""The GIL is released while the library computes: another Python thread
runs during a long forward, and two threads with two blocks get the bits
each gets alone."""
import threading
import time

import numpy as np

import mhsa


def big_block(seed):
    blk = mhsa.Block(256, 8, 512, causal=True)
    blk.init_random(seed)
    return blk


def longest_pause_during(call):
    """Runs call() in a thread while this thread keeps running Python;
    returns (the call's duration, the longest time this thread went
    without running during it)."""
    span = {}

    def work():
        span["t0"] = time.perf_counter()
        call()
        span["t1"] = time.perf_counter()

    t = threading.Thread(target=work)
    stamps = []
    t.start()
    while t.is_alive():
        stamps.append(time.perf_counter())
    t.join()
    inside = [s for s in stamps if span["t0"] <= s <= span["t1"]]
    edges = [span["t0"]] + inside + [span["t1"]]
    return span["t1"] - span["t0"], max(b - a for a, b in zip(edges, edges[1:]))


def test_python_runs_during_a_forward():
    blk = big_block(1)
    x = np.random.default_rng(0).standard_normal((8, 512, 256)).astype(
        np.float32)
    duration, pause = longest_pause_during(lambda: blk.forward(x))
    # With the GIL held through the C call this thread could not run for
    # the whole call; released, it only waits for the OS scheduler.
    assert pause < duration / 2, (duration, pause)


def test_two_threads_two_blocks_same_bits():
    blocks = [big_block(2), big_block(3)]
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((2, 256, 256)).astype(np.float32)
          for _ in blocks]
    alone = [b.forward(x) for b, x in zip(blocks, xs)]
    out = [None, None]
    errors = []

    def run(i):
        try:
            for _ in range(3):
                out[i] = blocks[i].forward(xs[i])
        except Exception as e:   # noqa: BLE001 — reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for a, b in zip(out, alone):
        assert a.tobytes() == b.tobytes()


def test_one_block_shared_by_two_threads_takes_turns():
    blk = big_block(4)
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((1, 128, 256)).astype(np.float32)
          for _ in range(2)]
    alone = [blk.forward(x) for x in xs]
    out = [None, None]

    def run(i):
        # The shared block's one workspace: its lock keeps the calls apart.
        for _ in range(3):
            out[i] = blk.forward(xs[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(out, alone):
        assert a.tobytes() == b.tobytes()


def test_backward_differentiates_the_calling_threads_forward():
    # Two threads share one block, each running forward then backward on
    # its own input; each thread's gradients must be those of its own
    # forward (bitwise the single-threaded ones), never the other's.
    blk = mhsa.Block(64, 4, 64, causal=True)
    blk.init_random(5)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((2, 48, 64)).astype(np.float32)
          for _ in range(2)]
    dys = [rng.standard_normal((2, 48, 64)).astype(np.float32)
           for _ in range(2)]
    alone = []
    for x, dy in zip(xs, dys):
        blk.forward(x)
        alone.append(blk.backward(dy))
    mismatches = [0, 0]
    errors = []
    start = threading.Barrier(2)

    def run(i):
        try:
            start.wait()
            for _ in range(60):
                blk.forward(xs[i])
                dx, grads = blk.backward(dys[i])
                same = dx.tobytes() == alone[i][0].tobytes() and all(
                    g.tobytes() == alone[i][1][k].tobytes()
                    for k, g in grads.items())
                mismatches[i] += not same
        except Exception as e:   # noqa: BLE001 — reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert mismatches == [0, 0]


def test_backward_in_another_thread_than_the_forward_is_refused():
    blk = mhsa.Block(32, 4, 8)
    blk.init_random(0)
    x = np.ones((1, 8, 32), np.float32)
    blk.forward(x)
    caught = []

    def other():
        try:
            blk.backward(np.ones((1, 8, 32), np.float32))
        except mhsa.Error as e:
            caught.append(e)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(caught) == 1 and caught[0].status == "STATE"
    blk.backward(np.ones((1, 8, 32), np.float32))   # this thread's forward
