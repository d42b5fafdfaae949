#!/usr/bin/env python3
"""Stable-Baselines3 PPO or DQN with RL Zoo's hyperparameters, the baselines that
docs/learning.md, docs/mujoco.md (PPO) and docs/r2d2.md (DQN, the value-based peer) set our runs
beside.

The hyperparameters are RL Zoo's entries (hyperparams/ppo.yml and dqn.yml in
rl-baselines3-zoo): PPO for CartPole-v1, Acrobot-v1, Pendulum-v1 and HalfCheetah (tuned for -v3,
run on -v5), DQN (--algo dqn) for CartPole-v1; another env gets SB3's own defaults. As in the
Zoo, `normalize: true` is VecNormalize over observations and rewards with the algorithm's gamma,
`lin_X` a rate decayed linearly from X to 0, and episode returns are the raw ones (Monitor sits
under VecNormalize). With --target-return the run stops as soon as the mean of the last 100
episodes reaches it, and prints
    reached: TARGET at STEPS steps in WALL s
(or "not reached"), the figure bench/learning_suite.sh reads.

Every --log-every environment steps one CSV row is appended:
    steps, episodes, mean_return, mean_return_100, wall_s
where mean_return averages the episodes that ended since the previous row, mean_return_100
the last 100 episodes (SB3's own ep_rew_mean), and wall_s counts from the start of training.
At the end a deterministic evaluation over --eval-episodes episodes is printed. With
--metrics FILE.jsonl the same rows also go out as seedrl's metrics.jsonl lines (step = frames,
`episode/return` = mean over the last 100 episodes, as the learner logs it), so that
tools/plot_metrics.py draws both runs in one panel:
    tools/plot_metrics.py runs/halfcheetah sb3.jsonl --tags episode/return

stable-baselines3 (and with it torch) is installed into the running interpreter's environment
when missing; it is not one of the test tools. Torch runs on one CPU thread by default so the
baseline's wall time is comparable with a one-core learner and leaves the machine usable.

Usage: .venv/bin/python tools/sb3_baseline.py [--algo ppo|dqn] [--env HalfCheetah-v5]
           [--steps 1000000]
           [--seed 0] [--csv out.csv] [--metrics out.jsonl] [--log-every 10000] [--threads 1]
           [--eval-episodes 10] [--target-return R]
"""
import argparse
import csv
import json
import math
import os
import platform
import subprocess
import sys
import time


def ensure(module, package):
    try:
        return __import__(module)
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", package])
        return __import__(module)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


# RL Zoo, ppo.yml: (n_envs, normalize, PPO arguments, policy_kwargs); "lin_X" strings are
# linear schedules from X. policy_kwargs names torch's activation by string (resolved below).
PPO_ZOO = {
    "CartPole-v1": (8, False, dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
                                   n_epochs=20, ent_coef=0.0, learning_rate="lin_0.001",
                                   clip_range="lin_0.2"), {}),
    "Acrobot-v1": (16, True, dict(n_steps=256, gae_lambda=0.94, gamma=0.99, n_epochs=4,
                                  ent_coef=0.0), {}),
    "Pendulum-v1": (4, False, dict(n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10,
                                   ent_coef=0.0, learning_rate=1e-3, clip_range=0.2,
                                   use_sde=True, sde_sample_freq=4), {}),
    "HalfCheetah": (1, True, dict(n_steps=512, batch_size=64, gamma=0.98,
                                  learning_rate=2.0633e-05, ent_coef=0.000401762, clip_range=0.1,
                                  n_epochs=20, gae_lambda=0.92, max_grad_norm=0.8,
                                  vf_coef=0.58096),
                    dict(log_std_init=-2, ortho_init=False, activation_fn="ReLU",
                         net_arch=dict(pi=[256, 256], vf=[256, 256]))),
}


# RL Zoo, dqn.yml: one environment each; ε decays linearly from 1 to exploration_final_eps over
# exploration_fraction of the run's steps (so --steps changes the schedule, as it does in the Zoo).
DQN_ZOO = {
    "CartPole-v1": (1, False, dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
                                   learning_starts=1000, gamma=0.99, target_update_interval=10,
                                   train_freq=256, gradient_steps=128, exploration_fraction=0.16,
                                   exploration_final_eps=0.04), dict(net_arch=[256, 256])),
}


def zoo_entry(algo, env_id):
    for key, entry in (DQN_ZOO if algo == "dqn" else PPO_ZOO).items():
        if env_id == key or env_id.startswith(key + "-"):
            return entry
    return (1, False, {}, {})


