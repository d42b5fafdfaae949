#!/usr/bin/env python3
"""Generate test/fixtures/gaussian/*.json: float64 reference values for the diagonal Gaussian
policy distribution (include/seedrl/net/diag_gaussian.hpp).

An independent reference: plain formulas in float64 through Python's math module, written
along different routes from the C++ code, and every gradient by central finite differences
(with one Richardson step) of those formulas, never from a derivative formula:

    s = exp(clamp(log_std, -20, 2))                       (the clamp is min(max(., -20), 2))
    log N(u)  = sum_i -(u_i - mean_i)^2 / (2 s_i^2) - log(s_i) - log(2 pi) / 2
    H         = sum_i log(s_i * sqrt(2 pi e))
    squashed: a_i = low_i + (tanh(u_i) + 1) / 2 * (high_i - low_i)
              log p(a) = log N(u) - sum_i log |da_i/du_i|,
              log |da/du| = log((high - low) / 2) - 2 log(cosh(u))      (sech^2 = 1 - tanh^2)
    clipped:  a_i = min(max(u_i, low_i), high_i), log-prob of the unclipped u: log N(u)
    L         = sum_b log_prob_coef[b] * log p_b + entropy_coef[b] * H_b

Layouts: "state_dependent" rows of `outputs` hold D means then D log-stds; "state_independent"
rows hold D means and `shared_log_std` the D log-stds of every row. Gradients are with respect
to the raw (unclamped) log-std, so 0 where it lies outside [-20, 2]; test log-stds stay at
least 0.05 away from the clamp's ends so that no difference straddles one.

Expected values, flattened row-major:
    log_prob [B], entropy [B], action [B*D] (what the env gets),
    d_log_prob_d_mean, d_log_prob_d_log_std, d_entropy_d_log_std [B*D]  (row b's own function
        with respect to its means and to the log-std vector it uses, shared or not),
    grad_outputs [B * row width], grad_shared_log_std [D or 0]  (of L, for the batch helper).

All inputs are float32 numbers widened to float64, so the C++ side runs the same case in float
and double.

Usage: python3 tools/gen_gaussian_fixture.py [output_dir]   (default test/fixtures/gaussian)
"""
import json
import math
import os
import sys

import numpy as np

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
# Tolerances, rule |got - expected| <= abs + rel * |expected|. Values are formulas in both
# languages (double: a few ulps of the largest term). Gradients come from finite differences
# here, good to about 1e-10 relative (checked below against the closed forms). Float: inputs
# are the same, arithmetic is float (eps 6e-8): with terms up to |l| = 20 and z^2, summed over
# D <= 6 dimensions, errors stay below 100 ulps of the result's magnitude plus 1e-5 absolute.
TOLERANCE = {
    "rule": "|got - expected| <= abs + rel*|expected|",
    "double": {"value": {"abs": 1e-11, "rel": 1e-12}, "gradient": {"abs": 1e-8, "rel": 1e-8}},
    "float": {"value": {"abs": 1e-4, "rel": 1e-5}, "gradient": {"abs": 1e-4, "rel": 1e-5}},
}


def f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def clamp(l):
    return min(max(l, LOG_STD_MIN), LOG_STD_MAX)


def row_log_normal(mean, log_std, u):
    total = 0.0
    for m, l, x in zip(mean, log_std, u):
        s = math.exp(clamp(l))
        total += -((x - m) ** 2) / (2.0 * s * s) - math.log(s) - 0.5 * math.log(2.0 * math.pi)
    return total


def row_log_det(u, low, high):
    return sum(math.log((hi - lo) / 2.0) - 2.0 * math.log(math.cosh(x)) for x, lo, hi in zip(u, low, high))


def row_log_prob(mean, log_std, u, low, high, squash):
    lp = row_log_normal(mean, log_std, u)
    return lp - row_log_det(u, low, high) if squash else lp


def row_entropy(log_std):
    return sum(math.log(math.exp(clamp(l)) * math.sqrt(2.0 * math.pi * math.e)) for l in log_std)


def row_action(u, low, high, squash):
    if squash:
        return [lo + (math.tanh(x) + 1.0) / 2.0 * (hi - lo) for x, lo, hi in zip(u, low, high)]
    return [min(max(x, lo), hi) for x, lo, hi in zip(u, low, high)]


def derivative(f, x0, h=1e-3):
    """Central difference with one Richardson step: error O(h^4). h is rounded to a power of
    two so that x0 +- h and x0 +- h/2 are exact (x0 is a float32 number) and the step taken
    is the step divided by."""
    h = 2.0 ** round(math.log2(h))
    def central(step):
        return (f(x0 + step) - f(x0 - step)) / (2.0 * step)
    return (4.0 * central(h / 2.0) - central(h)) / 3.0


def gradient(f, values, steps=None):
    """d f / d values[k] for every k; f takes the full list. steps[k] (default 1e-3) is the
    difference step: a mean's is 0.1 of its std, the scale on which the log-prob changes, or
    the rounding of f would swamp the difference at std = exp(-20) (the log-prob is quadratic
    in a mean, so a large step costs no truncation error)."""
    out = []
    for k in range(len(values)):
        def fk(x, k=k):
            v = list(values)
            v[k] = x
            return f(v)
        out.append(derivative(fk, values[k], 1e-3 if steps is None else steps[k]))
    return out


