#!/usr/bin/env python3
"""Generate test/fixtures/conv/*.json: Conv2d and MaxPool2d reference values from PyTorch.

seedrl::conv2d must reproduce torch.nn.Conv2d (groups=1, dilation=1, zero padding, bias) and
seedrl::max_pool2d torch.nn.MaxPool2d (dilation=1, ceil_mode=False), forward and backward.

Every case is run in float64. Gradients are of the scalar loss L = sum(y * G) for a random
upstream gradient G, with respect to x and (for Conv2d) weight and bias.

Size. Inputs (x, weight, bias, G) are dyadic: integers k with |k| <= 2^12 times 2^-12, stored as
the integers (field "scale" = 4096) so that files stay small and both the float32 and the
float64 C++ runs read exactly the values torch used. Outputs and gradients are stored as
float64 (JSON numbers that round-trip). The Nature CNN cases keep the network's kernel, stride
and input channels (8x8/4 on 4 channels, 4x4/2, 3x3/1) but use fewer output channels and small
images: the geometry is what a fixture can get wrong, and full-size layers would need megabytes.

Arrays are flattened row-major: x, dx [N, C, H, W]; weight [O, C, KH, KW]; bias [O];
y, G [N, O, OH, OW]; max-pool "indices" as returned by return_indices=True (offsets into each
input plane, ih * W + iw).

Checks done here before writing: Conv2d forward against a direct numpy loop; MaxPool2d forward,
indices and gradient against a direct loop with -inf padding and first-index tie breaking (the
"ties" case uses integer inputs, so windows share their maximum); and the same cases run in
float32 by torch stay within the float tolerance the C++ float32 test uses.

Usage: python3 tools/gen_conv_fixture.py [output_dir]   (default test/fixtures/conv)
"""
import json
import os
import sys

import numpy as np
import torch

SCALE = 4096
TOLERANCE = {
    "double": 1e-10,
    "float": 1e-4,
    "rule": "|got - expected| <= tol * (1 + |expected|)",
}


def dyadic(rng, shape, bound=1.0):
    """Integers k, |k| <= bound * SCALE; the value is k / SCALE (exact in float32 and float64)."""
    return rng.integers(-int(bound * SCALE), int(bound * SCALE) + 1, size=shape)


def flat_float(t):
    if isinstance(t, torch.Tensor):
        t = t.detach().cpu().numpy()
    return [float(v) for v in np.asarray(t, dtype=np.float64).reshape(-1)]


def flat_int(a):
    return [int(v) for v in np.asarray(a).reshape(-1)]


def within(got, want, tol):
    return bool(((got - want).abs() <= tol * (1 + want.abs())).all())


