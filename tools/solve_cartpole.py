#!/usr/bin/env python3
"""Wall-clock time and frames for the SEED demo to solve CartPole, over several seeds.

Runs `BINARY local --actors 4 --seed S` (examples/cartpole_seed) for each seed, reads the
demo's final line

    solved: mean return 476.3 over the last 100 episodes after 435920 frames in 5 s

and prints one row per seed plus the medians. The wall clock is measured here as well, to the
millisecond, because the demo rounds its own figure to whole seconds; it includes process
start-up and shutdown. A run that times out, stops below the target or fails is reported as
such and counts as not solved; the medians cover the solved runs only, and say so.

Usage: tools/solve_cartpole.py build/release/examples/seedrl_cartpole_seed
       [--seeds 1,2,3,4,5] [--timeout 120] [--actors 4] [-- EXTRA DEMO OPTIONS]
Python 3 standard library only.
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time

SOLVED = re.compile(
    r"solved: mean return (?P<ret>[-\d.]+) over the last 100 episodes after "
    r"(?P<frames>\d+) frames in (?P<secs>[\d.]+) s")
STOPPED = re.compile(
    r"stopped after (?P<frames>\d+) frames: mean return (?P<ret>[-\d.]+) is below")
PROGRESS = re.compile(r"frames\s+(?P<frames>\d+)\s+(?P<fps>\d+) f/s")


def run_seed(binary, seed, actors, timeout, extra):
    cmd = [binary, "local", "--actors", str(actors), "--seed", str(seed)] + extra
    start = time.monotonic()
    # A session of its own, so that a timeout can end the learner and its actor processes.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        timed_out = True
    wall = time.monotonic() - start
    row = {"seed": seed, "cmd": " ".join(cmd), "wall": wall, "rc": proc.returncode,
           "solved": False, "frames": None, "ret": None, "demo_secs": None, "fps": [],
           "status": ""}
    for line in out.splitlines():
        m = PROGRESS.search(line)
        if m:
            row["fps"].append(int(m.group("fps")))
    m = SOLVED.search(out)
    if m and not timed_out:
        row.update(solved=True, frames=int(m.group("frames")), ret=float(m.group("ret")),
                   demo_secs=float(m.group("secs")), status="solved")
    elif timed_out:
        row["status"] = "timeout after %.0f s" % timeout
        last = [int(p.group("frames")) for p in PROGRESS.finditer(out)]
        row["frames"] = last[-1] if last else None
    else:
        s = STOPPED.search(out)
        if s:
            row.update(frames=int(s.group("frames")), ret=float(s.group("ret")),
                       status="not solved (frame budget spent)")
        else:
            tail = (err.strip().splitlines() or ["no output"])[-1]
            row["status"] = "failed (rc %s): %s" % (proc.returncode, tail)
    return row


def fmt_int(v):
    return "-" if v is None else "{:,}".format(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary", help="path to seedrl_cartpole_seed (a release build)")
    ap.add_argument("--seeds", default="1,2,3,4,5", help="comma-separated seeds (default 1..5)")
    ap.add_argument("--actors", type=int, default=4, help="actor processes (default 4)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds before a run is stopped and counted as not solved (default 120)")
    argv = sys.argv[1:]
    # Everything after "--" goes to the demo unchanged.
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.extra = extra
    if not os.access(args.binary, os.X_OK):
        sys.exit("%s is not an executable" % args.binary)
    seeds = [int(s) for s in args.seeds.split(",") if s]

    rows = []
    for seed in seeds:
        row = run_seed(args.binary, seed, args.actors, args.timeout, args.extra)
        rows.append(row)
        print("seed %d: %s, %s frames, %.2f s wall" % (seed, row["status"], fmt_int(row["frames"]),
                                                       row["wall"]), file=sys.stderr, flush=True)

    print("command: %s local --actors %d --seed S %s" % (args.binary, args.actors,
                                                          " ".join(args.extra)))
    print()
    print("| seed | result | frames | wall clock (s) | demo's own (s) | mean return | "
          "median progress f/s |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        fps = "%.0f" % statistics.median(r["fps"]) if r["fps"] else "-"
        print("| %d | %s | %s | %.2f | %s | %s | %s |" % (
            r["seed"], r["status"], fmt_int(r["frames"]), r["wall"],
            "-" if r["demo_secs"] is None else "%.0f" % r["demo_secs"],
            "-" if r["ret"] is None else "%.1f" % r["ret"], fps))
    solved = [r for r in rows if r["solved"]]
    print()
    if solved:
        note = "" if len(solved) == len(rows) else " (solved runs only)"
        print("solved %d of %d; median frames %s, median wall clock %.2f s%s" % (
            len(solved), len(rows), fmt_int(int(statistics.median(r["frames"] for r in solved))),
            statistics.median(r["wall"] for r in solved), note))
    else:
        print("solved 0 of %d" % len(rows))
    return 0 if len(solved) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
