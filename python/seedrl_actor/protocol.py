"""The seedrl actor <-> learner wire protocol, version 1 (hello versions 1 and 2), in Python
and numpy.

docs/protocol.md is the normative description; this module follows it field by field, and
the golden vectors in test/fixtures/protocol/ (written by the C++ encoders) are checked
against it byte for byte, so that this client and include/seedrl/protocol/frame.hpp cannot
drift apart.

Everything here is pure: bytes in, values out (or the reverse), no sockets. Decoders raise
ProtocolError carrying the error code the C++ receiver would report for the same bytes, and
check in the documented order so that both sides name the same first failure. Encoders raise
ValueError for values the peer would refuse, so that an actor fails at home with a clear
message instead of being disconnected by the learner.
"""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

MAGIC = 0x4C524453
"""First four bytes of every frame, b"SDRL" on the wire."""
VERSION = 1
"""Frame header version; every frame but hello is laid out as in version 1."""
HELLO_VERSION = 2
"""Newest hello layout: 2 carries one [low, high] per continuous action element, 1 one pair
for all. Encoders send the lowest version that can say the bounds."""
MIN_HELLO_VERSION = 1
MAX_BOUNDED_ACTION_ELEMENTS = 1024
"""Most action elements a version-2 hello gives per-element bounds for."""
HEADER_SIZE = 16
DEFAULT_MAX_PAYLOAD = 64 * 1024 * 1024
"""Default limit on step and actions payloads (64 MiB), as in the C++ runtime."""
MAX_CONTROL_PAYLOAD = 4096
MAX_HELLO_PAYLOAD = 17 * 1024
"""Largest version-2 hello: 334 + 16 * 1024 bytes."""
MAX_NAME_LENGTH = 256
MAX_MESSAGE_LENGTH = 1024
MAX_RANK = 6
MAX_OBSERVATION_BYTES = 1 << 31
MAX_ACTION_ELEMENTS = 1 << 28
STEP_RECORD_FIXED_SIZE = 20
FLAG_DONE = 0x01
FLAG_TRUNCATED = 0x02
ACTOR_STATS_PAYLOAD_SIZE = 24
AUTH_VERSION = 1
AUTH_FIELD_SIZE = 32
AUTH_REQUEST_PAYLOAD_SIZE = 4
AUTH_CHALLENGE_PAYLOAD_SIZE = 36
AUTH_RESPONSE_PAYLOAD_SIZE = 64
AUTH_CONFIRM_PAYLOAD_SIZE = 32

_U32_MAX = 0xFFFFFFFF
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_HEADER = struct.Struct("<IHHII")


class MessageType(enum.IntEnum):
    """What a frame carries; the values are part of the wire protocol."""

    HELLO = 1
    WELCOME = 2
    REJECT = 3
    STEP = 4
    ACTIONS = 5
    ERROR = 6
    CLOSE = 7
    KEEPALIVE = 8
    ACTOR_STATS = 9
    AUTH_REQUEST = 10
    AUTH_CHALLENGE = 11
    AUTH_RESPONSE = 12
    AUTH_CONFIRM = 13


class ErrorCode(enum.IntEnum):
    """Why a frame or connection was refused; sent as u16 in reject, error and close."""

    NONE = 0
    BAD_MAGIC = 1
    UNSUPPORTED_VERSION = 2
    UNKNOWN_MESSAGE_TYPE = 3
    FRAME_TOO_LARGE = 4
    TRUNCATED_FRAME = 5
    BAD_RESERVED_BITS = 6
    BAD_HANDSHAKE = 7
    SPEC_MISMATCH = 8
    WRONG_OBSERVATION_SIZE = 9
    UNEXPECTED_MESSAGE = 10
    BAD_ENV_INDEX = 11
    NON_FINITE_REWARD = 12
    TOO_MANY_ENVS = 13
    SHUTTING_DOWN = 14
    INTERNAL = 15
    BAD_ACTION = 16
    IDLE_TIMEOUT = 17
    BAD_ACTOR_STATS = 18
    AUTH_FAILED = 19
    AUTH_REQUIRED = 20
    NON_FINITE_OBSERVATION = 21


def code_name(code: int) -> str:
    """The code's name as the C++ side prints it ("spec_mismatch"); "unknown" for new codes.

    Receivers keep codes they do not know, since a newer peer may send them.
    """
    try:
        return ErrorCode(code).name.lower()
    except ValueError:
        return "unknown"


def type_name(t: int) -> str:
    """The message type's name ("actions"), "unknown" for values outside 1..13."""
    try:
        return MessageType(t).name.lower()
    except ValueError:
        return "unknown"


class DType(enum.IntEnum):
    """Observation element types on the wire; the values are part of the protocol."""

    UINT8 = 1
    INT32 = 2
    FLOAT32 = 3
    FLOAT64 = 4


_DTYPE_VALUES = frozenset(int(t) for t in DType)
_WIRE_DTYPES = {
    DType.UINT8: np.dtype("u1"),
    DType.INT32: np.dtype("<i4"),
    DType.FLOAT32: np.dtype("<f4"),
    DType.FLOAT64: np.dtype("<f8"),
}


def wire_dtype(t: DType) -> np.dtype:
    """The little-endian numpy dtype of `t`'s elements as they travel."""
    return _WIRE_DTYPES[DType(t)]


def dtype_from_numpy(d: np.dtype | type) -> DType | None:
    """The wire dtype that carries numpy dtype `d` unchanged, or None when there is none."""
    d = np.dtype(d)
    for t, w in _WIRE_DTYPES.items():
        if d.kind == w.kind and d.itemsize == w.itemsize:
            return t
    return None


class ActionKind(enum.IntEnum):
    DISCRETE = 1
    CONTINUOUS = 2


def format_shape(shape: Sequence[int]) -> str:
    """"[84, 84, 1]", as the C++ side writes shapes in its messages."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


@dataclass(frozen=True)
class ObservationSpec:
    """Element type and shape of one environment's observation."""

    dtype: DType
    shape: tuple[int, ...]

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)

    @property
    def num_bytes(self) -> int:
        return self.num_elements * wire_dtype(self.dtype).itemsize


