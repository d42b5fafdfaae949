"""The Atari preprocessing: area resize, frame skip and max-pool (SEED RL's issue #76), no-op
starts, the frame limit, unclipped rewards, and the real ALE underneath it and through the
command line.

The wrapper tests run on a fake one-frame-per-step environment whose screen is different
random noise at every emulator frame, so any screen from an earlier step (a stale max-pool
buffer) shows in the observation. The ALE tests need ale-py and skip without it.

Run: python3 -m unittest discover -s python/tests
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import subprocess
import sys
import unittest
from fractions import Fraction

from support import requires_tool  # python/tests/support.py

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

try:
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces
except ImportError:  # pragma: no cover - depends on the machine
    gym = None

try:
    import ale_py
except ImportError:  # pragma: no cover - depends on the machine
    ale_py = None

if gym is not None:
    from seedrl_actor import protocol as p
    from seedrl_actor.atari import (MAX_EPISODE_FRAMES, AreaResize, AtariPreprocessing,
                                    area_taps, make_atari)

GYM_MISSING = ("gymnasium or numpy is not installed: pip install numpy gymnasium "
               "(scripts/install-deps.sh --test-tools installs them into .venv)")
ALE_MISSING = ("ale-py is not installed: pip install ale-py (scripts/install-deps.sh "
               "--test-tools installs it into .venv when it can)")


def screen(episode: int, frame: int, shape: tuple[int, int]) -> "np.ndarray":
    """The fake emulator's screen at `frame` (1-based) of `episode`: fresh noise each frame."""
    return np.random.default_rng([episode, frame]).integers(0, 256, shape, dtype=np.uint8)


if gym is not None:

    class FakeEmulator(gym.Env):
        """One emulator frame per step, a grayscale screen that changes every frame, reward
        `reward_per_frame` per frame, terminated at frame `terminate_at` of an episode. With
        `reuse_buffer` every observation is the same array, overwritten (as some emulators
        do), so a wrapper that keeps references instead of copies pools wrong screens."""

        metadata: dict = {"render_modes": []}

        def __init__(self, shape=(210, 160), reward_per_frame=7.0, terminate_at=None,
                     reuse_buffer=False, frameskip=1) -> None:
            self.shape = shape
            self.observation_space = spaces.Box(0, 255, shape, np.uint8)
            self.action_space = spaces.Discrete(4)
            self.reward_per_frame = reward_per_frame
            self.terminate_at = terminate_at
            self.reuse_buffer = reuse_buffer
            self._frameskip = frameskip
            self._buffer = np.zeros(shape, np.uint8)
            self.episode = -1
            self.frame = 0
            self.actions: list[int] = []

        def _screen(self) -> np.ndarray:
            s = screen(self.episode, self.frame, self.shape)
            if not self.reuse_buffer:
                return s
            self._buffer[...] = s
            return self._buffer

        def current(self) -> np.ndarray:
            return screen(self.episode, self.frame, self.shape)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.episode += 1
            self.frame = 0
            self.actions = []
            return self._screen(), {}

        def step(self, action):
            self.frame += 1
            self.actions.append(int(action))
            terminated = self.terminate_at is not None and self.frame >= self.terminate_at
            return self._screen(), self.reward_per_frame, terminated, False, {}


def area_oracle(image: "np.ndarray", out_h: int, out_w: int) -> "np.ndarray":
    """Area averaging written out pixel by pixel with exact fractions (float64 at the end)."""
    h, w = image.shape
    sy, sx = Fraction(h, out_h), Fraction(w, out_w)

    def weights(i, s, n):
        lo, hi = i * s, (i + 1) * s
        return [(j, min(hi, j + 1) - max(lo, j)) for j in range(n)
                if min(hi, j + 1) > max(lo, j)]

    rows = [weights(i, sy, h) for i in range(out_h)]
    cols = [weights(k, sx, w) for k in range(out_w)]
    out = np.zeros((out_h, out_w))
    for i, wy in enumerate(rows):
        for k, wx in enumerate(cols):
            total = sum(a * b * int(image[y, x]) for y, a in wy for x, b in wx)
            out[i, k] = float(total / (sy * sx))
    return out


