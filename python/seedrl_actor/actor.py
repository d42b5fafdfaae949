"""The actor: steps k gymnasium environments and trades one step frame for one actions frame
with the learner per round trip, as include/seedrl/runtime/actor.hpp does in C++.

It follows SEED RL: the actor holds no model. Each step frame carries, per environment, the
reward and done/truncated flags of the previous actions and the current observation; an
environment whose episode ended is reset at once, so its record holds the terminal reward
with the first observation of the next episode. Every connection starts fresh episodes under
new random run ids, so the learner never mixes unrolls across connections.

When the link breaks, or the learner is full, stopping or timed us out, the actor reconnects
with exponential backoff and jitter; a refusal that retrying cannot fix (spec mismatch, wrong
secret) stops it with the learner's reason. request_stop() (from a signal handler) ends it
with a close frame.
"""

from __future__ import annotations

import math
import os
import random
import secrets
import socket
import ssl
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, NoReturn, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import protocol as p
from .auth import ActorHandshake

TRANSIENT_REJECTS = frozenset({p.ErrorCode.TOO_MANY_ENVS, p.ErrorCode.SHUTTING_DOWN,
                               p.ErrorCode.IDLE_TIMEOUT})
"""Reject codes that can clear up by themselves, so the actor retries with backoff."""


_FLOAT32_MAX = float(np.finfo(np.float32).max)


class ActorRejected(Exception):
    """The learner refused this actor for good (spec mismatch, wrong secret, ...)."""


class SpaceError(ValueError):
    """An environment's spaces or observations cannot be described by the wire protocol."""


class LinkError(Exception):
    """The connection ended or misbehaved; the actor reconnects with backoff."""


class _Stopping(Exception):
    """Raised inside a wait when a stop was requested, to leave with a close frame."""


# -------------------------------------------------------------------------------------------
# Specs from gymnasium spaces


def specs_from_spaces(observation_space: gym.Space,
                      action_space: gym.Space) -> tuple[p.ObservationSpec, p.ActionSpec]:
    """The hello's specs for an environment with these spaces.

    Box observations keep their shape (a scalar Box travels as [1]) and their dtype, or the
    nearest wire dtype that holds every value (wire_dtype_for); Discrete actions give the
    action count; float Box actions their shape and per-dimension bounds (box_action_spec).
    Anything else is refused with the reason, rather than converted behind the
    user's back.
    """
    return _observation_spec(observation_space), _action_spec(action_space)


_INT32 = np.iinfo(np.int32)
_FLOAT64_EXACT = 2 ** 53  # every integer of magnitude up to this is a float64


def wire_dtype_for(space: spaces.Box) -> tuple[p.DType, str | None]:
    """The wire dtype that carries `space`'s observations without loss, and a note saying how
    when it is not the space's own dtype (None when the dtype travels unchanged).

    The protocol carries uint8, int32, float32 and float64. Other numeric and boolean dtypes
    map to the nearest of these that holds every value: bool -> uint8 (0/1); int8, int16,
    uint16 -> int32; float16 -> float32; uint32, int64, uint64 -> int32 when the Box's bounds
    lie in int32's range, else float64 when they lie within +-2^53 (where float64 holds every
    integer), else refused. Mapped observations are checked on every step: a value the wire
    dtype cannot hold exactly stops the actor with an error rather than travelling altered.
    """
    d = np.dtype(space.dtype)
    native = p.dtype_from_numpy(d)
    if native is not None:
        return native, None
    if d.kind == "b":
        return p.DType.UINT8, "bool observations travel as uint8 (0 or 1)"
    if d.kind in "iu" and d.itemsize <= 2:
        return p.DType.INT32, f"{d.name} observations travel as int32 (every value fits)"
    if d.kind == "f" and d.itemsize == 2:
        return p.DType.FLOAT32, "float16 observations travel as float32 (every value fits)"
    if d.kind in "iu":
        low, high = np.min(space.low), np.max(space.high)
        bounds = f"bounds [{low}, {high}]"
        if _INT32.min <= low and high <= _INT32.max:
            return p.DType.INT32, (f"{d.name} observations travel as int32 (the Box's {bounds} "
                                   "fit; every value is checked)")
        if -_FLOAT64_EXACT <= low and high <= _FLOAT64_EXACT:
            return p.DType.FLOAT64, (f"{d.name} observations travel as float64 (the Box's "
                                     f"{bounds} lie within +-2^53, where float64 is exact; "
                                     "every value is checked)")
        raise SpaceError(f"observation space {space} has dtype {d.name} with {bounds}, beyond "
                         "what the protocol's int32 or float64 can carry exactly (+-2^53); "
                         "narrow the Box's bounds or cast the observations")
    raise SpaceError(f"observation space {space} has dtype {d}, which the protocol cannot carry "
                     "(it carries numbers and booleans as uint8, int32, float32 or float64); "
                     "cast it, e.g. with gymnasium.wrappers.DtypeObservation")


