#!/usr/bin/env python3
"""Float64 references for R2D2 (issue 31), computed independently of the C++:

- value rescaling (include/seedrl/algo/value_rescaling.hpp): h from its definition in 60-digit
  decimal arithmetic, h^-1 by bisection on h (not the closed form), both derivatives by central
  finite differences in the same precision -> test/fixtures/r2d2/value_rescaling.json;
- the R2D2 loss (include/seedrl/algo/r2d2_loss.hpp): dueling Q values, n-step double-Q targets
  with value rescaling at terminations and time-limit truncations, the importance-weighted
  squared TD loss after burn-in, its gradient w.r.t. the network's two output streams by
  central finite differences of the loss (targets held, as the loss stops their gradient), and
  the sequences' priorities -> test/fixtures/r2d2/r2d2_loss.json. The targets are written from
  the definition per step (an explicit walk over the window), not as the C++ kernel loops.

    python3 tools/gen_r2d2_fixture.py
"""

from __future__ import annotations

import json
import math
import pathlib
import random
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


# ---- the R2D2 loss --------------------------------------------------------------------------
#
# Time alignment (as every seedrl loss): step t holds the observation x_t, the reward r_t and
# the done/truncated flags that came with it, and the action a_t taken at x_t. Transition t
# goes x_t -a_t-> x_{t+1} with reward r_{t+1}; done_{t+1} means x_{t+1} starts a new episode
# (the automatic reset replaced the final observation).
#
# The n-step target of step s looks at steps s+1 .. s+n:
#   - termination at s+j (done, not truncated): y = h(sum_{k=1..j} g^(k-1) r_{s+k}), no bootstrap;
#   - truncation at s+j, j >= 2: the last real state is x_{s+j-1}: bootstrap there,
#     y = h(sum_{k=1..j-1} g^(k-1) r_{s+k} + g^(j-1) Qbar(x_{s+j-1}));
#   - truncation at s+1: no next state to bootstrap from: the step is left out (mask 0);
#   - the sequence ends (s+j = T is its last step) before n steps: bootstrap at T;
#   - otherwise bootstrap at s+n.
# Qbar(x) = h^-1(Q_target(x, argmax_a Q_online(x, a))) (double Q).


def h_float(x: float, eps: float) -> float:
    return math.copysign(math.sqrt(abs(x) + 1.0) - 1.0, x) + eps * x


def h_inverse_float(y: float, eps: float) -> float:
    # bisection again, in floats: independent of the closed form
    lo, hi = -1e9, 1e9
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if h_float(mid, eps) < y:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def dueling(adv, value):
    mean = sum(adv) / len(adv)
    return [value + a - mean for a in adv]


def targets(case, online_q, target_q):
    T, B, n, g, eps = case["T"], case["B"], case["n"], case["discount"], case["eps"]
    r, done, trunc = case["rewards"], case["dones"], case["truncated"]
    ys, valid = [], []
    for s in range(T):
        for b in range(B):
            ret, k_end, bootstrap = 0.0, None, None
            ok = True
            for j in range(1, n + 1):
                t = s + j
                if t > T:  # past the sequence: bootstrap at its last step
                    bootstrap = T
                    k_end = j - 1
                    break
                i = t * B + b
                if done[i] and trunc[i]:
                    if j == 1:
                        ok = False
                    bootstrap = t - 1
                    k_end = j - 1
                    break
                if done[i]:
                    k_end = j
                    bootstrap = None
                    break
                if j == n:
                    bootstrap = t
                    k_end = n
            if not ok:
                ys.append(0.0)
                valid.append(0)
                continue
            for k in range(1, k_end + 1):
                ret += g ** (k - 1) * r[(s + k) * B + b]
            if bootstrap is not None:
                row = bootstrap * B + b
                q_on = online_q[row]
                best = max(range(len(q_on)), key=lambda a: q_on[a])
                ret += g ** k_end * h_inverse_float(target_q[row][best], eps)
            ys.append(h_float(ret, eps))
            valid.append(1)
    return ys, valid


def r2d2_loss(case, adv, val, ys, valid):
    """The loss and the per-step TD errors for online outputs adv [(T+1)*B][A], val [(T+1)*B]."""
    T, B, burn = case["T"], case["B"], case["burn_in"]
    w = case["importance_weights"]
    n_rows = (T - burn) * B
    total, td = 0.0, [0.0] * (T * B)
    for s in range(burn, T):
        for b in range(B):
            i = s * B + b
            if not valid[i]:
                continue
            q = dueling(adv[i], val[i])[case["actions"][i]]
            td[i] = ys[i] - q
            total += w[b] * 0.5 * td[i] ** 2 / n_rows
    return total, td


