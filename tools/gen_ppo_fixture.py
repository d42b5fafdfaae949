#!/usr/bin/env python3
"""Writes test/fixtures/ppo/*.json: PPO loss terms and gradients in float64, from numpy code
that shares nothing with the C++ loss (include/seedrl/algo/ppo_loss.hpp).

The loss is decoupled PPO (Hilton, Cobbe and Schulman 2021): the surrogate's ratio is
pi / pi_prox, with pi_prox the policy of proximal_logits (the learner's outputs at the start of
the update), and each step is weighted by w = min(pi_prox / mu, proximal_weight_clip).
Advantages and value targets come from the proximal values old_values (U) and, for V-trace,
from log pi_prox - log mu. A case without proximal_logits or old_values uses the current
logits or values there, as constants.

Every case is a random batch of B unrolls of T+1 steps, time-major (index t*B+b; logits
[(T+1)*B*A]), with inputs rounded to float32 so float and double runs see the same numbers.
Alignment (SEED's): transition t uses logits[t], actions[t], behaviour_log_probs[t],
r_t = rewards[t+1], gamma_t = discount*(1-dones[t+1]), bootstrap values[T]; truncated[t+1]
cuts transition t (no policy or value term; the advantage recursion restarts there).

Advantages and value targets are written as they are defined (V-trace as the paper's direct sum,
GAE as the direct sum of discounted TD errors), not as the backward recursions the C++ runs.
The analytic gradient of the loss (advantages and targets held constant) is checked against
central finite differences before anything is written; the script fails if they disagree.

Usage: python3 tools/gen_ppo_fixture.py [output_dir]   (default test/fixtures/ppo)
"""
import json
import pathlib
import sys

import numpy as np


def f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def log_softmax(z):
    m = z.max(axis=-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))


def policy_eval(c, inp, logits):
    """[T+1, B] log pi(a_t) and entropy H(pi_t), and per row the gradients of log pi and of H
    w.r.t. the row's outputs [T+1, B, A]. Categorical: A logits. Gaussian (c["policy"]): A = 2D
    outputs, D means then D log-stds clamped to [-20, 2] (gradient 0 outside, ends included),
    evaluated at the pre-squash sample u (inp["raw_actions"]); with squashing the log-prob gains
    -sum log(1 - tanh(u)^2) - sum log((high - low) / 2), constant in the outputs."""
    T, B, A = c["T"], c["B"], c["A"]
    z = logits.reshape(T + 1, B, A)
    if c.get("policy", "categorical") == "categorical":
        lp = log_softmax(z)
        p = np.exp(lp)
        acts = inp["actions"].reshape(T + 1, B).clip(0, A - 1)
        log_pi = np.take_along_axis(lp, acts[..., None], axis=-1)[..., 0]
        H = -np.sum(p * lp, axis=-1)
        d_logpi = np.eye(A)[acts] - p
        d_H = -p * (lp + H[..., None])
        return log_pi, H, d_logpi, d_H
    D = A // 2
    mean, raw_ls = z[..., :D], z[..., D:]
    ls = np.clip(raw_ls, -20.0, 2.0)
    inside = ((raw_ls >= -20.0) & (raw_ls <= 2.0)).astype(np.float64)
    u = inp["raw_actions"].reshape(T + 1, B, D)
    zz = (u - mean) / np.exp(ls)
    log_n = np.sum(-0.5 * zz ** 2 - ls - 0.5 * np.log(2 * np.pi), axis=-1)
    if c["squash"]:
        lo, hi = np.asarray(c["low"]), np.asarray(c["high"])
        log_n = log_n - np.sum(np.log(1 - np.tanh(u) ** 2), axis=-1) \
            - np.sum(np.log((hi - lo) / 2))
    H = np.sum(0.5 + 0.5 * np.log(2 * np.pi) + ls, axis=-1)
    d_logpi = np.concatenate([zz / np.exp(ls), (zz ** 2 - 1) * inside], axis=-1)
    d_H = np.concatenate([np.zeros_like(mean), inside], axis=-1)
    return log_n, H, d_logpi, d_H


def proximal_values(inp):
    return inp["old_values"] if inp["old_values"].size else inp["values"]


def proximal_logits(inp):
    return inp["proximal_logits"] if inp["proximal_logits"].size else inp["logits"]