def conv_reference(x, w, b, stride, padding):
    """Direct float64 convolution (numpy), independent of torch."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    (sh, sw), (ph, pw) = stride, padding
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    oh = (h + 2 * ph - kh) // sh + 1
    ow = (wd + 2 * pw - kw) // sw + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]  # [n, c, kh, kw]
            y[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w) + b
    return y


def conv_case(name, description, n, c, h, w, o, kernel, stride, padding, seed):
    rng = np.random.default_rng(seed)
    kh, kw = kernel
    x_i = dyadic(rng, (n, c, h, w))
    w_i = dyadic(rng, (o, c, kh, kw), bound=0.5)
    b_i = dyadic(rng, (o,), bound=0.5)

    def run(dtype):
        conv = torch.nn.Conv2d(c, o, kernel, stride=stride, padding=padding, bias=True, dtype=dtype)
        with torch.no_grad():
            conv.weight.copy_(torch.from_numpy(w_i / SCALE))
            conv.bias.copy_(torch.from_numpy(b_i / SCALE))
        x = torch.from_numpy(x_i / SCALE).to(dtype).requires_grad_(True)
        y = conv(x)
        return conv, x, y

    conv, x, y = run(torch.float64)
    g_i = dyadic(rng, tuple(y.shape))
    g = torch.from_numpy(g_i / SCALE)
    (y * g).sum().backward()

    ref = conv_reference(x_i / SCALE, w_i / SCALE, b_i / SCALE, stride, padding)
    assert np.abs(ref - y.detach().numpy()).max() <= 1e-12, f"{name}: numpy reference differs"

    conv32, x32, y32 = run(torch.float32)
    (y32 * g.float()).sum().backward()
    for got, want in ((y32, y), (x32.grad, x.grad), (conv32.weight.grad, conv.weight.grad),
                      (conv32.bias.grad, conv.bias.grad)):
        assert within(got.detach().double(), want.detach(), TOLERANCE["float"]), \
            f"{name}: float32 outside tolerance"

    return name, {
        "kind": "conv2d",
        "description": description,
        "torch_version": torch.__version__,
        "seed": seed,
        "batch": n,
        "in_channels": c,
        "input_height": h,
        "input_width": w,
        "out_channels": o,
        "kernel": list(kernel),
        "stride": list(stride),
        "padding": list(padding),
        "output_height": int(y.shape[2]),
        "output_width": int(y.shape[3]),
        "scale": SCALE,
        "x": flat_int(x_i),
        "weight": flat_int(w_i),
        "bias": flat_int(b_i),
        "G": flat_int(g_i),
        "y": flat_float(y),
        "grads": {
            "x": flat_float(x.grad),
            "weight": flat_float(conv.weight.grad),
            "bias": flat_float(conv.bias.grad),
        },
        "tolerance": TOLERANCE,
    }


def pool_reference(x, kernel, stride, padding):
    """Direct max pooling: -inf padding, NaN wins, first maximum in row-major window order."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    oh = (h + 2 * ph - kh) // sh + 1
    ow = (w + 2 * pw - kw) // sw + 1
    y = np.zeros((n, c, oh, ow))
    idx = np.zeros((n, c, oh, ow), dtype=np.int64)
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    best, best_v = None, -np.inf
                    for ih in range(max(i * sh - ph, 0), min(i * sh - ph + kh, h)):
                        for iw in range(max(j * sw - pw, 0), min(j * sw - pw + kw, w)):
                            v = x[b, ch, ih, iw]
                            if best is None:
                                best = ih * w + iw
                            if v > best_v or np.isnan(v):
                                best, best_v = ih * w + iw, v
                    y[b, ch, i, j] = best_v
                    idx[b, ch, i, j] = best
    return y, idx