@requires_tool(gym is not None, GYM_MISSING)
class AreaResizeTests(unittest.TestCase):
    def test_atari_screen_matches_the_pixel_by_pixel_oracle(self) -> None:
        image = np.random.default_rng(1).integers(0, 256, (210, 160), dtype=np.uint8)
        got = AreaResize((210, 160), (84, 84))(image)
        want = area_oracle(image, 84, 84)
        self.assertEqual(got.shape, (84, 84))
        self.assertEqual(got.dtype, np.uint8)
        diff = np.abs(got.astype(np.int64) - np.rint(want).astype(np.int64))
        # float32 sums may round a value within a hair of .5 the other way; nothing else.
        near_half = np.abs(want - np.floor(want) - 0.5) < 1e-3
        self.assertEqual(int(diff[~near_half].max()), 0)
        self.assertLessEqual(int(diff.max()), 1)

    def test_weights_cover_every_input_pixel_once(self) -> None:
        for n_in, n_out in ((210, 84), (160, 84), (84, 84), (100, 7)):
            index, weight = area_taps(n_in, n_out)
            np.testing.assert_allclose(weight.sum(axis=0), 1.0, rtol=1e-12)
            per_input = np.zeros(n_in)
            np.add.at(per_input, index.ravel(), weight.ravel())
            np.testing.assert_allclose(per_input, n_out / n_in, rtol=1e-12)

    def test_integer_factors_are_block_means_and_84_is_the_identity(self) -> None:
        image = np.random.default_rng(2).integers(0, 256, (168, 168), dtype=np.uint8)
        blocks = image.reshape(84, 2, 84, 2).astype(np.float64).mean(axis=(1, 3))
        np.testing.assert_array_equal(AreaResize((168, 168), (84, 84))(image), np.rint(blocks))
        small = image[:84, :84]
        np.testing.assert_array_equal(AreaResize((84, 84), (84, 84))(small), small)
        flat = np.full((210, 160), 201, np.uint8)
        np.testing.assert_array_equal(AreaResize((210, 160), (84, 84))(flat), 201)

    def test_refuses_to_enlarge_or_the_wrong_shape(self) -> None:
        with self.assertRaises(ValueError):
            AreaResize((50, 50), (84, 84))
        with self.assertRaises(ValueError):
            AreaResize((210, 160), (84, 84))(np.zeros((160, 210), np.uint8))


@requires_tool(gym is not None, GYM_MISSING)
class FrameSkipTests(unittest.TestCase):
    """SEED RL's issue #76: with one action repeat, one screen buffer was refreshed and
    max-pooled with a stale one. Here every frame's screen is fresh noise, so the observation
    equals the expected screen (or max of screens) only if no stale screen took part."""

    def run_steps(self, skip: int, steps: int = 12, **fake) -> None:
        env = FakeEmulator(**fake)
        wrapper = AtariPreprocessing(env, frame_skip=skip, noop_max=0)
        resize = AreaResize((210, 160), (84, 84))
        obs, _ = wrapper.reset(seed=0)
        np.testing.assert_array_equal(obs, resize(screen(0, 0, env.shape)))
        for t in range(1, steps + 1):
            obs, reward, terminated, truncated, _ = wrapper.step(3)
            self.assertEqual(env.frame, t * skip)
            last = screen(0, t * skip, env.shape)
            if skip == 1:
                want = resize(last)
                stale = resize(np.maximum(last, screen(0, t - 1, env.shape)))
                # The buggy observation differs from the right one: the test can tell.
                self.assertFalse(np.array_equal(want, stale))
            else:
                want = resize(np.maximum(screen(0, t * skip - 1, env.shape), last))
            np.testing.assert_array_equal(obs, want, err_msg=f"skip {skip}, step {t}")
            self.assertEqual(reward, 7.0 * skip)
            self.assertFalse(terminated or truncated)
        self.assertEqual(env.actions, [3] * (steps * skip))

    def test_frame_skip_1_observes_exactly_the_current_screen(self) -> None:
        self.run_steps(1)

    def test_frame_skip_k_pools_the_last_two_screens_of_this_step(self) -> None:
        for skip in (2, 3, 4, 5):
            with self.subTest(skip=skip):
                self.run_steps(skip)

    def test_an_emulator_that_reuses_its_screen_array(self) -> None:
        for skip in (1, 2, 4):
            with self.subTest(skip=skip):
                self.run_steps(skip, reuse_buffer=True)

    def test_an_episode_ending_inside_a_step_pools_only_that_steps_screens(self) -> None:
        resize = AreaResize((210, 160), (84, 84))
        for end, frames_in_last_step in ((6, 2), (5, 1), (8, 4)):
            with self.subTest(terminate_at=end):
                env = FakeEmulator(terminate_at=end, reward_per_frame=-3.0)
                wrapper = AtariPreprocessing(env, frame_skip=4, noop_max=0)
                wrapper.reset(seed=0)
                _, reward, terminated, truncated, _ = wrapper.step(1)
                self.assertEqual((reward, terminated), (-12.0, end == 4))
                obs, reward, terminated, truncated, _ = wrapper.step(1)
                self.assertTrue(terminated)
                self.assertFalse(truncated)
                self.assertEqual(env.frame, end)
                # Rewards are summed as the game gave them: no clipping on the actor.
                self.assertEqual(reward, -3.0 * frames_in_last_step)
                last = screen(0, end, env.shape)
                want = last if frames_in_last_step == 1 else np.maximum(
                    screen(0, end - 1, env.shape), last)
                np.testing.assert_array_equal(obs, resize(want))

    def test_rewards_are_not_clipped(self) -> None:
        wrapper = AtariPreprocessing(FakeEmulator(reward_per_frame=25.0), noop_max=0)
        wrapper.reset(seed=0)
        self.assertEqual(wrapper.step(0)[1], 100.0)


