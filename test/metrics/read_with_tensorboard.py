#!/usr/bin/env python3
"""Reads the log directory written by seedrl_metrics_write_events (test/metrics/write_events.cpp)
with TensorBoard's own event-file reader, which checks both CRCs of every record, and checks
every tag, step, value and wall time against the formulas the writer used; then checks
metrics.jsonl the same way with Python's json module.

    read_with_tensorboard.py LOGDIR

Exits 77 (ctest: skipped) when the `tensorboard` package cannot be imported, or 1 in CI
(CI=true), where a missing test tool must fail the run.
"""
import glob
import json
import math
import os
import re
import shutil
import socket
import struct
import sys
import tempfile

SKIP = 77


def f32(x):
    """x rounded to float32, as simple_value stores it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def expected_log():
    """(step, wall_time, {tag: value}) in the order write_events.cpp logs them."""
    t0 = 1700000000.0
    rows = []
    for s in range(0, 200, 10):
        rows.append((s, t0 + s * 0.25, {
            "loss": 1.0 / (s + 1),
            "return/mean": 0.75 * s - 3.0,
            "entropy \u00e9": -0.001 * s,
            "frames": s * 400.0,
        }))
    rows.append((200, t0 + 50.0, {
        "special/nan": math.nan,
        "special/inf": math.inf,
        "special/neg_inf": -math.inf,
    }))
    return rows


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


class Checker:
    def __init__(self):
        self.failures = 0
        self.checks = 0

    def check(self, ok, what):
        self.checks += 1
        if not ok:
            self.failures += 1
            print("FAILED: " + what)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    logdir = sys.argv[1]
    try:
        from tensorboard.backend.event_processing import event_accumulator
        from tensorboard.backend.event_processing import event_file_loader
    except ImportError as e:
        print(f"SKIPPED: the `tensorboard` package cannot be imported by {sys.executable} ({e}); "
              "`scripts/install-deps.sh --test-tools` installs it into .venv (then reconfigure), "
              "or `pip install tensorboard`")
        # In CI a missing test tool fails the run instead of passing as a skip.
        return 1 if os.environ.get("CI") == "true" else SKIP
    import tensorboard
    print(f"reading {logdir} with tensorboard {tensorboard.__version__} ({sys.executable})")

    c = Checker()
    rows = expected_log()

    files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    c.check(len(files) == 1, f"exactly one event file in {logdir}, found {files}")
    if len(files) != 1:
        return 1
    path = files[0]
    name = os.path.basename(path)
    c.check(re.fullmatch(r"events\.out\.tfevents\.\d+\." + re.escape(socket.gethostname()), name)
            is not None, f"file name {name!r} is events.out.tfevents.<seconds>.<hostname>")

    # Raw Event protos, as stored. The loader stops quietly at a record whose CRC fails, so the
    # event count is what proves every checksum passed.
    events = list(event_file_loader.LegacyEventFileLoader(path).Load())
    c.check(len(events) == 1 + len(rows), f"{1 + len(rows)} events read, got {len(events)}")
    if events:
        first = events[0]
        c.check(first.file_version == "brain.Event:2",
                f"first event's file_version is brain.Event:2, got {first.file_version!r}")
        c.check(first.wall_time > 1.6e9, f"first event has a wall_time, got {first.wall_time}")
    for event, (step, wall_time, values) in zip(events[1:], rows):
        c.check(event.step == step, f"step {step}, got {event.step}")
        c.check(event.wall_time == wall_time,
                f"step {step}: wall_time {wall_time!r}, got {event.wall_time!r}")
        got = [(v.tag, v.simple_value) for v in event.summary.value]
        c.check([t for t, _ in got] == list(values),
                f"step {step}: tags {list(values)}, got {[t for t, _ in got]}")
        for tag, value in got:
            if tag in values:
                c.check(same(value, f32(values[tag])),
                        f"step {step} tag {tag!r}: {f32(values[tag])!r}, got {value!r}")
        c.check(all(v.WhichOneof("value") == "simple_value" for v in event.summary.value),
                f"step {step}: every value is a simple_value")

    # What TensorBoard's scalar dashboard gets: the accumulator's per-tag series.
    acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    all_tags = sorted({t for _, _, v in rows for t in v})
    c.check(sorted(acc.Tags()["scalars"]) == all_tags,
            f"scalar tags {all_tags}, got {sorted(acc.Tags()['scalars'])}")
    for tag in all_tags:
        want = [(s, w, f32(v[tag])) for s, w, v in rows if tag in v]
        got = [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)] \
            if tag in acc.Tags()["scalars"] else []
        c.check(len(got) == len(want) and all(
            gs == ws and gw == ww and same(gv, wv) for (gs, gw, gv), (ws, ww, wv) in zip(got, want)),
            f"series {tag!r}: {want}, got {got}")

    # The reader really checks our CRCs: a copy with one data byte changed stops at that record.
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, name)
        shutil.copyfile(path, bad)
        with open(bad, "r+b") as f:
            data = bytearray(f.read())
            data[-10] ^= 0x01  # inside the last record's Event
            f.seek(0)
            f.write(data)
        n = len(list(event_file_loader.LegacyEventFileLoader(bad).Load()))
        c.check(n == len(events) - 1,
                f"a corrupted last record is dropped by TensorBoard's CRC check: read {n} events")

    # metrics.jsonl, read with the json module.
    jsonl = os.path.join(logdir, "metrics.jsonl")
    with open(jsonl, encoding="utf-8") as f:
        lines = f.read().splitlines()
    c.check(len(lines) == len(rows), f"{len(rows)} lines in {jsonl}, got {len(lines)}")
    for line, (step, wall_time, values) in zip(lines, rows):
        obj = json.loads(line)
        c.check(list(obj) == ["step", "wall_time"] + list(values),
                f"line for step {step}: members in order, got {list(obj)}")
        c.check(obj.get("step") == step and obj.get("wall_time") == wall_time,
                f"line for step {step}: step and wall_time, got {line}")
        for tag, value in values.items():
            want = value if math.isfinite(value) else None
            c.check(obj.get(tag, "missing") == want,
                    f"line for step {step}: {tag!r} = {want!r}, got {obj.get(tag, 'missing')!r}")

    if c.failures:
        print(f"{c.failures} of {c.checks} checks failed")
    else:
        print(f"all {c.checks} checks passed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