@dataclass(frozen=True, eq=False)
class ActionSpec:
    """Discrete: one int32 in [0, num_actions). Continuous: float32 `shape` with element i in
    [low_at(i), high_at(i)].

    Bounds are one pair for every element (`low`, `high`) or, as gymnasium's Box has them, one
    pair per element in row-major order (`lows`, `highs`; empty for the single pair). -inf and
    +inf mean unbounded. Specs compare equal when every element's bounds are equal, however
    they are stored (as C++ action_spec does). Values are checked by encode_hello, not here.
    """

    kind: ActionKind
    num_actions: int = 0
    shape: tuple[int, ...] = ()
    low: float = 0.0
    high: float = 0.0
    lows: tuple[float, ...] = ()
    highs: tuple[float, ...] = ()

    @staticmethod
    def discrete(n: int) -> "ActionSpec":
        return ActionSpec(ActionKind.DISCRETE, num_actions=int(n))

    @staticmethod
    def continuous(shape: Sequence[int], low: "float | Sequence[float] | np.ndarray",
                   high: "float | Sequence[float] | np.ndarray") -> "ActionSpec":
        """Scalar bounds give one pair for all elements; arrays (a Box's low and high) one
        pair per element, flattened row-major."""
        shape = tuple(int(d) for d in shape)
        if np.ndim(low) == 0 and np.ndim(high) == 0:
            return ActionSpec(ActionKind.CONTINUOUS, shape=shape, low=float(low),
                              high=float(high))
        lows = np.broadcast_to(np.asarray(low, dtype=np.float64), np.shape(high)) \
            if np.ndim(low) == 0 else np.asarray(low, dtype=np.float64)
        highs = np.broadcast_to(np.asarray(high, dtype=np.float64), lows.shape) \
            if np.ndim(high) == 0 else np.asarray(high, dtype=np.float64)
        return ActionSpec(ActionKind.CONTINUOUS, shape=shape,
                          lows=tuple(float(x) for x in lows.ravel()),
                          highs=tuple(float(x) for x in highs.ravel()))

    @property
    def elements(self) -> int:
        """Action elements per environment on the wire (1 for discrete)."""
        return 1 if self.kind == ActionKind.DISCRETE else math.prod(self.shape)

    @property
    def per_element_bounds(self) -> bool:
        return len(self.lows) > 0 or len(self.highs) > 0

    def low_at(self, i: int) -> float:
        return self.lows[i] if self.per_element_bounds else self.low

    def high_at(self, i: int) -> float:
        return self.highs[i] if self.per_element_bounds else self.high

    def bound_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Every element's low and high, float64 [elements] each."""
        if self.per_element_bounds:
            return np.array(self.lows, dtype=np.float64), np.array(self.highs, dtype=np.float64)
        n = self.elements
        return np.full(n, self.low), np.full(n, self.high)

    @property
    def uniform_bounds(self) -> bool:
        """Whether one pair says every element's bounds (a version-1 hello can carry them)."""
        if not self.per_element_bounds:
            return True
        # Bit for bit, so that one pair stands for all exactly (-0.0 included).
        bits = struct.Struct("<d").pack
        return (len(self.lows) == len(self.highs)
                and all(bits(x) == bits(self.lows[0]) for x in self.lows)
                and all(bits(x) == bits(self.highs[0]) for x in self.highs))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ActionSpec):
            return NotImplemented
        if (self.kind, self.num_actions, self.shape) != (other.kind, other.num_actions,
                                                         other.shape):
            return False
        if self.kind != ActionKind.CONTINUOUS or not (self.per_element_bounds
                                                       or other.per_element_bounds):
            return (self.low, self.high) == (other.low, other.high)
        if any(len(s.lows) != s.elements or len(s.highs) != s.elements
               for s in (self, other) if s.per_element_bounds):
            return (self.low, self.high, self.lows, self.highs) == \
                (other.low, other.high, other.lows, other.highs)
        a, b = self.bound_arrays(), other.bound_arrays()
        return bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))

    def __hash__(self) -> int:
        return hash((self.kind, self.num_actions, self.shape))


class ProtocolError(Exception):
    """A frame the C++ receiver would refuse, with the code it would report."""

    def __init__(self, code: ErrorCode, detail: str) -> None:
        super().__init__(f"{code_name(code)}: {detail}")
        self.code = ErrorCode(code)
        self.detail = detail