def observation_note(space: gym.Space) -> str | None:
    """How `space`'s observations travel when their dtype is not a wire dtype (else None)."""
    return wire_dtype_for(space)[1] if isinstance(space, spaces.Box) else None


def _observation_spec(space: gym.Space) -> p.ObservationSpec:
    if not isinstance(space, spaces.Box):
        raise SpaceError(f"observation space {space} is not supported: the protocol carries one "
                         "Box tensor per environment; flatten Dict or Tuple spaces first (e.g. "
                         "gymnasium.wrappers.FlattenObservation)")
    dtype, _ = wire_dtype_for(space)
    shape = tuple(int(d) for d in space.shape) or (1,)
    if len(shape) > p.MAX_RANK:
        raise SpaceError(f"observation space {space} has rank {len(shape)}; the protocol "
                         f"allows up to {p.MAX_RANK}")
    if min(shape) < 1 or max(shape) > 0xFFFFFFFF:
        raise SpaceError(f"observation space {space} has a dimension outside [1, 2^32)")
    spec = p.ObservationSpec(dtype, shape)
    if spec.num_bytes > p.MAX_OBSERVATION_BYTES:
        raise SpaceError(f"observation space {space} takes {spec.num_bytes} bytes; the protocol "
                         "allows up to 2^31 per observation")
    return spec


def _action_spec(space: gym.Space) -> p.ActionSpec:
    if isinstance(space, spaces.Discrete):
        n = int(space.n)
        if not 1 <= n < 1 << 31:
            raise SpaceError(f"action space {space} has {n} actions; the protocol allows 1 to "
                             "2^31 - 1")
        return p.ActionSpec.discrete(n)
    if isinstance(space, spaces.Box):
        return box_action_spec(space)
    kind = type(space).__name__
    advice = _ACTION_SPACE_ADVICE.get(kind, _OTHER_ADVICE)
    raise SpaceError(f"action space {space} ({kind}) is not supported: seedrl's heads serve one "
                     "Discrete action (categorical) or one float Box (Gaussian) per environment; "
                     f"{advice}")


# What to do instead, by the refused space's class name (gymnasium's own spaces).
_OTHER_ADVICE = "wrap the environment so that its action space is one Discrete or one Box"
_ACTION_SPACE_ADVICE = {
    "MultiDiscrete": "wrap the environment so that one Discrete space enumerates the "
                     "combinations (their product), or a Box whose elements it rounds",
    "MultiBinary": "wrap the environment so that one Discrete space enumerates the bit "
                   "patterns, or a Box in [0, 1] per bit that it thresholds",
    "Dict": "wrap the environment so that one Box concatenates the continuous parts, or one "
            "Discrete space enumerates the discrete ones",
    "Tuple": "wrap the environment so that one Box concatenates the continuous parts, or one "
             "Discrete space enumerates the discrete ones",
}


