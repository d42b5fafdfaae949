"""Python actor frames/s with ALE: the link's overhead against the same environments stepped
with no link (issue 7, "Speed"; target: overhead <= 20%).

Both sides step K `ALE/Pong-v5` environments with seedrl_actor's Atari preprocessing (frame skip
4, 84x84 grayscale, no-op starts) and uniformly random actions, one process, one after
another:

  gymnasium  a plain loop: env.step(action) for each env, env.reset() where an episode ended;
  actor      seedrl_actor.Actor against an echo learner in another process that answers each
             step frame at once with random actions (it reads the frame but does no inference).

Each is run `--runs` times (default 5), alternating, and the medians are compared. Frames are
emulator frames (agent steps x frame skip), as in the Atari literature. Besides wall-clock
frames/s the script reports frames per CPU second of the stepping process: on a machine shared
with other work the wall-clock figure of the linked run also counts the time the learner process
waits for a core, while the CPU figure is the actor's own cost.

  PYTHONPATH=python python3 bench/python_actor_bench.py [--envs 8] [--steps 300] [--runs 5]

Needs numpy, gymnasium and ale-py (pip install numpy gymnasium ale-py).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import pathlib
import socket
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))

import numpy as np  # noqa: E402

from seedrl_actor import protocol as p  # noqa: E402
from seedrl_actor.actor import Actor, ActorConfig  # noqa: E402
from seedrl_actor.atari import make_atari  # noqa: E402


def _exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError("closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def echo_learner(listener: socket.socket, seed: int) -> None:
    """Accepts actors one after another; answers every step frame with random actions."""
    rng = np.random.default_rng(seed)
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            header = p.decode_header(_exact(conn, p.HEADER_SIZE))
            hello = p.decode_hello(_exact(conn, header.payload_length))
            k, n = hello.num_envs, hello.action.num_actions
            conn.sendall(p.encode_welcome(p.Welcome(0, k)))
            while True:
                header = p.decode_header(_exact(conn, p.HEADER_SIZE))
                _exact(conn, header.payload_length)
                if header.type == p.MessageType.STEP:
                    conn.sendall(p.encode_discrete_actions(rng.integers(0, n, k)))
                elif header.type == p.MessageType.CLOSE:
                    break
        except ConnectionError:
            pass
        finally:
            conn.close()


def make(env_id: str):
    return make_atari(env_id)


def gymnasium_run(envs: list, steps: int, rng: np.random.Generator) -> tuple[float, float]:
    """Wall and CPU seconds of this process for `steps` rounds of one step per env, no
    link."""
    n = envs[0].action_space.n
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        actions = rng.integers(0, n, len(envs))
        for env, a in zip(envs, actions):
            _, _, terminated, truncated, _ = env.step(int(a))
            if terminated or truncated:
                env.reset()
    return time.perf_counter() - t0, time.process_time() - c0


def actor_run(actor: Actor, steps: int) -> tuple[float, float]:
    """Wall and CPU seconds of this process for `steps` more round trips (connect,
    handshake and env resets included)."""
    actor.config.max_steps = actor.steps + steps
    t0, c0 = time.perf_counter(), time.process_time()
    actor.run()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="ALE/Pong-v5")
    ap.add_argument("--envs", type=int, default=8, help="environments per actor (K)")
    ap.add_argument("--steps", type=int, default=300, help="round trips per run")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    learner = mp.get_context("fork").Process(target=echo_learner, args=(listener, 1),
                                             daemon=True)
    learner.start()

    envs = [make(args.env) for _ in range(args.envs)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    skip = envs[0].frame_skip
    config = ActorConfig(host="127.0.0.1", port=port, seed=100, name="bench", log=lambda s: None,
                         progress_interval=0)
    actor = Actor(config, lambda i: make(args.env), args.envs)
    rng = np.random.default_rng(0)
    # Warm-up: first frames, caches, the learner's first accept.
    gymnasium_run(envs, 20, rng)
    actor_run(actor, 20)

    frames = args.steps * args.envs * skip
    plain, linked, plain_cpu, linked_cpu = [], [], [], []
    for run in range(args.runs):
        wall, cpu = gymnasium_run(envs, args.steps, rng)
        plain.append(frames / wall)
        plain_cpu.append(frames / cpu)
        wall, cpu = actor_run(actor, args.steps)
        linked.append(frames / wall)
        linked_cpu.append(frames / cpu)
        print(f"run {run + 1}: gymnasium {plain[-1]:6.0f} frames/s ({plain_cpu[-1]:6.0f} per "
              f"CPU second)   actor {linked[-1]:6.0f} frames/s ({linked_cpu[-1]:6.0f} per CPU "
              "second)", flush=True)
    actor.close()
    for env in envs:
        env.close()
    learner.terminate()

    a, b = statistics.median(plain), statistics.median(linked)
    ac, bc = statistics.median(plain_cpu), statistics.median(linked_cpu)
    print(f"\n{args.env}, {args.envs} envs, frame skip {skip}, {args.steps} steps x "
          f"{args.envs} envs per run, median of {args.runs} (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"  gymnasium, no link:      {a:8.0f} frames/s  ({a / skip:6.0f} env steps/s), "
          f"{ac:8.0f} frames per CPU second of this process")
    print(f"  seedrl_actor, echo link: {b:8.0f} frames/s  ({b / skip:6.0f} env steps/s), "
          f"{bc:8.0f} frames per CPU second of this process")
    print(f"  link overhead, wall clock: {100 * (1 - b / a):.1f}% (target <= 20%); ratio "
          f"actor/gymnasium {b / a:.3f}")
    print(f"  link overhead, actor CPU:  {100 * (1 - bc / ac):.1f}% (the actor's own cost, "
          "without waiting for the learner; robust on a loaded machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