def escape_text(text: str) -> str:
    """`text` with control and unprintable characters as escapes, for log lines.

    Reasons from the learner are untrusted: a newline or terminal escape in them could forge
    or hide log entries.
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


# -------------------------------------------------------------------------------------------
# Frame header


@dataclass(frozen=True)
class FrameHeader:
    type: MessageType
    payload_length: int


def payload_limit(t: MessageType, max_payload: int = DEFAULT_MAX_PAYLOAD) -> int:
    """Largest payload a receiver accepts for type `t`, checked before reading the payload."""
    fixed = {
        MessageType.STEP: max_payload,
        MessageType.ACTIONS: max_payload,
        MessageType.KEEPALIVE: 0,
        MessageType.HELLO: MAX_HELLO_PAYLOAD,
        MessageType.ACTOR_STATS: ACTOR_STATS_PAYLOAD_SIZE,
        MessageType.AUTH_REQUEST: AUTH_REQUEST_PAYLOAD_SIZE,
        MessageType.AUTH_CHALLENGE: AUTH_CHALLENGE_PAYLOAD_SIZE,
        MessageType.AUTH_RESPONSE: AUTH_RESPONSE_PAYLOAD_SIZE,
        MessageType.AUTH_CONFIRM: AUTH_CONFIRM_PAYLOAD_SIZE,
    }
    return fixed.get(MessageType(t), MAX_CONTROL_PAYLOAD)


def actor_may_send(t: MessageType) -> bool:
    """Whether an actor may send `t` (the learner answers others with unexpected_message)."""
    return t in (MessageType.HELLO, MessageType.STEP, MessageType.ERROR, MessageType.CLOSE,
                 MessageType.KEEPALIVE, MessageType.ACTOR_STATS, MessageType.AUTH_REQUEST,
                 MessageType.AUTH_RESPONSE)


def learner_may_send(t: MessageType) -> bool:
    """Whether the learner may send `t`; the actor treats others as unexpected_message."""
    return t in (MessageType.WELCOME, MessageType.REJECT, MessageType.ACTIONS, MessageType.ERROR,
                 MessageType.CLOSE, MessageType.KEEPALIVE, MessageType.AUTH_CHALLENGE,
                 MessageType.AUTH_CONFIRM)


def encode_header(t: MessageType, payload_length: int) -> bytes:
    """A 16-byte frame header; a keepalive frame is this alone with length 0."""
    return _HEADER.pack(MAGIC, VERSION, int(t), payload_length, 0)


def encode_keepalive() -> bytes:
    return encode_header(MessageType.KEEPALIVE, 0)


def decode_header(data: bytes | bytearray | memoryview,
                  max_payload: int = DEFAULT_MAX_PAYLOAD) -> FrameHeader:
    """Checks a header: magic, version, type, reserved word, then the payload length limit.

    The order is the C++ receiver's, so that both report the same code for the same bytes.
    """
    if len(data) != HEADER_SIZE:
        raise ValueError(f"a frame header is {HEADER_SIZE} bytes, got {len(data)}")
    magic, version, t, length, reserved = _HEADER.unpack(data)
    if magic != MAGIC:
        seen = " ".join(f"{b:02x}" for b in bytes(data[:4]))
        raise ProtocolError(ErrorCode.BAD_MAGIC,
                            f'frame starts with bytes {seen}, expected 53 44 52 4c ("SDRL")')
    if version != VERSION:
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION,
                            f"frame has protocol version {version}, this peer speaks {VERSION}")
    if not 1 <= t <= 13:
        raise ProtocolError(ErrorCode.UNKNOWN_MESSAGE_TYPE, f"unknown message type {t}")
    if reserved != 0:
        raise ProtocolError(ErrorCode.BAD_RESERVED_BITS,
                            f"frame header reserved word is {reserved}, must be 0")
    mt = MessageType(t)
    limit = payload_limit(mt, max_payload)
    if length > limit:
        raise ProtocolError(ErrorCode.FRAME_TOO_LARGE,
                            f"{type_name(mt)} payload of {length} bytes exceeds the limit of "
                            f"{limit}")
    return FrameHeader(mt, length)


def decode_frame(frame: bytes | bytearray | memoryview,
                 max_payload: int = DEFAULT_MAX_PAYLOAD) -> tuple[FrameHeader, bytes]:
    """Splits a buffer holding exactly one whole frame into header and payload."""
    if len(frame) < HEADER_SIZE:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"frame of {len(frame)} bytes is shorter than its 16-byte header")
    header = decode_header(frame[:HEADER_SIZE], max_payload)
    want = HEADER_SIZE + header.payload_length
    if len(frame) != want:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"frame of {len(frame)} bytes, header says {want}")
    return header, bytes(frame[HEADER_SIZE:])


def _frame(t: MessageType, payload: bytes) -> bytes:
    return encode_header(t, len(payload)) + payload


# -------------------------------------------------------------------------------------------
# reject, error, close


@dataclass(frozen=True)
class StatusMessage:
    """Payload of reject, error and close. `code` stays an int: unknown codes are kept."""

    code: int
    message: str


def _utf8_prefix(data: bytes, limit: int) -> bytes:
    """The longest prefix of at most `limit` bytes that does not split a UTF-8 sequence."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut]


def encode_status(t: MessageType, code: int, message: str) -> bytes:
    """A whole reject, error or close frame; text past 1024 bytes is cut at a character
    boundary, since a frame the peer refuses would lose the whole diagnostic."""
    if t not in (MessageType.REJECT, MessageType.ERROR, MessageType.CLOSE):
        raise ValueError("encode_status: type must be reject, error or close")
    text = _utf8_prefix(message.encode("utf-8"), MAX_MESSAGE_LENGTH)
    return _frame(t, struct.pack("<HH", int(code), len(text)) + text)


def encode_reject(code: int, message: str) -> bytes:
    return encode_status(MessageType.REJECT, code, message)


def encode_error(code: int, message: str) -> bytes:
    return encode_status(MessageType.ERROR, code, message)


def encode_close(code: int = ErrorCode.NONE, message: str = "actor stopping") -> bytes:
    return encode_status(MessageType.CLOSE, code, message)


def decode_status(payload: bytes) -> StatusMessage:
    """Decodes reject/error/close; the text is untrusted (see escape_text) and kept as is,
    with invalid UTF-8 replaced."""
    if len(payload) < 4:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"status payload of {len(payload)} bytes is shorter than its "
                            "4-byte code and length")
    code, length = struct.unpack_from("<HH", payload)
    if length > MAX_MESSAGE_LENGTH:
        raise ProtocolError(ErrorCode.FRAME_TOO_LARGE,
                            f"status message of {length} bytes exceeds the limit of "
                            f"{MAX_MESSAGE_LENGTH}")
    if len(payload) != 4 + length:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"status payload of {len(payload)} bytes, its message length says "
                            f"{4 + length}")
    return StatusMessage(code, bytes(payload[4:]).decode("utf-8", errors="replace"))


# -------------------------------------------------------------------------------------------
# hello, welcome


@dataclass(frozen=True)
class Hello:
    actor_id: int
    num_envs: int
    observation: ObservationSpec
    action: ActionSpec
    name: str = ""
    version: int = field(default=0, compare=False)
    """Hello layout: 1 or 2; 0 lets encode_hello pick the lowest that carries the bounds.
    decode_hello sets what the actor sent."""