def mean_steps(log_std):
    return [0.1 * math.exp(clamp(l)) for l in log_std]


def make_case(name, description, D, B, layout, squash, mean, log_std, u, low, high, lp_coef, ent_coef):
    """mean [B, D], log_std [B, D] (rows equal when state_independent), u [B, D]."""
    mean, log_std, u = f32(mean), f32(log_std), f32(u)
    # A sample equal to its mean in float32 (common at std = exp(-20)) would put the mean's
    # gradient at 0, where finite differences have only absolute accuracy: move it one float.
    same = u == mean
    u[same] = np.nextafter(mean[same].astype(np.float32), np.float32(np.inf)).astype(np.float64)
    low, high = f32(low), f32(high)
    lp_coef, ent_coef = f32(lp_coef), f32(ent_coef)
    dependent = layout == "state_dependent"
    for l in log_std.reshape(-1):
        assert abs(l - LOG_STD_MIN) > 0.05 and abs(l - LOG_STD_MAX) > 0.05, l
    if dependent:
        outputs = np.concatenate([mean, log_std], axis=1)
        shared = np.zeros(0)
    else:
        assert all((log_std[b] == log_std[0]).all() for b in range(B))
        outputs = mean.copy()
        shared = log_std[0].copy()
    lo, hi = list(low), list(high)

    exp = {k: [] for k in ["log_prob", "entropy", "action", "d_log_prob_d_mean",
                           "d_log_prob_d_log_std", "d_entropy_d_log_std"]}
    for b in range(B):
        m, l, x = list(mean[b]), list(log_std[b]), list(u[b])
        exp["log_prob"].append(row_log_prob(m, l, x, lo, hi, squash))
        exp["entropy"].append(row_entropy(l))
        exp["action"] += row_action(x, lo, hi, squash)
        exp["d_log_prob_d_mean"] += gradient(lambda mv: row_log_prob(mv, l, x, lo, hi, squash), m,
                                             mean_steps(l))
        exp["d_log_prob_d_log_std"] += gradient(lambda lv: row_log_prob(m, lv, x, lo, hi, squash), l)
        exp["d_entropy_d_log_std"] += gradient(row_entropy, l)

    def total(out_flat, shared_flat):
        out = np.asarray(out_flat).reshape(B, -1)
        acc = 0.0
        for b in range(B):
            m = list(out[b, :D])
            l = list(out[b, D:]) if dependent else list(shared_flat)
            acc += lp_coef[b] * row_log_prob(m, l, list(u[b]), lo, hi, squash)
            acc += ent_coef[b] * row_entropy(l)
        return acc

    out_list, shared_list = list(outputs.reshape(-1)), list(shared)
    steps = []
    for b in range(B):
        steps += mean_steps(log_std[b]) + ([1e-3] * D if dependent else [])
    exp["grad_outputs"] = gradient(lambda v: total(v, shared_list), out_list, steps)
    exp["grad_shared_log_std"] = gradient(lambda v: total(out_list, v), shared_list)

    check_against_closed_forms(exp, mean, log_std, u, lp_coef, ent_coef, dependent, D, B)

    return {
        "name": name,
        "description": description,
        "D": D,
        "B": B,
        "layout": layout,
        "squash": squash,
        "inputs": {
            "outputs": list(outputs.reshape(-1)),
            "shared_log_std": list(shared),
            "u": list(u.reshape(-1)),
            "low": lo,
            "high": hi,
            "log_prob_coef": list(lp_coef),
            "entropy_coef": list(ent_coef),
        },
        "expected": exp,
        "tolerance": TOLERANCE,
    }


def check_against_closed_forms(exp, mean, log_std, u, lp_coef, ent_coef, dependent, D, B):
    """Only a check of the finite differences' accuracy (nothing from here is stored)."""
    tol = TOLERANCE["double"]["gradient"]

    def close(got, want):
        return abs(got - want) <= (tol["abs"] + tol["rel"] * abs(want)) / 10.0

    inside = lambda l: 1.0 if LOG_STD_MIN <= l <= LOG_STD_MAX else 0.0
    shared = np.zeros(D)
    for b in range(B):
        for i in range(D):
            l = log_std[b, i]
            s = math.exp(clamp(l))
            z = (u[b, i] - mean[b, i]) / s
            k = b * D + i
            assert close(exp["d_log_prob_d_mean"][k], z / s), (k, exp["d_log_prob_d_mean"][k], z / s)
            assert close(exp["d_log_prob_d_log_std"][k], (z * z - 1.0) * inside(l))
            assert close(exp["d_entropy_d_log_std"][k], inside(l))
            g_l = (lp_coef[b] * (z * z - 1.0) + ent_coef[b]) * inside(l)
            width = 2 * D if dependent else D
            assert close(exp["grad_outputs"][b * width + i], lp_coef[b] * z / s), (b, i, l, z, exp["grad_outputs"][b * width + i], lp_coef[b] * z / s)
            if dependent:
                assert close(exp["grad_outputs"][b * width + D + i], g_l)
            else:
                shared[i] += g_l
    if not dependent:
        for i in range(D):
            assert close(exp["grad_shared_log_std"][i], shared[i])