def td_parts(c, inp):
    """Per transition [T, B]: r_t, gamma_t, U_t, U_{t+1}, cut_t (U the proximal values)."""
    T, B = c["T"], c["B"]
    values = proximal_values(inp).reshape(T + 1, B)
    r = inp["rewards"].reshape(T + 1, B)[1:]
    gamma = c["discount"] * (1.0 - inp["dones"].reshape(T + 1, B)[1:])
    cut = inp["truncated"].reshape(T + 1, B)[1:] != 0
    return r, gamma, values[:T], values[1:], cut


def segment_end(cut, s, b, T):
    """The first cut step e >= s of column b, or T: sums from s stop before it."""
    for e in range(s, T):
        if cut[e, b]:
            return e
    return T


def gae_direct(c, inp):
    """Adv_s = sum_{t=s}^{e-1} (prod_{i=s}^{t-1} gamma_i lambda) delta_t, e the next cut."""
    T, B = c["T"], c["B"]
    r, gamma, v, v_next, cut = td_parts(c, inp)
    delta = r + gamma * v_next - v
    adv = np.zeros((T, B))
    for b in range(B):
        for s in range(T):
            if cut[s, b]:
                continue
            e = segment_end(cut, s, b, T)
            coef = 1.0
            for t in range(s, e):
                adv[s, b] += coef * delta[t, b]
                coef *= gamma[t, b] * c["lambda"]
    return adv, adv + v


def vtrace_direct(c, inp, log_rho):
    """vs_s = V_s + sum_{t=s}^{e-1} (prod_{i<t} gamma_i c_i) rho_bar_t delta_t (IMPALA eq. 1),
    stopping before the next cut e; Adv_s = r_s + gamma_s vs_{s+1} - V_s (vs_T = bootstrap; a
    cut step has vs = V)."""
    T, B = c["T"], c["B"]
    r, gamma, v, v_next, cut = td_parts(c, inp)
    rho = np.exp(log_rho)
    rho_bar = c["clip_rho_threshold"]
    clipped_rho = rho if rho_bar is None else np.minimum(rho_bar, rho)
    cs = c["lambda"] * np.minimum(1.0, rho)
    delta = clipped_rho * (r + gamma * v_next - v)
    vs = v.copy()
    for b in range(B):
        for s in range(T):
            if cut[s, b]:
                continue
            e = segment_end(cut, s, b, T)
            coef = 1.0
            for t in range(s, e):
                vs[s, b] += coef * delta[t, b]
                coef *= gamma[t, b] * cs[t, b]
    vs_next = np.concatenate([vs[1:], v_next[-1:]], axis=0)
    adv = np.where(cut, 0.0, r + gamma * vs_next - v)
    return adv, vs


def advantages_and_targets(c, inp):
    T, B = c["T"], c["B"]
    log_prox = policy_eval(c, inp, proximal_logits(inp))[0][:T]
    log_rho = log_prox - inp["behaviour_log_probs"].reshape(T + 1, B)[:T]
    if c["advantage"] == "gae":
        adv, target = gae_direct(c, inp)
    else:
        adv, target = vtrace_direct(c, inp, log_rho)
    cut = td_parts(c, inp)[4]
    kept = ~cut
    if c["normalize_advantages"] and kept.any():
        m = adv[kept].mean()
        s = np.sqrt(((adv[kept] - m) ** 2).mean())
        adv = np.where(kept, (adv - m) / (s + c["advantage_epsilon"]), 0.0)
    return adv, target


def loss(c, inp, logits, values, adv, target):
    """The loss terms with advantages and targets given (held constant)."""
    T, B = c["T"], c["B"]
    n = T * B
    log_pi_all, H_all = policy_eval(c, inp, logits)[:2]
    log_pi = log_pi_all[:T]
    log_prox = policy_eval(c, inp, proximal_logits(inp))[0][:T] \
        if inp["proximal_logits"].size else log_pi
    log_mu = inp["behaviour_log_probs"].reshape(T + 1, B)[:T]
    log_ratio = log_pi - log_prox
    ratio = np.exp(log_ratio)
    w = proximal_weight(c, log_prox, log_mu)
    eps = c["clip_epsilon"]
    kept = ~td_parts(c, inp)[4]
    surr = w * np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv)
    policy = -np.sum(np.where(kept, surr, 0.0)) / n
    v = values.reshape(T + 1, B)[:T]
    sq = (v - target) ** 2
    if c["value_clip"] is not None:
        old = proximal_values(inp).reshape(T + 1, B)[:T]
        vc = old + np.clip(v - old, -c["value_clip"], c["value_clip"])
        sq = np.maximum(sq, (vc - target) ** 2)
    baseline = c["value_cost"] * 0.5 * np.sum(np.where(kept, sq, 0.0)) / n
    entropy = -c["entropy_cost"] * H_all[:T].sum() / n
    k = kept.sum()
    kl = np.sum(np.where(kept, ratio - 1 - log_ratio, 0.0)) / k if k else 0.0
    clipfrac = np.sum(kept & (np.abs(ratio - 1) > eps)) / k if k else 0.0
    behaviour = np.sum(kept & (np.abs(np.exp(log_pi - log_mu) - 1) > eps)) / k if k else 0.0
    return {"total": policy + baseline + entropy, "policy": policy, "baseline": baseline,
            "entropy": entropy, "approx_kl": float(kl), "clip_fraction": float(clipfrac),
            "behaviour_clip_fraction": float(behaviour)}


