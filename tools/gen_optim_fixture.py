#!/usr/bin/env python3
"""Generate test/fixtures/optim/*.json: Adam / RMSprop reference trajectories from PyTorch.

A single float64 parameter tensor p (size 7) is stepped by torch.optim with a fixed list of
6 gradients; after every step the parameters are recorded. p0 and the gradients are drawn as
float32 uniform(-1, 1) and widened to float64 (one step's gradient is scaled by 10 so that
gradient clipping matters), so the C++ side can run the same case in float32 or float64.

Update rules of the installed torch (single-tensor, non-foreach, non-fused path), checked in
this script by a numpy float64 re-implementation to 1e-12. t counts steps from 1; all state
starts at zero; g is the (possibly clipped) gradient; lr is the lr used for this step.

torch.optim.Adam(lr, betas=(b1, b2), eps), weight_decay=0, amsgrad=False:
    m = b1*m + (1-b1)*g                      (torch: exp_avg.lerp_(g, 1-b1))
    v = b2*v + (1-b2)*g^2
    p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
  Note eps is added AFTER the sqrt(1-b2^t) correction (not the "eps_hat" form
  lr*sqrt(1-b2^t)/(1-b1^t) * m/(sqrt(v)+eps) used by TF/optax). With b1 = 0 the first
  correction is 1 and m = g.

torch.optim.RMSprop(lr, alpha, eps, momentum, centered=False), weight_decay=0:
    v = alpha*v + (1-alpha)*g^2
    avg = sqrt(v) + eps                      (eps OUTSIDE the sqrt, no bias correction)
    momentum > 0:  buf = momentum*buf + g/avg;  p -= lr*buf
    momentum == 0: p -= lr*g/avg

torch.nn.utils.clip_grad_norm_(params, max_norm) (norm_type 2):
    total = sqrt(sum over all grads of g^2)  (the "grad_norms" recorded, before clipping)
    coef = min(max_norm / (total + 1e-6), 1)
    g *= coef
  Note the +1e-6 in the denominator: a clipped gradient has norm slightly below max_norm.

torch.optim.lr_scheduler.LambdaLR with lr_lambda(k) = 1 - k/total_steps, scheduler.step()
called after each optimizer.step(): step k (k = 0, 1, ...) uses lr_k = lr * (1 - k/total_steps).

Usage: python3 tools/gen_optim_fixture.py [output_dir]   (default test/fixtures/optim)
"""
import json
import math
import os
import subprocess
import sys


def ensure(module, package):
    try:
        return __import__(module)
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", package])
        return __import__(module)


torch = ensure("torch", "torch")
np = ensure("numpy", "numpy")

TOLERANCE = {"abs": 1e-6, "rel": 1e-6, "rule": "|got - expected| <= abs + rel*|expected|"}
N_PARAMS = 7
N_STEPS = 6
SCALED_STEP = 2  # gradient of this step (0-based) is scaled by 10
CLIP_EPS = 1e-6


