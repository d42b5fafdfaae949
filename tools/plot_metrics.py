#!/usr/bin/env python3
"""Draws learning curves from seedrl's metrics.jsonl (seedrl::metrics_log) into a PNG.

    python3 tools/plot_metrics.py RUN [RUN ...] [--tags TAG ...] [--x step|TAG]
                                  [--smooth N] [--seeds] [--output curves.png]

RUN is a log directory (its metrics.jsonl is read) or a .jsonl file; several runs are drawn in
the same panels, labelled by directory name, to compare them. Each tag gets its own panel,
against the step (default) or against another logged tag such as `frames` (--x frames), or
against `seconds` since the run's first line (--x seconds: runs compared for the same wall
time). Values
that were not finite (null in the file) leave gaps. --smooth N draws the mean of the last N
points. --seeds draws runs labelled NAME-sSEED (r2d2-s1, r2d2-s2, ...) as one line per NAME:
the median over its seeds, with their range shaded, up to the x that every seed reached.
Default tags: all that the runs logged; default output: metrics.png in the first run's
directory. Needs matplotlib (`pip install matplotlib`; scripts/install-deps.sh --test-tools puts
it in .venv).
"""
import argparse
import json
import math
import re
import sys
from pathlib import Path

RESERVED = ("step", "wall_time")
DERIVED = ("seconds",)  # computed from wall_time: an x axis, not drawn as a panel by default


def load_run(arg):
    """(label, rows) for one run: rows are the decoded JSON objects, in file order."""
    path = Path(arg)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.is_file():
        sys.exit(f"plot_metrics: {path} does not exist (pass a log directory or a .jsonl file)")
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                # A run killed mid-write can leave a partial last line; earlier lines are whole.
                print(f"plot_metrics: {path}:{n}: skipping a line that is not JSON ({e})",
                      file=sys.stderr)
    start = next((r["wall_time"] for r in rows if r.get("wall_time") is not None), None)
    for r in rows:
        if start is not None and r.get("wall_time") is not None:
            r["seconds"] = r["wall_time"] - start
    label = path.parent.name if path.name == "metrics.jsonl" else path.stem
    return label, rows


def series(rows, tag, x_key, smooth):
    """The (x, y) points of `tag`, NaN where the value was null so that the line breaks."""
    xs, ys = [], []
    for row in rows:
        if tag not in row or row.get(x_key) is None:
            continue
        xs.append(row[x_key])
        ys.append(math.nan if row[tag] is None else float(row[tag]))
    if smooth > 1:
        out, window = [], []
        for y in ys:
            window = (window + [y])[-smooth:]
            finite = [v for v in window if math.isfinite(v)]
            out.append(sum(finite) / len(finite) if finite and math.isfinite(y) else math.nan)
        ys = out
    return xs, ys


def interpolate(xs, ys, x):
    """ys at x, linear between logged points (nan outside them or next to a gap)."""
    for i in range(1, len(xs)):
        if xs[i - 1] <= x <= xs[i]:
            if x == xs[i - 1] or x == xs[i]:  # a logged point keeps its value beside a gap
                return ys[i - 1] if x == xs[i - 1] else ys[i]
            w = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            return ys[i - 1] + w * (ys[i] - ys[i - 1])
    return math.nan


def seed_groups(runs):
    """{NAME: [rows of NAME-s1, NAME-s2, ...]} in first-seen order; a run not named so is its own."""
    groups = {}
    for label, rows in runs:
        match = re.fullmatch(r"(.+)-s\d+", label)
        groups.setdefault(match.group(1) if match else label, []).append(rows)
    return groups


def draw_seed_group(ax, name, runs_rows, tag, x_tag, smooth, grid_points=200):
    """The median over seeds on a common grid, the range shaded; returns the points drawn."""
    curves = [series(rows, tag, x_tag, smooth) for rows in runs_rows]
    curves = [(xs, ys) for xs, ys in curves if xs]
    if not curves:
        return 0
    lo = max(xs[0] for xs, _ in curves)
    hi = min(xs[-1] for xs, _ in curves)  # every seed reached it
    if hi <= lo:
        return 0
    grid = [lo + (hi - lo) * i / (grid_points - 1) for i in range(grid_points)]
    medians, lows, highs = [], [], []
    for x in grid:
        values = sorted(v for v in (interpolate(xs, ys, x) for xs, ys in curves)
                        if math.isfinite(v))
        if len(values) < len(curves):  # a seed has no value here: leave a gap
            medians.append(math.nan), lows.append(math.nan), highs.append(math.nan)
            continue
        mid = len(values) // 2
        medians.append(values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2)
        lows.append(values[0])
        highs.append(values[-1])
    line, = ax.plot(grid, medians, label=f"{name} (median of {len(curves)})", linewidth=1.4)
    ax.fill_between(grid, lows, highs, color=line.get_color(), alpha=0.2, linewidth=0)
    return len(grid)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="log directories or metrics.jsonl files")
    p.add_argument("--tags", nargs="+", help="tags to draw (default: all)")
    p.add_argument("--x", default="step",
                   help="x axis: step (default), seconds, or a logged tag, e.g. frames")
    p.add_argument("--smooth", type=int, default=1, help="moving average over N points")
    p.add_argument("--seeds", action="store_true",
                   help="one line per NAME for runs labelled NAME-sSEED: median and range")
    p.add_argument("--output", "-o", help="PNG to write (default: RUN/metrics.png)")
    args = p.parse_args()

    runs = [load_run(r) for r in args.runs]
    logged = []
    for _, rows in runs:
        for row in rows:
            logged += [k for k in row if k not in RESERVED and k not in logged]
    # By default, the tags that were logged together with the x axis (all, for the step).
    tags = args.tags or [t for t in logged if t != args.x and t not in DERIVED and any(
        t in row and row.get(args.x) is not None for _, rows in runs for row in rows)]
    missing = [t for t in tags + ([] if args.x == "step" else [args.x]) if t not in logged]
    if missing:
        sys.exit(f"plot_metrics: no run logged {missing}; logged tags: {logged}")
    if not tags:
        sys.exit("plot_metrics: nothing to draw: the runs logged no tags")

    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError as e:
        sys.exit(f"plot_metrics: matplotlib is not installed for {sys.executable} ({e}); "
                 "run `pip install matplotlib` or scripts/install-deps.sh --test-tools")

    output = Path(args.output) if args.output else \
        (Path(args.runs[0]) if Path(args.runs[0]).is_dir() else Path(args.runs[0]).parent) \
        / "metrics.png"
    cols = min(len(tags), 2)
    rows_n = math.ceil(len(tags) / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(6 * cols, 3.5 * rows_n), squeeze=False)
    points = 0
    for ax, tag in zip(axes.flat, tags):
        if args.seeds:
            for name, group in seed_groups(runs).items():
                points += draw_seed_group(ax, name, group, tag, args.x, args.smooth)
        for label, rows in ([] if args.seeds else runs):
            xs, ys = series(rows, tag, args.x, args.smooth)
            points += len(xs)
            if xs:
                ax.plot(xs, ys, label=label, linewidth=1.2)
        ax.set_title(tag)
        ax.set_xlabel(args.x)
        ax.grid(True, alpha=0.3)
        if len(runs) > 1:
            ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(tags):]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(output, dpi=100)
    print(f"wrote {output}: {len(tags)} tags, {len(runs)} runs, {points} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