def proximal_weight(c, log_prox, log_mu):
    w = np.exp(log_prox - log_mu)
    return w if c["proximal_weight_clip"] is None else np.minimum(w, c["proximal_weight_clip"])


def analytic_gradient(c, inp, logits, values, adv, target):
    T, B, A = c["T"], c["B"], c["A"]
    n = T * B
    log_pi_all, _, d_logpi, dH = policy_eval(c, inp, logits)
    log_pi = log_pi_all[:T]
    log_prox = policy_eval(c, inp, proximal_logits(inp))[0][:T] \
        if inp["proximal_logits"].size else log_pi
    ratio = np.exp(log_pi - log_prox)
    w = proximal_weight(c, log_prox, inp["behaviour_log_probs"].reshape(T + 1, B)[:T])
    eps = c["clip_epsilon"]
    kept = ~td_parts(c, inp)[4]
    # d min(ratio A, clip(ratio) A) / d log pi: ratio A where the unclipped term is smaller.
    unclipped = ratio * adv <= np.clip(ratio, 1 - eps, 1 + eps) * adv
    inside = (ratio > 1 - eps) & (ratio < 1 + eps)
    d_surr = np.where(unclipped | inside, w * ratio * adv, 0.0)
    g_logp = np.where(kept, -d_surr / n, 0.0)
    g = np.zeros((T + 1, B, A))
    g[:T] = g_logp[..., None] * d_logpi[:T] - c["entropy_cost"] / n * dH[:T]
    v = values.reshape(T + 1, B)[:T]
    dv = v - target
    if c["value_clip"] is not None:
        old = proximal_values(inp).reshape(T + 1, B)[:T]
        d = v - old
        vc = old + np.clip(d, -c["value_clip"], c["value_clip"])
        clipped_larger = (vc - target) ** 2 > dv ** 2
        flat = np.abs(d) >= c["value_clip"]
        dv = np.where(clipped_larger, np.where(flat, 0.0, vc - target), dv)
    gv = np.zeros((T + 1, B))
    gv[:T] = np.where(kept, c["value_cost"] * dv / n, 0.0)
    return g.reshape(-1), gv.reshape(-1)


def finite_difference_check(c, inp, adv, target, g_logits, g_values):
    # Proximal outputs are constants: a case without them differentiates with its own pinned.
    inp = {**inp, "proximal_logits": proximal_logits(inp), "old_values": proximal_values(inp)}
    h = 1e-6
    worst = 0.0
    scale = max(np.abs(g_logits).max(), np.abs(g_values).max())
    for name, arr, g in (("logits", inp["logits"], g_logits), ("values", inp["values"], g_values)):
        for j in range(arr.size):
            plus, minus = arr.copy(), arr.copy()
            plus[j] += h
            minus[j] -= h
            args = lambda x: (x, inp["values"]) if name == "logits" else (inp["logits"], x)
            fp = loss(c, inp, *args(plus), adv, target)["total"]
            fm = loss(c, inp, *args(minus), adv, target)["total"]
            num = (fp - fm) / (2 * h)
            err = abs(num - g[j]) / max(scale, 1e-12)
            worst = max(worst, err)
            if err > 1e-6:
                raise SystemExit(f"{c['name']}: d/d{name}[{j}] analytic {g[j]} vs numeric {num}")
    return worst