def _format_double(v: float) -> str:
    """Like the C++ side's format_double: "-1", "0.5", "inf", "-inf", "nan"."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return str(int(v)) if v == int(v) and abs(v) < 1e16 else repr(v)


def hello_wire_version(h: Hello) -> int:
    """The version `h` travels in: its own, or the lowest that carries its bounds."""
    if h.version:
        return h.version
    a = h.action
    return 2 if a.kind == ActionKind.CONTINUOUS and not a.uniform_bounds else 1


def _bounds_problem(low: float, high: float, element: int | None) -> str | None:
    which = "action bounds " if element is None else f"action element {element} bounds "
    pair = f"[{_format_double(low)}, {_format_double(high)}]"
    if math.isnan(low) or math.isnan(high):
        return which + pair + " contain NaN"
    if not low < high:
        return which + pair + " need low < high"
    return None


def _bounded_elements_problem(shape: tuple[int, ...]) -> str | None:
    n = math.prod(shape)
    if n > MAX_BOUNDED_ACTION_ELEMENTS:
        return (f"version 2 carries per-element bounds for at most {MAX_BOUNDED_ACTION_ELEMENTS}"
                f" action elements, shape {format_shape(shape)} has {n}; give every element the "
                "same bounds and send a version-1 hello")
    return None


def _name_problem(raw: bytes) -> str | None:
    """Why `raw` is not printable UTF-8 (names end up in the learner's log lines)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"invalid UTF-8 at offset {e.start}"
    offset = 0
    for c in text:
        cp = ord(c)
        if cp < 0x20 or 0x7F <= cp <= 0x9F:
            return f"control character U+{cp:04X} at offset {offset}"
        offset += len(c.encode("utf-8"))
    return None


def _shape_problem(shape: Sequence[int], what: str) -> str | None:
    if len(shape) == 0:
        return f"{what} rank is 0; scalars travel as shape [1]"
    if len(shape) > MAX_RANK:
        return f"{what} rank {len(shape)} is outside [1, 6]"
    for d in shape:
        if not 1 <= d <= _U32_MAX:
            return f"{what} dimension {d} is outside [1, 2^32)"
    return None


def _check_hello_fields(h: Hello, raw_name: bytes) -> None:
    """The value rules of decode_hello, shared with encode_hello (C++ check_hello_fields).

    `raw_name` is the name's bytes as they travel (decode_hello has no valid text for a bad
    name). ActionSpec holds bounds unchecked, so decoded bounds are checked here too, in the
    documented order.
    """
    def bad(detail: str) -> ProtocolError:
        return ProtocolError(ErrorCode.BAD_HANDSHAKE, "hello: " + detail)

    v = hello_wire_version(h)
    if not MIN_HELLO_VERSION <= v <= HELLO_VERSION:
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION,
                            f"hello: protocol_version {v}, this peer speaks 1 and 2")
    if h.num_envs == 0:
        raise bad("num_envs is 0")
    if h.observation.dtype not in _WIRE_DTYPES:
        raise bad(f"unknown observation dtype {int(h.observation.dtype)}")
    if (p := _shape_problem(h.observation.shape, "observation")) is not None:
        raise bad(p)
    obs = h.observation
    if obs.num_elements > MAX_OBSERVATION_BYTES // wire_dtype(obs.dtype).itemsize:
        raise bad(f"observation of {format_shape(obs.shape)} {DType(obs.dtype).name.lower()} "
                  "exceeds 2^31 bytes")
    a = h.action
    if a.kind == ActionKind.DISCRETE:
        if a.num_actions < 1:
            raise bad(f"discrete action count {a.num_actions} is below 1")
    elif a.kind == ActionKind.CONTINUOUS:
        if (p := _shape_problem(a.shape, "action")) is not None:
            raise bad(p)
        if math.prod(a.shape) > MAX_ACTION_ELEMENTS:
            raise bad(f"action shape {format_shape(a.shape)} exceeds 2^28 elements")
        if a.per_element_bounds and not len(a.lows) == len(a.highs) == a.elements:
            raise bad(f"action has {len(a.lows)} low and {len(a.highs)} high bounds for "
                      f"shape {format_shape(a.shape)}")
        if v == 1:
            if not a.uniform_bounds:
                raise bad("version 1 carries one [low, high] for every action element, these "
                          "bounds differ per element")
            if (p := _bounds_problem(a.low_at(0), a.high_at(0), None)) is not None:
                raise bad(p)
        else:
            if (p := _bounded_elements_problem(a.shape)) is not None:
                raise bad(p)
            for i in range(a.elements):
                if (p := _bounds_problem(a.low_at(i), a.high_at(i), i)) is not None:
                    raise bad(p)
    else:
        raise bad(f"unknown action kind {int(a.kind)}")
    if len(raw_name) > MAX_NAME_LENGTH:
        raise bad(f"name of {len(raw_name)} bytes exceeds the limit of 256")
    if (p := _name_problem(raw_name)) is not None:
        raise bad("name: " + p)


def encode_hello(h: Hello) -> bytes:
    """A whole hello frame. Raises ValueError for a hello the learner would refuse."""
    try:
        name = h.name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"hello: name is not valid text: {e}") from None
    try:
        _check_hello_fields(h, name)
    except ProtocolError as e:
        raise ValueError(e.detail) from None
    if not 0 <= h.actor_id < 1 << 64 or not 1 <= h.num_envs <= _U32_MAX:
        raise ValueError("hello: actor_id must fit u64 and num_envs u32")
    obs, a = h.observation, h.action
    v = hello_wire_version(h)
    out = bytearray(struct.pack("<HHQI", v, 0, h.actor_id, h.num_envs))
    out += struct.pack("<BBH", int(obs.dtype), len(obs.shape), 0)
    out += struct.pack(f"<{len(obs.shape)}I", *obs.shape)
    out += struct.pack("<BBH", int(a.kind), 0, 0)
    if a.kind == ActionKind.DISCRETE:
        out += struct.pack("<I", a.num_actions)
    else:
        out += struct.pack("<BBH", len(a.shape), 0, 0)
        out += struct.pack(f"<{len(a.shape)}I", *a.shape)
        if v == 1:
            out += struct.pack("<dd", a.low_at(0), a.high_at(0))
        else:  # every element's low, then every high, row-major
            lows, highs = a.bound_arrays()
            out += lows.astype("<f8").tobytes() + highs.astype("<f8").tobytes()
    out += struct.pack("<H", len(name)) + name
    return _frame(MessageType.HELLO, bytes(out))