def box_action_spec(space: spaces.Box) -> p.ActionSpec:
    """A continuous spec with the Box's per-dimension bounds (row-major; -inf/+inf stay
    unbounded). A scalar Box travels as [1]. The hello goes out as version 2 when the bounds
    differ between dimensions, as version 1 when one pair says them all."""
    if not np.issubdtype(space.dtype, np.floating):
        raise SpaceError(f"action space {space} has {space.dtype} elements: continuous actions "
                         "travel as float32, so the Box needs a float dtype (discretize integer "
                         "actions into a Discrete space)")
    shape = tuple(int(d) for d in space.shape) or (1,)
    if len(shape) > p.MAX_RANK:
        raise SpaceError(f"action space {space} has rank {len(shape)}; the protocol allows 1 "
                         "to 6")
    low = np.asarray(space.low, dtype=np.float64).ravel()
    high = np.asarray(space.high, dtype=np.float64).ravel()
    if low.size > p.MAX_ACTION_ELEMENTS:
        raise SpaceError(f"action space {space} has {low.size} elements; the protocol allows "
                         "2^28")
    bad = np.flatnonzero(~(low < high))
    if bad.size:
        i = int(bad[0])
        raise SpaceError(f"action space {space}: dimension {i} has bounds [{low[i]!r}, "
                         f"{high[i]!r}]; the protocol needs low < high in every dimension")
    spec = p.ActionSpec.continuous(shape, low, high)
    if not spec.uniform_bounds and low.size > p.MAX_BOUNDED_ACTION_ELEMENTS:
        raise SpaceError(f"action space {space} has per-dimension bounds for {low.size} "
                         f"elements; a hello carries them for at most "
                         f"{p.MAX_BOUNDED_ACTION_ELEMENTS} (give every dimension the same bounds)")
    return spec


def make_env(env_id: str, **kwargs: Any) -> gym.Env:
    """gymnasium.make(env_id), registering the Atari environments first for ALE/ ids."""
    if env_id.startswith("ALE/"):
        try:
            import ale_py  # noqa: F401  (registers ALE/ ids with gymnasium)
        except ImportError:
            raise SpaceError(f"{env_id} needs the Arcade Learning Environment: "
                             "pip install ale-py (or pip install './python[atari]')") from None
        register = getattr(gym, "register_envs", None)
        if register is not None:
            register(ale_py)
    return gym.make(env_id, **kwargs)


# -------------------------------------------------------------------------------------------
# k environments with SEED's auto-reset


