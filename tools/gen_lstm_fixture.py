#!/usr/bin/env python3
"""Generate test/fixtures/lstm/*.json: multi-layer LSTM reference values from PyTorch.

The C++ LSTM must reproduce PyTorch's LSTM cell (gate order i, f, g, o; rows of
weight_ih are four [H, I] blocks in that order, likewise weight_hh and the biases):

    gates = x @ W_ih^T + b_ih + h @ W_hh^T + b_hh
    i = sigmoid(gates[0:H]); f = sigmoid(gates[H:2H]); g = tanh(gates[2H:3H]); o = sigmoid(gates[3H:4H])
    c' = f * c + i * g
    h' = o * tanh(c')

The C++ side uses one bias per layer, so every layer stores b_ih, b_hh and their sum
"bias" (the float64 sum of two float32 numbers, exact in float64).

Sequence semantics (SEED-style per-step resets): for t = 0..T-1, first every env b with
done[t][b] == 1 has its state (h and c of every layer) set to zero, i.e.
state = state * (1 - done[t]); then the step is applied layer by layer, layer l > 0 taking
layer l-1's new h as input. y[t] is the top layer's h after step t; hT/cT are the final
states of all layers, shaped [L, B, H].

Gradients are of the scalar loss
    L = sum(y * G) + sum(hT * GH) + sum(cT * GC)
with respect to every layer's weight_ih, weight_hh, bias (d/d b_ih == d/d b_hh == d/d bias),
x, h0 and c0. Everything is computed in float64; all inputs (weights, biases, x, h0, c0,
G, GH, GC) are drawn as float32 uniform(-0.5, 0.5) and widened, so the C++ side can run the
same case in float32 or float64. Arrays are flattened row-major:
    weight_ih [4H, I], weight_hh [4H, H], x [T, B, I], done [T, B], h0/c0/hT/cT/GH/GC [L, B, H],
    y/G [T, B, H].

Usage: python3 tools/gen_lstm_fixture.py [output_dir]   (default test/fixtures/lstm)
"""
import json
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

TOLERANCE = {"abs": 1e-5, "rel": 1e-5, "rule": "|got - expected| <= abs + rel*|expected|"}


def f32_uniform(rng, shape, lo=-0.5, hi=0.5):
    """float32 uniform samples, widened to float64 (exactly float32-representable)."""
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(np.float64)