class _Reader:
    """Reads little-endian fields front to back; `need` finds a short payload at the first
    field it lacks, as the C++ field_reader does."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.at, self.what = data, 0, what

    def need(self, n: int, field: str) -> None:
        if len(self.data) - self.at < n:
            raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                                f"{self.what} ends at byte {len(self.data)} inside {field}")

    def take(self, fmt: str) -> tuple:
        s = struct.Struct("<" + fmt)
        values = s.unpack_from(self.data, self.at)
        self.at += s.size
        return values

    def one(self, fmt: str) -> int | float:
        return self.take(fmt)[0]

    @property
    def remaining(self) -> int:
        return len(self.data) - self.at


def _read_shape(r: _Reader, what: str, padding: int) -> tuple[int, ...]:
    """Rank, `padding` reserved bytes, then the dims; the rank and padding are available."""
    rank = r.one("B")
    if rank == 0 or rank > MAX_RANK:
        raise ProtocolError(ErrorCode.BAD_HANDSHAKE,
                            f"hello: {what} rank {rank} is outside [1, 6]")
    if any(r.take(f"{padding}B")):
        raise ProtocolError(ErrorCode.BAD_RESERVED_BITS,
                            "hello: reserved bytes after the rank is not 0")
    r.need(4 * rank, "dims")
    dims = r.take(f"{rank}I")
    for i, d in enumerate(dims):
        if d == 0:
            raise ProtocolError(ErrorCode.BAD_HANDSHAKE, f"hello: {what} dimension {i} is 0")
    return tuple(dims)


def decode_hello(payload: bytes) -> Hello:
    """Decodes and validates a hello payload, in the documented check order."""
    if len(payload) > MAX_HELLO_PAYLOAD:
        raise ProtocolError(ErrorCode.FRAME_TOO_LARGE,
                            f"hello payload of {len(payload)} bytes exceeds the limit of "
                            f"{MAX_HELLO_PAYLOAD}")
    r = _Reader(bytes(payload), "hello")
    r.need(16, "the fixed fields (version, actor_id, num_envs)")
    version, reserved = r.take("HH")
    if not MIN_HELLO_VERSION <= version <= HELLO_VERSION:
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION,
                            f"hello: protocol_version {version}, this learner speaks 1 and 2")
    if reserved != 0:
        raise ProtocolError(ErrorCode.BAD_RESERVED_BITS,
                            "hello: reserved u16 after protocol_version is not 0")
    actor_id, num_envs = r.take("QI")
    if num_envs == 0:
        raise ProtocolError(ErrorCode.BAD_HANDSHAKE, "hello: num_envs is 0")
    r.need(4, "the observation spec")
    obs_dtype = r.one("B")
    if obs_dtype not in _DTYPE_VALUES:
        raise ProtocolError(ErrorCode.BAD_HANDSHAKE,
                            f"hello: unknown observation dtype {obs_dtype}")
    obs_shape = _read_shape(r, "observation", 2)
    r.need(4, "the action kind")
    kind, r1, r2 = r.take("BBH")
    if r1 or r2:
        raise ProtocolError(ErrorCode.BAD_RESERVED_BITS,
                            "hello: reserved bytes after the action kind is not 0")
    if kind == ActionKind.DISCRETE:
        r.need(4, "num_actions")
        action = ActionSpec.discrete(r.one("i"))
    elif kind == ActionKind.CONTINUOUS:
        r.need(4, "the action shape")
        shape = _read_shape(r, "action", 3)
        # The bounds are kept raw and checked with the other values, after the name.
        if version == 1:
            r.need(16, "the action bounds")
            low, high = r.take("dd")
            action = ActionSpec.continuous(shape, low, high)
        else:
            # The count comes from the shape: bounded before it sizes anything.
            if (p := _bounded_elements_problem(shape)) is not None:
                raise ProtocolError(ErrorCode.BAD_HANDSHAKE, "hello: " + p)
            n = math.prod(shape)
            r.need(16 * n, "the per-element action bounds")
            lows = r.take(f"{n}d")
            highs = r.take(f"{n}d")
            action = ActionSpec(ActionKind.CONTINUOUS, shape=shape, lows=tuple(lows),
                                highs=tuple(highs))
    else:
        raise ProtocolError(ErrorCode.BAD_HANDSHAKE, f"hello: unknown action kind {kind}")
    r.need(2, "name_length")
    name_length = r.one("H")
    if name_length > MAX_NAME_LENGTH:
        raise ProtocolError(ErrorCode.BAD_HANDSHAKE,
                            f"hello: name of {name_length} bytes exceeds the limit of 256")
    r.need(name_length, "the name")
    raw_name = r.data[r.at:r.at + name_length]
    r.at += name_length
    if r.remaining != 0:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"hello has {r.remaining} bytes after the name")
    h = Hello(actor_id, num_envs, ObservationSpec(DType(obs_dtype), obs_shape), action,
              raw_name.decode("utf-8", errors="replace"), version)
    _check_hello_fields(h, raw_name)
    return h


@dataclass(frozen=True)
class Welcome:
    first_env_slot: int
    num_envs: int
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD
    keepalive_interval_ms: int = 0


def encode_welcome(w: Welcome) -> bytes:
    return _frame(MessageType.WELCOME, struct.pack("<IIII", w.first_env_slot, w.num_envs,
                                                   w.max_payload_bytes,
                                                   w.keepalive_interval_ms))


def decode_welcome(payload: bytes) -> Welcome:
    """Decodes a welcome; the actor still compares num_envs and the payload limit with its
    own hello (check_welcome)."""
    if len(payload) != 16:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"welcome payload of {len(payload)} bytes, expected 16")
    w = Welcome(*struct.unpack("<IIII", payload))
    if w.num_envs == 0:
        raise ProtocolError(ErrorCode.BAD_HANDSHAKE, "welcome: num_envs is 0")
    if w.first_env_slot + w.num_envs > 1 << 32:
        raise ProtocolError(ErrorCode.BAD_HANDSHAKE, "welcome: env slots pass 2^32")
    return w


def check_welcome(w: Welcome, num_envs: int, step_payload: int) -> None:
    """The actor's checks on an accepted handshake: bad_handshake when the learner answered
    for another number of envs or cannot take this actor's step frames."""
    if w.num_envs != num_envs:
        raise ProtocolError(ErrorCode.BAD_HANDSHAKE,
                            f"welcome for {w.num_envs} environments, the actor has {num_envs}")
    if w.max_payload_bytes < step_payload:
        raise ProtocolError(ErrorCode.BAD_HANDSHAKE,
                            f"welcome allows {w.max_payload_bytes}-byte steps, this actor's "
                            f"are {step_payload} bytes")