class EnvBatch:
    """k environments of one kind, stepped together, with the columns of a step frame.

    After step(), an environment whose episode ended has been reset: `rewards[i]` is its
    terminal reward, `dones[i]` is set (and `truncateds[i]` when a time limit cut it short)
    and `observations[i]` is the first observation of its next episode.
    """

    def __init__(self, envs: Sequence[gym.Env], seed: int | None = None) -> None:
        if not envs:
            raise ValueError("EnvBatch needs at least one environment")
        self.envs = list(envs)
        self.observation_spec, self.action_spec = specs_from_spaces(
            envs[0].observation_space, envs[0].action_space)
        for i, env in enumerate(self.envs[1:], start=1):
            if specs_from_spaces(env.observation_space, env.action_space) != (
                    self.observation_spec, self.action_spec):
                raise SpaceError(f"env {i} has other spaces than env 0: one actor's "
                                 "environments share one observation and one action spec")
        self._env_shape = tuple(envs[0].observation_space.shape)
        self._dtype = p.wire_dtype(self.observation_spec.dtype).newbyteorder("=")
        self.observation_note = observation_note(envs[0].observation_space)
        self._mapped = self.observation_note is not None
        self._action_start = int(getattr(envs[0].action_space, "start", 0))
        # Continuous actions arrive as float32 [elements]; env.step gets the Box's shape and
        # dtype.
        self._continuous = self.action_spec.kind == p.ActionKind.CONTINUOUS
        self._action_shape = tuple(envs[0].action_space.shape)
        self._action_dtype = envs[0].action_space.dtype
        k = len(self.envs)
        self.observations = np.zeros((k, *self.observation_spec.shape), dtype=self._dtype)
        self.rewards = np.zeros(k, dtype=np.float32)
        self.dones = np.zeros(k, dtype=bool)
        self.truncateds = np.zeros(k, dtype=bool)
        self.run_ids = np.zeros(k, dtype=np.uint64)
        self._seed = seed
        self._seeded = False
        self._returns = np.zeros(k)
        self.episodes = 0
        self.recent_returns: deque[float] = deque(maxlen=100)

    def __len__(self) -> int:
        return len(self.envs)

    def start(self) -> None:
        """Begins fresh episodes under new run ids (each connection starts afresh).

        `seed` seeds env i with seed + i on the first start only; later episodes continue
        each env's own random stream, so a reconnect does not replay the same episodes.
        """
        for i, env in enumerate(self.envs):
            seed = self._seed + i if self._seed is not None and not self._seeded else None
            obs, _ = env.reset(seed=seed)
            self.observations[i] = self._convert(obs, i)
            self._check_finite(i)
            self.run_ids[i] = secrets.randbits(64)
        self._seeded = True
        self.rewards[:] = 0.0
        self.dones[:] = False
        self.truncateds[:] = False
        self._returns[:] = 0.0

    def step(self, actions: np.ndarray, between: Callable[[], None] | None = None) -> None:
        """Steps env i with actions[i]; `between` runs after each env (keepalives for slow
        environments)."""
        for i, env in enumerate(self.envs):
            if self._continuous:
                action = np.asarray(actions[i]).reshape(self._action_shape).astype(
                    self._action_dtype)
            else:
                action = int(actions[i]) + self._action_start
            obs, reward, terminated, truncated, _ = env.step(action)
            reward = float(reward)
            if not (math.isfinite(reward) and abs(reward) <= _FLOAT32_MAX):
                raise SpaceError(f"env {i} returned reward {reward!r}, which is not a finite "
                                 "float32")
            self._returns[i] += reward
            done = bool(terminated or truncated)
            if done:
                self.episodes += 1
                self.recent_returns.append(float(self._returns[i]))
                self._returns[i] = 0.0
                obs, _ = env.reset()
            self.rewards[i] = reward
            self.dones[i] = done
            self.truncateds[i] = bool(truncated and not terminated)
            self.observations[i] = self._convert(obs, i)
            self._check_finite(i)
            if between is not None:
                between()

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def _check_finite(self, i: int) -> None:
        """The learner refuses a float observation element that is NaN, infinite or beyond
        float32 (non_finite_observation): an unstable simulation stops here, naming it."""
        if self.observations.dtype.kind != "f":
            return
        j = p.first_refused_element(self.observations[i])
        if j is not None:
            value = float(self.observations[i].reshape(-1)[j])
            raise SpaceError(f"env {i} returned an observation whose element {j} is {value!r}, "
                             "not a finite float32 (the learner computes in float32 and refuses "
                             "it)")

    def _convert(self, obs: Any, i: int) -> np.ndarray:
        """The observation as the hello declared it: same values, same element type."""
        a = np.asarray(obs)
        if a.shape != self._env_shape:
            raise SpaceError(f"env {i} returned an observation of shape {a.shape}, its "
                             f"observation space says {self._env_shape}")
        if a.dtype == self._dtype or np.can_cast(a.dtype, self._dtype, "safe"):
            return a.reshape(self.observation_spec.shape)
        if self._mapped:  # the space's dtype is not a wire dtype: nothing may change on the way
            wire = a.astype(self._dtype)
            if not np.array_equal(wire.astype(a.dtype), a, equal_nan=a.dtype.kind == "f"):
                raise SpaceError(f"env {i} returned a {a.dtype} observation that {self._dtype} "
                                 "cannot hold exactly (outside its observation space's bounds?)")
            return wire.reshape(self.observation_spec.shape)
        if not np.can_cast(a.dtype, self._dtype, "same_kind"):
            raise SpaceError(f"env {i} returned a {a.dtype} observation, its observation space "
                             f"says {self._dtype}")
        return a.reshape(self.observation_spec.shape)