def f32_uniform(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(np.float64)


def flat(a):
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    return [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    p0 = f32_uniform(rng, (N_PARAMS,))
    grads32 = f32_uniform(rng, (N_STEPS, N_PARAMS)).astype(np.float32)
    grads32[SCALED_STEP] *= np.float32(10.0)  # scaled (and rounded) in float32 so it stays representable
    grads = grads32.astype(np.float64)
    assert np.array_equal(grads.astype(np.float32).astype(np.float64), grads)
    return p0, grads


def run_torch(kind, hp, p0, grads, clip_norm, lr_schedule, foreach=None):
    p = torch.nn.Parameter(torch.from_numpy(p0.copy()))
    if kind == "adam":
        opt = torch.optim.Adam([p], lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"], foreach=foreach)
    else:
        opt = torch.optim.RMSprop([p], lr=hp["lr"], alpha=hp["alpha"], eps=hp["eps"], momentum=hp["momentum"],
                                  centered=False, foreach=foreach)
    sched = None
    if lr_schedule is not None:
        total = lr_schedule["total_steps"]
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda=lambda k: 1.0 - k / total)
    out, norms, lrs, used = [], [], [], []
    for g in grads:
        opt.zero_grad()
        p.grad = torch.from_numpy(g.copy())
        norms.append(float(torch.linalg.vector_norm(p.grad).item()))
        if clip_norm is not None:
            total_norm = torch.nn.utils.clip_grad_norm_([p], max_norm=clip_norm)
            assert abs(total_norm.item() - norms[-1]) <= 1e-15 * max(1.0, norms[-1])
        used.append(p.grad.detach().clone().numpy())
        lrs.append(float(opt.param_groups[0]["lr"]))
        opt.step()
        if sched is not None:
            sched.step()
        out.append(p.detach().clone().numpy())
    return out, norms, lrs, used


def run_numpy(kind, hp, p0, grads, clip_norm, lr_schedule):
    p = p0.copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    buf = np.zeros_like(p)
    out, used = [], []
    for k, g in enumerate(grads):
        g = g.copy()
        if clip_norm is not None:
            total = math.sqrt(float(np.sum(g * g)))
            g = g * min(clip_norm / (total + CLIP_EPS), 1.0)
        used.append(g)
        lr = hp["lr"] if lr_schedule is None else hp["lr"] * (1.0 - k / lr_schedule["total_steps"])
        t = k + 1
        if kind == "adam":
            b1, b2 = hp["beta1"], hp["beta2"]
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            p = p - lr / (1 - b1 ** t) * m / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + hp["eps"])
        else:
            v = hp["alpha"] * v + (1 - hp["alpha"]) * g * g
            avg = np.sqrt(v) + hp["eps"]
            if hp["momentum"] > 0:
                buf = hp["momentum"] * buf + g / avg
                p = p - lr * buf
            else:
                p = p - lr * g / avg
        out.append(p.copy())
    return out, used


def max_rel_err(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


def build_case(description, kind, hp, seed, clip_norm=None, lr_schedule=None):
    p0, grads = make_inputs(seed)
    expected, norms, lrs, used = run_torch(kind, hp, p0, grads, clip_norm, lr_schedule)

    ref, used_np = run_numpy(kind, hp, p0, grads, clip_norm, lr_schedule)
    err = max_rel_err(ref, expected)
    assert err <= 1e-12, f"numpy re-implementation disagrees with torch: {err}"
    assert max_rel_err(used_np, used) <= 1e-12
    # the multi-tensor (foreach) implementation must agree as well
    expected_fe, _, _, _ = run_torch(kind, hp, p0, grads, clip_norm, lr_schedule, foreach=True)
    assert max_rel_err(expected_fe, expected) <= 1e-12

    # float32 run of the same case must meet the fixture tolerance
    exp32, _ = run_numpy_f32(kind, hp, p0, grads, clip_norm, lr_schedule)
    excess = np.max(np.abs(np.asarray(exp32, dtype=np.float64) - np.asarray(expected))
                    - (TOLERANCE["abs"] + TOLERANCE["rel"] * np.abs(np.asarray(expected))))
    assert excess <= 0, "float32 run outside tolerance"

    if kind == "adam":
        params = {"lr": hp["lr"], "beta1": hp["beta1"], "beta2": hp["beta2"], "eps": hp["eps"]}
    else:
        params = {"lr": hp["lr"], "alpha": hp["alpha"], "eps": hp["eps"], "momentum": hp["momentum"]}
    data = {
        "description": description,
        "optimizer": kind,
        "params": params,
        "clip_norm": clip_norm,
        "lr_schedule": lr_schedule,
        "seed": seed,
        "p0": flat(p0),
        "grads": [flat(g) for g in grads],
        "expected_params": [flat(p) for p in expected],
        "grad_norms": norms,
        "lrs": lrs,
        "torch_version": torch.__version__,
        "tolerance": TOLERANCE,
    }
    if clip_norm is not None:
        data["clip_rule"] = "coef = min(clip_norm / (global_norm + 1e-6), 1); g *= coef"
        data["clipped_grads"] = [flat(g) for g in used]
    return data


def run_numpy_f32(kind, hp, p0, grads, clip_norm, lr_schedule):
    """Same rules evaluated in float32 (to confirm the tolerance suits a float32 C++ build)."""
    f = np.float32
    p = p0.astype(f)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    buf = np.zeros_like(p)
    out = []
    for k, g in enumerate(grads):
        g = g.astype(f)
        if clip_norm is not None:
            total = np.sqrt(np.sum(g * g, dtype=f))
            g = g * f(min(f(clip_norm) / (total + f(CLIP_EPS)), f(1.0)))
        lr = f(hp["lr"] if lr_schedule is None else hp["lr"] * (1.0 - k / lr_schedule["total_steps"]))
        t = k + 1
        if kind == "adam":
            b1, b2 = f(hp["beta1"]), f(hp["beta2"])
            m = b1 * m + (f(1) - b1) * g
            v = b2 * v + (f(1) - b2) * g * g
            p = p - lr / (f(1) - b1 ** t) * m / (np.sqrt(v) / np.sqrt(f(1) - b2 ** t) + f(hp["eps"]))
        else:
            a = f(hp["alpha"])
            v = a * v + (f(1) - a) * g * g
            avg = np.sqrt(v) + f(hp["eps"])
            if hp["momentum"] > 0:
                buf = f(hp["momentum"]) * buf + g / avg
                p = p - lr * buf
            else:
                p = p - lr * g / avg
        out.append(p.copy())
    return out, None


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "test/fixtures/optim"
    os.makedirs(out_dir, exist_ok=True)
    seed = 20240611
    cases = {
        "adam_default.json": build_case(
            "torch.optim.Adam(lr=0.00048, betas=(0.9, 0.999), eps=1e-8) on one 7-element float64 tensor, 6 steps.",
            "adam", {"lr": 0.00048, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}, seed),
        "adam_beta1_zero.json": build_case(
            "torch.optim.Adam(lr=0.01, betas=(0.0, 0.99), eps=1e-3) (SEED DMLab style beta1=0), 6 steps.",
            "adam", {"lr": 0.01, "beta1": 0.0, "beta2": 0.99, "eps": 1e-3}, seed),
        "rmsprop_momentum.json": build_case(
            "torch.optim.RMSprop(lr=0.01, alpha=0.99, eps=0.01, momentum=0.9, centered=False), 6 steps.",
            "rmsprop", {"lr": 0.01, "alpha": 0.99, "eps": 0.01, "momentum": 0.9}, seed),
        "rmsprop_no_momentum.json": build_case(
            "torch.optim.RMSprop(lr=0.005, alpha=0.95, eps=1e-5, momentum=0), 6 steps.",
            "rmsprop", {"lr": 0.005, "alpha": 0.95, "eps": 1e-5, "momentum": 0.0}, seed),
        "adam_clip_lrdecay.json": build_case(
            "torch.optim.Adam(lr=0.01, betas=(0.9, 0.999), eps=1e-8); before each step "
            "clip_grad_norm_(max_norm=1.0); LambdaLR linear decay lr_k = lr*(1 - k/10) for step k=0,1,...",
            "adam", {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}, seed,
            clip_norm=1.0, lr_schedule={"type": "linear", "total_steps": 10}),
    }
    for name, data in cases.items():
        path = os.path.join(out_dir, name)
        with open(path, "w") as fh:
            json.dump(data, fh)
            fh.write("\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