def make_case(name, T, B, A, seed, **overrides):
    c = {"name": name, "T": T, "B": B, "A": A, "discount": 0.99, "lambda": 0.95,
         "advantage": "gae", "clip_epsilon": 0.2, "value_clip": None, "value_cost": 0.5,
         "entropy_cost": 0.01, "normalize_advantages": True, "advantage_epsilon": 1e-8,
         "clip_rho_threshold": 1.0, "proximal_weight_clip": 1.0}
    c.update(overrides)
    proximal = c.pop("proximal", True)
    for k in ("discount", "lambda", "clip_epsilon", "value_clip", "value_cost", "entropy_cost",
              "advantage_epsilon", "clip_rho_threshold", "proximal_weight_clip"):
        if c[k] is not None:
            c[k] = float(f32(c[k]))
    rng = np.random.default_rng(seed)
    steps = (T + 1) * B
    inp = {}
    gaussian = c.get("policy", "categorical") == "gaussian"
    if gaussian:
        D = A // 2
        c["low"] = [float(f32(x)) for x in rng.uniform(-3, -0.5, D)]
        c["high"] = [float(f32(x)) for x in rng.uniform(0.5, 3, D)]
        means = rng.normal(0, 1.0, (steps, D))
        log_stds = rng.uniform(-1.5, 0.8, (steps, D))
        log_stds[1, 0] = 2.5  # beyond the clamp: no gradient through it
        inp["logits"] = f32(np.concatenate([means, log_stds], axis=1).ravel())
        inp["raw_actions"] = f32(means + np.exp(log_stds.clip(-20, 2)) *
                                 rng.normal(0, 1.2, (steps, D))).ravel()
        inp["actions"] = np.zeros(steps, dtype=np.int64)
        inp["values"] = f32(rng.uniform(-2, 2, steps))
    else:  # the draws in the order of the categorical fixtures before Gaussian ones existed
        inp["logits"] = f32(rng.normal(0, 1.5, steps * A))
        inp["values"] = f32(rng.uniform(-2, 2, steps))
        inp["actions"] = rng.integers(0, A, steps)
        inp["raw_actions"] = np.zeros(0)
    # The proximal policy: the current one before some update steps, so that ratios to it fall
    # outside [1-eps, 1+eps] on both sides; the behaviour policy lags it by more noise.
    moved = 0.1 if gaussian else 0.5  # a Gaussian's density moves faster with its outputs
    inp["proximal_logits"] = (f32(inp["logits"] + rng.normal(0, moved, steps * A)) if proximal
                              else np.zeros(0))
    prox = policy_eval(c, inp, proximal_logits(inp))[0].ravel()
    inp["behaviour_log_probs"] = f32(prox + rng.normal(0, 0.4, steps))
    inp["rewards"] = f32(rng.uniform(-1, 1, steps))
    dones = (rng.uniform(size=steps) < 0.2).astype(np.int64)
    dones[(T // 2 + 1) * B - 1] = 1  # an episode end inside the unroll whatever the draws
    truncated = np.zeros(steps, dtype=np.int64)
    if c.pop("truncations", True) and T >= 2:
        truncated = dones * (rng.uniform(size=steps) < 0.5)
        truncated[(T // 2 + 1) * B - 1] = 1
        dones[B * T + B - 1] = 1  # and a time limit in the last transition too
        truncated[B * T + B - 1] = 1
    inp["dones"] = dones
    inp["truncated"] = truncated
    inp["old_values"] = (f32(inp["values"] + rng.normal(0, 0.5, steps))
                         if proximal or c["value_clip"] is not None else np.zeros(0))

    adv, target = advantages_and_targets(c, inp)
    terms = loss(c, inp, inp["logits"], inp["values"], adv, target)
    g_logits, g_values = analytic_gradient(c, inp, inp["logits"], inp["values"], adv, target)
    fd = finite_difference_check(c, inp, adv, target, g_logits, g_values)
    print(f"{name}: total {terms['total']:.6f} clip_fraction {terms['clip_fraction']:.2f} "
          f"kept {(~td_parts(c, inp)[4]).sum()}/{T * B} finite-difference error {fd:.1e}")
    if proximal and not 0.0 < terms["clip_fraction"] < 1.0:
        raise SystemExit(f"{name}: no ratio outside the clip range, or all of them")
    if not terms["behaviour_clip_fraction"] > 0.0:
        raise SystemExit(f"{name}: no ratio to mu outside the clip range")
    w = proximal_weight(c, policy_eval(c, inp, proximal_logits(inp))[0][:T],
                        inp["behaviour_log_probs"].reshape(T + 1, B)[:T])
    if c["proximal_weight_clip"] is not None and not (w == c["proximal_weight_clip"]).any():
        raise SystemExit(f"{name}: no proximal weight truncated")
    if c["value_clip"] is not None:
        plain = loss({**c, "value_clip": None}, inp, inp["logits"], inp["values"], adv, target)
        if not terms["baseline"] > plain["baseline"]:
            raise SystemExit(f"{name}: value clipping never takes the clipped error")
    # Inputs are float32 values: the shortest repr of each double round-trips exactly.
    r6 = lambda a: [float(x) for x in np.asarray(a, dtype=np.float64).ravel()]
    return {
        "name": name,
        "description": "Decoupled PPO loss (include/seedrl/algo/ppo_loss.hpp) on a random batch, float64 "
                       "reference from tools/gen_ppo_fixture.py. Arrays time-major, index t*B+b "
                       "(logits t*B*A+b*A+a; a Gaussian policy's rows are D means then D "
                       "log-stds, raw_actions t*B*D+b*D+i). advantages are after normalisation; targets are "
                       "the value targets R; both [T*B]. Gradients [(T+1)*B(*A)], step T zero.",
        "T": T, "B": B, "A": A,
        "config": {k: c[k] for k in ("discount", "lambda", "advantage", "clip_epsilon",
                                     "value_clip", "value_cost", "entropy_cost",
                                     "normalize_advantages", "advantage_epsilon",
                                     "clip_rho_threshold", "proximal_weight_clip")},
        "policy": {"kind": c.get("policy", "categorical"), "squash": c.get("squash", False),
                   "low": c.get("low", []), "high": c.get("high", [])},
        "inputs": {"logits": r6(inp["logits"]), "values": r6(inp["values"]),
                   "old_values": r6(inp["old_values"]),
                   "proximal_logits": r6(inp["proximal_logits"]),
                   "actions": [int(a) for a in inp["actions"]],
                   "raw_actions": r6(inp["raw_actions"]),
                   "behaviour_log_probs": r6(inp["behaviour_log_probs"]),
                   "rewards": r6(inp["rewards"]),
                   "dones": [int(d) for d in inp["dones"]],
                   "truncated": [int(d) for d in inp["truncated"]]},
        "expected": {**{k: float(v) for k, v in terms.items()},
                     "advantages": [float(x) for x in adv.ravel()],
                     "targets": [float(x) for x in target.ravel()],
                     "grad_logits": [float(x) for x in g_logits],
                     "grad_values": [float(x) for x in g_values]},
        "tolerance": {"double": {"abs": 1e-10, "rel": 1e-9},
                      "float": {"abs": 1e-6, "rel": 1e-4},
                      "rule": "|got - expected| <= abs + rel * |expected|, element by element"},
    }


CASES = [
    dict(name="gae_normalized", T=5, B=3, A=4, seed=1),
    dict(name="gae_raw_value_clip", T=6, B=2, A=3, seed=2, normalize_advantages=False,
         value_clip=0.2, entropy_cost=0.05),
    dict(name="vtrace_normalized", T=5, B=4, A=3, seed=3, advantage="vtrace"),
    dict(name="vtrace_raw_value_clip_no_rho_clip", T=7, B=3, A=5, seed=4, advantage="vtrace",
         normalize_advantages=False, value_clip=0.3, clip_rho_threshold=None),
    dict(name="gae_lambda1_no_truncation", T=8, B=2, A=2, seed=5, truncations=False,
         clip_epsilon=0.1, proximal_weight_clip=None, **{"lambda": 1.0}),
    # A one-step update: no proximal outputs, the current ones stand in as constants.
    dict(name="gae_one_step_no_proximal", T=5, B=3, A=3, seed=9, proximal=False),
    dict(name="vtrace_one_step_no_proximal_weight_clip", T=4, B=2, A=4, seed=10,
         advantage="vtrace", proximal=False, proximal_weight_clip=1.5),
    dict(name="vtrace_value_clip_normalized", T=4, B=3, A=4, seed=6, advantage="vtrace",
         value_clip=0.1, discount=0.9, clip_epsilon=0.3),
    # Diagonal Gaussians (A = 2D outputs: D means, D log-stds).
    dict(name="gaussian_gae_clip", T=5, B=3, A=4, seed=7, policy="gaussian", squash=False),
    dict(name="gaussian_squash_vtrace_value_clip", T=6, B=2, A=6, seed=8, policy="gaussian",
         squash=True, advantage="vtrace", value_clip=0.2, entropy_cost=0.02),
]


def main():
    out_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "test/fixtures/ppo")
    out_dir.mkdir(parents=True, exist_ok=True)
    total = 0
    for spec in CASES:
        data = make_case(**spec)
        text = json.dumps(data, indent=None, separators=(",", ":")) + "\n"
        (out_dir / f"{spec['name']}.json").write_text(text)
        total += len(text)
    print(f"{len(CASES)} fixtures, {total} bytes in {out_dir}")
    if total > 200_000:
        raise SystemExit("fixtures exceed 200 KB")


if __name__ == "__main__":
    main()