def flat(a):
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    return [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def run_case(name, description, L, I, H, T, B, seed, done, forget_bias=0.0, check_nn_lstm=False):
    rng = np.random.default_rng(seed)
    layers_np = []
    for l in range(L):
        in_size = I if l == 0 else H
        w_ih = f32_uniform(rng, (4 * H, in_size))
        w_hh = f32_uniform(rng, (4 * H, H))
        b_ih = f32_uniform(rng, (4 * H,))
        b_hh = f32_uniform(rng, (4 * H,))
        if forget_bias:
            # add in float32 so the stored b_ih stays float32-representable
            b_ih32 = b_ih.astype(np.float32)
            b_ih32[H:2 * H] += np.float32(forget_bias)
            b_ih = b_ih32.astype(np.float64)
        layers_np.append((w_ih, w_hh, b_ih, b_hh))
    x_np = f32_uniform(rng, (T, B, I))
    h0_np = f32_uniform(rng, (L, B, H))
    c0_np = f32_uniform(rng, (L, B, H))
    G_np = f32_uniform(rng, (T, B, H))
    GH_np = f32_uniform(rng, (L, B, H))
    GC_np = f32_uniform(rng, (L, B, H))
    done_np = np.asarray(done, dtype=np.int64).reshape(T, B)

    def forward_backward(dt):
        cells = []
        for l, (w_ih, w_hh, b_ih, b_hh) in enumerate(layers_np):
            cell = torch.nn.LSTMCell(I if l == 0 else H, H, bias=True, dtype=dt)
            with torch.no_grad():
                cell.weight_ih.copy_(torch.from_numpy(w_ih))
                cell.weight_hh.copy_(torch.from_numpy(w_hh))
                cell.bias_ih.copy_(torch.from_numpy(b_ih))
                cell.bias_hh.copy_(torch.from_numpy(b_hh))
            cells.append(cell)
        x = torch.from_numpy(x_np).to(dt).requires_grad_(True)
        h0 = torch.from_numpy(h0_np).to(dt).requires_grad_(True)
        c0 = torch.from_numpy(c0_np).to(dt).requires_grad_(True)
        keep = 1.0 - torch.from_numpy(done_np).to(dt)  # [T, B]
        h = [h0[l] for l in range(L)]
        c = [c0[l] for l in range(L)]
        ys = []
        for t in range(T):
            m = keep[t].unsqueeze(1)
            h = [hl * m for hl in h]
            c = [cl * m for cl in c]
            inp = x[t]
            for l in range(L):
                h[l], c[l] = cells[l](inp, (h[l], c[l]))
                inp = h[l]
            ys.append(inp)
        y = torch.stack(ys)  # [T, B, H]
        hT = torch.stack(h)  # [L, B, H]
        cT = torch.stack(c)

        loss = (y * torch.from_numpy(G_np).to(dt)).sum() + (hT * torch.from_numpy(GH_np).to(dt)).sum() + (cT * torch.from_numpy(GC_np).to(dt)).sum()
        loss.backward()

        return cells, x, h0, c0, y, hT, cT, loss

    cells, x, h0, c0, y, hT, cT, loss = forward_backward(torch.float64)
    dt = torch.float64

    # The same case run in float32 must meet the fixture tolerance (what the C++ float32 build faces).
    cells32, x32, h032, c032, y32, hT32, cT32, _ = forward_backward(torch.float32)
    pairs = [(y32, y), (hT32, hT), (cT32, cT), (x32.grad, x.grad), (h032.grad, h0.grad), (c032.grad, c0.grad)]
    for c32, c64 in zip(cells32, cells):
        pairs += [(c32.weight_ih.grad, c64.weight_ih.grad), (c32.weight_hh.grad, c64.weight_hh.grad),
                  (c32.bias_ih.grad, c64.bias_ih.grad)]
    worst = 0.0
    for got, exp in pairs:
        got = got.detach().double()
        exp = exp.detach()
        excess = ((got - exp).abs() - (TOLERANCE["abs"] + TOLERANCE["rel"] * exp.abs())).max().item()
        worst = max(worst, (got - exp).abs().max().item())
        assert excess <= 0, f"{name}: float32 run outside tolerance"
    print(f"{name}: max |float32 - float64| = {worst:.3g}")

    for cell in cells:
        assert torch.equal(cell.bias_ih.grad, cell.bias_hh.grad)

    if check_nn_lstm:
        assert not done_np.any(), "nn.LSTM check only valid without resets"
        ref = torch.nn.LSTM(I, H, num_layers=L, bias=True, batch_first=False, dtype=dt)
        with torch.no_grad():
            for l, (w_ih, w_hh, b_ih, b_hh) in enumerate(layers_np):
                getattr(ref, f"weight_ih_l{l}").copy_(torch.from_numpy(w_ih))
                getattr(ref, f"weight_hh_l{l}").copy_(torch.from_numpy(w_hh))
                getattr(ref, f"bias_ih_l{l}").copy_(torch.from_numpy(b_ih))
                getattr(ref, f"bias_hh_l{l}").copy_(torch.from_numpy(b_hh))
            y_ref, (hT_ref, cT_ref) = ref(torch.from_numpy(x_np), (torch.from_numpy(h0_np), torch.from_numpy(c0_np)))
        for a, b in ((y, y_ref), (hT, hT_ref), (cT, cT_ref)):
            err = (a.detach() - b).abs().max().item()
            assert err <= 1e-12, f"nn.LSTM mismatch {err}"

    # Independent numpy float64 re-implementation of the forward pass (sanity check).
    def sig(z):
        return 1.0 / (1.0 + np.exp(-z))

    hn = [h0_np[l].copy() for l in range(L)]
    cn = [c0_np[l].copy() for l in range(L)]
    yn = np.zeros((T, B, H))
    for t in range(T):
        m = (1 - done_np[t]).astype(np.float64)[:, None]
        hn = [a * m for a in hn]
        cn = [a * m for a in cn]
        inp = x_np[t]
        for l, (w_ih, w_hh, b_ih, b_hh) in enumerate(layers_np):
            gates = inp @ w_ih.T + b_ih + hn[l] @ w_hh.T + b_hh
            i_g, f_g, g_g, o_g = (gates[:, k * H:(k + 1) * H] for k in range(4))
            cn[l] = sig(f_g) * cn[l] + sig(i_g) * np.tanh(g_g)
            hn[l] = sig(o_g) * np.tanh(cn[l])
            inp = hn[l]
        yn[t] = inp
    assert np.abs(yn - y.detach().numpy()).max() <= 1e-12
    assert np.abs(np.stack(hn) - hT.detach().numpy()).max() <= 1e-12
    assert np.abs(np.stack(cn) - cT.detach().numpy()).max() <= 1e-12

    out = {
        "description": description,
        "gate_order": "i,f,g,o",
        "num_layers": L,
        "input_size": I,
        "hidden_size": H,
        "T": T,
        "B": B,
        "seed": seed,
        "torch_version": torch.__version__,
        "layers": [
            {
                "weight_ih": flat(w_ih),
                "weight_hh": flat(w_hh),
                "b_ih": flat(b_ih),
                "b_hh": flat(b_hh),
                "bias": flat(b_ih + b_hh),
            }
            for (w_ih, w_hh, b_ih, b_hh) in layers_np
        ],
        "x": flat(x_np),
        "done": [int(v) for v in done_np.reshape(-1)],
        "h0": flat(h0_np),
        "c0": flat(c0_np),
        "y": flat(y),
        "hT": flat(hT),
        "cT": flat(cT),
        "G": flat(G_np),
        "GH": flat(GH_np),
        "GC": flat(GC_np),
        "loss": float(loss.item()),
        "grads": {
            "layers": [
                {"weight_ih": flat(cell.weight_ih.grad), "weight_hh": flat(cell.weight_hh.grad), "bias": flat(cell.bias_ih.grad)}
                for cell in cells
            ],
            "x": flat(x.grad),
            "h0": flat(h0.grad),
            "c0": flat(c0.grad),
        },
        "tolerance": TOLERANCE,
    }
    if check_nn_lstm:
        out["checked_against_nn_lstm"] = True
    if forget_bias:
        out["forget_bias"] = forget_bias
    return name, out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "test/fixtures/lstm"
    os.makedirs(out_dir, exist_ok=True)

    # two_layer_with_resets: T=7, B=4. env 0 resets at t=0; env 2 resets twice (t=2, t=5);
    # env 1 resets at t=4; env 3 never resets.
    done2 = np.zeros((7, 4), dtype=np.int64)
    done2[0, 0] = 1
    done2[2, 2] = 1
    done2[5, 2] = 1
    done2[4, 1] = 1

    cases = [
        run_case(
            "single_layer_no_reset.json",
            "1-layer LSTM (I=5, H=4) over T=6 steps, B=3, no resets; y/hT/cT also checked against torch.nn.LSTM.",
            L=1, I=5, H=4, T=6, B=3, seed=20240601, done=np.zeros((6, 3)), check_nn_lstm=True,
        ),
        run_case(
            "two_layer_with_resets.json",
            "2-layer LSTM (I=3, H=5) over T=7 steps, B=4, with per-step resets: state(h,c of all layers) "
            "zeroed where done[t][b]==1 before step t. env0 resets at t=0, env1 at t=4, env2 at t=2 and t=5.",
            L=2, I=3, H=5, T=7, B=4, seed=20240602, done=done2,
        ),
        run_case(
            "forget_bias.json",
            "1-layer LSTM (I=4, H=3) over T=4 steps, B=2, no resets; b_ih forget-gate rows [H:2H] include +1.0 "
            "(the stored b_ih and bias already contain it).",
            L=1, I=4, H=3, T=4, B=2, seed=20240603, done=np.zeros((4, 2)), forget_bias=1.0,
        ),
    ]
    for name, data in cases:
        path = os.path.join(out_dir, name)
        with open(path, "w") as f:
            json.dump(data, f)
            f.write("\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
