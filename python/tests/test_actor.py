"""The Python actor: specs from gymnasium spaces, SEED step semantics, reconnects, rejects,
keepalives, authentication, the command line, and end to end against the C++ learner.

Most tests run the actor against a small learner written here with the Python codec, which
can misbehave on purpose. The end-to-end tests start the real `seedrl_cartpole_seed learner`
named by SEEDRL_CARTPOLE_SEED_BIN and skip when it is not set.

Run: python3 -m unittest discover -s python/tests
"""

from __future__ import annotations

import math
import os
import pathlib
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unittest
from typing import Callable

from support import requires_tool  # python/tests/support.py

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYTHON_DIR = ROOT / "python"
sys.path.insert(0, str(PYTHON_DIR))

try:
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces
except ImportError:  # pragma: no cover - depends on the machine
    gym = None

if gym is not None:
    from seedrl_actor import auth
    from seedrl_actor import protocol as p
    from seedrl_actor.actor import (Actor, ActorConfig, ActorRejected, SpaceError,
                                    specs_from_spaces)
    from seedrl_actor.protocol import ErrorCode as EC
    from seedrl_actor.protocol import MessageType as MT

GYM_MISSING = ("gymnasium or numpy is not installed: pip install numpy gymnasium "
               "(scripts/install-deps.sh --test-tools installs them into .venv)")
LEARNER_BIN = os.environ.get("SEEDRL_CARTPOLE_SEED_BIN", "")
NO_LEARNER = ("SEEDRL_CARTPOLE_SEED_BIN is not set: build seedrl_cartpole_seed and point it "
              "at the binary to run the end-to-end tests against the C++ learner")
PENDULUM_BIN = os.environ.get("SEEDRL_PENDULUM_BIN", "")
NO_PENDULUM = ("SEEDRL_PENDULUM_BIN is not set: build seedrl_pendulum and point it at the "
               "binary to run a Box actor against the C++ Gaussian learner")
SECRET = b"0123456789abcdef-test-secret-for-seedrl"


# -------------------------------------------------------------------------------------------
# Environments and a scripted learner