# -------------------------------------------------------------------------------------------
# step


def step_payload_size(num_envs: int, obs_bytes: int) -> int:
    return 4 + num_envs * (STEP_RECORD_FIXED_SIZE + obs_bytes)


def _record_dtype(spec: ObservationSpec) -> np.dtype:
    """One step record as a packed numpy structure; the 3 reserved bytes sit at 5..7."""
    return np.dtype({
        "names": ["env_index", "flags", "run_id", "reward", "obs"],
        "formats": ["<u4", "u1", "<u8", "<f4", (wire_dtype(spec.dtype), spec.shape)],
        "offsets": [0, 4, 8, 16, STEP_RECORD_FIXED_SIZE],
        "itemsize": STEP_RECORD_FIXED_SIZE + spec.num_bytes,
    })


class StepEncoder:
    """Writes step frames for `num_envs` environments into one reused buffer.

    The records are a numpy structured view over the frame, so an Atari batch is copied once,
    straight from the observation array into the frame, element type unchanged.
    """

    def __init__(self, spec: ObservationSpec, num_envs: int) -> None:
        if num_envs < 1:
            raise ValueError("StepEncoder: needs at least one environment")
        self.spec = spec
        self.num_envs = num_envs
        self.payload_size = step_payload_size(num_envs, spec.num_bytes)
        if self.payload_size > _U32_MAX:
            raise ValueError("encode_step: payload exceeds 2^32 bytes")
        self._buffer = bytearray(HEADER_SIZE + self.payload_size)
        self._buffer[:HEADER_SIZE] = encode_header(MessageType.STEP, self.payload_size)
        struct.pack_into("<I", self._buffer, HEADER_SIZE, num_envs)
        self._records = np.ndarray(num_envs, dtype=_record_dtype(spec), buffer=self._buffer,
                                   offset=HEADER_SIZE + 4)
        self._records["env_index"] = np.arange(num_envs, dtype=np.uint32)

    def encode(self, run_ids: Sequence[int] | np.ndarray, rewards: Sequence[float] | np.ndarray,
               dones: Sequence[bool] | np.ndarray, truncateds: Sequence[bool] | np.ndarray,
               observations: np.ndarray) -> memoryview:
        """The whole frame, valid until the next call. Raises ValueError for a step the
        learner would refuse: wrong sizes, a non-finite reward, a float observation element
        that is not a finite float32, truncated without done, or observations of another
        element type (they are never converted silently)."""
        k = self.num_envs
        run_ids = np.asarray(run_ids, dtype=np.uint64)
        rewards64 = np.asarray(rewards, dtype=np.float64)
        done = np.asarray(dones, dtype=bool)
        trunc = np.asarray(truncateds, dtype=bool)
        if not (run_ids.shape == rewards64.shape == done.shape == trunc.shape == (k,)):
            raise ValueError(f"encode_step: run_ids, rewards, dones and truncateds need {k} "
                             "entries each")
        obs = np.asarray(observations)
        want = wire_dtype(self.spec.dtype)
        if obs.dtype.kind != want.kind or obs.dtype.itemsize != want.itemsize:
            raise ValueError(f"encode_step: observations are {obs.dtype}, the hello declared "
                             f"{DType(self.spec.dtype).name.lower()}")
        if obs.shape != (k, *self.spec.shape):
            raise ValueError(f"encode_step: observations have shape {format_shape(obs.shape)}, "
                             f"expected {format_shape((k, *self.spec.shape))}")
        bad = np.flatnonzero(~(np.abs(rewards64) <= _FLOAT32_MAX))  # NaN fails too
        if bad.size:
            raise ValueError(f"encode_step: reward of env {bad[0]} is not a finite float32 "
                             f"({float(rewards64[bad[0]])!r})")
        if obs.dtype.kind == "f":
            for i in range(k):
                j = first_refused_element(obs[i])
                if j is not None:
                    raise ValueError(f"encode_step: observation element {j} of env {i} is "
                                     f"{_format_double(float(obs[i].reshape(-1)[j]))}, not a "
                                     "finite float32")
        bad = np.flatnonzero(trunc & ~done)
        if bad.size:
            raise ValueError(f"encode_step: env {bad[0]} is truncated but not done")
        records = self._records
        records["flags"] = done.astype(np.uint8) * FLAG_DONE | trunc.astype(np.uint8) * \
            FLAG_TRUNCATED
        records["run_id"] = run_ids
        records["reward"] = rewards64.astype(np.float32)
        records["obs"] = obs
        return memoryview(self._buffer)


def encode_step(spec: ObservationSpec, run_ids: Sequence[int], rewards: Sequence[float],
                dones: Sequence[bool], truncateds: Sequence[bool],
                observations: np.ndarray) -> bytes:
    """A whole step frame, env indices 0..k-1 in order (see StepEncoder)."""
    enc = StepEncoder(spec, len(run_ids))
    return bytes(enc.encode(run_ids, rewards, dones, truncateds, observations))