def random_case(rng, name, description, D, B, layout, squash, log_std_range=(-1.5, 0.5),
                fixed_log_std=None, noise_scale=1.0, bounds=None):
    mean = rng.uniform(-1.0, 1.0, size=(B, D))
    if fixed_log_std is not None:
        log_std = np.tile(np.asarray(fixed_log_std, dtype=np.float64), (B, 1))
        if layout == "state_dependent":
            log_std = np.stack([rng.permutation(fixed_log_std) for _ in range(B)])
    elif layout == "state_dependent":
        log_std = rng.uniform(*log_std_range, size=(B, D))
    else:
        log_std = np.tile(rng.uniform(*log_std_range, size=D), (B, 1))
    std = np.exp(np.clip(log_std, LOG_STD_MIN, LOG_STD_MAX))
    u = mean + noise_scale * std * rng.standard_normal(size=(B, D))
    if bounds is None:
        low = rng.uniform(-2.0, -0.5, size=D)
        high = low + rng.uniform(0.5, 3.0, size=D)
    else:
        low, high = bounds
    lp_coef = rng.uniform(-2.0, 2.0, size=B)
    ent_coef = rng.uniform(0.0, 0.1, size=B)
    return make_case(name, description, D, B, layout, squash, mean, log_std, u, low, high, lp_coef, ent_coef)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "test", "fixtures", "gaussian")
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20261203)
    cases = [
        random_case(rng, "d1_dependent_clip", "D = 1, state-dependent log-std, clipping; "
                    "samples at 2 std so some fall outside the bounds", 1, 6, "state_dependent",
                    False, noise_scale=2.0, bounds=([-0.5], [0.5])),
        random_case(rng, "d3_independent_clip", "D = 3, shared log-std, clipping", 3, 5,
                    "state_independent", False),
        random_case(rng, "d4_dependent_squash", "D = 4, state-dependent log-std, tanh squashing "
                    "into asymmetric bounds", 4, 5, "state_dependent", True),
        random_case(rng, "d6_independent_squash", "D = 6, shared log-std, tanh squashing", 6, 4,
                    "state_independent", True, bounds=([-1.0] * 6, [1.0] * 6)),
        random_case(rng, "extreme_log_std_dependent_clip", "log-stds outside and near the clamp "
                    "range [-20, 2], state-dependent, clipping", 6, 3, "state_dependent", False,
                    fixed_log_std=[-25.0, -19.9, 1.9, 5.0, 30.0, -100.0]),
        random_case(rng, "extreme_log_std_independent_squash", "shared log-stds outside and "
                    "near the clamp range, tanh squashing", 4, 4, "state_independent", True,
                    fixed_log_std=[-19.9, 1.9, 3.0, -21.0]),
    ]
    # Actions near the bounds: pre-squash u of +-5 .. +-20, where tanh rounds to +-1 in float
    # (|u| > 9) and in double (|u| > 19) and 1 - tanh^2 underflows; the log-prob stays finite.
    u = np.array([[5.0, -6.0], [9.5, -12.0], [15.0, -20.0], [-19.5, 17.0]])
    mean = u + np.array([[0.3, -0.2], [0.1, 0.5], [-0.4, 0.2], [0.25, -0.1]])
    log_std = np.array([[0.0, -0.5], [0.5, 1.0], [-1.0, 0.2], [1.5, 0.0]])
    cases.append(make_case("near_bounds_squash", "pre-squash samples where tanh saturates, "
                           "state-dependent, bounds [-1, 1] and [0, 4]", 2, 4, "state_dependent", True,
                           mean, log_std, u, [-1.0, 0.0], [1.0, 4.0], [1.0, -0.5, 2.0, 0.25],
                           [0.01, 0.0, 0.05, 0.02]))
    u = np.array([[1.0, -1.0, 0.999], [1.5, -3.0, 0.0], [-1.0001, 2.0, -0.5]])
    mean = np.array([[0.9, -0.8, 1.2], [1.1, -2.0, 0.1], [-0.7, 1.0, -0.6]])
    cases.append(make_case("near_bounds_clip", "samples on, just inside and outside the bounds "
                           "[-1, 1], shared log-std, clipping", 3, 3, "state_independent", False,
                           mean, np.tile([-0.3, 0.4, -2.0], (3, 1)), u, [-1.0] * 3, [1.0] * 3,
                           [0.5, -1.0, 1.5], [0.01, 0.01, 0.01]))
    total_bytes = 0
    for case in cases:
        path = os.path.join(out_dir, case["name"] + ".json")
        text = json.dumps(case, indent=None, separators=(",", ":"))
        with open(path, "w") as f:
            f.write(text + "\n")
        total_bytes += len(text) + 1
    print(f"wrote {len(cases)} fixtures, {total_bytes} bytes, to {out_dir}")


if __name__ == "__main__":
    main()
