"""Atari the way the literature runs it (Mnih et al. 2015; Machado et al. 2018; SEED RL).

`make_atari("ALE/Pong-v5")` builds an ALE environment that emulates one frame per step (no
frame skipping and, unless asked, no sticky actions of its own) and wraps it in
`AtariPreprocessing`, which does the rest in numpy:

- frame skip (4 by default): the action is repeated for that many emulator frames and the
  rewards are summed; the observation is the pixel-wise maximum of the last two screens of
  THIS step (Atari sprites flicker between frames). With a frame skip of 1 the observation is
  exactly the current screen: it is never max-pooled with a screen from an earlier step,
  which was SEED RL's issue #76 with num_action_repeats=1;
- 84x84 grayscale uint8, one frame per observation (shape [84, 84]): the learner stacks frames;
  ALE's own luminance screen is resized with area averaging;
- up to 30 no-op actions after each reset (a uniform draw in [1, noop_max]);
- optional sticky actions (ALE's repeat_action_probability, per emulator frame) and the full
  18-action set;
- a time limit of 108,000 emulator frames per episode (30 minutes at 60 Hz), counted from the
  reset and including the no-op frames; the step that reaches it reports `truncated`;
- rewards as the game gives them, summed over the skipped frames: clipping is the learner's job.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

#: Side of the square observation, in pixels.
SCREEN_SIZE = 84
#: 30 minutes of emulation at 60 frames per second (Machado et al. 2018).
MAX_EPISODE_FRAMES = 108_000

# gymnasium.make arguments that make_atari sets itself, and the option to use instead.
_RESERVED_KWARGS = {
    "frameskip": "frame_skip (--frame-skip)",
    "obs_type": "nothing: the wrapper needs ALE's grayscale screen",
    "repeat_action_probability": "sticky_action_probability (--sticky-actions)",
    "full_action_space": "full_action_space (--full-action-space)",
    "max_num_frames_per_episode": "max_episode_frames (--max-episode-frames)",
}


def area_taps(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Which input pixels each output pixel averages, and with what weights.

    Output pixel i covers input interval [i * s, (i + 1) * s) with s = n_in / n_out; input
    pixel j weighs the length of its overlap with that interval, divided by s, so the weights
    of one output pixel sum to 1. Returns (index, weight), both [taps, n_out]; unused taps
    point at pixel 0 with weight 0.
    """
    if not 0 < n_out <= n_in:
        raise ValueError(f"area resize shrinks only: {n_in} -> {n_out} pixels")
    s = n_in / n_out
    taps = math.ceil(s) + 1
    index = np.zeros((taps, n_out), dtype=np.intp)
    weight = np.zeros((taps, n_out), dtype=np.float64)
    for i in range(n_out):
        lo, hi = i * s, (i + 1) * s
        first = int(math.floor(lo))
        for k in range(taps):
            j = first + k
            if j >= n_in:
                break
            overlap = min(hi, j + 1) - max(lo, j)
            if overlap > 0:
                index[k, i] = j
                weight[k, i] = overlap / s
    return index, weight


class AreaResize:
    """Shrinks uint8 [H, W] images to [out_h, out_w] by area averaging, rounded to nearest.

    Rows first, then columns, each a weighted sum of a few gathered rows or columns (no BLAS,
    whose threads fight the emulator for cores).
    """

    def __init__(self, in_shape: tuple[int, int], out_shape: tuple[int, int]) -> None:
        self.in_shape = tuple(in_shape)
        self.out_shape = tuple(out_shape)
        self._row_index, w = area_taps(in_shape[0], out_shape[0])
        self._row_weight = w.astype(np.float32)
        self._col_index, w = area_taps(in_shape[1], out_shape[1])
        self._col_weight = w.astype(np.float32)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        if image.shape != self.in_shape:
            raise ValueError(f"expected a {self.in_shape} image, got {image.shape}")
        x = image.astype(np.float32)
        rows = np.einsum("kij,ki->ij", np.take(x, self._row_index, axis=0), self._row_weight)
        out = np.einsum("ikj,kj->ij", np.take(rows, self._col_index, axis=1), self._col_weight)
        return np.clip(np.rint(out), 0, 255).astype(np.uint8)


