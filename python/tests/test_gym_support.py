"""What seedrl_gym needs of the Python actor: observation dtypes the wire lacks mapped to the
nearest wire dtype that loses nothing (or refused), and third-party environments registered
through --env-import.

Run: python3 -m unittest discover -s python/tests
"""

from __future__ import annotations

import json
import math
import pathlib
import subprocess
import sys
import unittest

from support import requires_tool  # python/tests/support.py

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS_DIR = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(TESTS_DIR))

try:
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces
except ImportError:  # pragma: no cover - depends on the machine
    gym = None

if gym is not None:
    from seedrl_actor import protocol as p
    from seedrl_actor.actor import EnvBatch, SpaceError, specs_from_spaces, wire_dtype_for
    from seedrl_actor.registration import RegistrationError, import_registrations

GYM_MISSING = "gymnasium or numpy is not installed: pip install numpy gymnasium"


@requires_tool(gym is not None, GYM_MISSING)
class DtypeMappingTests(unittest.TestCase):
    def test_each_dtype_maps_to_the_nearest_lossless_wire_dtype(self) -> None:
        big = 2**40
        cases = [  # dtype, low, high, wire dtype, phrase in the note (None: no note)
            (np.uint8, 0, 255, p.DType.UINT8, None),
            (np.int32, -5, 5, p.DType.INT32, None),
            (np.float32, -1, 1, p.DType.FLOAT32, None),
            (np.float64, -1, 1, p.DType.FLOAT64, None),
            (np.bool_, 0, 1, p.DType.UINT8, "bool observations travel as uint8"),
            (np.int8, -128, 127, p.DType.INT32, "int8 observations travel as int32"),
            (np.int16, -3, 3, p.DType.INT32, "int16"),
            (np.uint16, 0, 65535, p.DType.INT32, "uint16"),
            (np.float16, -1, 1, p.DType.FLOAT32, "float16 observations travel as float32"),
            (np.int64, -7, 10, p.DType.INT32, "int64 observations travel as int32"),
            (np.uint32, 0, 2**32 - 1, p.DType.FLOAT64, "uint32 observations travel as float64"),
            (np.int64, -big, big, p.DType.FLOAT64, "int64 observations travel as float64"),
            (np.uint64, 0, 2**53, p.DType.FLOAT64, "within +-2^53"),
        ]
        for dtype, low, high, wire, phrase in cases:
            with self.subTest(dtype=np.dtype(dtype).name, high=high):
                space = spaces.Box(low, high, (3,), dtype=dtype)
                got, note = wire_dtype_for(space)
                self.assertEqual(got, wire)
                if phrase is None:
                    self.assertIsNone(note)
                else:
                    self.assertIn(phrase, note)
                obs, _ = specs_from_spaces(space, spaces.Discrete(2))
                self.assertEqual(obs, p.ObservationSpec(wire, (3,)))

    def test_dtypes_that_cannot_travel_exactly_are_refused(self) -> None:
        cases = [
            (spaces.Box(0, 2**62, (3,), dtype=np.int64), "int64"),
            (spaces.Box(-2**53 - 2, 0, (3,), dtype=np.int64), "2^53"),
            (spaces.Box(0, 2**63, (3,), dtype=np.uint64), "uint64"),
            (spaces.Box(np.iinfo(np.int64).min, np.iinfo(np.int64).max, (3,), dtype=np.int64),
             "int64"),
        ]
        for space, phrase in cases:
            with self.subTest(space=str(space)):
                with self.assertRaises(SpaceError) as cm:
                    specs_from_spaces(space, spaces.Discrete(2))
                self.assertIn(phrase, str(cm.exception))

    def test_mapped_values_arrive_unchanged_and_out_of_range_values_stop_the_actor(self) -> None:
        import toy_envs

        env = toy_envs.Bits()
        batch = EnvBatch([env], seed=3)
        batch.start()
        self.assertEqual(batch.observations.dtype, np.uint8)
        np.testing.assert_array_equal(batch.observations[0], env._obs.astype(np.uint8))
        batch.step(np.array([0]))
        np.testing.assert_array_equal(batch.observations[0], env._obs.astype(np.uint8))

        class Lying(toy_envs.Bits):  # int64 space bounded to int32, then a value beyond it
            def __init__(self) -> None:
                super().__init__(spaces.Box(0, 10, (8,), dtype=np.int64))

            def _draw(self):
                self._obs = np.full(8, 2**40, dtype=np.int64)
                return self._obs

        lying = EnvBatch([Lying()])
        self.assertEqual(lying.observation_spec.dtype, p.DType.INT32)
        with self.assertRaises(SpaceError) as cm:
            lying.start()
        self.assertIn("cannot hold exactly", str(cm.exception))