# -------------------------------------------------------------------------------------------
# The link


def _log_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def default_name() -> str:
    """"host:pid", like the C++ actors; it ends up in the learner's log lines."""
    return sanitize_name(f"{socket.gethostname()}:{os.getpid()}")


def sanitize_name(name: str) -> str:
    """`name` without control characters, cut to the hello's 256 bytes."""
    clean = "".join(c for c in name if not (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F))
    raw = clean.encode("utf-8", errors="ignore")[:p.MAX_NAME_LENGTH]
    return raw.decode("utf-8", errors="ignore")


@dataclass
class ActorConfig:
    """What an Actor needs besides its environments. Times are in seconds."""

    host: str
    port: int
    seed: int | None = None
    actor_id: int = field(default_factory=os.getpid)
    name: str = field(default_factory=default_name)
    secret: bytes | None = None  # from auth.load_secret; None: no authentication
    tls: ssl.SSLContext | None = None  # from tls.client_context; None: plain TCP
    tls_server_name: str | None = None  # the name the learner's certificate carries (or host)
    initial_backoff: float = 0.1
    max_backoff: float = 5.0
    max_steps: int | None = None  # stop after this many round trips (tests)
    stats_interval: float = 1.0  # actor_stats period; 0 turns the reports off
    progress_interval: float = 10.0  # local progress log period; 0 turns it off
    connect_timeout: float = 5.0
    write_timeout: float = 30.0
    max_payload: int = p.DEFAULT_MAX_PAYLOAD  # largest actions payload accepted
    log: Callable[[str], None] = _log_stderr


