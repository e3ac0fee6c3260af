#!/usr/bin/env python3
"""gpt_compare.py -- mhsa-train --task text beside its PyTorch peer.

Runs the same training twice, once with mhsa (build/mhsa-train) and once
with PyTorch (tools/gpt_peer.py), from the same initial checkpoint, on the
same batches, and reports:

  * the loss curves: the largest |mhsa - torch| training loss over the
    first 50 steps and over all steps, and the final validation losses
    with their relative difference;
  * training tokens/s of both at the given thread count (each tool times
    forward, backward, clipping and the optimiser step; the runs alternate
    mhsa, torch, mhsa, torch ..., and each mhsa run is compared with the
    torch run after it, so a change in the machine's load hits both);
  * the validation loss mhsa computes for the PyTorch-trained checkpoint
    (mhsa-train --eval) against the one PyTorch printed;
  * optionally an SVG of both curves (--svg).

    python3 tools/gpt_compare.py --preset tiny --steps 300 --threads 1
    python3 tools/gpt_compare.py --layers 4 --embd 128 --heads 4 \\
        --block 128 --steps 100 --repeat 3

Any other arguments go to mhsa-train as they are (the model and schedule
flags of `mhsa-train --task text --help`). Needs Debian's python3-torch.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"gpt_compare: {' '.join(cmd)} failed ({p.returncode}):\n"
                 f"{p.stderr[-2000:]}")
    return p.stdout, p.stderr


def read_csv(path):
    with open(path) as f:
        return [(int(r["step"]), float(r["loss"]),
                 float(r["val_loss"]) if r["val_loss"] else None)
                for r in csv.DictReader(f)]


def val_of(text):
    m = re.search(r"^val loss: ([0-9.]+)", text, re.M)
    return float(m.group(1)) if m else None


def tps_of(text):
    """The last tokens/s figure a tool printed."""
    found = re.findall(r"([0-9]+) tok(?:ens)?/s", text)
    return float(found[-1]) if found else None


def svg(path, a, b, title):
    """Both loss curves (x: step, y: loss) and, below, their difference, as
    a small self-contained SVG."""
    W, L, R, T = 640, 64, 16, 32
    H1, H2, GAP, B = 280, 120, 40, 40
    steps = max(s for s, _, _ in a)
    ys = [l for _, l, _ in a + b]
    lo, hi = min(ys), max(ys)
    hi = min(hi, lo + 3.0 * (statistics.median(ys) - lo + 1e-9) + 0.5)
    diff = [(s, x - y, None) for (s, x, _), (_, y, _) in zip(a, b)]
    dmax = max(abs(d) for _, d, _ in diff) or 1e-9

    def px(s):
        return L + (W - L - R) * (s - 1) / max(steps - 1, 1)

    def py(v, top, h, vlo, vhi):
        v = min(max(v, vlo), vhi)
        return top + h * (vhi - v) / (vhi - vlo)

    def line(rows, colour, top, h, vlo, vhi, dash=""):
        pts = " ".join(f"{px(s):.1f},{py(l, top, h, vlo, vhi):.1f}"
                       for s, l, _ in rows)
        return (f'<polyline fill="none" stroke="{colour}" stroke-width="1.5"'
                f' {dash} points="{pts}"/>')

    def axis(out, top, h, vlo, vhi, fmt, n=5):
        for i in range(n + 1):
            v = vlo + (vhi - vlo) * i / n
            y = py(v, top, h, vlo, vhi)
            out.append(f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" '
                       f'y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{L - 6}" y="{y + 4:.1f}" '
                       f'text-anchor="end">{fmt(v)}</text>')

    top2 = T + H1 + GAP
    Htot = top2 + H2 + B
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" '
           f'height="{Htot}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{Htot}" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle">{title}</text>']
    axis(out, T, H1, lo, hi, lambda v: f"{v:.2f}")
    out.append(line(a, "#1f77b4", T, H1, lo, hi))
    out.append(line(b, "#d62728", T, H1, lo, hi, 'stroke-dasharray="5,4"'))
    out.append(f'<text x="{W - R - 160}" y="{T + 16}" fill="#1f77b4">'
               f'mhsa (C)</text>')
    out.append(f'<text x="{W - R - 160}" y="{T + 32}" fill="#d62728">'
               f'PyTorch (peer), dashed</text>')
    out.append(f'<text x="{W / 2}" y="{top2 - 10}" text-anchor="middle">'
               f'mhsa - PyTorch, training loss</text>')
    axis(out, top2, H2, -dmax, dmax, lambda v: f"{v:.1e}", 4)
    out.append(line(diff, "#444", top2, H2, -dmax, dmax))
    for i in range(6):
        st = 1 + (steps - 1) * i / 5
        out.append(f'<text x="{px(st):.1f}" y="{top2 + H2 + 16}" '
                   f'text-anchor="middle">{int(round(st))}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{Htot - 8}" '
               f'text-anchor="middle">step</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed runs of each (alternating); the first run "
                    "of each also gives the curves")
    ap.add_argument("--svg", help="write both loss curves here")
    ap.add_argument("--data", help="as mhsa-train --data")
    ap.add_argument("--check", type=float, metavar="TOL",
                    help="exit 1 unless the training losses of the first "
                    "50 steps agree within TOL and mhsa-train --eval of "
                    "the PyTorch checkpoint gives PyTorch's validation loss "
                    "within TOL (what CI runs, with a short setting)")
    a, rest = ap.parse_known_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads),
               OPENBLAS_NUM_THREADS="1", LC_ALL="C")
    train = os.path.join(a.build, "mhsa-train")
    data = ["--data", a.data] if a.data else []
    with tempfile.TemporaryDirectory() as d:
        init, m_ckpt, t_ckpt = (os.path.join(d, n) for n in
                                ("init.st", "mhsa.st", "torch.st"))
        m_csv, t_csv = os.path.join(d, "m.csv"), os.path.join(d, "t.csv")
        m_tps, t_tps, m_val = [], [], None
        for r in range(a.repeat):
            cmd = [train, "--task", "text", "--threads", str(a.threads)] + \
                data + rest
            if r == 0:
                cmd += ["--save-init", init, "--save", m_ckpt,
                        "--loss-csv", m_csv]
            out, err = run(cmd, env)
            m_tps.append(tps_of(err))
            if r == 0:
                m_val = val_of(out)
            cmd = ["/usr/bin/python3", os.path.join(HERE, "gpt_peer.py"),
                   "--init", init, "--threads", str(a.threads)] + data
            if r == 0:
                cmd += ["--save", t_ckpt, "--loss-csv", t_csv]
            out, err = run(cmd, env)
            t_tps.append(float(re.search(r"train tokens/s: ([0-9.]+)",
                                         out).group(1)))
            if r == 0:
                t_val = val_of(out)
            print(f"run {r + 1}: mhsa {m_tps[-1]:.0f} tok/s, torch "
                  f"{t_tps[-1]:.0f} tok/s", file=sys.stderr)
        ev, _ = run([train, "--task", "text", "--eval", t_ckpt] + data, env)
        cross = val_of(ev)
        ma, tb = read_csv(m_csv), read_csv(t_csv)
    early = max(abs(x[1] - y[1]) for x, y in zip(ma[:50], tb[:50]))
    worst = max(abs(x[1] - y[1]) for x, y in zip(ma, tb))
    mt, tt = statistics.median(m_tps), statistics.median(t_tps)
    # Each mhsa run against the PyTorch run right after it: a slow spell
    # of the machine hits both halves of a pair.
    pairs = sorted(m / t for m, t in zip(m_tps, t_tps))
    print(f"steps: {len(ma)}, threads: {a.threads}, args: {' '.join(rest)}")
    print(f"max |loss difference|, first 50 steps: {early:.2e}")
    print(f"max |loss difference|, all steps:      {worst:.2e}")
    print(f"final val loss: mhsa {m_val:.6f}, torch {t_val:.6f} "
          f"(relative difference {abs(m_val - t_val) / t_val:.2%})")
    print(f"val loss of the torch checkpoint: torch {t_val:.6f}, "
          f"mhsa-train --eval {cross:.6f} (|diff| {abs(cross - t_val):.1e})")
    print(f"training tokens/s (median of {a.repeat}): mhsa {mt:.0f}, torch "
          f"{tt:.0f}; mhsa / torch per pair: median "
          f"{statistics.median(pairs):.2f}x (min {pairs[0]:.2f}x, max "
          f"{pairs[-1]:.2f}x)")
    if a.svg:
        svg(a.svg, ma, tb, f"training loss, {' '.join(rest)}")
    if a.check is not None:
        # The two tools round differently (fused kernels, summation
        # order), so early losses agree to about 1e-6; a wrong gradient
        # or optimiser step shows up within a few steps far above that.
        bad = []
        if len(ma) != len(tb) or not ma:
            bad.append(f"{len(ma)} mhsa steps against {len(tb)} torch ones")
        if not early <= a.check:
            bad.append(f"first-50-step losses differ by {early:.2e}")
        if not abs(cross - t_val) <= a.check:
            bad.append(f"--eval of the torch checkpoint: {cross:.6f} vs "
                       f"{t_val:.6f}")
        if bad:
            sys.exit("gpt_compare: --check " + str(a.check) + " failed: " +
                     "; ".join(bad))
        print(f"gpt_compare: --check {a.check}: passed")


if __name__ == "__main__":
    main()
