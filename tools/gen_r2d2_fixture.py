#!/usr/bin/env python3
"""Float64 references for R2D2's value rescaling (include/seedrl/algo/value_rescaling.hpp),
computed independently of its closed forms: h from its definition in 60-digit decimal
arithmetic, h^-1 by bisection on h (not the closed form), and both derivatives by central
finite differences in the same precision. Writes test/fixtures/r2d2/value_rescaling.json.

    python3 tools/gen_r2d2_fixture.py
"""

from __future__ import annotations

import json
import pathlib
from decimal import Decimal, getcontext

getcontext().prec = 60
EPS = Decimal("0.001")


def h(x: Decimal) -> Decimal:
    s = 1 if x >= 0 else -1
    return s * ((abs(x) + 1).sqrt() - 1) + EPS * x


def h_inverse(y: Decimal) -> Decimal:
    """The x with h(x) = y, by bisection: h is strictly increasing."""
    lo, hi = Decimal(-1e12), Decimal(1e12)
    for _ in range(400):
        mid = (lo + hi) / 2
        if h(mid) < y:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def derivative(f, x: Decimal) -> Decimal:
    step = Decimal("1e-20") * max(Decimal(1), abs(x))
    return (f(x + step) - f(x - step)) / (2 * step)


def main() -> None:
    xs = [Decimal(v) for v in ("0", "1e-6", "-1e-6", "0.5", "-0.5", "1", "-1", "3.25", "-7.5",
                               "21", "-100", "1000", "-12345.678", "1e6")]
    ys = [Decimal(v) for v in ("0", "1e-6", "-1e-6", "0.3", "-0.3", "1", "-2.5", "5", "-9.75",
                               "30", "-120", "1000")]
    out = {
        "name": "value_rescaling",
        "description": "R2D2's h and h^-1 with eps 1e-3: h by definition, h^-1 by bisection, "
                       "derivatives by central differences, all in 60-digit decimals",
        "eps": float(EPS),
        "x": [float(x) for x in xs],
        "h": [float(h(x)) for x in xs],
        "h_derivative": [float(derivative(h, x)) for x in xs],
        "y": [float(y) for y in ys],
        "h_inverse": [float(h_inverse(y)) for y in ys],
        "h_inverse_derivative": [float(derivative(h_inverse, y)) for y in ys],
    }
    path = pathlib.Path(__file__).resolve().parents[1] / "test/fixtures/r2d2/value_rescaling.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
