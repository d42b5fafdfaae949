#!/usr/bin/env python3
"""Writes test/fixtures/acrobot/gymnasium_acrobot_v1.json: episodes of gymnasium's own
Acrobot-v1 (through gym.make, so with its TimeLimit of 500 steps), for
include/seedrl/env/acrobot.hpp to replay step by step.

Each episode records the initial physical state (theta1, theta2, dtheta1, dtheta2, as gymnasium
holds it after reset), then per step the action, the state after it, the float32 observation,
the reward and the terminated / truncated flags. Actions come from a mix of policies so that
episodes both terminate (an energy-pumping policy swings up in about 100-300 steps) and hit
the time limit (uniform random actions), and so that velocities reach their clips (a constant
push from a state near the limits, recorded for 60 steps only).

Usage: python3 tools/gen_acrobot_fixture.py [output.json]
"""
import json
import pathlib
import sys

import gymnasium as gym
import numpy as np


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                       "test/fixtures/acrobot/gymnasium_acrobot_v1.json")
    env = gym.make("Acrobot-v1")
    rng = np.random.default_rng(7)
    episodes = []
    for seed, policy in [(1, "pump"), (2, "pump_noisy"), (3, "random"), (4, "spin"),
                         (5, "pump")]:
        env.reset(seed=seed)
        if policy == "spin":  # started near the velocity limits, so that they clip
            env.unwrapped.state = np.array([0.5, -0.5, 12.0, 27.0])
        start = [float(x) for x in env.unwrapped.state]
        steps = []
        while True:
            s = env.unwrapped.state
            if policy == "random":
                a = int(rng.integers(0, 3))
            elif policy == "spin":  # always push one way: the velocity clips are reached
                a = 2
            else:
                a = 0 if s[2] > 0 else 2  # against theta1's motion: swings up
                if policy == "pump_noisy" and rng.uniform() < 0.2:
                    a = int(rng.integers(0, 3))
            obs, r, term, trunc, _ = env.step(a)
            if policy == "spin" and len(steps) == 60:
                break
            steps.append({"action": a, "state": [float(x) for x in env.unwrapped.state],
                          "observation": [float(x) for x in obs], "reward": float(r),
                          "terminated": bool(term), "truncated": bool(trunc)})
            if term or trunc:
                break
        episodes.append({"seed": seed, "policy": policy, "start": start, "steps": steps})
        end = ("terminated" if steps[-1]["terminated"] else
               "truncated" if steps[-1]["truncated"] else "cut short")
        print(f"seed {seed} {policy}: {len(steps)} steps, {end}")
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"description": "gymnasium Acrobot-v1 episodes (tools/gen_acrobot_fixture.py)",
                       "gymnasium": gym.__version__, "episodes": episodes},
                      separators=(",", ":")) + "\n"
    out.write_text(text)
    print(f"{len(episodes)} episodes, {len(text)} bytes in {out}")


if __name__ == "__main__":
    main()
