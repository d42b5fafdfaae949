#!/usr/bin/env python3
"""Runs seedrl's CPU benchmarks and prints the ratio table kept in docs/performance.md.

Each benchmark is repeated (default 5 times) and its median taken; every ratio divides two
medians measured in the same run of this script, so the noise of a shared machine largely
cancels. Usage: python3 tools/bench_report.py [build/release/bench] [--repetitions N]
"""
import json
import subprocess
import sys
from pathlib import Path


def run(binary, repetitions):
    out = subprocess.run(
        [str(binary), f"--benchmark_repetitions={repetitions}", "--benchmark_min_time=0.2",
         "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    medians = {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") == "median":
            medians[b["run_name"]] = b
    return doc["context"], medians


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    reps = 5
    for a in sys.argv[1:]:
        if a.startswith("--repetitions="):
            reps = int(a.split("=", 1)[1])
    bench_dir = Path(args[0] if args else "build/release/bench")
    context, env = run(bench_dir / "seedrl_bench_env", reps)
    _, lstm = run(bench_dir / "seedrl_bench_lstm", reps)
    _, train = run(bench_dir / "seedrl_bench_train", reps)
    _, algorithms = run(bench_dir / "seedrl_bench_algorithms", reps)
    _, vtrace = run(bench_dir / "seedrl_bench_vtrace", reps)

    print(f"host: {context.get('num_cpus')} CPUs at {context.get('mhz_per_cpu')} MHz, "
          f"load {context.get('load_avg')}; medians of {reps} repetitions\n")

    print("## Environment (steps/s)")
    print("| benchmark | steps/s | time per step |")
    print("| --- | ---: | ---: |")
    for name in ("BM_random_actions_only", "BM_cartpole_single", "BM_cartpole_env_batch/1",
                 "BM_cartpole_env_batch/64"):
        b = env[name]
        print(f"| {name} | {b['items_per_second'] / 1e6:.1f} M | {1e9 / b['items_per_second']:.1f} ns |")

    sgemm = lstm["BM_sgemm_1024"]["GFLOPS"] / 1e9
    print(f"\n## LSTM one-step inference (SGEMM 1024 baseline: {sgemm:.1f} GFLOP/s)")
    print("| B | H | GFLOP/s | / SGEMM | weight stream GB/s | / memcpy of weights |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for B in (1, 32, 256):
        for H in (64, 256, 512):
            b = lstm[f"BM_lstm_step/B:{B}/H:{H}"]
            g = b["GFLOPS"] / 1e9
            w = b["weight_GBps"] / 1e9
            m = lstm[f"BM_memcpy_lstm_weights/H:{H}"]["weight_GBps"] / 1e9
            stream = f"{w:.1f} | {w / m:.2f}" if B == 1 else " | "
            print(f"| {B} | {H} | {g:.1f} | {g / sgemm:.2f} | {stream} |")

    print("\n## PPO update (4 epochs x 4 minibatches) against one IMPALA step, same batch "
          "(T=20, B=32)")
    print("| network | IMPALA samples/s | PPO samples/s | PPO / IMPALA |")
    print("| --- | ---: | ---: | ---: |")
    for net in ("cartpole_mlp", "cartpole_lstm", "pendulum"):
        impala = algorithms[f"BM_impala_step/{net}"]["items_per_second"]
        ppo = algorithms[f"BM_ppo_update/{net}"]["items_per_second"]
        print(f"| {net} | {impala / 1e3:.1f} k | {ppo / 1e3:.1f} k | {ppo / impala:.2f} |")

    step = train["BM_train_step"]
    print("\n## Training")
    print(f"- training step (CartPole net, T=20, B=32, IMPALA loss, clip, Adam): "
          f"{step['items_per_second'] / 1e3:.1f} k samples/s ({step['real_time']:.0f} us per step)")
    print("\n## V-trace against a memcpy of the same bytes (CPU time, same run)")
    print("| T | B | time flags off / on (us) | memcpy (us) | memcpy / V-trace, off / on |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for T, B in ((20, 32), (80, 256), (100, 256), (20, 1024)):
        off = vtrace[f"BM_vtrace/T:{T}/B:{B}/truncation:0"]
        on = vtrace[f"BM_vtrace/T:{T}/B:{B}/truncation:1"]
        print(f"| {T} | {B} | {off['cpu_time']:.2f} / {on['cpu_time']:.2f} | "
              f"{off['memcpy_us']:.2f} | {off['x_memcpy']:.2f} / {on['x_memcpy']:.2f} |")


if __name__ == "__main__":
    main()