if gym is not None:

    class CountingEnv(gym.Env):
        """Observation [100 * env + episode, t]; reward t; the episode ends at t == length,
        terminated or (with truncate) cut short by a time limit."""

        def __init__(self, index: int = 0, length: int = 3, truncate: bool = False) -> None:
            self.observation_space = spaces.Box(-1e6, 1e6, (2,), np.float32)
            self.action_space = spaces.Discrete(2)
            self.index, self.length, self.truncate = index, length, truncate
            self.episode, self.t = 0, 0
            self.actions: list[int] = []

        def _obs(self) -> np.ndarray:
            return np.array([100 * self.index + self.episode, self.t], dtype=np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.episode += 1
            self.t = 0
            return self._obs(), {}

        def step(self, action):
            self.actions.append(int(action))
            self.t += 1
            end = self.t >= self.length
            return (self._obs(), float(self.t), end and not self.truncate, end and self.truncate,
                    {})

    class BoxActionEnv(gym.Env):
        """Box actions with per-dimension bounds, one dimension unbounded; records each
        action as env.step receives it."""

        def __init__(self) -> None:
            self.observation_space = spaces.Box(-1e6, 1e6, (3,), np.float32)
            self.action_space = spaces.Box(np.array([-1.0, -2.0, -np.inf], np.float32),
                                           np.array([1.0, 0.5, np.inf], np.float32))
            self.actions: list = []

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.zeros(3, np.float32), {}

        def step(self, action):
            self.actions.append(action)
            return np.asarray(action, np.float32), 0.0, False, False, {}

    class PixelEnv(gym.Env):
        """uint8 frames [4, 4, 1] whose every pixel is 250 + t, 5 actions."""

        def __init__(self) -> None:
            self.observation_space = spaces.Box(0, 255, (4, 4, 1), np.uint8)
            self.action_space = spaces.Discrete(5)
            self.t = 0

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return np.full((4, 4, 1), 250, np.uint8), {}

        def step(self, action):
            self.t += 1
            return np.full((4, 4, 1), 250 + self.t, np.uint8), 1.0, self.t >= 5, False, {}


class Peer:
    """The learner's end of one connection, for scripted conversations."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.settimeout(10)

    def read(self) -> tuple["p.FrameHeader", bytes]:
        header = p.decode_header(self._exact(16))
        return header, self._exact(header.payload_length)

    def read_type(self, t: "MT") -> bytes:
        header, payload = self.read()
        if header.type != t:
            raise AssertionError(f"expected {t.name}, got {header.type.name}")
        return payload

    def send(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def welcome(self, keepalive_ms: int = 0) -> "p.Hello":
        hello = p.decode_hello(self.read_type(MT.HELLO))
        self.send(p.encode_welcome(p.Welcome(0, hello.num_envs, p.DEFAULT_MAX_PAYLOAD,
                                             keepalive_ms)))
        return hello

    def serve_steps(self, hello: "p.Hello", record: list, actions: Callable[[int], list],
                    limit: int | None = None) -> None:
        """Answers steps until the actor's close (or `limit` steps)."""
        while limit is None or limit > 0:
            header, payload = self.read()
            if header.type == MT.CLOSE:
                record.append(("close", p.decode_status(payload)))
                return
            if header.type in (MT.ACTOR_STATS, MT.KEEPALIVE):
                record.append((header.type.name.lower(), payload))
                continue
            assert header.type == MT.STEP, header.type
            step = p.parse_step(payload, hello.num_envs, hello.observation)
            record.append(("step", step))
            self.send(p.encode_discrete_actions(actions(hello.num_envs)))
            if limit is not None:
                limit -= 1

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the actor closed the connection")
            data += chunk
        return data


class ScriptedLearner:
    """Accepts connections on 127.0.0.1 and runs script(peer, index) for each, in order;
    with `tls` (a server SSLContext), each over TLS."""

    def __init__(self, script: Callable[["Peer", int], None],
                 tls: "ssl.SSLContext | None" = None) -> None:
        self.script = script
        self.tls = tls
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.errors: list[str] = []
        self.tls_refusals: list[str] = []
        self._done = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._done:
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            index = self.connections
            self.connections += 1
            try:
                if self.tls is not None:
                    conn.settimeout(10)
                    try:
                        conn = self.tls.wrap_socket(conn, server_side=True)
                    except (OSError, ssl.SSLError) as e:
                        self.tls_refusals.append(str(e))
                        continue
                self.script(Peer(conn), index)
            except Exception:
                self.errors.append(traceback.format_exc())
            finally:
                conn.close()

    def close(self) -> None:
        self._done = True
        self._thread.join(5)
        self.listener.close()


def config_for(learner: "ScriptedLearner", **overrides) -> "ActorConfig":
    defaults = dict(host="127.0.0.1", port=learner.port, initial_backoff=0.02, max_backoff=0.1,
                    name="test-actor", actor_id=5, progress_interval=0, log=lambda line: None)
    defaults.update(overrides)
    return ActorConfig(**defaults)


def wait_until(condition: Callable[[], object], timeout: float = 5.0) -> None:
    """For checks on what the scripted learner's thread saw after the actor returned."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def counting_envs(i: int) -> "CountingEnv":
    return CountingEnv(i, length=2 + i, truncate=i == 1)


# -------------------------------------------------------------------------------------------
# Specs


@requires_tool(gym is not None, GYM_MISSING)
class SpecTests(unittest.TestCase):
    def test_specs_come_from_the_spaces_of_real_environments(self) -> None:
        cases = {
            "CartPole-v1": (p.ObservationSpec(p.DType.FLOAT32, (4,)), p.ActionSpec.discrete(2)),
            "MountainCar-v0": (p.ObservationSpec(p.DType.FLOAT32, (2,)),
                               p.ActionSpec.discrete(3)),
            # Box(-2, 2, (1,)): one pair, a version-1 hello.
            "Pendulum-v1": (p.ObservationSpec(p.DType.FLOAT32, (3,)),
                            p.ActionSpec.continuous((1,), -2.0, 2.0)),
        }
        for env_id, want in cases.items():
            with self.subTest(env_id):
                env = gym.make(env_id)
                self.assertEqual(specs_from_spaces(env.observation_space, env.action_space), want)
                env.close()

    def test_box_dtype_and_shape_travel_unchanged(self) -> None:
        for dtype, wire in ((np.uint8, p.DType.UINT8), (np.int32, p.DType.INT32),
                            (np.float32, p.DType.FLOAT32), (np.float64, p.DType.FLOAT64)):
            with self.subTest(dtype=dtype.__name__):
                obs, act = specs_from_spaces(spaces.Box(0, 1, (84, 84, 1), dtype),
                                             spaces.Discrete(6))
                self.assertEqual(obs, p.ObservationSpec(wire, (84, 84, 1)))
                self.assertEqual(act, p.ActionSpec.discrete(6))
        obs, _ = specs_from_spaces(spaces.Box(0, 1, (), np.float32), spaces.Discrete(2))
        self.assertEqual(obs.shape, (1,))  # scalars travel as [1]

    def test_box_actions_keep_their_per_dimension_bounds(self) -> None:
        box = spaces.Box(np.array([-1.0, -2.0, -np.inf], np.float32),
                         np.array([1.0, 0.5, np.inf], np.float32))
        _, act = specs_from_spaces(spaces.Box(0, 1, (3,), np.float32), box)
        self.assertEqual(act, p.ActionSpec.continuous((3,), [-1.0, -2.0, -np.inf],
                                                      [1.0, 0.5, np.inf]))
        self.assertTrue(act.per_element_bounds)
        self.assertEqual(act.low_at(2), -math.inf)
        # The same values as the C++-written version-2 vector, so the same hello bytes.
        frame = p.encode_hello(p.Hello(9, 2, p.ObservationSpec(p.DType.FLOAT32, (3,)), act,
                                       "box"))
        golden = pathlib.Path(__file__).resolve().parents[2] / "test" / "fixtures" / \
            "protocol" / "hello_continuous_v2.bin"
        self.assertEqual(frame, golden.read_bytes())
        # Rank 2 flattens row-major; a scalar Box travels as [1].
        grid = spaces.Box(np.array([[0.0, 1.0], [2.0, 3.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]),
                          dtype=np.float64)
        _, act = specs_from_spaces(box, grid)
        self.assertEqual((act.shape, act.lows, act.highs),
                         ((2, 2), (0.0, 1.0, 2.0, 3.0), (1.0, 2.0, 3.0, 4.0)))
        _, act = specs_from_spaces(box, spaces.Box(-3.0, 3.0, (), np.float32))
        self.assertEqual(act, p.ActionSpec.continuous((1,), -3.0, 3.0))

    def test_unsupported_spaces_are_refused_with_the_reason(self) -> None:
        box = spaces.Box(0, 1, (4,), np.float32)
        cases = [
            (spaces.Dict({"a": box}), spaces.Discrete(2), "FlattenObservation"),
            (spaces.Box(0, 2**64 - 1, (4,), np.uint64), spaces.Discrete(2), "uint64"),
            (spaces.Box(0, 2**62, (4,), np.int64), spaces.Discrete(2), "int64"),
            (spaces.Box(0, 1, (1,) * 7, np.float32), spaces.Discrete(2), "rank 7"),
            (spaces.Discrete(3), spaces.Discrete(2), "Box"),
            (box, spaces.Box(-1, 1, (2,), np.int64), "float dtype"),
            (box, spaces.Box(np.array([0.0, 1.0], np.float32), np.array([1.0, 1.0], np.float32)),
             "dimension 1"),
            (box, spaces.Box(np.zeros(1025, np.float32),
                             np.arange(1.0, 1026.0, dtype=np.float32)),
             "at most 1024"),
            (box, spaces.MultiDiscrete([2, 3]), "Discrete"),
        ]
        for obs_space, act_space, phrase in cases:
            with self.subTest(obs=str(obs_space), act=str(act_space)):
                with self.assertRaises(SpaceError) as cm:
                    specs_from_spaces(obs_space, act_space)
                self.assertIn(phrase, str(cm.exception))

    def test_action_spaces_no_head_serves_are_refused_naming_the_space(self) -> None:
        # Neither the categorical nor the Gaussian head can serve these: the actor refuses
        # them before it connects, naming the space, its class and what would work instead.
        box = spaces.Box(-1, 1, (2,), np.float32)
        cases = [
            (spaces.MultiDiscrete([2, 3]), "MultiDiscrete", "product"),
            (spaces.MultiBinary(4), "MultiBinary", "bit patterns"),
            (spaces.Dict({"move": spaces.Discrete(2), "force": box}), "Dict", "concatenates"),
            (spaces.Tuple((spaces.Discrete(2), box)), "Tuple", "concatenates"),
        ]
        for act_space, kind, advice in cases:
            with self.subTest(kind):
                with self.assertRaises(SpaceError) as cm:
                    specs_from_spaces(spaces.Box(0, 1, (3,), np.float32), act_space)
                message = str(cm.exception)
                self.assertIn(f"action space {act_space} ({kind}) is not supported", message)
                self.assertIn("one Discrete action (categorical) or one float Box (Gaussian)",
                              message)
                self.assertIn(advice, message)


# -------------------------------------------------------------------------------------------
# Against a scripted learner


class ScriptedLearnerCase(unittest.TestCase):
    """Closes the scripted learners a test made and fails it on any error in their scripts."""

    def setUp(self) -> None:
        self.learners: list[ScriptedLearner] = []

    def tearDown(self) -> None:
        for learner in self.learners:
            learner.close()
            self.assertEqual(learner.errors, [], "".join(learner.errors))


@requires_tool(gym is not None, GYM_MISSING)
class ScriptedLearnerTests(ScriptedLearnerCase):

    def learner(self, script: Callable[["Peer", int], None]) -> "ScriptedLearner":
        learner = ScriptedLearner(script)
        self.learners.append(learner)
        return learner

    def run_actor(self, learner: "ScriptedLearner", make_env=counting_envs, num_envs: int = 2,
                  **overrides) -> "Actor":
        actor = Actor(config_for(learner, **overrides), make_env, num_envs)
        self.addCleanup(actor.close)
        actor.run()
        time.sleep(0.05)  # let the scripted learner finish reading
        return actor

    def test_box_actions_travel_with_a_version_2_hello(self) -> None:
        hellos: list = []
        sent = [[0.5, -2.0, -1e30], [-1.0, 0.5, 7.0]]

        def script(peer: Peer, index: int) -> None:
            hello = p.decode_hello(peer.read_type(MT.HELLO))
            hellos.append(hello)
            peer.send(p.encode_welcome(p.Welcome(0, hello.num_envs)))
            for row in sent:
                peer.read_type(MT.STEP)
                peer.send(p.encode_continuous_actions(np.array([row], np.float32)))
            while peer.read()[0].type != MT.CLOSE:  # the actor stops after max_steps
                pass

        envs: list = []

        def make(i: int) -> "BoxActionEnv":
            envs.append(BoxActionEnv())
            return envs[-1]

        self.run_actor(self.learner(script), make, num_envs=1, max_steps=2)
        hello = hellos[0]
        self.assertEqual(hello.version, 2)
        self.assertEqual(hello.action, p.ActionSpec.continuous(
            (3,), [-1.0, -2.0, -math.inf], [1.0, 0.5, math.inf]))
        # env.step got each row as the Box's float32 vector.
        self.assertEqual(len(envs[0].actions), 2)
        for got, want in zip(envs[0].actions, sent):
            self.assertEqual(got.dtype, np.float32)
            self.assertEqual(got.shape, (3,))
            np.testing.assert_array_equal(got, np.array(want, np.float32))

    def test_steps_follow_seed_semantics(self) -> None:
        record: list = []
        hellos: list = []

        def script(peer: Peer, index: int) -> None:
            hellos.append(peer.welcome())
            peer.serve_steps(hellos[-1], record, lambda k: [1, 0])

        envs: list = []

        def make(i: int) -> "CountingEnv":
            envs.append(counting_envs(i))
            return envs[-1]

        actor = self.run_actor(self.learner(script), make, max_steps=5)
        self.assertEqual(actor.steps, 5)
        hello = hellos[0]
        self.assertEqual((hello.actor_id, hello.num_envs, hello.name), (5, 2, "test-actor"))
        self.assertEqual(hello.observation, p.ObservationSpec(p.DType.FLOAT32, (2,)))
        steps = [s for kind, s in record if kind == "step"]
        self.assertEqual(len(steps), 5)
        wait_until(lambda: record and record[-1][0] == "close")
        self.assertEqual(record[-1][0], "close")
        self.assertEqual(record[-1][1].code, EC.NONE)
        # Env 0 terminates after 2 steps, env 1 is truncated after 3: the record of the step
        # that ended an episode holds its last reward and the next episode's first observation.
        want = [  # (reward, done, truncated, observation) for env 0, then env 1
            ((0, 0, 0, [1, 0]), (0, 0, 0, [101, 0])),
            ((1, 0, 0, [1, 1]), (1, 0, 0, [101, 1])),
            ((2, 1, 0, [2, 0]), (2, 0, 0, [101, 2])),
            ((1, 0, 0, [2, 1]), (3, 1, 1, [102, 0])),
            ((2, 1, 0, [3, 0]), (1, 0, 0, [102, 1])),
        ]
        for t, (step, expected) in enumerate(zip(steps, want)):
            for i in range(2):
                with self.subTest(step=t, env=i):
                    reward, done, truncated, obs = expected[i]
                    self.assertEqual(step.env_index[i], i)
                    self.assertEqual(step.reward[i], reward)
                    self.assertEqual(step.done[i], bool(done))
                    self.assertEqual(step.truncated[i], bool(truncated))
                    self.assertEqual(step.observations[i].tolist(), obs)
        run_ids = {tuple(s.run_id.tolist()) for s in steps}
        self.assertEqual(len(run_ids), 1)  # fixed for the connection, across episodes
        self.assertNotEqual(steps[0].run_id[0], steps[0].run_id[1])
        self.assertEqual(envs[0].actions, [1] * 5)
        self.assertEqual(envs[1].actions, [0] * 5)

    def test_uint8_observations_stay_uint8_on_the_wire(self) -> None:
        record: list = []
        hellos: list = []

        def script(peer: Peer, index: int) -> None:
            hellos.append(peer.welcome())
            peer.serve_steps(hellos[-1], record, lambda k: [4] * k)

        self.run_actor(self.learner(script), lambda i: PixelEnv(), num_envs=3, max_steps=2)
        self.assertEqual(hellos[0].observation, p.ObservationSpec(p.DType.UINT8, (4, 4, 1)))
        self.assertEqual(hellos[0].action, p.ActionSpec.discrete(5))
        steps = [s for kind, s in record if kind == "step"]
        self.assertEqual(steps[1].observations.dtype, np.uint8)
        self.assertTrue((steps[1].observations == 251).all())

    def test_reconnects_after_a_lost_link_with_fresh_episodes_and_run_ids(self) -> None:
        record: list = [[], []]

        def script(peer: Peer, index: int) -> None:
            hello = peer.welcome()
            if index == 0:
                peer.serve_steps(hello, record[0], lambda k: [0] * k, limit=3)
                return  # drops the connection
            peer.serve_steps(hello, record[1], lambda k: [0] * k)

        lines: list[str] = []
        learner = self.learner(script)
        actor = self.run_actor(learner, max_steps=5, log=lines.append)
        self.assertEqual((actor.steps, actor.connections, learner.connections), (5, 2, 2))
        first = [s for kind, s in record[0] if kind == "step"]
        second = [s for kind, s in record[1] if kind == "step"]
        self.assertEqual((len(first), len(second)), (3, 2))  # the 4th step was never answered
        self.assertTrue(set(first[0].run_id.tolist()).isdisjoint(second[0].run_id.tolist()))
        self.assertEqual(second[0].reward.tolist(), [0, 0])
        self.assertEqual(second[0].done.tolist(), [False, False])
        self.assertEqual(second[0].observations[:, 1].tolist(), [0, 0])  # t = 0: new episodes
        self.assertTrue(any("link lost" in line and "retrying in" in line for line in lines))

    def test_transient_rejects_are_retried_with_backoff(self) -> None:
        codes = [EC.TOO_MANY_ENVS, EC.SHUTTING_DOWN, EC.IDLE_TIMEOUT]
        times: list[float] = []

        def script(peer: Peer, index: int) -> None:
            times.append(time.monotonic())
            if index < len(codes):
                peer.read_type(MT.HELLO)
                peer.send(p.encode_reject(codes[index], "try later"))
                return
            peer.serve_steps(peer.welcome(), [], lambda k: [0] * k)

        learner = self.learner(script)
        actor = self.run_actor(learner, max_steps=2, initial_backoff=0.05, max_backoff=1.0)
        self.assertEqual((actor.steps, learner.connections), (2, 4))
        gaps = [b - a for a, b in zip(times, times[1:])]
        # Backoff doubles from 50 ms, plus up to 25 % jitter.
        for gap, base in zip(gaps, (0.05, 0.1, 0.2)):
            self.assertGreaterEqual(gap, base * 0.9)
            self.assertLess(gap, base * 1.25 + 0.5)

    def test_permanent_rejects_stop_the_actor_with_the_reason(self) -> None:
        cases = [
            (EC.SPEC_MISMATCH, "observation dtype: actor sends float32, learner expects uint8",
             "spec_mismatch: observation dtype"),
            (EC.BAD_HANDSHAKE, "hello: name: control character", "bad_handshake"),
            (EC.AUTH_REQUIRED, "this learner requires authentication", "SEEDRL_AUTH_SECRET"),
            (EC.UNSUPPORTED_VERSION, "v2 only\n\x1b[2J", "unsupported_version: v2 only\\n"),
        ]
        for code, message, phrase in cases:
            with self.subTest(code=code.name):
                def script(peer: Peer, index: int) -> None:
                    peer.read_type(MT.HELLO)
                    peer.send(p.encode_reject(code, message))

                learner = self.learner(script)
                with self.assertRaises(ActorRejected) as cm:
                    self.run_actor(learner, max_steps=2)
                self.assertIn(phrase, str(cm.exception))
                self.assertNotIn("\x1b", str(cm.exception))  # the learner's text is escaped
                time.sleep(0.1)
                self.assertEqual(learner.connections, 1)

    def test_bad_frames_from_the_learner_get_an_error_and_a_reconnect(self) -> None:
        good_header = p.encode_header(MT.ACTIONS, 12)
        cases = [
            ("action out of range", p.encode_discrete_actions([2, 0]), EC.BAD_ACTION,
             "action 2 for env 0 is outside [0, 2)"),
            ("wrong env count", p.encode_discrete_actions([0, 0, 0]), EC.BAD_ENV_INDEX, "3"),
            ("short actions", p.encode_header(MT.ACTIONS, 8) + bytes([2, 0, 0, 0, 0, 0, 0, 0]),
             EC.TRUNCATED_FRAME, "expected 12"),
            ("bad magic", b"HTTP" + good_header[4:], EC.BAD_MAGIC, "SDRL"),
            ("unknown type", p.encode_header(14, 0), EC.UNKNOWN_MESSAGE_TYPE, "14"),
            ("oversized keepalive", p.encode_header(MT.KEEPALIVE, 1), EC.FRAME_TOO_LARGE,
             "keepalive"),
            # Header alone: the actor refuses these before reading a payload.
            ("a step from the learner", p.encode_header(MT.STEP, 32), EC.UNEXPECTED_MESSAGE,
             "step"),
            ("a second welcome", p.encode_welcome(p.Welcome(0, 2)), EC.UNEXPECTED_MESSAGE,
             "expected actions, got welcome"),
            ("a reject after welcome", p.encode_reject(EC.TOO_MANY_ENVS, "full"),
             EC.UNEXPECTED_MESSAGE, "expected actions, got reject"),
        ]
        for label, bad, code, phrase in cases:
            with self.subTest(label):
                errors: list = []

                def script(peer: Peer, index: int) -> None:
                    hello = peer.welcome()
                    if index == 0:
                        peer.read_type(MT.STEP)
                        peer.send(bad)
                        errors.append(p.decode_status(peer.read_type(MT.ERROR)))
                        return
                    peer.serve_steps(hello, [], lambda k: [0] * k)

                learner = self.learner(script)
                actor = self.run_actor(learner, max_steps=1)
                self.assertEqual((actor.steps, learner.connections), (1, 2))
                wait_until(lambda: errors)
                self.assertEqual(errors[0].code, code)
                self.assertIn(phrase, errors[0].message)

    def test_a_welcome_for_other_envs_stops_the_actor(self) -> None:
        errors: list = []

        def script(peer: Peer, index: int) -> None:
            peer.read_type(MT.HELLO)
            peer.send(p.encode_welcome(p.Welcome(0, 3)))
            errors.append(p.decode_status(peer.read_type(MT.ERROR)))

        with self.assertRaises(ActorRejected) as cm:
            self.run_actor(self.learner(script), max_steps=1)
        self.assertIn("welcome for 3 environments", str(cm.exception))
        wait_until(lambda: errors)
        self.assertEqual(errors[0].code, EC.BAD_HANDSHAKE)

    def test_keepalives_are_sent_while_waiting_and_ignored_when_received(self) -> None:
        seen: list = []

        def script(peer: Peer, index: int) -> None:
            hello = peer.welcome(keepalive_ms=40)
            peer.read_type(MT.STEP)
            # A slow learner: both sides keep the idle link alive with keepalives.
            deadline = time.monotonic() + 0.3
            peer.sock.settimeout(0.04)
            while time.monotonic() < deadline:
                peer.send(p.encode_keepalive())
                try:
                    header, _ = peer.read()
                    seen.append(header.type)
                except socket.timeout:
                    pass
            peer.sock.settimeout(10)
            peer.send(p.encode_keepalive() + p.encode_discrete_actions([0, 0]))
            peer.serve_steps(hello, [], lambda k: [0] * k)

        actor = self.run_actor(self.learner(script), max_steps=2)
        self.assertEqual(actor.steps, 2)
        self.assertGreaterEqual(seen.count(MT.KEEPALIVE), 3)
        self.assertEqual(set(seen), {MT.KEEPALIVE})

    def test_a_silent_learner_times_out_after_three_keepalive_intervals(self) -> None:
        errors: list = []

        def script(peer: Peer, index: int) -> None:
            hello = peer.welcome(keepalive_ms=50)
            if index == 0:
                while True:  # reads everything, answers nothing
                    header, payload = peer.read()
                    if header.type == MT.ERROR:
                        errors.append(p.decode_status(payload))
                        return
            peer.serve_steps(hello, [], lambda k: [0] * k)

        start = time.monotonic()
        actor = self.run_actor(self.learner(script), max_steps=1)
        self.assertEqual(actor.steps, 1)
        wait_until(lambda: errors)
        self.assertEqual(errors[0].code, EC.IDLE_TIMEOUT)
        self.assertGreaterEqual(time.monotonic() - start, 0.15)

    def test_actor_stats_report_where_the_time_went(self) -> None:
        record: list = []

        def script(peer: Peer, index: int) -> None:
            hello = peer.welcome()

            def slow_actions(k: int) -> list:
                time.sleep(0.02)
                return [0] * k

            peer.serve_steps(hello, record, slow_actions)

        self.run_actor(self.learner(script), max_steps=10, stats_interval=0.05)
        stats = [p.decode_actor_stats(payload) for kind, payload in record
                 if kind == "actor_stats"]
        self.assertGreaterEqual(len(stats), 1)
        steps = sum(s.steps for s in stats)
        self.assertLessEqual(steps, 10)
        self.assertGreaterEqual(sum(s.wait_seconds for s in stats), 0.015 * steps)
        self.assertGreater(sum(s.env_seconds for s in stats), 0)

    def test_stop_request_ends_with_a_close_frame(self) -> None:
        record: list = []

        def script(peer: Peer, index: int) -> None:
            peer.serve_steps(peer.welcome(), record, lambda k: [0] * k)

        learner = self.learner(script)
        actor = Actor(config_for(learner), counting_envs, 2)
        self.addCleanup(actor.close)
        timer = threading.Timer(0.3, actor.request_stop)
        timer.start()
        steps = actor.run()
        timer.join()
        time.sleep(0.05)
        self.assertGreater(steps, 0)
        wait_until(lambda: record and record[-1][0] == "close")
        self.assertEqual(record[-1][0], "close")
        self.assertEqual((record[-1][1].code, record[-1][1].message), (0, "actor stopping"))

    def test_stop_request_ends_the_backoff_wait_at_once(self) -> None:
        def script(peer: Peer, index: int) -> None:
            peer.read_type(MT.HELLO)
            peer.send(p.encode_reject(EC.TOO_MANY_ENVS, "full"))

        learner = self.learner(script)
        actor = Actor(config_for(learner, initial_backoff=30.0, max_backoff=30.0),
                      counting_envs, 2)
        self.addCleanup(actor.close)
        threading.Timer(0.3, actor.request_stop).start()
        start = time.monotonic()
        self.assertEqual(actor.run(), 0)
        self.assertLess(time.monotonic() - start, 2.0)

    def test_authentication_with_the_right_secret(self) -> None:
        record: list = []

        def script(peer: Peer, index: int) -> None:
            p.decode_auth_request(peer.read_type(MT.AUTH_REQUEST))
            lh = auth.LearnerHandshake(SECRET)
            peer.send(p.encode_auth_challenge(lh.challenge))
            nonce, proof = p.decode_auth_response(peer.read_type(MT.AUTH_RESPONSE))
            confirm = lh.verify_actor(nonce, proof)
            assert confirm is not None, "the actor's proof did not verify"
            peer.send(p.encode_auth_confirm(confirm))
            peer.serve_steps(peer.welcome(), record, lambda k: [0] * k)

        actor = self.run_actor(self.learner(script), max_steps=3, secret=SECRET)
        self.assertEqual(actor.steps, 3)

    def test_a_learner_without_the_secret_is_refused_before_hello(self) -> None:
        def forged(peer: Peer, proof: bytes) -> bytes:
            return bytes(32)

        def reflected(peer: Peer, proof: bytes) -> bytes:
            return proof  # the actor's own proof sent back

        for label, confirm in (("forged", forged), ("reflected", reflected)):
            with self.subTest(label):
                seen: list = []

                def script(peer: Peer, index: int) -> None:
                    peer.read_type(MT.AUTH_REQUEST)
                    peer.send(p.encode_auth_challenge(auth.make_nonce()))
                    _, proof = p.decode_auth_response(peer.read_type(MT.AUTH_RESPONSE))
                    peer.send(p.encode_auth_confirm(confirm(peer, proof)))
                    header, payload = peer.read()
                    seen.append((header.type, p.decode_status(payload)))

                learner = self.learner(script)
                with self.assertRaises(ActorRejected) as cm:
                    self.run_actor(learner, max_steps=1, secret=SECRET)
                self.assertIn("did not prove", str(cm.exception))
                wait_until(lambda: seen)
                self.assertEqual(seen[0][0], MT.ERROR)  # never a hello
                self.assertEqual(seen[0][1].code, EC.AUTH_FAILED)
                self.assertEqual(learner.connections, 1)

    def test_an_actor_with_a_secret_never_falls_back_to_plain_hello(self) -> None:
        def script(peer: Peer, index: int) -> None:
            peer.read_type(MT.AUTH_REQUEST)
            peer.send(p.encode_reject(EC.UNEXPECTED_MESSAGE, "expected hello first, got "
                                      "auth_request: this learner runs without authentication"))

        learner = self.learner(script)
        with self.assertRaises(ActorRejected) as cm:
            self.run_actor(learner, max_steps=1, secret=SECRET)
        self.assertIn("will not fall back", str(cm.exception))
        self.assertEqual(learner.connections, 1)

    def test_an_action_space_no_head_serves_is_refused_before_connecting(self) -> None:
        def script(peer: Peer, index: int) -> None:
            peer.welcome()

        class MultiBinaryEnv(CountingEnv):
            def __init__(self) -> None:
                super().__init__()
                self.action_space = spaces.MultiBinary(3)

        learner = self.learner(script)
        with self.assertRaises(SpaceError) as cm:
            Actor(config_for(learner), lambda i: MultiBinaryEnv(), 1)
        self.assertIn("MultiBinary(3)", str(cm.exception))
        time.sleep(0.05)
        self.assertEqual(learner.connections, 0)

    def test_a_failing_environment_is_reported_to_the_learner(self) -> None:
        class BadRewardEnv(CountingEnv):
            def step(self, action):
                obs, _, term, trunc, info = super().step(action)
                return obs, float("nan"), term, trunc, info

        errors: list = []

        def script(peer: Peer, index: int) -> None:
            peer.welcome()
            peer.read_type(MT.STEP)
            peer.send(p.encode_discrete_actions([0]))
            errors.append(p.decode_status(peer.read_type(MT.ERROR)))

        with self.assertRaises(SpaceError) as cm:
            self.run_actor(self.learner(script), lambda i: BadRewardEnv(), num_envs=1,
                           max_steps=3)
        self.assertIn("nan", str(cm.exception))
        wait_until(lambda: errors)
        self.assertEqual(errors[0].code, EC.INTERNAL)

    def test_a_non_finite_observation_is_never_sent(self) -> None:
        # An unstable simulation: the learner would refuse the step (non_finite_observation),
        # and its running statistics must never see one. The actor stops first, naming it.
        for bad in (float("nan"), float("inf"), 1e300):
            class BadObservationEnv(CountingEnv):
                def __init__(self) -> None:
                    super().__init__()
                    self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float64)

                def step(self, action):
                    obs, reward, term, trunc, info = super().step(action)
                    return (np.array([obs[0], bad if self.t == 2 else obs[1]], np.float64),
                            reward, term, trunc, info)

            steps: list = []
            errors: list = []

            def script(peer: Peer, index: int) -> None:
                peer.welcome()
                while True:
                    steps.append(peer.read_type(MT.STEP))
                    if len(steps) == 2:
                        break
                    peer.send(p.encode_discrete_actions([0]))
                peer.send(p.encode_discrete_actions([0]))
                errors.append(p.decode_status(peer.read_type(MT.ERROR)))

            with self.subTest(value=bad):
                with self.assertRaises(SpaceError) as cm:
                    self.run_actor(self.learner(script), lambda i: BadObservationEnv(),
                                   num_envs=1, max_steps=5)
                self.assertIn("element 1", str(cm.exception))
                self.assertIn(repr(bad), str(cm.exception))
                wait_until(lambda: errors)
                self.assertEqual(len(steps), 2)  # the reset and the first step; never the bad one


# -------------------------------------------------------------------------------------------
# Secrets and the command line


def actor_env(secret: bytes | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SEEDRL_AUTH_SECRET", None)
    env["PYTHONPATH"] = os.pathsep.join([str(PYTHON_DIR)] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if secret is not None:
        env["SEEDRL_AUTH_SECRET"] = secret.decode()
    return env


def run_cli(args: list[str], secret: bytes | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seedrl_actor", *args], env=actor_env(secret),
                          capture_output=True, text=True, timeout=timeout)


@requires_tool(gym is not None, GYM_MISSING)
class SecretTests(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def secret_file(self, data: bytes, mode: int = 0o600, name: str = "secret") -> str:
        path = os.path.join(self.dir.name, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        return path

    def test_a_private_file_gives_its_bytes_without_one_trailing_newline(self) -> None:
        self.assertEqual(auth.secret_from_file(self.secret_file(SECRET + b"\n")), SECRET)
        self.assertEqual(auth.secret_from_file(self.secret_file(SECRET + b" \n\n")),
                         SECRET + b" \n")

    def test_a_file_others_can_read_is_refused_with_the_fix(self) -> None:
        path = self.secret_file(SECRET, 0o644)
        with self.assertRaises(auth.SecretError) as cm:
            auth.secret_from_file(path)
        self.assertIn(f"chmod 600 {path}", str(cm.exception))
        self.assertIn("0644", str(cm.exception))

    def test_bad_secrets_are_refused(self) -> None:
        cases = [(self.secret_file(b"short\n", name="short"), "at least 16"),
                 (self.secret_file(b"\n", name="empty"), "empty"),
                 (self.secret_file(b"x" * 5000, name="long"), "longer than 4096"),
                 (self.dir.name, "not a regular file"),
                 (os.path.join(self.dir.name, "missing"), "cannot open")]
        for path, phrase in cases:
            with self.subTest(phrase):
                with self.assertRaises(auth.SecretError) as cm:
                    auth.secret_from_file(path)
                self.assertIn(phrase, str(cm.exception))

    def test_the_environment_variable(self) -> None:
        old = os.environ.get("SEEDRL_AUTH_SECRET")
        try:
            os.environ["SEEDRL_AUTH_SECRET"] = SECRET.decode() + "\n"
            self.assertEqual(auth.load_secret(), SECRET)
            os.environ["SEEDRL_AUTH_SECRET"] = ""
            with self.assertRaises(auth.SecretError):
                auth.load_secret()
            del os.environ["SEEDRL_AUTH_SECRET"]
            self.assertIsNone(auth.load_secret())
            with self.assertRaises(auth.SecretError) as cm:
                auth.secret_from_env()
            self.assertIn("not set", str(cm.exception))
        finally:
            os.environ.pop("SEEDRL_AUTH_SECRET", None)
            if old is not None:
                os.environ["SEEDRL_AUTH_SECRET"] = old

    def test_the_command_line_takes_no_secret_and_refuses_a_readable_file(self) -> None:
        r = run_cli(["--learner", "127.0.0.1:1", "--env", "CartPole-v1", "--auth-secret",
                     SECRET.decode()])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("unrecognized arguments", r.stderr)
        r = run_cli(["--learner", "127.0.0.1:1", "--env", "CartPole-v1", "--auth-secret-file",
                     self.secret_file(SECRET, 0o640)])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("chmod 600", r.stderr)


@requires_tool(gym is not None, GYM_MISSING)
class CommandLineTests(unittest.TestCase):
    def test_help_names_every_option(self) -> None:
        r = run_cli(["--help"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for option in ("--learner", "--env", "--envs", "--seed", "--auth-secret-file",
                       "--max-steps"):
            self.assertIn(option, r.stdout)

    def test_usage_errors_exit_2(self) -> None:
        cases = [
            (["--env", "CartPole-v1"], "--learner"),
            (["--learner", "localhost", "--env", "CartPole-v1"], "HOST:PORT"),
            (["--learner", "127.0.0.1:1", "--env", "CartPole-v1", "--envs", "0"], "at least 1"),
            (["--learner", "127.0.0.1:1", "--env", "NoSuchEnv-v9"], "cannot make NoSuchEnv-v9"),
        ]
        for args, phrase in cases:
            with self.subTest(args=args):
                r = run_cli(args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(phrase, r.stderr)

    def test_sigint_sends_a_close_frame_and_exits_0(self) -> None:
        record: list = []
        connected = threading.Event()

        def script(peer: Peer, index: int) -> None:
            hello = peer.welcome()
            connected.set()
            peer.serve_steps(hello, record, lambda k: [0] * k)

        learner = ScriptedLearner(script)
        self.addCleanup(learner.close)
        proc = subprocess.Popen([sys.executable, "-m", "seedrl_actor", "--learner",
                                 f"127.0.0.1:{learner.port}", "--env", "CartPole-v1", "--envs",
                                 "2"], env=actor_env(), stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(connected.wait(30), "the actor never connected")
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=10)
        finally:
            proc.kill()
        self.assertEqual(proc.returncode, 0, stderr)
        wait_until(lambda: record and record[-1][0] == "close")
        self.assertEqual(record[-1][0], "close", stderr)
        self.assertEqual(record[-1][1].code, EC.NONE)
        self.assertNotIn("Traceback", stderr)


# -------------------------------------------------------------------------------------------
# End to end against the C++ learner


class LearnerProcess:
    """`seedrl_cartpole_seed learner --port 0` (or `binary learner --port 0 EXTRA...`), its
    stdout and stderr in files."""

    def __init__(self, secret: bytes | None, port: int = 0, binary: str = "",
                 extra: list[str] | None = None) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.out_path = os.path.join(self.dir.name, "learner.out")
        self.err_path = os.path.join(self.dir.name, "learner.err")
        env = actor_env(secret)
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen([binary or LEARNER_BIN, "learner", "--port", str(port),
                                          *(extra or [])], env=env, stdout=out, stderr=err)
        match = self.wait_for(r"learner listening on [^\s]*:(\d+)", stream="out")
        self.port = int(match.group(1))

    def text(self, stream: str) -> str:
        with open(self.out_path if stream == "out" else self.err_path) as f:
            return f.read()

    def wait_for(self, pattern: str, stream: str = "err", timeout: float = 20,
                 accept: Callable[[re.Match], bool] = lambda m: True) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in re.finditer(pattern, self.text(stream), re.MULTILINE):
                if accept(m):
                    return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"no {pattern!r} in the learner's std{stream}:\n"
                             f"{self.text('out')}\n{self.text('err')}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.dir.cleanup()
        return self.proc.returncode


@requires_tool(gym is not None, GYM_MISSING)
@unittest.skipUnless(LEARNER_BIN, NO_LEARNER)
class CppLearnerTests(unittest.TestCase):
    def learner(self, secret: bytes | None, port: int = 0) -> LearnerProcess:
        learner = LearnerProcess(secret, port)
        self.addCleanup(learner.stop)
        return learner

    def actor(self, learner: LearnerProcess, env_id: str = "CartPole-v1", envs: int = 2,
              extra: list[str] | None = None, secret: bytes | None = None,
              max_steps: int | None = 300) -> subprocess.CompletedProcess:
        args = ["--learner", f"127.0.0.1:{learner.port}", "--env", env_id, "--envs", str(envs),
                "--seed", "3", *(extra or [])]
        if max_steps is not None:
            args += ["--max-steps", str(max_steps)]
        return run_cli(args, secret=secret, timeout=120)

    def check_trains(self, secret: bytes | None) -> None:
        learner = self.learner(secret)
        r = self.actor(learner, secret=secret)
        self.assertEqual(r.returncode, 0, r.stderr + learner.text("err"))
        self.assertIn("stopped after 300 steps", r.stderr)
        learner.wait_for(r"actor \S+ from 127\.0\.0\.1:\d+ connected with 2 envs")
        learner.wait_for(r"said goodbye")
        # The learner's own count of frames it answered, from its progress line (every 2 s).
        learner.wait_for(r"^frames\s+(\d+)\s", stream="out", timeout=10,
                         accept=lambda m: int(m.group(1)) >= 600)

    def test_cartpole_actor_runs_against_an_authenticated_learner(self) -> None:
        self.check_trains(SECRET)

    def test_cartpole_actor_runs_against_a_learner_without_authentication(self) -> None:
        self.check_trains(None)

    def test_a_mismatched_actor_is_rejected_naming_the_mismatch(self) -> None:
        learner = self.learner(SECRET)
        r = self.actor(learner, env_id="MountainCar-v0", secret=SECRET)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("spec_mismatch", r.stderr)
        self.assertIn("observation shape: actor sends [2], learner expects [4]", r.stderr)
        self.assertIn("action count: actor has 3, learner expects 2", r.stderr)
        self.assertNotIn("retrying", r.stderr)
        learner.wait_for(r"closing 127\.0\.0\.1:\d+: spec_mismatch: observation shape")

    def test_a_box_actor_under_a_categorical_learner_is_rejected_naming_both(self) -> None:
        learner = self.learner(None)
        r = self.actor(learner, env_id="Pendulum-v1", secret=None)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("spec_mismatch", r.stderr)
        self.assertIn("action kind: actor has continuous [1] in [-2, 2], learner expects "
                      "discrete (2 actions)", r.stderr)
        self.assertNotIn("retrying", r.stderr)

    def test_a_wrong_or_missing_secret_is_refused(self) -> None:
        learner = self.learner(SECRET)
        r = self.actor(learner, secret=b"another-secret-of-enough-length")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("auth_failed", r.stderr)
        r = self.actor(learner, secret=None)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("auth_required", r.stderr)
        plain = self.learner(None)
        r = self.actor(plain, secret=SECRET)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("without authentication", r.stderr)

    def test_sigterm_says_goodbye_and_a_restarted_learner_gets_the_actor_back(self) -> None:
        learner = self.learner(None)
        port = learner.port
        proc = subprocess.Popen([sys.executable, "-m", "seedrl_actor", "--learner",
                                 f"127.0.0.1:{port}", "--env", "CartPole-v1", "--envs", "2",
                                 "--max-backoff", "0.5"],
                                env=actor_env(), stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.kill)
        learner.wait_for(r"connected with 2 envs")
        # The learner stops (close shutting_down): the actor backs off and retries until a
        # learner listens on the same port again.
        self.assertEqual(learner.stop(), 130)
        time.sleep(0.5)
        restarted = self.learner(None, port)
        restarted.wait_for(r"connected with 2 envs", timeout=30)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
        self.assertEqual(proc.returncode, 0, stderr)
        self.assertIn("retrying in", stderr)
        self.assertIn("shutting_down", stderr)
        restarted.wait_for(r"said goodbye")


@requires_tool(gym is not None, GYM_MISSING)
@unittest.skipUnless(PENDULUM_BIN, NO_PENDULUM)
class CppGaussianLearnerTests(unittest.TestCase):
    def test_a_box_actor_trains_the_cpp_gaussian_learner(self) -> None:
        # gymnasium's Pendulum-v1 has the spec of the C++ Pendulum (float32 [3], one torque in
        # [-2, 2]): the learner accepts the Box hello, samples torques for it and trains.
        learner = LearnerProcess(None, binary=PENDULUM_BIN, extra=[
            "--unroll-length", "20", "--batch-size", "2", "--inference-batch", "2",
            "--ppo-minibatches", "2"])
        self.addCleanup(learner.stop)
        r = run_cli(["--learner", f"127.0.0.1:{learner.port}", "--env", "Pendulum-v1", "--envs",
                     "2", "--seed", "3", "--max-steps", "600"], secret=None, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + learner.text("err"))
        self.assertIn("stopped after 600 steps", r.stderr)
        learner.wait_for(r"actor \S+ from 127\.0\.0\.1:\d+ connected with 2 envs")
        # 1,200 frames in unrolls of 20, batches of 2: PPO updates ran on the actor's frames
        # (the progress line's loss shows approximate KL and clip fraction only after one).
        learner.wait_for(r"^frames\s+(\d+) .* kl ", stream="out", timeout=30,
                         accept=lambda m: int(m.group(1)) >= 1000)
        learner.wait_for(r"said goodbye")


if __name__ == "__main__":
    unittest.main()


# -------------------------------------------------------------------------------------------
# TLS


TLS_FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "test" / "fixtures" / "tls"


def tls_files(name: str, ca: str = "ca") -> tuple[str, str, str]:
    return (str(TLS_FIXTURES / f"{name}.pem"), str(TLS_FIXTURES / f"{name}.key"),
            str(TLS_FIXTURES / f"{ca}.pem"))


def learner_tls(name: str = "learner") -> "ssl.SSLContext":
    """The learner's side as the C++ one sets it up: TLS 1.3, a client certificate required."""
    cert, key, ca = tls_files(name)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(ca)
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


@requires_tool(gym is not None, GYM_MISSING)
class TlsTests(ScriptedLearnerCase):
    def tls_learner(self, script, name: str = "learner") -> "ScriptedLearner":
        learner = ScriptedLearner(script, tls=learner_tls(name))
        self.learners.append(learner)
        return learner

    def run_actor(self, learner: "ScriptedLearner", **overrides) -> "Actor":
        actor = Actor(config_for(learner, **overrides), counting_envs, 2)
        self.addCleanup(actor.close)
        actor.run()
        return actor

    def test_certificates_carry_the_steps(self) -> None:
        from seedrl_actor.tls import client_context
        record: list = []

        def script(peer: Peer, index: int) -> None:
            assert peer.sock.version() == "TLSv1.3", peer.sock.version()
            assert peer.sock.getpeercert()["subject"][0][0][1] == "seedrl test actor"
            peer.serve_steps(peer.welcome(), record, lambda k: [0] * k)

        actor = self.run_actor(self.tls_learner(script), max_steps=3,
                               tls=client_context(*tls_files("actor")))
        self.assertEqual(actor.steps, 3)

    def test_a_learner_the_ca_did_not_sign_or_of_another_name_is_refused(self) -> None:
        from seedrl_actor.actor import Link, LinkError
        from seedrl_actor.tls import client_context
        for name, why in (("rogue", "unable to get local issuer certificate"),
                          ("wrong_name", "IP address mismatch")):
            with self.subTest(name):
                learner = self.tls_learner(lambda peer, index: None, name)
                config = config_for(learner, tls=client_context(*tls_files("actor")))
                with self.assertRaises(LinkError) as cm:
                    Link.connect(config, lambda: False)
                self.assertIn("TLS handshake with 127.0.0.1:", str(cm.exception))
                self.assertIn(why, str(cm.exception))
                # Told the name the certificate carries, the actor accepts the second one.
                if name == "wrong_name":
                    config.tls_server_name = "elsewhere.invalid"
                    Link.connect(config, lambda: False).close()

    def test_an_actor_the_ca_did_not_sign_is_refused_by_the_learner(self) -> None:
        from seedrl_actor.actor import Link, LinkError
        from seedrl_actor.tls import client_context
        learner = self.tls_learner(lambda peer, index: peer.welcome())
        config = config_for(learner, tls=client_context(*tls_files("rogue")))
        link = Link.connect(config, lambda: False)  # TLS 1.3: the client's side ends first
        with self.assertRaises(LinkError):
            link.send(p.encode_keepalive())
            link.recv_frame()
        link.close()
        wait_until(lambda: learner.tls_refusals)
        self.assertTrue(learner.tls_refusals)

    def test_bad_settings_are_refused_naming_the_file(self) -> None:
        from seedrl_actor.tls import TlsConfigError, client_context
        cert, key, ca = tls_files("actor")
        with self.assertRaises(TlsConfigError) as cm:
            client_context(cert, key, "/nonexistent/ca.pem")
        self.assertIn("/nonexistent/ca.pem", str(cm.exception))
        with self.assertRaises(TlsConfigError) as cm:
            client_context(cert, tls_files("learner")[1], ca)
        self.assertIn("actor.pem", str(cm.exception))
        with self.assertRaises(TlsConfigError) as cm:
            client_context(cert, None, ca)
        self.assertIn("--tls-key", str(cm.exception))
        with self.assertRaises(TlsConfigError):
            client_context(cert, key, ca, psk_secret=SECRET)