class Link:
    """One connection to the learner, frame by frame.

    Reads wait in short slices so that a stop request is seen promptly, keepalives go out on
    time (when the welcome asked for them) and a silent learner is noticed after three
    keepalive intervals.
    """

    POLL_SECONDS = 0.1

    def __init__(self, sock: socket.socket, config: ActorConfig,
                 stopping: Callable[[], bool]) -> None:
        self.sock = sock
        self.config = config
        self.stopping = stopping
        self.keepalive_seconds = 0.0  # set from welcome; 0: no keepalives, no idle timeout
        self.last_sent = self.last_received = time.monotonic()

    @classmethod
    def connect(cls, config: ActorConfig, stopping: Callable[[], bool]) -> "Link":
        try:
            sock = socket.create_connection((config.host, config.port),
                                            timeout=config.connect_timeout)
        except OSError as e:
            raise LinkError(f"cannot connect to {config.host}:{config.port}: "
                            f"{e.strerror or e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # lock-step: no batching
        if config.tls is not None:
            try:  # the handshake, within the connect timeout still set on the socket
                sock = config.tls.wrap_socket(
                    sock, server_hostname=config.tls_server_name or config.host)
            except (OSError, ssl.SSLError) as e:
                sock.close()
                checked = getattr(e, "verify_message", None)  # why the learner's cert failed
                why = f"certificate verify failed: {checked}" if checked else str(e)
                raise LinkError(f"TLS handshake with {config.host}:{config.port} failed: "
                                f"{why}") from None
        return cls(sock, config, stopping)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, frame: bytes | memoryview) -> None:
        self.sock.settimeout(self.config.write_timeout)
        try:
            self.sock.sendall(frame)
        except OSError as e:
            raise LinkError(f"write failed: {e.strerror or e}") from None
        self.last_sent = time.monotonic()

    def send_best_effort(self, frame: bytes) -> None:
        """For goodbyes and error reports: the peer may already be gone."""
        try:
            self.send(frame)
        except LinkError:
            pass

    def fail(self, error: p.ProtocolError) -> NoReturn:
        """Reports a violation by the learner with an error frame, then drops the link."""
        self.send_best_effort(p.encode_error(error.code, error.detail))
        raise LinkError(f"bad frame from the learner: {error}")

    def tick(self) -> None:
        """Sends a keepalive when nothing went out for an interval; gives up on a learner
        silent for three."""
        if self.keepalive_seconds <= 0:
            return
        now = time.monotonic()
        if now - self.last_received >= 3 * self.keepalive_seconds:
            self.send_best_effort(p.encode_error(
                p.ErrorCode.IDLE_TIMEOUT,
                f"nothing from the learner for {3 * self.keepalive_seconds:.3f} s"))
            raise LinkError("the learner went silent (idle_timeout)")
        if now - self.last_sent >= self.keepalive_seconds:
            self.send(p.encode_keepalive())

    def recv_frame(self) -> tuple[p.FrameHeader, bytes]:
        """One whole frame, header checked before the payload is read."""
        raw = self._recv_exact(p.HEADER_SIZE)
        try:
            header = p.decode_header(raw, self.config.max_payload)
        except p.ProtocolError as e:
            self.fail(e)
        if not p.learner_may_send(header.type):
            self.fail(p.ProtocolError(p.ErrorCode.UNEXPECTED_MESSAGE,
                                      f"the learner sent {p.type_name(header.type)}, which "
                                      "only actors send"))
        return header, self._recv_exact(header.payload_length)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        poll = self.POLL_SECONDS
        if self.keepalive_seconds > 0:
            poll = min(poll, self.keepalive_seconds / 2)
        while got < n:
            self.sock.settimeout(poll)
            try:
                r = self.sock.recv_into(view[got:])
            except socket.timeout:
                if self.stopping():
                    raise _Stopping() from None
                self.tick()
                continue
            except OSError as e:
                raise LinkError(f"read failed: {e.strerror or e}") from None
            if r == 0:
                raise LinkError("the learner closed the connection")
            got += r
            self.last_received = time.monotonic()
        return bytes(buf)


# -------------------------------------------------------------------------------------------
# The actor