@requires_tool(gym is not None, GYM_MISSING)
class RegistrationTests(unittest.TestCase):
    def test_import_and_function_register_environments(self) -> None:
        import_registrations(["toy_envs"])
        env = gym.make("seedrl_toy/Bits-v0")
        self.assertEqual(env.action_space, spaces.Discrete(2))
        env.close()
        import_registrations(["toy_envs:register_more"])
        env = gym.make("seedrl_toy/Image-v0")
        self.assertEqual(env.observation_space.shape, (40, 40, 3))
        env.close()

    def test_bad_names_say_what_went_wrong(self) -> None:
        cases = [("no_such_module_xyz", "cannot import no_such_module_xyz"),
                 ("toy_envs:no_such_function", "has no function no_such_function"),
                 ("toy_envs:", "expected package.module")]
        for name, phrase in cases:
            with self.subTest(name):
                with self.assertRaises(RegistrationError) as cm:
                    import_registrations([name])
                self.assertIn(phrase, str(cm.exception))

    def run_actor(self, *args: str) -> subprocess.CompletedProcess:
        env = {"PYTHONPATH": f"{ROOT / 'python'}:{TESTS_DIR}", "PATH": "/usr/bin:/bin"}
        return subprocess.run([sys.executable, "-m", "seedrl_actor", *args], env=env,
                              capture_output=True, text=True, timeout=60)

    def test_print_spec_registers_maps_and_says_so(self) -> None:
        r = self.run_actor("--env", "seedrl_toy/Bits-v0", "--env-import", "toy_envs",
                           "--print-spec")
        self.assertEqual(r.returncode, 0, r.stderr)
        spec = json.loads(r.stdout)
        self.assertEqual(spec["observation"], {"dtype": "uint8", "shape": [8]})
        self.assertEqual(spec["actions"], 2)
        self.assertIn("bool observations travel as uint8", r.stderr)

    def test_print_spec_gives_per_element_bounds_row_major_with_infinities(self) -> None:
        r = self.run_actor("--env", "seedrl_toy/BoxAction-v0", "--env-import",
                           "toy_envs:register_more", "--print-spec")
        self.assertEqual(r.returncode, 0, r.stderr)
        spec = json.loads(r.stdout)
        self.assertEqual(spec["action"], {"kind": "continuous", "shape": [2, 2],
                                          "low": [-1.0, -2.0, 0.0, -math.inf],
                                          "high": [1.0, 0.5, 3.0, math.inf]})
        self.assertNotIn("actions", spec)  # a discrete learner cannot mistake it for a count

    def test_print_spec_refuses_unsupported_spaces_naming_them(self) -> None:
        cases = [("seedrl_toy/DictObs-v0", "Dict("), ("seedrl_toy/MultiDiscrete-v0",
                                                     "MultiDiscrete("),
                 ("seedrl_toy/MultiBinary-v0", "MultiBinary(4)"),
                 ("seedrl_toy/DictAction-v0", "(Dict) is not supported"),
                 ("seedrl_toy/TupleAction-v0", "(Tuple) is not supported"),
                 ("seedrl_toy/Huge-v0", "int64")]
        for env_id, phrase in cases:
            with self.subTest(env_id):
                r = self.run_actor("--env", env_id, "--env-import", "toy_envs:register_more",
                                   "--print-spec")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(phrase, r.stderr)
                self.assertEqual(r.stdout, "")

    def test_without_the_import_the_id_is_unknown(self) -> None:
        r = self.run_actor("--env", "seedrl_toy/Bits-v0", "--print-spec")
        self.assertEqual(r.returncode, 2)
        self.assertIn("seedrl_toy/Bits-v0", r.stderr)


if __name__ == "__main__":
    unittest.main()
