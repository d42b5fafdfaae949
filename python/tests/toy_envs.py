"""Toy environments registered the way a third-party package registers its own, for the
--env-import tests (python/tests/test_gym_support.py and seedrl_gym's ctest entries).

Importing this module registers seedrl_toy/Bits-v0; calling register_more() registers the
ones a package would register through a function: an image environment and environments
whose spaces seedrl_gym must refuse.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Bits(gym.Env):
    """8 random bits (bool); reward 1 when the action equals the first bit. 20 steps."""

    def __init__(self, observation_space: spaces.Space | None = None,
                 action_space: spaces.Space | None = None) -> None:
        self.observation_space = observation_space or spaces.Box(0, 1, (8,), dtype=np.bool_)
        self.action_space = action_space or spaces.Discrete(2)
        self._t = 0
        self._obs = np.zeros(8, dtype=bool)

    def _draw(self) -> np.ndarray:
        self._obs = self.np_random.integers(0, 2, 8).astype(bool)
        return self._obs

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._t = 0
        return self._draw(), {}

    def step(self, action):
        reward = 1.0 if int(action) == int(self._obs[0]) else 0.0
        self._t += 1
        return self._draw(), reward, False, self._t >= 20, {}


class Image(gym.Env):
    """A 40x40x3 uint16 image whose brightness says which action pays. 20 steps."""

    observation_space = spaces.Box(0, 1000, (40, 40, 3), dtype=np.uint16)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._t = 0
        return self._draw(), {}

    def _draw(self) -> np.ndarray:
        self._bright = int(self.np_random.integers(0, 2))
        return np.full((40, 40, 3), 1000 * self._bright, dtype=np.uint16)

    def step(self, action):
        reward = 1.0 if int(action) == self._bright else 0.0
        self._t += 1
        return self._draw(), reward, False, self._t >= 20, {}


class Grid(Image):
    """A 10x10x4 float32 grid (a MinAtar-sized image) that says which action pays."""

    observation_space = spaces.Box(0, 1, (10, 10, 4), dtype=np.float32)

    def _draw(self) -> np.ndarray:
        self._bright = int(self.np_random.integers(0, 2))
        return np.full((10, 10, 4), float(self._bright), dtype=np.float32)


gym.register("seedrl_toy/Bits-v0", entry_point=Bits)


def register_more() -> None:
    """Registers the image environment and environments with unsupported spaces."""
    box = spaces.Box(0, 1, (8,), dtype=np.float32)
    gym.register("seedrl_toy/Image-v0", entry_point=Image)
    gym.register("seedrl_toy/Grid-v0", entry_point=Grid)
    gym.register("seedrl_toy/DictObs-v0", entry_point=Bits,
                 kwargs={"observation_space": spaces.Dict({"a": box})})
    gym.register("seedrl_toy/MultiDiscrete-v0", entry_point=Bits,
                 kwargs={"action_space": spaces.MultiDiscrete([2, 3])})
    gym.register("seedrl_toy/MultiBinary-v0", entry_point=Bits,
                 kwargs={"action_space": spaces.MultiBinary(4)})
    gym.register("seedrl_toy/DictAction-v0", entry_point=Bits,
                 kwargs={"action_space": spaces.Dict({"move": spaces.Discrete(2), "force": box})})
    gym.register("seedrl_toy/TupleAction-v0", entry_point=Bits,
                 kwargs={"action_space": spaces.Tuple((spaces.Discrete(2), box))})
    gym.register("seedrl_toy/BoxAction-v0", entry_point=Bits,
                 kwargs={"action_space": spaces.Box(np.array([[-1.0, -2.0], [0.0, -np.inf]]),
                                                    np.array([[1.0, 0.5], [3.0, np.inf]]),
                                                    dtype=np.float32)})
    gym.register("seedrl_toy/Huge-v0", entry_point=Bits,
                 kwargs={"observation_space": spaces.Box(0, 2**62, (8,), dtype=np.int64)})
