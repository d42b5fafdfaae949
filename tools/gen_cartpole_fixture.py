#!/usr/bin/env python3
"""Generate test/fixtures/cartpole/gymnasium_cartpole_v1.json from gymnasium itself.

The C++ CartPole must reproduce gymnasium's CartPole-v1 step by step. This script runs
the real environment (installed from PyPI when missing) and records, per episode, the
initial float64 state, the actions taken and every state, reward and termination flag
that followed. Most episodes use a random policy; a few use a simple balancing
controller so that the 500-step truncation is exercised.

Usage: python3 tools/gen_cartpole_fixture.py [output.json]
"""
import json
import subprocess
import sys


def ensure(module, package):
    try:
        return __import__(module)
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", package])
        return __import__(module)


def main():
    gym = ensure("gymnasium", "gymnasium")
    np = ensure("numpy", "numpy")
    out = sys.argv[1] if len(sys.argv) > 1 else "test/fixtures/cartpole/gymnasium_cartpole_v1.json"
    env = gym.make("CartPole-v1")
    policy_rng = np.random.default_rng(12345)
    episodes = []
    for episode in range(24):
        obs, _ = env.reset(seed=1000 + episode)
        state = [float(v) for v in env.unwrapped.state]
        balancing = episode % 6 == 5  # every sixth episode runs to the 500-step limit
        steps = []
        while True:
            x, x_dot, theta, theta_dot = env.unwrapped.state
            if balancing:
                action = int(theta + 0.5 * theta_dot + 0.01 * x + 0.1 * x_dot > 0.0)
            else:
                action = int(policy_rng.integers(0, 2))
            obs, reward, terminated, truncated, _ = env.step(action)
            steps.append({
                "action": action,
                "state": [float(v) for v in env.unwrapped.state],
                "observation": [float(v) for v in obs],
                "reward": float(reward),
                "terminated": bool(terminated),
                "truncated": bool(truncated),
            })
            if terminated or truncated:
                break
        episodes.append({"seed": 1000 + episode, "initial_state": state, "steps": steps})
    doc = {
        "generator": "tools/gen_cartpole_fixture.py",
        "gymnasium_version": gym.__version__,
        "numpy_version": np.__version__,
        "env_id": "CartPole-v1",
        "note": "states are float64 (repr round-trips exactly); observations are the float32 values gymnasium returned",
        "episodes": episodes,
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")
    lengths = [len(e["steps"]) for e in episodes]
    print(f"wrote {out}: {len(episodes)} episodes, lengths {lengths}")


if __name__ == "__main__":
    main()
