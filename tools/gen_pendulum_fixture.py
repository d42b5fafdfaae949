#!/usr/bin/env python3
"""Generate test/fixtures/pendulum/gymnasium_pendulum_v1.json from gymnasium itself.

The C++ Pendulum must reproduce gymnasium's Pendulum-v1 step by step. This script runs the
real environment (installed from PyPI when missing) through gym.make, so the 200-step
TimeLimit is the registered one, and records per episode the initial float64 state, the
float32 actions given and, after every step, the float64 state, the float32 observation, the
reward and both end flags.

The actions are chosen to exercise every branch of the dynamics:
- random torques in [-3, 3], so a third of them fall outside [-2, 2] and are clipped;
- the exact bounds, far-out values (+-100) and zero;
- a "pump" policy (full torque along the angular velocity) that spins the pendulum until the
  speed clip at +-8 rad/s holds and the angle runs to many multiples of 2 pi, so the angle
  normalization of the reward wraps;
- one episode with g = 9.81 (the constructor parameter).
Three episodes run to the time limit; the others are cut after a few dozen steps to keep the
file small. Columns rather than per-step objects keep it small too.

Usage: python3 tools/gen_pendulum_fixture.py [output.json]
"""
import json
import subprocess
import sys
import warnings


def ensure(module, package):
    try:
        return __import__(module)
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", package])
        return __import__(module)


def f32(np, value):
    """Shortest decimal that reads back as the same float32 (exact once cast to float)."""
    return float(str(np.float32(value)))


def main():
    gym = ensure("gymnasium", "gymnasium")
    np = ensure("numpy", "numpy")
    # The passive checker warns about out-of-bounds actions; giving them is the point here.
    warnings.filterwarnings("ignore")
    out = sys.argv[1] if len(sys.argv) > 1 else "test/fixtures/pendulum/gymnasium_pendulum_v1.json"
    policy_rng = np.random.default_rng(2024)
    special = [2.0, -2.0, 100.0, -100.0, 0.0, 2.5, -2.0000002, 1.9999999, 3.0e38, -1e-30]

    # (policy, g, steps recorded): None = until the time limit ends the episode.
    plans = [
        ("random", 10.0, None),
        ("pump", 10.0, None),
        ("mixed", 9.81, None),
    ] + [("random" if i % 3 else "special", 10.0, 24) for i in range(12)]

    episodes = []
    clipped_actions = 0
    clipped_speeds = 0
    for index, (policy, g, limit) in enumerate(plans):
        seed = 2000 + index
        env = gym.make("Pendulum-v1", g=g)
        env.reset(seed=seed)
        initial = [float(v) for v in env.unwrapped.state]
        actions, states, observations, rewards, terminated, truncated = [], [], [], [], [], []
        t = 0
        while True:
            th, thdot = env.unwrapped.state
            if policy == "pump" or (policy == "mixed" and t % 2 == 0):
                a = 2.5 if thdot >= 0.0 else -2.5
            elif policy == "special":
                a = special[t % len(special)]
            else:
                a = policy_rng.uniform(-3.0, 3.0)
            action = np.array([a], dtype=np.float32)
            obs, reward, term, trunc, _ = env.step(action)
            clipped_actions += abs(float(action[0])) > 2.0
            clipped_speeds += abs(float(env.unwrapped.state[1])) == 8.0
            actions.append(f32(np, action[0]))
            states.append([float(v) for v in env.unwrapped.state])
            observations.append([f32(np, v) for v in obs])
            rewards.append(float(reward))
            terminated.append(bool(term))
            truncated.append(bool(trunc))
            t += 1
            if term or trunc or (limit is not None and t >= limit):
                break
        episodes.append({
            "seed": seed,
            "g": g,
            "policy": policy,
            "initial_state": initial,
            "actions": actions,
            "states": states,
            "observations": observations,
            "rewards": rewards,
            "terminated": terminated,
            "truncated": truncated,
        })
        env.close()

    assert clipped_actions > 50, clipped_actions
    assert clipped_speeds > 10, clipped_speeds
    assert sum(e["truncated"][-1] for e in episodes) == 3
    doc = {
        "generator": "tools/gen_pendulum_fixture.py",
        "gymnasium_version": gym.__version__,
        "numpy_version": np.__version__,
        "env_id": "Pendulum-v1",
        "note": ("states are float64 [theta, theta_dot] after each step (repr round-trips "
                 "exactly); actions and observations are float32, written as the shortest "
                 "decimal that reads back as the same float32; episodes cut before 200 steps "
                 "were stopped by the script, not by the environment"),
        "episodes": episodes,
    }
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    lengths = [len(e["actions"]) for e in episodes]
    print(f"wrote {out}: {len(episodes)} episodes, lengths {lengths}, "
          f"{clipped_actions} clipped actions, {clipped_speeds} clipped speeds")


if __name__ == "__main__":
    main()