def schedule(value):
    if isinstance(value, str) and value.startswith("lin_"):
        start = float(value[4:])
        return lambda progress_remaining: progress_remaining * start
    return value


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algo", choices=["ppo", "dqn"], default="ppo")
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", default="sb3_baseline.csv")
    parser.add_argument("--metrics", help="also write seedrl metrics.jsonl rows to this file")
    parser.add_argument("--log-every", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--target-return", type=float,
                        help="stop once the mean of the last 100 episodes reaches it")
    args = parser.parse_args()

    ensure("stable_baselines3", "stable-baselines3")
    import gymnasium as gym
    import numpy as np
    import stable_baselines3
    import torch
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    torch.set_num_threads(args.threads)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs ({cpu_model()}), "
          f"load {os.getloadavg()}")
    print(f"versions: python {platform.python_version()}, stable-baselines3 "
          f"{stable_baselines3.__version__}, torch {torch.__version__} ({args.threads} thread), "
          f"gymnasium {gym.__version__}, numpy {np.__version__}")
    n_envs, normalize, hyper, policy_kwargs = zoo_entry(args.algo, args.env)
    print(f"{args.algo}, env {args.env}, {args.steps} steps, seed {args.seed}, {n_envs} envs, "
          f"normalize {normalize}, hyperparameters {hyper}, policy {policy_kwargs}")
    sys.stdout.flush()

    venv = make_vec_env(args.env, n_envs=n_envs, seed=args.seed)
    if normalize:
        venv = VecNormalize(venv, norm_obs=True, norm_reward=True, gamma=hyper.get("gamma", 0.99))
    kwargs = {k: schedule(v) for k, v in hyper.items()}
    policy_kwargs = dict(policy_kwargs)
    if "activation_fn" in policy_kwargs:
        policy_kwargs["activation_fn"] = getattr(torch.nn, policy_kwargs["activation_fn"])
    algorithm = DQN if args.algo == "dqn" else PPO
    model = algorithm("MlpPolicy", venv, seed=args.seed, device="cpu", verbose=0,
                policy_kwargs=policy_kwargs, **kwargs)

    class CsvLog(BaseCallback):
        """Appends a row every log_every steps; reads the finished episodes from Monitor's infos."""

        def __init__(self, path, metrics_path, log_every, target):
            super().__init__()
            self.target = target
            self.reached = None  # (steps, wall) when the target was reached
            self.metrics = open(metrics_path, "w") if metrics_path else None
            self.file = open(path, "w", newline="")
            self.writer = csv.writer(self.file)
            self.writer.writerow(["steps", "episodes", "mean_return", "mean_return_100", "wall_s"])
            self.log_every = log_every
            self.next_row = log_every
            self.pending = []  # returns of episodes ended since the last row
            self.all_returns = []
            self.start = time.monotonic()

        def _on_step(self):
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.pending.append(info["episode"]["r"])
                    self.all_returns.append(info["episode"]["r"])
            if self.num_timesteps >= self.next_row:
                self.next_row += self.log_every
                self.row()
            if (self.target is not None and len(self.all_returns) >= 100
                    and np.mean(self.all_returns[-100:]) >= self.target):
                self.reached = (self.num_timesteps, time.monotonic() - self.start)
                self.row()
                return False
            return True

        def row(self):
            wall = time.monotonic() - self.start
            recent = float(np.mean(self.pending)) if self.pending else float("nan")
            last100 = float(np.mean(self.all_returns[-100:])) if self.all_returns else float("nan")
            self.writer.writerow([self.num_timesteps, len(self.all_returns), f"{recent:.2f}",
                                  f"{last100:.2f}", f"{wall:.1f}"])
            self.file.flush()
            if self.metrics:
                def finite(v):
                    return v if math.isfinite(v) else None
                self.metrics.write(json.dumps({
                    "step": self.num_timesteps, "wall_time": time.time(),
                    "episode/return": finite(last100), "episodes": len(self.all_returns),
                    "sb3/return_since_last_row": finite(recent)}) + "\n")
                self.metrics.flush()
            print(f"steps {self.num_timesteps} episodes {len(self.all_returns)} "
                  f"mean_return {recent:.1f} mean_return_100 {last100:.1f} wall_s {wall:.0f}",
                  flush=True)
            self.pending = []

    log = CsvLog(args.csv, args.metrics, args.log_every, args.target_return)
    model.learn(total_timesteps=args.steps, callback=log)
    train_wall = time.monotonic() - log.start
    if args.target_return is not None:
        if log.reached:
            print(f"reached: {args.target_return} at {log.reached[0]} steps in "
                  f"{log.reached[1]:.1f} s", flush=True)
        else:
            print(f"not reached: {args.target_return} within {model.num_timesteps} steps, "
                  f"{train_wall:.1f} s", flush=True)
    log.file.close()
    if log.metrics:
        log.metrics.close()

    # Deterministic evaluation with the normalization statistics frozen, as the Zoo evaluates.
    if normalize:
        venv.training = False
        venv.norm_reward = False
    returns = []
    obs = venv.reset()
    while len(returns) < args.eval_episodes:
        action, _ = model.predict(obs, deterministic=True)
        obs, _, _, infos = venv.step(action)
        returns.extend(info["episode"]["r"] for info in infos if "episode" in info)
    last100 = np.mean(log.all_returns[-100:]) if log.all_returns else float("nan")
    last10 = np.mean(log.all_returns[-10:]) if log.all_returns else float("nan")
    steps = model.num_timesteps
    print(f"done: {steps} steps in {train_wall:.0f} s ({steps / train_wall:.0f} steps/s); "
          f"training return, last 10 episodes {last10:.1f}, last 100 {last100:.1f}; "
          f"deterministic eval over {len(returns)} episodes {np.mean(returns):.1f} "
          f"+- {np.std(returns):.1f}", flush=True)


if __name__ == "__main__":
    main()