class AtariPreprocessing(gym.Wrapper):
    """Frame skip with a max-pool over this step's last two screens, no-op starts, a frame
    limit and an 84x84 area resize (see the module comment).

    `env` must emulate exactly one frame per step and return its screen as a 2-D uint8
    grayscale observation (ALE with frameskip=1 and obs_type="grayscale"); action 0 must be
    NOOP. Observations are uint8 [screen_size, screen_size].
    """

    def __init__(self, env: gym.Env, frame_skip: int = 4, noop_max: int = 30,
                 max_episode_frames: int | None = MAX_EPISODE_FRAMES,
                 screen_size: int = SCREEN_SIZE) -> None:
        super().__init__(env)
        if frame_skip < 1:
            raise ValueError(f"frame_skip must be at least 1, got {frame_skip}")
        if noop_max < 0:
            raise ValueError(f"noop_max must be at least 0, got {noop_max}")
        if max_episode_frames is not None and max_episode_frames < 1:
            raise ValueError(f"max_episode_frames must be positive or None, got "
                             f"{max_episode_frames}")
        inner = env.observation_space
        if not (isinstance(inner, spaces.Box) and inner.dtype == np.uint8
                and len(inner.shape) == 2):
            raise ValueError(f"AtariPreprocessing needs 2-D uint8 grayscale screens, the "
                             f"environment gives {inner} (make ALE environments with "
                             "obs_type='grayscale')")
        own_skip = getattr(env.unwrapped, "_frameskip", 1)
        if own_skip != 1:
            raise ValueError(f"the environment skips frames itself (frameskip={own_skip}); "
                             "make it with frameskip=1 and let the wrapper skip")
        meanings = getattr(env.unwrapped, "get_action_meanings", None)
        if noop_max > 0 and meanings is not None and meanings()[0] != "NOOP":
            raise ValueError(f"action 0 is {meanings()[0]}, not NOOP: no-op starts need NOOP")
        self.frame_skip = frame_skip
        self.noop_max = noop_max
        self.max_episode_frames = max_episode_frames
        self.episode_frames = 0  # emulator frames since the last reset, no-ops included
        self._resize = AreaResize(inner.shape, (screen_size, screen_size))
        # The last two screens of the current step; copied, so an env that reuses one array
        # for every observation cannot alias them.
        self._screens = np.zeros((2, *inner.shape), dtype=np.uint8)
        self.observation_space = spaces.Box(0, 255, (screen_size, screen_size), np.uint8)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        screen, info = self.env.reset(seed=seed, options=options)
        self.episode_frames = 0
        noops = 0
        if self.noop_max > 0:
            noops = int(self.env.unwrapped.np_random.integers(1, self.noop_max + 1))
        for _ in range(noops):
            screen, _, terminated, truncated, info = self.env.step(0)
            self.episode_frames += 1
            if terminated or truncated:
                screen, info = self.env.reset()
                self.episode_frames = 0
        # The first observation is the current screen alone: there is no earlier screen of
        # this step to pool with.
        return self._resize(np.asarray(screen)), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        total = 0.0
        terminated = truncated = False
        info: dict[str, Any] = {}
        frames = 0
        for _ in range(self.frame_skip):
            screen, reward, terminated, truncated, info = self.env.step(action)
            np.copyto(self._screens[frames % 2], screen)
            frames += 1
            self.episode_frames += 1
            total += float(reward)
            if (self.max_episode_frames is not None
                    and self.episode_frames >= self.max_episode_frames):
                truncated = True
            if terminated or truncated:
                break
        last = self._screens[(frames - 1) % 2]
        # Pool only screens of this step: one frame (frame_skip 1, or an episode that ended
        # on the first frame) is the current screen as it is.
        pooled = last if frames == 1 else np.maximum(self._screens[0], self._screens[1])
        truncated = truncated and not terminated
        return self._resize(pooled), total, bool(terminated), bool(truncated), info


def make_atari(env_id: str, *, frame_skip: int = 4, noop_max: int = 30,
               sticky_action_probability: float = 0.0, full_action_space: bool = False,
               max_episode_frames: int | None = MAX_EPISODE_FRAMES,
               make_kwargs: Mapping[str, Any] | None = None) -> AtariPreprocessing:
    """An ALE environment (`ALE/Pong-v5`, ...) with the literature's preprocessing.

    The underlying env emulates one frame per step, returns ALE's grayscale screen, and has
    sticky actions only when `sticky_action_probability` > 0 (ALE's v5 ids default to 0.25;
    this function does not). `make_kwargs` go to gymnasium.make, except those this function
    sets itself, which are refused with the option to use instead.
    """
    make_kwargs = dict(make_kwargs or {})
    for key in make_kwargs:
        if key in _RESERVED_KWARGS:
            raise ValueError(f"{key} is set by the Atari preprocessing; use "
                             f"{_RESERVED_KWARGS[key]}")
    if not 0.0 <= sticky_action_probability <= 1.0:
        raise ValueError(f"sticky_action_probability must be in [0, 1], got "
                         f"{sticky_action_probability}")
    from .actor import make_env  # registers the ALE ids; actor.py does not import this module

    env = make_env(env_id, frameskip=1, obs_type="grayscale",
                   repeat_action_probability=float(sticky_action_probability),
                   full_action_space=bool(full_action_space),
                   max_num_frames_per_episode=max_episode_frames or 0, **make_kwargs)
    ale = getattr(env.unwrapped, "ale", None)
    if ale is not None:
        got = ale.getFloat("repeat_action_probability")
        if abs(got - sticky_action_probability) > 1e-6:
            raise ValueError(f"ALE's repeat_action_probability is {got}, asked for "
                             f"{sticky_action_probability}")
    return AtariPreprocessing(env, frame_skip=frame_skip, noop_max=noop_max,
                              max_episode_frames=max_episode_frames)