def pool_case(name, description, n, c, h, w, kernel, stride, padding, seed, inputs="random"):
    rng = np.random.default_rng(seed)
    if inputs == "ties":
        x_i = rng.integers(-2, 3, size=(n, c, h, w)) * SCALE  # values in {-2..2}: many ties
    elif inputs == "negative":
        x_i = -rng.integers(1, SCALE + 1, size=(n, c, h, w))  # a zero padding would win
    else:
        x_i = dyadic(rng, (n, c, h, w))

    pool = torch.nn.MaxPool2d(kernel, stride=stride, padding=padding, return_indices=True)
    x = torch.from_numpy(x_i / SCALE).requires_grad_(True)
    y, idx = pool(x)
    g_i = dyadic(rng, tuple(y.shape))
    (y * torch.from_numpy(g_i / SCALE)).sum().backward()

    y_ref, idx_ref = pool_reference(x_i / SCALE, kernel, stride, padding)
    assert np.array_equal(y_ref, y.detach().numpy()), f"{name}: forward differs from the loop"
    assert np.array_equal(idx_ref, idx.numpy()), f"{name}: indices differ (tie breaking?)"
    dx_ref = np.zeros(x_i.shape).reshape(n, c, -1)
    gi = (g_i / SCALE).reshape(n, c, -1)
    ii = idx_ref.reshape(n, c, -1)
    for b in range(n):
        for ch in range(c):
            for k in range(ii.shape[2]):
                dx_ref[b, ch, ii[b, ch, k]] += gi[b, ch, k]
    assert np.abs(dx_ref.reshape(x_i.shape) - x.grad.numpy()).max() <= 1e-12, f"{name}: grad"

    # float32 gives the same indices (inputs are exact in float32) and gradients within tolerance.
    x32 = torch.from_numpy(x_i / SCALE).float().requires_grad_(True)
    y32, idx32 = pool(x32)
    (y32 * torch.from_numpy(g_i / SCALE).float()).sum().backward()
    assert torch.equal(idx32, idx), f"{name}: float32 indices differ"
    assert within(x32.grad.double(), x.grad, TOLERANCE["float"])

    ties = 0
    if inputs == "ties":
        # how many outputs had a tied maximum: the case must actually exercise tie breaking
        xp = torch.nn.functional.pad(torch.from_numpy(x_i / SCALE), (padding[1],) * 2 + (padding[0],) * 2,
                                     value=-np.inf)
        win = xp.unfold(2, kernel[0], stride[0]).unfold(3, kernel[1], stride[1])
        m = win.amax(dim=(-1, -2), keepdim=True)
        ties = int(((win == m).sum(dim=(-1, -2)) > 1).sum())
        assert ties > 0

    out = {
        "kind": "max_pool2d",
        "description": description,
        "torch_version": torch.__version__,
        "seed": seed,
        "batch": n,
        "channels": c,
        "input_height": h,
        "input_width": w,
        "kernel": list(kernel),
        "stride": list(stride),
        "padding": list(padding),
        "output_height": int(y.shape[2]),
        "output_width": int(y.shape[3]),
        "scale": SCALE,
        "x": flat_int(x_i),
        "G": flat_int(g_i),
        "y": flat_float(y),
        "indices": flat_int(idx.numpy()),
        "grads": {"x": flat_float(x.grad)},
        "tolerance": TOLERANCE,
    }
    if ties:
        out["tied_windows"] = ties
    return name, out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "test/fixtures/conv"
    os.makedirs(out_dir, exist_ok=True)
    cases = [
        conv_case("nature_conv1.json",
                  "Nature CNN layer 1 geometry: 4 input channels, 8x8 kernel, stride 4 (5 output "
                  "channels instead of 32, 20x16 images instead of 84x84)",
                  n=2, c=4, h=20, w=16, o=5, kernel=(8, 8), stride=(4, 4), padding=(0, 0), seed=1),
        conv_case("nature_conv2.json",
                  "Nature CNN layer 2 geometry: 4x4 kernel, stride 2 on a 9x9 map (6 in, 7 out "
                  "channels instead of 32 and 64); 9 = 2*3+3, so the last row and column are unused",
                  n=2, c=6, h=9, w=9, o=7, kernel=(4, 4), stride=(2, 2), padding=(0, 0), seed=2),
        conv_case("nature_conv3.json",
                  "Nature CNN layer 3 geometry: 3x3 kernel, stride 1 on a 7x7 map (8 in, 6 out)",
                  n=2, c=8, h=7, w=7, o=6, kernel=(3, 3), stride=(1, 1), padding=(0, 0), seed=3),
        conv_case("impala_3x3_pad1.json",
                  "IMPALA ResNet convolution: 3x3, stride 1, padding 1 (same size output)",
                  n=2, c=3, h=8, w=9, o=4, kernel=(3, 3), stride=(1, 1), padding=(1, 1), seed=4),
        conv_case("non_square.json",
                  "non-square everything: 3x2 kernel, stride (2, 1), padding (1, 2), 7x5 input",
                  n=2, c=2, h=7, w=5, o=3, kernel=(3, 2), stride=(2, 1), padding=(1, 2), seed=5),
        conv_case("stride_gaps_wide_padding.json",
                  "2x2 kernel, stride 3 (input rows and columns 2 and 5 are never read: zero "
                  "gradient), padding 2 (outputs whose window is all padding equal the bias)",
                  n=2, c=2, h=8, w=7, o=3, kernel=(2, 2), stride=(3, 3), padding=(2, 2), seed=6),
        pool_case("pool_3x3_s2_p1.json", "IMPALA max-pool: 3x3, stride 2, padding 1, on 9x8 images",
                  n=2, c=3, h=9, w=8, kernel=(3, 3), stride=(2, 2), padding=(1, 1), seed=11),
        pool_case("pool_3x3_s2_p1_negative.json",
                  "3x3/2 padding 1 on all-negative inputs: padding must act as -inf, not 0",
                  n=1, c=2, h=7, w=7, kernel=(3, 3), stride=(2, 2), padding=(1, 1), seed=12,
                  inputs="negative"),
        pool_case("pool_3x3_s2_p1_ties.json",
                  "3x3/2 padding 1 on integer inputs in {-2..2}: many tied windows; the first "
                  "maximum in row-major window order wins (PyTorch CPU)",
                  n=2, c=2, h=8, w=8, kernel=(3, 3), stride=(2, 2), padding=(1, 1), seed=13,
                  inputs="ties"),
        pool_case("pool_2x2_s2.json", "2x2, stride 2, no padding, odd 7x9 images (floor rounding)",
                  n=2, c=3, h=7, w=9, kernel=(2, 2), stride=(2, 2), padding=(0, 0), seed=14),
    ]
    total = 0
    for name, data in cases:
        path = os.path.join(out_dir, name)
        with open(path, "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.write("\n")
        size = os.path.getsize(path)
        total += size
        print(f"wrote {path} ({size / 1024:.1f} KiB)")
    print(f"total {total / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