class Actor:
    """Runs `num_envs` environments made by `make_env(i)` against the learner in `config`."""

    def __init__(self, config: ActorConfig, make_env: Callable[[int], gym.Env],
                 num_envs: int) -> None:
        if num_envs < 1:
            raise ValueError("an actor needs at least one environment")
        self.config = config
        self.config.name = sanitize_name(config.name)
        self.batch = EnvBatch([make_env(i) for i in range(num_envs)], config.seed)
        self.encoder = p.StepEncoder(self.batch.observation_spec, num_envs)
        self.steps = 0  # round trips over all connections
        self.connections = 0  # connections that reached welcome
        self._stop = False
        self._backoff = config.initial_backoff
        self._jitter = random.Random()
        self._last_progress = time.monotonic()

    def request_stop(self) -> None:
        """Asks run() to return after a close frame. Only sets a flag: safe in a signal
        handler."""
        self._stop = True

    def close(self) -> None:
        self.batch.close()

    def run(self) -> int:
        """Connects, serves and reconnects until stopped or max_steps; returns the round
        trips done. Raises ActorRejected when the learner refuses the actor for good."""
        while not self._finished():
            try:
                self._connect_and_serve()
            except LinkError as e:
                if self._finished():
                    break
                delay = self._next_delay()
                self._log(f"link lost ({e}); retrying in {delay * 1000:.0f} ms")
                self._sleep(delay)
        return self.steps

    # --- one connection ---------------------------------------------------------------------

    def _connect_and_serve(self) -> None:
        link = Link.connect(self.config, lambda: self._stop)
        try:
            self._serve(link)
            link.send_best_effort(p.encode_close(p.ErrorCode.NONE, "actor stopping"))
        except _Stopping:
            link.send_best_effort(p.encode_close(p.ErrorCode.NONE, "actor stopping"))
        except (LinkError, ActorRejected):
            raise
        except Exception as e:  # an environment failed: tell the learner, then stop
            link.send_best_effort(p.encode_error(p.ErrorCode.INTERNAL, f"actor failed: {e}"))
            raise
        finally:
            link.close()

    def _serve(self, link: Link) -> None:
        """Handshake, then lock-step step/actions until stop or max_steps."""
        self.batch.start()
        if self.config.secret is not None:
            self._authenticate(link)
        k = len(self.batch)
        link.send(p.encode_hello(p.Hello(self.config.actor_id, k, self.batch.observation_spec,
                                         self.batch.action_spec, self.config.name)))
        welcome = self._await_welcome(link)
        self._backoff = self.config.initial_backoff
        self.connections += 1
        link.keepalive_seconds = welcome.keepalive_interval_ms / 1000.0
        self._log(f"connected to {self.config.host}:{self.config.port}: {k} envs in slots "
                  f"{welcome.first_env_slot}..{welcome.first_env_slot + k - 1}")
        period = [0, 0.0, 0.0]  # steps, env seconds, wait seconds
        last_report = t_env = time.monotonic()
        b = self.batch
        while not self._finished():
            frame = self.encoder.encode(b.run_ids, b.rewards, b.dones, b.truncateds,
                                        b.observations)
            t_send = time.monotonic()
            link.send(frame)
            actions = self._await_actions(link)
            t_recv = time.monotonic()
            period[0] += 1
            period[1] += t_send - t_env
            period[2] += t_recv - t_send
            t_env = t_recv
            b.step(actions, between=link.tick)
            self.steps += 1
            interval = self.config.stats_interval
            if interval > 0 and t_recv - last_report >= interval:
                link.send(p.encode_actor_stats(p.ActorStats(*period)))
                period = [0, 0.0, 0.0]
                last_report = t_recv
            self._maybe_log_progress()

    def _authenticate(self, link: Link) -> None:
        """docs/security.md's challenge-response; returns only once the learner proved it
        knows the secret. Never falls back to an unauthenticated hello."""
        link.send(p.encode_auth_request())
        header, payload = link.recv_frame()
        self._check_status_frame(link, header, payload, during_auth=True)
        if header.type != p.MessageType.AUTH_CHALLENGE:
            link.fail(p.ProtocolError(p.ErrorCode.UNEXPECTED_MESSAGE,
                                      f"expected auth_challenge, got {p.type_name(header.type)}"))
        try:
            learner_nonce = p.decode_auth_challenge(payload)
        except p.ProtocolError as e:
            link.send_best_effort(p.encode_error(e.code, e.detail))
            raise ActorRejected(f"bad auth_challenge from the learner: {e}") from None
        handshake = ActorHandshake(self.config.secret or b"")
        actor_nonce, proof = handshake.respond(learner_nonce)
        link.send(p.encode_auth_response(actor_nonce, proof))
        header, payload = link.recv_frame()
        self._check_status_frame(link, header, payload, during_auth=True)
        verified = False
        if header.type == p.MessageType.AUTH_CONFIRM:
            try:
                verified = handshake.verify_learner(p.decode_auth_confirm(payload))
            except p.ProtocolError:
                verified = False
        if not verified:
            link.send_best_effort(p.encode_error(p.ErrorCode.AUTH_FAILED,
                                                 "authentication failed"))
            raise ActorRejected("the learner did not prove that it knows the shared secret; it "
                                "is not the learner this actor was configured for")

    def _await_welcome(self, link: Link) -> p.Welcome:
        header, payload = link.recv_frame()
        self._check_status_frame(link, header, payload, during_auth=False)
        if header.type != p.MessageType.WELCOME:
            link.fail(p.ProtocolError(p.ErrorCode.UNEXPECTED_MESSAGE,
                                      f"expected welcome, got {p.type_name(header.type)}"))
        try:
            welcome = p.decode_welcome(payload)
            p.check_welcome(welcome, len(self.batch), self.encoder.payload_size)
        except p.ProtocolError as e:
            link.send_best_effort(p.encode_error(e.code, e.detail))
            raise ActorRejected(f"the learner's welcome does not fit this actor: {e}") from None
        return welcome

    def _await_actions(self, link: Link) -> np.ndarray:
        while True:
            header, payload = link.recv_frame()
            if header.type == p.MessageType.KEEPALIVE:
                continue
            if header.type == p.MessageType.ACTIONS:
                try:
                    return p.parse_actions(payload, len(self.batch), self.batch.action_spec)
                except p.ProtocolError as e:
                    link.fail(e)
            if header.type in (p.MessageType.ERROR, p.MessageType.CLOSE):
                self._check_status_frame(link, header, payload, during_auth=False)
            link.fail(p.ProtocolError(p.ErrorCode.UNEXPECTED_MESSAGE,
                                      f"expected actions, got {p.type_name(header.type)}"))

    def _check_status_frame(self, link: Link, header: p.FrameHeader, payload: bytes,
                            during_auth: bool) -> None:
        """Handles reject, error and close: each ends this connection. Rejects that can clear
        up are retried; the others stop the actor with the learner's reason."""
        if header.type not in (p.MessageType.REJECT, p.MessageType.ERROR, p.MessageType.CLOSE):
            return
        try:
            m = p.decode_status(payload)
        except p.ProtocolError as e:
            link.fail(e)
        text = f"{p.code_name(m.code)}: {p.escape_text(m.message)}"
        if header.type != p.MessageType.REJECT:
            raise LinkError(f"the learner sent {p.type_name(header.type)}: {text}")
        if m.code in TRANSIENT_REJECTS:
            raise LinkError(f"the learner refused us: {text}")
        hint = ""
        if m.code == p.ErrorCode.AUTH_REQUIRED:
            hint = (" (give this actor the learner's secret: SEEDRL_AUTH_SECRET or "
                    "--auth-secret-file)")
        elif m.code == p.ErrorCode.AUTH_FAILED:
            hint = " (this actor's secret differs from the learner's)"
        elif during_auth and m.code in (p.ErrorCode.UNKNOWN_MESSAGE_TYPE,
                                        p.ErrorCode.UNEXPECTED_MESSAGE):
            hint = (" (the learner runs without authentication; this actor has a secret and "
                    "will not fall back to an unauthenticated hello)")
        raise ActorRejected(f"the learner refused us: {text}{hint}")

    # --- helpers ---------------------------------------------------------------------------

    def _finished(self) -> bool:
        limit = self.config.max_steps
        return self._stop or (limit is not None and self.steps >= limit)

    def _next_delay(self) -> float:
        """Exponential backoff with up to 25 % jitter, so that actors that lost the same
        learner do not all come back in the same instant."""
        delay = self._backoff + self._jitter.uniform(0.0, self._backoff / 4)
        self._backoff = min(self._backoff * 2, self.config.max_backoff)
        return delay

    def _sleep(self, seconds: float) -> None:
        """Sleeps in short slices so that a stop request ends the wait at once."""
        until = time.monotonic() + seconds
        while not self._stop:
            left = until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))

    def _maybe_log_progress(self) -> None:
        interval = self.config.progress_interval
        now = time.monotonic()
        if interval <= 0 or now - self._last_progress < interval:
            return
        self._last_progress = now
        recent = self.batch.recent_returns
        mean = f"{sum(recent) / len(recent):.1f}" if recent else "n/a"
        self._log(f"{self.steps} steps, {self.batch.episodes} episodes, mean return {mean} over "
                  f"the last {len(recent)}")

    def _log(self, line: str) -> None:
        self.config.log(f"seedrl actor {self.config.name}: {line}")
