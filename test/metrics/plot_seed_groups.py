"""tools/plot_metrics.py --seeds: how runs are grouped by name, and the median and range drawn
over seeds, against values worked out by hand. A stand-in for matplotlib's axes records what
would be drawn, so the test needs no plotting package.

    python3 plot_seed_groups.py PATH/TO/tools/plot_metrics.py
"""
import importlib.util
import math
import sys


def load(path):
    spec = importlib.util.spec_from_file_location("plot_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RecordingAxes:
    """What draw_seed_group asks of matplotlib's Axes, recorded."""

    class Line:
        def get_color(self):
            return "C0"

    def __init__(self):
        self.lines, self.fills = [], []

    def plot(self, xs, ys, label=None, **_):
        self.lines.append((list(xs), list(ys), label))
        return (self.Line(),)

    def fill_between(self, xs, lows, highs, **_):
        self.fills.append((list(xs), list(lows), list(highs)))


failures = []


def check(what, got, want):
    same = len(got) == len(want) and all(
        (math.isnan(g) and math.isnan(w)) or abs(g - w) < 1e-12 for g, w in zip(got, want))
    if not same:
        failures.append(f"{what}: got {got}, want {want}")


def rows(points, tag="return"):
    return [{"step": x, tag: y} for x, y in points]


def main():
    pm = load(sys.argv[1])

    # Grouping: NAME-sDIGITS joins NAME's group in first-seen order; anything else is its own.
    runs = [("r2d2-s1", "a"), ("ppo-s1", "b"), ("r2d2-s12", "c"), ("plain", "d"),
            ("odd-s", "e"), ("multi-part-s3", "f")]
    groups = pm.seed_groups(runs)
    if list(groups) != ["r2d2", "ppo", "plain", "odd-s", "multi-part"]:
        failures.append(f"group names in order: got {list(groups)}")
    if groups.get("r2d2") != ["a", "c"] or groups.get("ppo") != ["b"]:
        failures.append(f"group members: got {groups}")

    # Three seeds, odd count: the median is the middle value. Seed c runs further than the others,
    # so the grid stops at x = 10, the last x every seed reached. Linear between logged points.
    a = rows([(0, 0.0), (10, 10.0)])
    b = rows([(0, 20.0), (10, 0.0)])
    c = rows([(0, 4.0), (20, 4.0)])
    ax = RecordingAxes()
    drawn = pm.draw_seed_group(ax, "r2d2", [a, b, c], "return", "step", 1, grid_points=3)
    if drawn != 3 or len(ax.lines) != 1 or len(ax.fills) != 1:
        failures.append(f"three seeds: drew {drawn} points, {len(ax.lines)} lines")
    else:
        xs, medians, label = ax.lines[0]
        check("grid", xs, [0, 5, 10])
        check("median of three", medians, [4, 5, 4])  # {0,20,4}, {5,10,4}, {10,0,4}
        check("lowest of three", ax.fills[0][1], [0, 4, 0])
        check("highest of three", ax.fills[0][2], [20, 10, 10])
        if label != "r2d2 (median of 3)":
            failures.append(f"label: {label}")

    # Two seeds, even count: the mean of the middle two. Seed e starts later (x = 2): the grid
    # starts where every seed has begun.
    d = rows([(0, 1.0), (10, 1.0)])
    e = rows([(2, 3.0), (10, 7.0)])
    ax = RecordingAxes()
    pm.draw_seed_group(ax, "ppo", [d, e], "return", "step", 1, grid_points=5)
    check("grid from the latest start", ax.lines[0][0], [2, 4, 6, 8, 10])
    check("median of two", ax.lines[0][1], [2, 2.5, 3, 3.5, 4])  # e: 3 + (x - 2) / 2

    # A null value (no episode finished yet) leaves a gap in median and range alike; it is not
    # taken as the median of the seeds that had one.
    f = rows([(0, 1.0), (5, None), (10, 1.0)])
    g = rows([(0, 3.0), (10, 3.0)])
    ax = RecordingAxes()
    pm.draw_seed_group(ax, "gap", [f, g], "return", "step", 1, grid_points=3)
    check("gap in the median", ax.lines[0][1], [2, math.nan, 2])
    check("gap in the range", ax.fills[0][1], [1, math.nan, 1])

    # Smoothing is per seed before the median: a window of 2 over seed h's 0, 10 gives 0, 5.
    h = rows([(0, 0.0), (10, 10.0)])
    ax = RecordingAxes()
    pm.draw_seed_group(ax, "smooth", [h], "return", "step", 2, grid_points=2)
    check("smoothed", ax.lines[0][1], [0, 5])

    # Nothing to draw: no seed logged the tag, or the seeds share no stretch of x.
    ax = RecordingAxes()
    if pm.draw_seed_group(ax, "none", [rows([(0, 1.0)], tag="loss")], "return", "step", 1) != 0:
        failures.append("a group without the tag drew points")
    disjoint = [rows([(0, 1.0), (5, 1.0)]), rows([(6, 1.0), (9, 1.0)])]
    if pm.draw_seed_group(ax, "apart", disjoint, "return", "step", 1) != 0 or ax.lines:
        failures.append("seeds with no common x drew points")

    for f in failures:
        print("FAIL", f)
    print(f"plot_seed_groups: {'failed' if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