@dataclass(frozen=True)
class Step:
    """A validated step, in wire order (record i need not be env i)."""

    env_index: np.ndarray  # uint32 [k]
    done: np.ndarray  # bool [k]
    truncated: np.ndarray  # bool [k]
    run_id: np.ndarray  # uint64 [k]
    reward: np.ndarray  # float32 [k]
    observations: np.ndarray  # [k, *shape] of the spec's dtype


def first_refused_element(observation: Any, max_magnitude: float = _FLOAT32_MAX) -> int | None:
    """The flat index of the first element that is NaN, infinite or beyond +-max_magnitude
    (float32's range by default: the learner computes in float32), or None."""
    flat = np.asarray(observation, dtype=np.float64).reshape(-1)
    bad = np.flatnonzero(~(np.abs(flat) <= max_magnitude))  # NaN fails too
    return int(bad[0]) if bad.size else None


def parse_step(payload: bytes, expected_envs: int, spec: ObservationSpec,
               max_magnitude: float = _FLOAT32_MAX) -> Step:
    """Validates a step payload in the documented order: size, num_envs, total length, then
    record by record: env_index range, repetition, flags, reserved bytes, reward, and for
    float observations each element (finite and within +-max_magnitude, the learner's
    range)."""
    if len(payload) < 4:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"step payload of {len(payload)} bytes is shorter than its "
                            "num_envs field")
    n = struct.unpack_from("<I", payload)[0]
    if n != expected_envs:
        raise ProtocolError(ErrorCode.BAD_ENV_INDEX,
                            f"step carries {n} environments, the handshake declared "
                            f"{expected_envs}")
    want = step_payload_size(n, spec.num_bytes)
    if len(payload) != want:
        raise ProtocolError(ErrorCode.WRONG_OBSERVATION_SIZE,
                            f"step payload of {len(payload)} bytes, expected {want} ({n} "
                            f"records of 20 + {spec.num_bytes} observation bytes)")
    records = np.frombuffer(payload, dtype=_record_dtype(spec), count=n, offset=4)
    raw = np.frombuffer(payload, dtype=np.uint8, offset=4).reshape(
        n, STEP_RECORD_FIXED_SIZE + spec.num_bytes)
    seen: set[int] = set()
    for i in range(n):
        env = int(records["env_index"][i])
        if env >= n:
            raise ProtocolError(ErrorCode.BAD_ENV_INDEX,
                                f"step record {i}: env_index {env} is outside [0, {n})")
        if env in seen:
            raise ProtocolError(ErrorCode.BAD_ENV_INDEX,
                                f"step record {i}: env_index {env} appears twice")
        seen.add(env)
        flags = int(records["flags"][i])
        if flags & ~(FLAG_DONE | FLAG_TRUNCATED) or (flags & FLAG_TRUNCATED and
                                                     not flags & FLAG_DONE):
            raise ProtocolError(ErrorCode.BAD_RESERVED_BITS,
                                f"step record {i}: flags {flags} (allowed: 0, 1 done, 3 "
                                "done+truncated)")
        if raw[i, 5:8].any():
            raise ProtocolError(ErrorCode.BAD_RESERVED_BITS,
                                f"step record {i}: reserved bytes are not 0")
        reward = records["reward"][i]
        if not np.isfinite(reward):
            raise ProtocolError(ErrorCode.NON_FINITE_REWARD,
                                f"step record {i} (env {env}): reward is {float(reward)!r}")
        if spec.dtype in (DType.FLOAT32, DType.FLOAT64):
            j = first_refused_element(records["obs"][i], max_magnitude)
            if j is not None:
                value = float(np.asarray(records["obs"][i]).reshape(-1)[j])
                beyond = (f", beyond the learner's range of +-{_format_double(max_magnitude)}"
                          if math.isfinite(value) else "")
                raise ProtocolError(ErrorCode.NON_FINITE_OBSERVATION,
                                    f"step record {i} (env {env}): observation element {j} is "
                                    f"{_format_double(value)}{beyond}")
    flags = records["flags"]
    native = wire_dtype(spec.dtype).newbyteorder("=")
    return Step(records["env_index"].astype(np.uint32), (flags & FLAG_DONE) != 0,
                (flags & FLAG_TRUNCATED) != 0, records["run_id"].astype(np.uint64),
                records["reward"].astype(np.float32), records["obs"].astype(native))


# -------------------------------------------------------------------------------------------
# actions


def actions_payload_size(num_envs: int, spec: ActionSpec) -> int:
    return 4 + num_envs * 4 * spec.elements


def encode_discrete_actions(actions: Sequence[int] | np.ndarray) -> bytes:
    """A whole discrete actions frame; actions[i] is local env i's action."""
    a = np.asarray(actions)
    if a.ndim != 1 or a.size == 0:
        raise ValueError("encode_discrete_actions: needs a nonempty list of actions")
    if a.dtype.kind not in "iu" or a.min() < -(1 << 31) or a.max() >= 1 << 31:
        raise ValueError("encode_discrete_actions: actions are int32 values")
    payload = struct.pack("<I", a.size) + a.astype("<i4").tobytes()
    return _frame(MessageType.ACTIONS, payload)


def encode_continuous_actions(actions: np.ndarray) -> bytes:
    """A whole continuous actions frame from a [num_envs, elements...] float array."""
    a = np.asarray(actions, dtype=np.float32)
    if a.ndim < 2 or a.shape[0] == 0 or a.size == 0:
        raise ValueError("encode_continuous_actions: needs num_envs (>= 1) nonempty rows")
    payload = struct.pack("<I", a.shape[0]) + a.astype("<f4").tobytes()
    return _frame(MessageType.ACTIONS, payload)