@requires_tool(gym is not None, GYM_MISSING)
class EpisodeTests(unittest.TestCase):
    def test_noop_starts_take_1_to_noop_max_noops_drawn_from_the_seed(self) -> None:
        env = FakeEmulator(shape=(84, 84))
        wrapper = AtariPreprocessing(env, noop_max=30)
        counts = []
        for episode in range(300):
            obs, _ = wrapper.reset(seed=17 if episode == 0 else None)
            n = len(env.actions)
            counts.append(n)
            self.assertEqual(env.actions, [0] * n)
            self.assertEqual(wrapper.episode_frames, n)
            # The first observation is the screen after the no-ops, alone.
            np.testing.assert_array_equal(obs, screen(episode, n, env.shape))
        self.assertEqual(min(counts), 1)
        self.assertEqual(max(counts), 30)
        self.assertGreater(len(set(counts)), 25)
        again = AtariPreprocessing(FakeEmulator(shape=(84, 84)), noop_max=30)
        replay = []
        for episode in range(300):
            again.reset(seed=17 if episode == 0 else None)
            replay.append(len(again.env.actions))
        self.assertEqual(replay, counts)
        none = AtariPreprocessing(FakeEmulator(shape=(84, 84)), noop_max=0)
        none.reset(seed=1)
        self.assertEqual(none.env.actions, [])

    def test_a_game_that_ends_during_the_noops_is_reset(self) -> None:
        env = FakeEmulator(shape=(84, 84), terminate_at=2)
        wrapper = AtariPreprocessing(env, noop_max=30)
        for _ in range(20):
            obs, _ = wrapper.reset()
            self.assertLess(env.frame, 2)
            self.assertEqual(wrapper.episode_frames, env.frame)
            np.testing.assert_array_equal(obs, screen(env.episode, env.frame, env.shape))

    def test_the_frame_limit_counts_emulator_frames_including_noops(self) -> None:
        env = FakeEmulator(shape=(84, 84))
        wrapper = AtariPreprocessing(env, frame_skip=4, noop_max=30, max_episode_frames=50)
        for episode in range(10):
            wrapper.reset(seed=episode)
            noops = env.frame
            steps = 0
            while True:
                _, _, terminated, truncated, _ = wrapper.step(2)
                steps += 1
                self.assertFalse(terminated)
                if truncated:
                    break
                self.assertLess(env.frame, 50)
            self.assertEqual(env.frame, 50)
            self.assertEqual(steps, -(-(50 - noops) // 4))
        self.assertEqual(AtariPreprocessing(FakeEmulator()).max_episode_frames, 108_000)
        self.assertEqual(MAX_EPISODE_FRAMES, 108_000)

    def test_observation_space_and_refusals(self) -> None:
        wrapper = AtariPreprocessing(FakeEmulator())
        self.assertEqual(wrapper.observation_space, spaces.Box(0, 255, (84, 84), np.uint8))
        with self.assertRaisesRegex(ValueError, "skips frames itself"):
            AtariPreprocessing(FakeEmulator(frameskip=4))
        rgb = FakeEmulator()
        rgb.observation_space = spaces.Box(0, 255, (210, 160, 3), np.uint8)
        with self.assertRaisesRegex(ValueError, "grayscale"):
            AtariPreprocessing(rgb)
        with self.assertRaises(ValueError):
            AtariPreprocessing(FakeEmulator(), frame_skip=0)
        for key in ("frameskip", "repeat_action_probability", "obs_type", "full_action_space",
                    "max_num_frames_per_episode"):
            with self.subTest(key=key), self.assertRaisesRegex(ValueError, "set by the Atari"):
                make_atari("ALE/Pong-v5", make_kwargs={key: 1})


@requires_tool(gym is not None, GYM_MISSING)
@requires_tool(ale_py is not None, ALE_MISSING)
class RealAleTests(unittest.TestCase):
    @staticmethod
    def raw(game: str = "ALE/Pong-v5") -> "gym.Env":
        gym.register_envs(ale_py)
        return gym.make(game, frameskip=1, repeat_action_probability=0.0, obs_type="grayscale")

    def test_the_emulator_underneath_skips_nothing_and_sticks_only_when_asked(self) -> None:
        env = make_atari("ALE/Pong-v5", noop_max=0)
        self.addCleanup(env.close)
        ale = env.unwrapped.ale
        self.assertEqual(env.unwrapped._frameskip, 1)
        self.assertEqual(ale.getFloat("repeat_action_probability"), 0.0)
        self.assertEqual(ale.getInt("max_num_frames_per_episode"), 108_000)
        self.assertEqual(env.observation_space, spaces.Box(0, 255, (84, 84), np.uint8))
        self.assertEqual(env.action_space, spaces.Discrete(6))
        env.reset(seed=0)
        for t in range(1, 4):
            env.step(0)
            self.assertEqual(ale.getEpisodeFrameNumber(), 4 * t)
        sticky = make_atari("ALE/Pong-v5", sticky_action_probability=0.25,
                            full_action_space=True)
        self.addCleanup(sticky.close)
        self.assertAlmostEqual(sticky.unwrapped.ale.getFloat("repeat_action_probability"), 0.25)
        self.assertEqual(sticky.action_space, spaces.Discrete(18))

    def test_observations_match_a_hand_stepped_emulator(self) -> None:
        """Issue #76 on the real ALE: the same seeded game stepped frame by frame."""
        resize = AreaResize((210, 160), (84, 84))
        for skip, steps in ((1, 200), (4, 60)):
            with self.subTest(skip=skip):
                wrapped = make_atari("ALE/Pong-v5", frame_skip=skip, noop_max=0)
                raw = self.raw()
                self.addCleanup(wrapped.close)
                self.addCleanup(raw.close)
                obs, _ = wrapped.reset(seed=5)
                screen_now, _ = raw.reset(seed=5)
                np.testing.assert_array_equal(obs, resize(screen_now))
                actions = np.random.default_rng(9).integers(0, 6, steps)
                stale_differs = 0
                for t, a in enumerate(actions):
                    prev = screen_now
                    total = 0.0
                    screens = []
                    for _ in range(skip):
                        screen_now, r, term, trunc, _ = raw.step(int(a))
                        total += r
                        screens.append(screen_now)
                    want = resize(screens[-1]) if skip == 1 else resize(
                        np.maximum(screens[-2], screens[-1]))
                    obs, reward, terminated, truncated, _ = wrapped.step(int(a))
                    np.testing.assert_array_equal(obs, want, err_msg=f"step {t}")
                    self.assertEqual(reward, total)
                    self.assertEqual((terminated, truncated), (term, trunc))
                    if skip == 1:
                        stale_differs += not np.array_equal(
                            want, resize(np.maximum(prev, screen_now)))
                if skip == 1:
                    # Pooling with the previous step's screen would have shown.
                    self.assertGreater(stale_differs, steps // 4)

    def test_the_command_line_sends_84x84_uint8_frames(self) -> None:
        from test_actor import Peer, ScriptedLearner, actor_env

        hellos: list = []
        steps: list = []

        def script(peer: "Peer", index: int) -> None:
            hello = peer.welcome()
            hellos.append(hello)
            peer.serve_steps(hello, steps, lambda k: [1] * k)

        learner = ScriptedLearner(script)
        self.addCleanup(learner.close)
        r = subprocess.run(
            [sys.executable, "-m", "seedrl_actor", "--learner", f"127.0.0.1:{learner.port}",
             "--env", "ALE/Pong-v5", "--envs", "2", "--max-steps", "5", "--seed", "1"],
            env=actor_env(), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        learner.close()
        self.assertEqual(learner.errors, [])
        self.assertEqual(len(hellos), 1)
        self.assertEqual(hellos[0].observation, p.ObservationSpec(p.DType.UINT8, (84, 84)))
        self.assertEqual(hellos[0].action.num_actions, 6)
        frames = [s for kind, s in steps if kind == "step"]
        self.assertEqual(len(frames), 5)
        for s in frames:
            self.assertEqual(s.observations.shape, (2, 84, 84))
            self.assertEqual(s.observations.dtype, np.uint8)
            self.assertGreater(int(s.observations.max()), 0)

    def test_the_command_line_options_reach_the_emulator(self) -> None:
        from seedrl_actor.__main__ import _env_factory, parser

        args = parser().parse_args(["--learner", "127.0.0.1:1", "--env", "ALE/Pong-v5",
                                    "--full-action-space", "--sticky-actions", "0.25",
                                    "--frame-skip", "3", "--noop-max", "7",
                                    "--max-episode-frames", "0"])
        env = _env_factory(args)(0)
        self.addCleanup(env.close)
        self.assertIsInstance(env, AtariPreprocessing)
        self.assertEqual(env.action_space, spaces.Discrete(18))
        self.assertAlmostEqual(env.unwrapped.ale.getFloat("repeat_action_probability"), 0.25)
        self.assertEqual((env.frame_skip, env.noop_max, env.max_episode_frames), (3, 7, None))
        self.assertEqual(env.unwrapped.ale.getInt("max_num_frames_per_episode"), 0)
        raw = _env_factory(parser().parse_args(["--learner", "127.0.0.1:1", "--env",
                                                "ALE/Pong-v5", "--no-atari-preprocessing"]))(0)
        self.addCleanup(raw.close)
        self.assertNotIsInstance(raw, AtariPreprocessing)
        self.assertEqual(raw.observation_space.shape, (210, 160, 3))

    def test_the_link_overhead_benchmark_runs(self) -> None:
        r = subprocess.run([sys.executable, str(ROOT / "bench" / "python_actor_bench.py"),
                            "--envs", "2", "--steps", "5", "--runs", "1"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"link overhead, wall clock: -?\d+\.\d%")

    def test_print_spec_gives_the_handshake_of_the_preprocessed_game(self) -> None:
        # examples/atari sizes the learner's network from this line.
        for extra, actions in (([], 6), (["--full-action-space"], 18)):
            with self.subTest(extra=extra):
                code, out, err = run_main(["--env", "ALE/Pong-v5", "--print-spec", *extra])
                self.assertEqual(code, 0, err)
                self.assertEqual(json.loads(out), {
                    "env": "ALE/Pong-v5", "actions": actions,
                    "observation": {"dtype": "uint8", "shape": [84, 84]}})


def run_main(args: list[str]) -> tuple[int, str, str]:
    """python -m seedrl_actor ARGS in this process: exit status, stdout, stderr."""
    from seedrl_actor.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as e:  # argparse's usage errors
            code = e.code
    return code, out.getvalue(), err.getvalue()


@requires_tool(gym is not None, GYM_MISSING)
class CommandLineTests(unittest.TestCase):
    def run_main(self, args: list[str]) -> tuple[int, str]:
        code, _, err = run_main(args)
        return code, err

    def test_print_spec_needs_no_learner(self) -> None:
        code, out, err = run_main(["--env", "CartPole-v1", "--print-spec"])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out), {"env": "CartPole-v1", "actions": 2, "observation": {
            "dtype": "float32", "shape": [4]}})
        code, err = self.run_main(["--env", "CartPole-v1"])
        self.assertEqual(code, 2)
        self.assertIn("--learner", err)

    def test_print_spec_gives_a_box_action_space_with_its_bounds(self) -> None:
        code, out, err = run_main(["--env", "Pendulum-v1", "--print-spec"])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out), {
            "env": "Pendulum-v1", "observation": {"dtype": "float32", "shape": [3]},
            "action": {"kind": "continuous", "shape": [1], "low": [-2.0], "high": [2.0]}})

    def test_the_command_line_refuses_what_the_wrappers_set(self) -> None:
        code, err = self.run_main(["--learner", "127.0.0.1:1", "--env", "ALE/Pong-v5",
                                   "--env-arg", "frameskip=4"])
        self.assertEqual(code, 2, err)
        self.assertIn("--frame-skip", err)
        code, err = self.run_main(["--learner", "127.0.0.1:1", "--env", "CartPole-v1",
                                   "--noop-max", "3"])
        self.assertEqual(code, 2, err)
        self.assertIn("only for ALE/", err)