def make_case(rng, name, T, B, A, n, burn_in, discount, ends):
    rows = (T + 1) * B
    case = {"name": name, "T": T, "B": B, "num_actions": A, "n": n, "burn_in": burn_in,
            "discount": discount, "eps": 1e-3, "eta": 0.9}
    case["rewards"] = [round(rng.uniform(-2, 2), 3) for _ in range(rows)]
    case["dones"] = [0] * rows
    case["truncated"] = [0] * rows
    for t, b, kind in ends:
        case["dones"][t * B + b] = 1
        case["truncated"][t * B + b] = 1 if kind == "truncated" else 0
    case["actions"] = [rng.randrange(A) for _ in range(rows)]
    case["advantages"] = [[rng.uniform(-3, 3) for _ in range(A)] for _ in range(rows)]
    case["values"] = [rng.uniform(-3, 3) for _ in range(rows)]
    case["target_advantages"] = [[rng.uniform(-3, 3) for _ in range(A)] for _ in range(rows)]
    case["target_values"] = [rng.uniform(-3, 3) for _ in range(rows)]
    case["importance_weights"] = [round(rng.uniform(0.2, 1.0), 3) for _ in range(B)]
    online_q = [dueling(a, v) for a, v in zip(case["advantages"], case["values"])]
    target_q = [dueling(a, v) for a, v in zip(case["target_advantages"], case["target_values"])]
    ys, valid = targets(case, online_q, target_q)
    loss, td = r2d2_loss(case, case["advantages"], case["values"], ys, valid)
    # gradient w.r.t. both output streams by central differences, the targets held
    step = 1e-6
    grad_adv = [[0.0] * A for _ in range(rows)]
    grad_val = [0.0] * rows
    for i in range(rows):
        for a in range(A):
            adv = [list(x) for x in case["advantages"]]
            adv[i][a] += step
            up = r2d2_loss(case, adv, case["values"], ys, valid)[0]
            adv[i][a] -= 2 * step
            down = r2d2_loss(case, adv, case["values"], ys, valid)[0]
            grad_adv[i][a] = (up - down) / (2 * step)
        val = list(case["values"])
        val[i] += step
        up = r2d2_loss(case, case["advantages"], val, ys, valid)[0]
        val[i] -= 2 * step
        down = r2d2_loss(case, case["advantages"], val, ys, valid)[0]
        grad_val[i] = (up - down) / (2 * step)
    priorities = []
    for b in range(B):
        errs = [abs(td[s * B + b]) for s in range(burn_in, T) if valid[s * B + b]]
        priorities.append(case["eta"] * max(errs) + (1 - case["eta"]) * sum(errs) / len(errs)
                          if errs else 0.0)
    case["targets"] = ys
    case["valid"] = valid
    case["td_errors"] = td
    case["loss"] = loss
    case["grad_advantages"] = [x for row in grad_adv for x in row]
    case["grad_values"] = grad_val
    case["priorities"] = priorities
    case["advantages"] = [x for row in case["advantages"] for x in row]
    case["target_advantages"] = [x for row in case["target_advantages"] for x in row]
    return case


def r2d2_cases() -> dict:
    rng = random.Random(31)
    cases = [
        # column 0: a termination inside windows; column 1: truncations at j = 1 and j >= 2;
        # column 2: none (every window reaches n or the sequence's end); a done at step 0 and
        # one at the last step
        make_case(rng, "ends of every kind", T=9, B=3, A=4, n=3, burn_in=2, discount=0.9,
                  ends=[(5, 0, "terminated"), (0, 1, "terminated"), (4, 1, "truncated"),
                        (8, 1, "truncated"), (9, 0, "terminated")]),
        # a window longer than the sequence, no burn-in, R2D2's discount
        make_case(rng, "n beyond the sequence", T=4, B=2, A=3, n=5, burn_in=0, discount=0.997,
                  ends=[(2, 1, "truncated")]),
        # one-step targets, burn-in over half the sequence, a truncation inside the burn-in
        make_case(rng, "one-step, long burn-in", T=6, B=2, A=2, n=1, burn_in=3, discount=0.99,
                  ends=[(2, 0, "truncated"), (5, 1, "truncated"), (6, 0, "terminated")]),
    ]
    return {"name": "r2d2_loss",
            "description": "R2D2's dueling n-step double-Q loss with value rescaling, float64; "
                           "gradients by central differences with the targets held",
            "cases": cases}


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
    path = path.parent / "r2d2_loss.json"
    path.write_text(json.dumps(r2d2_cases()) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