def parse_actions(payload: bytes, expected_envs: int, spec: ActionSpec) -> np.ndarray:
    """Validates an actions payload: truncated_frame (short or wrong length), bad_env_index
    (num_envs differs), bad_action (outside the spec, first offender in order).

    Returns int32 [k] for discrete specs, float32 [k, *shape] for continuous ones.
    """
    if len(payload) < 4:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"actions payload of {len(payload)} bytes is shorter than its "
                            "num_envs field")
    n = struct.unpack_from("<I", payload)[0]
    if n != expected_envs:
        raise ProtocolError(ErrorCode.BAD_ENV_INDEX,
                            f"actions for {n} environments, the actor has {expected_envs}")
    want = actions_payload_size(n, spec)
    if len(payload) != want:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"actions payload of {len(payload)} bytes, expected {want}")
    if spec.kind == ActionKind.DISCRETE:
        a = np.frombuffer(payload, dtype="<i4", offset=4).astype(np.int32)
        bad = np.flatnonzero((a < 0) | (a >= spec.num_actions))
        if bad.size:
            i = int(bad[0])
            raise ProtocolError(ErrorCode.BAD_ACTION,
                                f"action {int(a[i])} for env {i} is outside [0, "
                                f"{spec.num_actions})")
        return a
    a = np.frombuffer(payload, dtype="<f4", offset=4).astype(np.float32)
    wide = a.astype(np.float64).reshape(n, spec.elements)
    # One pair broadcasts; per-element bounds are at most 1024 each.
    lows, highs = spec.bound_arrays() if spec.per_element_bounds else (spec.low, spec.high)
    # Infinite bounds admit every finite value; an infinite action is refused either way.
    bad = np.flatnonzero(~(np.isfinite(wide) & (wide >= lows) & (wide <= highs)))
    if bad.size:
        j = int(bad[0])
        k = j % spec.elements
        raise ProtocolError(ErrorCode.BAD_ACTION,
                            f"action element {j} (env {j // spec.elements}) is "
                            f"{float(a[j])!r}, outside [{_format_double(spec.low_at(k))}, "
                            f"{_format_double(spec.high_at(k))}]")
    return a.reshape(n, *spec.shape)


# -------------------------------------------------------------------------------------------
# actor_stats


@dataclass(frozen=True)
class ActorStats:
    """Where the actor's time went since its previous report: round trips, seconds stepping
    environments (and encoding), seconds from writing a step until its actions arrived."""

    steps: int
    env_seconds: float
    wait_seconds: float


def encode_actor_stats(m: ActorStats) -> bytes:
    """Raises ValueError for times the learner would refuse (bad_actor_stats)."""
    for v in (m.env_seconds, m.wait_seconds):
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"actor_stats time {v!r} s is not a finite, non-negative number")
    return _frame(MessageType.ACTOR_STATS,
                  struct.pack("<Qdd", m.steps, m.env_seconds, m.wait_seconds))


def decode_actor_stats(payload: bytes) -> ActorStats:
    if len(payload) != ACTOR_STATS_PAYLOAD_SIZE:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"actor_stats payload of {len(payload)} bytes, expected "
                            f"{ACTOR_STATS_PAYLOAD_SIZE}")
    m = ActorStats(*struct.unpack("<Qdd", payload))
    for v in (m.env_seconds, m.wait_seconds):
        if not math.isfinite(v) or v < 0:
            raise ProtocolError(ErrorCode.BAD_ACTOR_STATS,
                                f"actor_stats time {v!r} s is not a finite, non-negative "
                                "number")
    return m


# -------------------------------------------------------------------------------------------
# authenticated handshake (docs/security.md): layouts only; proofs are in auth.py


def _field(value: bytes, what: str) -> bytes:
    if len(value) != AUTH_FIELD_SIZE:
        raise ValueError(f"{what} must be {AUTH_FIELD_SIZE} bytes, got {len(value)}")
    return bytes(value)


def encode_auth_request() -> bytes:
    return _frame(MessageType.AUTH_REQUEST, struct.pack("<HH", AUTH_VERSION, 0))


def encode_auth_challenge(learner_nonce: bytes) -> bytes:
    return _frame(MessageType.AUTH_CHALLENGE, struct.pack("<HH", AUTH_VERSION, 0) +
                  _field(learner_nonce, "learner_nonce"))


def encode_auth_response(actor_nonce: bytes, actor_proof: bytes) -> bytes:
    return _frame(MessageType.AUTH_RESPONSE,
                  _field(actor_nonce, "actor_nonce") + _field(actor_proof, "actor_proof"))


def encode_auth_confirm(learner_proof: bytes) -> bytes:
    return _frame(MessageType.AUTH_CONFIRM, _field(learner_proof, "learner_proof"))


def _check_auth_size(payload: bytes, want: int, what: str) -> None:
    if len(payload) != want:
        raise ProtocolError(ErrorCode.TRUNCATED_FRAME,
                            f"{what} payload of {len(payload)} bytes, expected {want}")


def _check_auth_version(payload: bytes, what: str) -> None:
    version, reserved = struct.unpack_from("<HH", payload)
    if version != AUTH_VERSION:
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION,
                            f"{what} has authentication version {version}, this peer speaks "
                            f"{AUTH_VERSION}")
    if reserved != 0:
        raise ProtocolError(ErrorCode.BAD_RESERVED_BITS, f"{what} reserved field is not 0")


def decode_auth_request(payload: bytes) -> None:
    _check_auth_size(payload, AUTH_REQUEST_PAYLOAD_SIZE, "auth_request")
    _check_auth_version(payload, "auth_request")


def decode_auth_challenge(payload: bytes) -> bytes:
    """The learner's nonce."""
    _check_auth_size(payload, AUTH_CHALLENGE_PAYLOAD_SIZE, "auth_challenge")
    _check_auth_version(payload, "auth_challenge")
    return bytes(payload[4:])


def decode_auth_response(payload: bytes) -> tuple[bytes, bytes]:
    """The actor's nonce and proof."""
    _check_auth_size(payload, AUTH_RESPONSE_PAYLOAD_SIZE, "auth_response")
    return bytes(payload[:AUTH_FIELD_SIZE]), bytes(payload[AUTH_FIELD_SIZE:])


def decode_auth_confirm(payload: bytes) -> bytes:
    """The learner's proof."""
    _check_auth_size(payload, AUTH_CONFIRM_PAYLOAD_SIZE, "auth_confirm")
    return bytes(payload)
