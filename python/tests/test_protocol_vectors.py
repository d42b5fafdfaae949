"""The Python codec against the golden vectors in test/fixtures/protocol/ and the C++ rules.

The vectors are written by tools/gen_protocol_vectors.cpp with the C++ encoders and checked
by test/test_protocol_vectors.cpp too: here, encoding the values that
test/fixtures/protocol/README.md documents must give the file's bytes exactly, and decoding
the file must give those values back. The malformed-frame tests pin the error code the C++
receiver reports for the same bytes (docs/protocol.md, "Check order").

Run: python3 -m unittest discover -s python/tests
"""

from __future__ import annotations

import math
import pathlib
import struct
import sys
import unittest

from support import requires_tool  # python/tests/support.py

ROOT = pathlib.Path(__file__).resolve().parents[2]
VECTORS = ROOT / "test" / "fixtures" / "protocol"
sys.path.insert(0, str(ROOT / "python"))

try:
    import numpy as np
except ImportError:  # pragma: no cover - depends on the machine
    np = None

if np is not None:
    from seedrl_actor import auth
    from seedrl_actor import protocol as p
    from seedrl_actor.protocol import ErrorCode as EC

NUMPY_MISSING = ("numpy is not installed: pip install numpy (scripts/install-deps.sh "
                 "--test-tools installs it into .venv)")

KNOWN_VECTORS = {
    "hello_cartpole.bin", "hello_atari.bin", "hello_continuous.bin", "hello_continuous_v2.bin",
    "welcome.bin",
    "reject_spec_mismatch.bin", "error_auth_failed.bin", "close.bin", "close_shutting_down.bin",
    "step_cartpole.bin", "step_uint8.bin", "actions_discrete.bin", "actions_continuous.bin",
    "keepalive.bin", "actor_stats.bin", "auth_request.bin", "auth_challenge.bin",
    "auth_response.bin", "auth_confirm.bin",
}

SECRET = b"seedrl-example-secret-0123456789"
NL = bytes(range(0x00, 0x20))
NA = bytes(range(0x20, 0x40))
PA_HEX = "ce1f009546e98c123895819217e28f0ef2c248393092ce82ebfb081a84b4d3d1"
PL_HEX = "2f4f326e1751a2041c83b662f69f587b7b02eb266531c6102c9f376916ac85c2"
MISMATCH = ("observation shape: actor sends [2], learner expects [4]; action count: actor has "
            "3, learner expects 2")


def vector(name: str) -> bytes:
    return (VECTORS / name).read_bytes()


def hexbytes(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


@requires_tool(np is not None, NUMPY_MISSING)
class GoldenVectorTests(unittest.TestCase):
    """Each file: the Python encoder writes its bytes, the Python decoder reads its values."""

    def assertBytes(self, got: bytes, want: bytes) -> None:
        self.assertEqual(bytes(got).hex(" "), bytes(want).hex(" "))

    def payload(self, frame: bytes, t: "p.MessageType") -> bytes:
        header, payload = p.decode_frame(frame)
        self.assertEqual(header.type, t)
        return payload

    def test_vector_directory_holds_exactly_the_documented_vectors(self) -> None:
        found = {f.name for f in VECTORS.glob("*.bin")}
        self.assertEqual(found, KNOWN_VECTORS)
        self.assertTrue((VECTORS / "README.md").is_file())

    def test_hello_vectors(self) -> None:
        cases = {
            "hello_cartpole.bin": p.Hello(0x0102030405060708, 2,
                                          p.ObservationSpec(p.DType.FLOAT32, (4,)),
                                          p.ActionSpec.discrete(2), "t"),
            "hello_atari.bin": p.Hello(42, 8, p.ObservationSpec(p.DType.UINT8, (84, 84, 1)),
                                       p.ActionSpec.discrete(6), "pong:7"),
            "hello_continuous.bin": p.Hello(7, 1, p.ObservationSpec(p.DType.FLOAT32, (3,)),
                                            p.ActionSpec.continuous((1,), -2.0, 2.0), ""),
            # A Box(low=[-1, -2, -inf], high=[1, 0.5, inf]): hello version 2.
            "hello_continuous_v2.bin": p.Hello(
                9, 2, p.ObservationSpec(p.DType.FLOAT32, (3,)),
                p.ActionSpec.continuous((3,), np.array([-1.0, -2.0, -np.inf]),
                                        np.array([1.0, 0.5, np.inf])), "box"),
        }
        for name, hello in cases.items():
            with self.subTest(name):
                golden = vector(name)
                self.assertBytes(p.encode_hello(hello), golden)
                decoded = p.decode_hello(self.payload(golden, p.MessageType.HELLO))
                self.assertEqual(decoded, hello)
                self.assertEqual(decoded.version, 2 if name.endswith("_v2.bin") else 1)
        # By hand from docs/protocol.md's version-2 layout: every low, then every high.
        self.assertBytes(vector("hello_continuous_v2.bin"), hexbytes("""
            53 44 52 4C 01 00 01 00 59 00 00 00 00 00 00 00  02 00 00 00 09 00 00 00 00 00 00 00
            02 00 00 00 03 01 00 00 03 00 00 00 02 00 00 00 01 00 00 00 03 00 00 00
            00 00 00 00 00 00 F0 BF  00 00 00 00 00 00 00 C0  00 00 00 00 00 00 F0 FF
            00 00 00 00 00 00 F0 3F  00 00 00 00 00 00 E0 3F  00 00 00 00 00 00 F0 7F
            03 00 62 6F 78"""))
        # docs/protocol.md's CartPole hello, byte for byte.
        self.assertBytes(vector("hello_cartpole.bin"), hexbytes("""
            53 44 52 4C 01 00 01 00 23 00 00 00 00 00 00 00 01 00 00 00 08 07 06 05 04 03 02 01
            02 00 00 00 03 01 00 00 04 00 00 00 01 00 00 00 02 00 00 00 01 00 74"""))

    def test_welcome_vector(self) -> None:
        golden = vector("welcome.bin")
        welcome = p.Welcome(8, 2, 64 * 1024 * 1024, 1000)
        self.assertBytes(p.encode_welcome(welcome), golden)
        self.assertEqual(p.decode_welcome(self.payload(golden, p.MessageType.WELCOME)), welcome)

    def test_status_vectors(self) -> None:
        cases = [
            ("reject_spec_mismatch.bin", p.MessageType.REJECT, EC.SPEC_MISMATCH, MISMATCH),
            ("error_auth_failed.bin", p.MessageType.ERROR, EC.AUTH_FAILED,
             "authentication failed"),
            ("close.bin", p.MessageType.CLOSE, EC.NONE, "actor stopping"),
            ("close_shutting_down.bin", p.MessageType.CLOSE, EC.SHUTTING_DOWN,
             "the learner is stopping"),
        ]
        for name, t, code, message in cases:
            with self.subTest(name):
                golden = vector(name)
                self.assertBytes(p.encode_status(t, code, message), golden)
                m = p.decode_status(self.payload(golden, t))
                self.assertEqual((m.code, m.message), (code, message))
        self.assertBytes(p.encode_close(), vector("close.bin"))

    def test_step_cartpole_vector(self) -> None:
        golden = vector("step_cartpole.bin")
        spec = p.ObservationSpec(p.DType.FLOAT32, (4,))
        obs = np.array([[0.5, -1, 2, 0], [0.25, 1.5, -2, 3]], dtype=np.float32)
        run_ids = [0xDEADBEEF, 0x0123456789ABCDEF]
        self.assertBytes(p.encode_step(spec, run_ids, [1.0, -0.5], [False, True], [False, True],
                                       obs), golden)
        step = p.parse_step(self.payload(golden, p.MessageType.STEP), 2, spec)
        self.assertEqual(step.env_index.tolist(), [0, 1])
        self.assertEqual(step.run_id.tolist(), run_ids)
        self.assertEqual(step.reward.tolist(), [1.0, -0.5])
        self.assertEqual(step.done.tolist(), [False, True])
        self.assertEqual(step.truncated.tolist(), [False, True])
        np.testing.assert_array_equal(step.observations, obs)
        # docs/protocol.md's step vector.
        self.assertBytes(golden, hexbytes("""
            53 44 52 4C 01 00 04 00 4C 00 00 00 00 00 00 00 02 00 00 00
            00 00 00 00 00 00 00 00 EF BE AD DE 00 00 00 00 00 00 80 3F
            00 00 00 3F 00 00 80 BF 00 00 00 40 00 00 00 00
            01 00 00 00 03 00 00 00 EF CD AB 89 67 45 23 01 00 00 00 BF
            00 00 80 3E 00 00 C0 3F 00 00 00 C0 00 00 40 40"""))

    def test_step_uint8_vector_keeps_one_byte_per_element(self) -> None:
        golden = vector("step_uint8.bin")
        spec = p.ObservationSpec(p.DType.UINT8, (2, 3, 1))
        obs = np.array([0, 1, 2, 127, 128, 255, 255, 254, 253, 3, 2, 1],
                       dtype=np.uint8).reshape(2, 2, 3, 1)
        self.assertBytes(p.encode_step(spec, [1, 2**64 - 1], [0.0, 21.0], [False, True],
                                       [False, False], obs), golden)
        self.assertEqual(len(golden), 16 + 4 + 2 * (20 + 6))
        step = p.parse_step(self.payload(golden, p.MessageType.STEP), 2, spec)
        self.assertEqual(step.observations.dtype, np.uint8)
        np.testing.assert_array_equal(step.observations, obs)
        self.assertEqual(step.run_id.tolist(), [1, 2**64 - 1])
        self.assertEqual(step.reward.tolist(), [0.0, 21.0])
        self.assertEqual(step.done.tolist(), [False, True])
        self.assertEqual(step.truncated.tolist(), [False, False])

    def test_actions_vectors(self) -> None:
        golden = vector("actions_discrete.bin")
        self.assertBytes(p.encode_discrete_actions([1, 0]), golden)
        got = p.parse_actions(self.payload(golden, p.MessageType.ACTIONS), 2,
                              p.ActionSpec.discrete(2))
        self.assertEqual(got.dtype, np.int32)
        self.assertEqual(got.tolist(), [1, 0])
        golden = vector("actions_continuous.bin")
        self.assertBytes(p.encode_continuous_actions(np.array([[0.5, -1.0]])), golden)
        got = p.parse_actions(self.payload(golden, p.MessageType.ACTIONS), 1,
                              p.ActionSpec.continuous((2,), -1.0, 1.0))
        self.assertEqual(got.tolist(), [[0.5, -1.0]])

    def test_keepalive_and_actor_stats_vectors(self) -> None:
        self.assertBytes(p.encode_keepalive(), vector("keepalive.bin"))
        self.assertEqual(self.payload(vector("keepalive.bin"), p.MessageType.KEEPALIVE), b"")
        golden = vector("actor_stats.bin")
        stats = p.ActorStats(3, 0.5, 2.0)
        self.assertBytes(p.encode_actor_stats(stats), golden)
        self.assertEqual(p.decode_actor_stats(self.payload(golden, p.MessageType.ACTOR_STATS)),
                         stats)

    def test_auth_vectors_carry_the_docs_security_proofs(self) -> None:
        pa = auth.compute_proof(SECRET, auth.ROLE_ACTOR, NL, NA)
        pl = auth.compute_proof(SECRET, auth.ROLE_LEARNER, NL, NA)
        self.assertEqual(pa.hex(), PA_HEX)
        self.assertEqual(pl.hex(), PL_HEX)
        self.assertBytes(p.encode_auth_request(), vector("auth_request.bin"))
        p.decode_auth_request(self.payload(vector("auth_request.bin"),
                                           p.MessageType.AUTH_REQUEST))
        self.assertBytes(p.encode_auth_challenge(NL), vector("auth_challenge.bin"))
        self.assertEqual(p.decode_auth_challenge(self.payload(vector("auth_challenge.bin"),
                                                              p.MessageType.AUTH_CHALLENGE)), NL)
        self.assertBytes(p.encode_auth_response(NA, pa), vector("auth_response.bin"))
        self.assertEqual(p.decode_auth_response(self.payload(vector("auth_response.bin"),
                                                             p.MessageType.AUTH_RESPONSE)),
                         (NA, pa))
        self.assertBytes(p.encode_auth_confirm(pl), vector("auth_confirm.bin"))
        self.assertEqual(p.decode_auth_confirm(self.payload(vector("auth_confirm.bin"),
                                                            p.MessageType.AUTH_CONFIRM)), pl)


@requires_tool(np is not None, NUMPY_MISSING)
class AuthTests(unittest.TestCase):
    """docs/security.md's test vector and the one-shot handshake rules."""

    def test_proof_input_is_the_documented_79_bytes(self) -> None:
        message = auth.AUTH_LABEL + b"\x01" + NL + NA
        self.assertEqual(len(message), 79)
        self.assertEqual(message, hexbytes("""
            73 65 65 64 72 6c 2d 61 75 74 68 2d 76 31 01 00 01 02 03 04 05 06 07 08 09 0a 0b 0c
            0d 0e 0f 10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f 20 21 22 23 24 25 26 27 28
            29 2a 2b 2c 2d 2e 2f 30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e 3f"""))

    def test_actor_handshake_answers_the_vector_and_checks_the_learner(self) -> None:
        hs = auth.ActorHandshake(SECRET)
        nonce, proof = hs.respond(NL, NA)
        self.assertEqual((nonce, proof.hex()), (NA, PA_HEX))
        self.assertTrue(hs.verify_learner(bytes.fromhex(PL_HEX)))
        with self.assertRaises(RuntimeError):
            hs.verify_learner(bytes.fromhex(PL_HEX))  # once per connection

    def test_reflected_or_forged_learner_proofs_fail(self) -> None:
        for bad in (bytes.fromhex(PA_HEX), bytes(32), bytes.fromhex(PL_HEX)[:31]):
            with self.subTest(bad=bad.hex()):
                hs = auth.ActorHandshake(SECRET)
                hs.respond(NL, NA)
                self.assertFalse(hs.verify_learner(bad))

    def test_learner_handshake_accepts_the_vector_and_refuses_an_echoed_nonce(self) -> None:
        lh = auth.LearnerHandshake(SECRET, NL)
        self.assertEqual(lh.verify_actor(NA, bytes.fromhex(PA_HEX)).hex(), PL_HEX)
        echo = auth.LearnerHandshake(SECRET, NL)
        self.assertIsNone(echo.verify_actor(NL, auth.compute_proof(SECRET, 1, NL, NL)))

    def test_fresh_nonces_differ(self) -> None:
        hs1, hs2 = auth.ActorHandshake(SECRET), auth.ActorHandshake(SECRET)
        self.assertNotEqual(hs1.respond(NL)[0], hs2.respond(NL)[0])


def frame(t: int, payload: bytes, *, magic: int = 0x4C524453, version: int = 1,
          reserved: int = 0, length: int | None = None) -> bytes:
    n = len(payload) if length is None else length
    return struct.pack("<IHHII", magic, version, t, n, reserved) + payload


@requires_tool(np is not None, NUMPY_MISSING)
class MalformedFrameTests(unittest.TestCase):
    """The codes the C++ receiver reports for the same bytes (docs/protocol.md)."""

    def assertCode(self, code: "EC", fn, *args) -> "p.ProtocolError":
        with self.assertRaises(p.ProtocolError) as cm:
            fn(*args)
        self.assertEqual(cm.exception.code, code, cm.exception.detail)
        return cm.exception

    def header(self, data: bytes, max_payload: "int | None" = None) -> "p.FrameHeader":
        # The default is looked up per call: `p` is not imported on a machine without numpy,
        # where the class is skipped but still defined.
        if max_payload is None:
            max_payload = p.DEFAULT_MAX_PAYLOAD
        return p.decode_header(data[:16], max_payload)

    def test_header_checks_in_order(self) -> None:
        ok = frame(8, b"")
        self.assertEqual(self.header(ok), p.FrameHeader(p.MessageType.KEEPALIVE, 0))
        e = self.assertCode(EC.BAD_MAGIC, self.header, b"GET / HTTP/1.1\r\n")
        self.assertIn("47 45 54 20", e.detail)
        # Each check wins over the ones after it.
        self.assertCode(EC.BAD_MAGIC, self.header, frame(99, b"", magic=1, version=2))
        self.assertCode(EC.UNSUPPORTED_VERSION, self.header, frame(99, b"", version=2))
        self.assertCode(EC.UNKNOWN_MESSAGE_TYPE, self.header, frame(0, b"", reserved=1))
        self.assertCode(EC.UNKNOWN_MESSAGE_TYPE, self.header, frame(14, b""))
        self.assertCode(EC.BAD_RESERVED_BITS, self.header, frame(5, b"", reserved=1,
                                                                   length=1 << 30))
        self.assertCode(EC.FRAME_TOO_LARGE, self.header, frame(5, b"", length=1 << 30))

    def test_payload_limits_per_type(self) -> None:
        limits = {1: 17 * 1024, 2: 4096, 3: 4096, 6: 4096, 7: 4096, 8: 0, 9: 24, 10: 4, 11: 36,
                  12: 64, 13: 32}
        for t, limit in limits.items():
            with self.subTest(type=p.type_name(t)):
                self.header(frame(t, b"", length=limit))
                self.assertCode(EC.FRAME_TOO_LARGE, self.header, frame(t, b"", length=limit + 1))
        self.header(frame(5, b"", length=100), 100)
        self.assertCode(EC.FRAME_TOO_LARGE, self.header, frame(5, b"", length=101), 100)

    def test_decode_frame_needs_exactly_one_frame(self) -> None:
        whole = vector("welcome.bin")
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_frame, whole[:10])
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_frame, whole[:-1])
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_frame, whole + b"\0")

    def test_status_payloads(self) -> None:
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_status, b"\x08\x00\x01")
        self.assertCode(EC.FRAME_TOO_LARGE, p.decode_status, struct.pack("<HH", 8, 1025))
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_status, struct.pack("<HH", 8, 2) + b"x")
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_status, struct.pack("<HH", 8, 0) + b"x")
        m = p.decode_status(struct.pack("<HH", 999, 2) + b"\xff\n")
        self.assertEqual((m.code, p.code_name(m.code)), (999, "unknown"))  # newer codes kept
        self.assertNotIn("\n", p.escape_text(m.message))
        self.assertEqual(p.escape_text("a\nb\x1b[31m"), "a\\nb\\x1b[31m")

    def test_long_status_text_is_cut_at_a_character_boundary(self) -> None:
        f = p.encode_error(EC.INTERNAL, "\u00e9" * 600)  # 1200 bytes of UTF-8
        m = p.decode_status(p.decode_frame(f)[1])
        self.assertEqual(m.message, "\u00e9" * 512)
        f = p.encode_error(EC.INTERNAL, "a" + "\u00e9" * 600)
        self.assertEqual(p.decode_status(p.decode_frame(f)[1]).message, "a" + "\u00e9" * 511)

    def test_welcome_checks(self) -> None:
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_welcome, bytes(15))
        self.assertCode(EC.BAD_HANDSHAKE, p.decode_welcome, struct.pack("<IIII", 0, 0, 64, 0))
        self.assertCode(EC.BAD_HANDSHAKE, p.decode_welcome,
                        struct.pack("<IIII", 0xFFFFFFFF, 2, 64, 0))
        w = p.Welcome(0, 2, 100, 0)
        p.check_welcome(w, 2, 100)
        self.assertCode(EC.BAD_HANDSHAKE, p.check_welcome, w, 3, 100)
        self.assertCode(EC.BAD_HANDSHAKE, p.check_welcome, w, 2, 101)

    def test_actions_checks(self) -> None:
        spec = p.ActionSpec.discrete(2)
        self.assertCode(EC.TRUNCATED_FRAME, p.parse_actions, b"\x02\x00", 2, spec)
        self.assertCode(EC.BAD_ENV_INDEX, p.parse_actions, struct.pack("<Iii", 3, 0, 0), 2, spec)
        self.assertCode(EC.TRUNCATED_FRAME, p.parse_actions, struct.pack("<Ii", 2, 0), 2, spec)
        self.assertCode(EC.TRUNCATED_FRAME, p.parse_actions, struct.pack("<Iiii", 2, 0, 0, 0),
                        2, spec)
        e = self.assertCode(EC.BAD_ACTION, p.parse_actions, struct.pack("<Iii", 2, 1, 2), 2, spec)
        self.assertEqual(e.detail, "action 2 for env 1 is outside [0, 2)")
        self.assertCode(EC.BAD_ACTION, p.parse_actions, struct.pack("<Iii", 2, -1, 0), 2, spec)
        cont = p.ActionSpec.continuous((2,), -1.0, 1.0)
        for bad in (math.nan, 1.5, -math.inf):
            with self.subTest(bad=bad):
                self.assertCode(EC.BAD_ACTION, p.parse_actions, struct.pack("<Iff", 1, 0.0, bad),
                                1, cont)

    def test_actor_stats_checks(self) -> None:
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_actor_stats, bytes(23))
        for bad in (-1.0, math.nan, math.inf):
            with self.subTest(bad=bad):
                self.assertCode(EC.BAD_ACTOR_STATS, p.decode_actor_stats,
                                struct.pack("<Qdd", 1, bad, 0.0))
                with self.assertRaises(ValueError):
                    p.encode_actor_stats(p.ActorStats(1, 0.0, bad))

    def test_auth_checks(self) -> None:
        self.assertCode(EC.UNSUPPORTED_VERSION, p.decode_auth_request, struct.pack("<HH", 2, 0))
        self.assertCode(EC.BAD_RESERVED_BITS, p.decode_auth_request, struct.pack("<HH", 1, 1))
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_auth_request, b"\x01\x00")
        self.assertCode(EC.UNSUPPORTED_VERSION, p.decode_auth_challenge,
                        struct.pack("<HH", 2, 0) + NL)
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_auth_challenge, struct.pack("<HH", 1, 0))
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_auth_response, NA)
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_auth_confirm, NA[:31])

    def test_hello_cut_short_anywhere_is_truncated(self) -> None:
        for name in ("hello_cartpole.bin", "hello_continuous.bin"):
            payload = vector(name)[16:]
            for n in range(len(payload)):
                with self.subTest(name=name, length=n):
                    self.assertCode(EC.TRUNCATED_FRAME, p.decode_hello, payload[:n])
            self.assertCode(EC.TRUNCATED_FRAME, p.decode_hello, payload + b"\0")

    def test_hello_field_checks(self) -> None:
        good = bytearray(vector("hello_cartpole.bin")[16:])

        def with_byte(at: int, value: int) -> bytes:
            b = bytearray(good)
            b[at] = value
            return bytes(b)

        cases = [
            (with_byte(0, 0), EC.UNSUPPORTED_VERSION),
            (with_byte(0, 3), EC.UNSUPPORTED_VERSION),
            (with_byte(2, 1), EC.BAD_RESERVED_BITS),
            (good[:12] + bytes(4) + good[16:], EC.BAD_HANDSHAKE),  # num_envs 0
            (with_byte(16, 9), EC.BAD_HANDSHAKE),  # dtype
            (with_byte(17, 0), EC.BAD_HANDSHAKE),  # rank 0
            (with_byte(17, 7), EC.BAD_HANDSHAKE),  # rank 7
            (with_byte(18, 1), EC.BAD_RESERVED_BITS),
            (with_byte(20, 0), EC.BAD_HANDSHAKE),  # dims[0] == 0
            (with_byte(24, 3), EC.BAD_HANDSHAKE),  # action kind
            (with_byte(25, 1), EC.BAD_RESERVED_BITS),
            (good[:28] + struct.pack("<i", 0) + good[32:], EC.BAD_HANDSHAKE),  # num_actions
            (good[:32] + struct.pack("<H", 257) + bytes(257), EC.BAD_HANDSHAKE),  # long name
            (good[:32] + struct.pack("<H", 1) + b"\n", EC.BAD_HANDSHAKE),  # control char
            (good[:32] + struct.pack("<H", 2) + b"\xc3\x28", EC.BAD_HANDSHAKE),  # bad UTF-8
            (good[:32] + struct.pack("<H", 2) + b"\xc2\x85", EC.BAD_HANDSHAKE),  # C1 control
        ]
        for i, (payload, code) in enumerate(cases):
            with self.subTest(case=i):
                self.assertCode(code, p.decode_hello, bytes(payload))
        self.assertCode(EC.FRAME_TOO_LARGE, p.decode_hello, bytes(17 * 1024 + 1))
        # A discrete hello reads the same in versions 1 and 2.
        self.assertEqual(p.decode_hello(with_byte(0, 2)).version, 2)
        # Observation over 2^31 bytes: [65536, 32768] float32.
        big = p.Hello(1, 1, p.ObservationSpec(p.DType.FLOAT32, (65536, 32768)),
                      p.ActionSpec.discrete(2))
        with self.assertRaises(ValueError):
            p.encode_hello(big)
        raw = bytearray(good[:16]) + struct.pack("<BBHII", 3, 2, 0, 65536, 32768) + good[24:]
        self.assertCode(EC.BAD_HANDSHAKE, p.decode_hello, bytes(raw))

    def test_hello_version_2_bounds_checks(self) -> None:
        good = vector("hello_continuous_v2.bin")[16:]
        low_at, high_at, dim_at = 36, 60, 32  # payload offsets: lows, highs, action dims[0]

        def with_f64(at: int, value: float) -> bytes:
            b = bytearray(good)
            b[at:at + 8] = struct.pack("<d", value)
            return bytes(b)

        def detail(payload: bytes) -> str:
            with self.assertRaises(p.ProtocolError) as cm:
                p.decode_hello(payload)
            return cm.exception.detail

        # Cut anywhere, in the bounds too: truncated_frame.
        for n in range(len(good)):
            with self.subTest(length=n):
                self.assertCode(EC.TRUNCATED_FRAME, p.decode_hello, good[:n])
        self.assertIn("per-element action bounds", detail(good[:low_at + 5]))
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_hello, good + b"\0")
        # NaN in any low or high names its element.
        for element in range(3):
            for base in (low_at, high_at):
                with self.subTest(element=element, base=base):
                    bad = with_f64(base + 8 * element, math.nan)
                    self.assertCode(EC.BAD_HANDSHAKE, p.decode_hello, bad)
                    self.assertIn(f"element {element} bounds", detail(bad))
                    self.assertIn("NaN", detail(bad))
        # low >= high, equal or crossed, finite or infinite.
        for low, high in ((0.5, 0.5), (1.0, 0.5), (math.inf, math.inf), (-math.inf, -math.inf)):
            bad = bytearray(with_f64(low_at + 8, low))
            bad[high_at + 8:high_at + 16] = struct.pack("<d", high)
            self.assertCode(EC.BAD_HANDSHAKE, p.decode_hello, bytes(bad))
            self.assertIn("element 1 bounds", detail(bytes(bad)))
        # The count comes from the shape: a shape that disagrees with the bounds is refused.
        b = bytearray(good)
        b[dim_at] = 4
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_hello, bytes(b))
        # 2 elements: element 0 [-1, -inf] is bad, but values are checked after the name and
        # trailing bytes: name_length 0, then 18 stray bytes.
        b[dim_at] = 2
        self.assertCode(EC.TRUNCATED_FRAME, p.decode_hello, bytes(b))
        self.assertIn("after the name", detail(bytes(b)))
        # Bounds come before the name's text among the value checks.
        bad = bytearray(with_f64(high_at, -1.0))
        bad[-1] = ord("\n")
        self.assertIn("element 0 bounds [-1, -1] need low < high", detail(bytes(bad)))
        # At most 1024 bounded elements, refused before reading them.
        b[dim_at:dim_at + 4] = struct.pack("<I", 1025)
        self.assertCode(EC.BAD_HANDSHAKE, p.decode_hello, bytes(b))
        self.assertIn("at most 1024 action elements", detail(bytes(b)))

    def test_hello_picks_the_lowest_version_that_carries_the_bounds(self) -> None:
        obs = p.ObservationSpec(p.DType.FLOAT32, (3,))
        # A Box whose bounds are one pair travels as version 1, the Pendulum vector's bytes.
        same = p.ActionSpec.continuous((1,), np.array([-2.0]), np.array([2.0]))
        self.assertTrue(same.per_element_bounds)
        self.assertEqual(p.encode_hello(p.Hello(7, 1, obs, same)), vector("hello_continuous.bin"))
        self.assertEqual(same, p.ActionSpec.continuous((1,), -2.0, 2.0))
        # Signed zeros differ bit for bit: version 2, and each comes back with its sign.
        zeros = p.ActionSpec.continuous((2,), [-0.0, 0.0], [1.0, 1.0])
        back = p.decode_hello(p.encode_hello(p.Hello(1, 1, obs, zeros))[16:])
        self.assertEqual(back.version, 2)
        self.assertEqual([math.copysign(1, x) for x in back.action.lows], [-1, 1])
        # Forced to version 2, uniform bounds repeat per element and decode to an equal spec.
        box = p.ActionSpec.continuous((2,), -1.0, 1.0)
        frame = p.encode_hello(p.Hello(1, 1, obs, box, version=2))
        self.assertEqual(frame[16], 2)
        back = p.decode_hello(frame[16:])
        self.assertEqual((back.version, back.action), (2, box))
        # Per-element bounds cannot go as version 1; no version 3 exists.
        per = p.ActionSpec.continuous((2,), [-1.0, -2.0], [1.0, 2.0])
        for version in (1, 3):
            with self.subTest(version=version), self.assertRaises(ValueError):
                p.encode_hello(p.Hello(1, 1, obs, per, version=version))
        # 1024 bounded elements fit, with the longest name and the largest observation rank.
        lows = -1.0 - np.arange(1024.0)
        big = p.Hello(1, 1, p.ObservationSpec(p.DType.UINT8, (2,) * 6),
                      p.ActionSpec.continuous((4, 4, 4, 4, 2, 2), lows.reshape(4, 4, 4, 4, 2, 2),
                                              -lows), "n" * 256)
        frame = p.encode_hello(big)
        self.assertEqual(len(frame) - 16, 334 + 16 * 1024)
        header, payload = p.decode_frame(frame)
        self.assertEqual(p.decode_hello(payload), big)
        with self.assertRaises(ValueError):
            p.encode_hello(p.Hello(1, 1, obs, p.ActionSpec.continuous(
                (1025,), -np.arange(1.0, 1026.0), np.ones(1025))))
        # Uniform bounds have no such limit.
        wide = p.ActionSpec.continuous((1 << 20,), -1.0, 1.0)
        self.assertEqual(p.decode_hello(p.encode_hello(p.Hello(1, 1, obs, wide))[16:]).action,
                         wide)

    def test_per_element_bounds_check_actions(self) -> None:
        spec = p.ActionSpec.continuous((2,), [-1.0, -math.inf], [1.0, 2.0])
        ok = np.array([[1.0, -3e38], [-1.0, 2.0]], dtype=np.float32)
        np.testing.assert_array_equal(
            p.parse_actions(p.encode_continuous_actions(ok)[16:], 2, spec), ok)
        for bad, phrase in (([0.0, 2.5], "outside [-inf, 2]"), ([1.5, 0.0], "outside [-1, 1]"),
                            ([0.0, -np.inf], "outside [-inf, 2]"), ([0.0, np.nan], "nan")):
            with self.subTest(bad=bad):
                payload = p.encode_continuous_actions(np.array([bad], dtype=np.float32))[16:]
                with self.assertRaises(p.ProtocolError) as cm:
                    p.parse_actions(payload, 1, spec)
                self.assertEqual(cm.exception.code, EC.BAD_ACTION)
                self.assertIn(phrase, cm.exception.detail)

    def test_encode_hello_refuses_what_the_learner_refuses(self) -> None:
        obs, act = p.ObservationSpec(p.DType.FLOAT32, (4,)), p.ActionSpec.discrete(2)
        bad = [
            p.Hello(1, 0, obs, act),
            p.Hello(1, 1, p.ObservationSpec(p.DType.FLOAT32, ()), act),
            p.Hello(1, 1, p.ObservationSpec(p.DType.FLOAT32, (1,) * 7), act),
            p.Hello(1, 1, obs, p.ActionSpec.discrete(0)),
            p.Hello(1, 1, obs, p.ActionSpec.continuous((2,), 1.0, 1.0)),
            p.Hello(1, 1, obs, p.ActionSpec.continuous((2,), math.nan, 1.0)),
            p.Hello(1, 1, obs, p.ActionSpec.continuous((2,), [0.0, math.nan], [1.0, 1.0])),
            p.Hello(1, 1, obs, p.ActionSpec.continuous((2,), [0.0, 1.0], [1.0, 1.0])),
            p.Hello(1, 1, obs, p.ActionSpec.continuous((2,), [0.0, 0.0, 0.0], [1.0, 1.0, 1.0])),
            p.Hello(1, 1, obs, act, "a\nb"),
            p.Hello(1, 1, obs, act, "x" * 257),
        ]
        for i, h in enumerate(bad):
            with self.subTest(case=i), self.assertRaises(ValueError):
                p.encode_hello(h)

    def test_step_checks_in_order(self) -> None:
        spec = p.ObservationSpec(p.DType.FLOAT32, (4,))
        good = vector("step_cartpole.bin")[16:]
        rec = 20 + 16

        def patched(offset: int, data: bytes) -> bytes:
            b = bytearray(good)
            b[offset:offset + len(data)] = data
            return bytes(b)

        self.assertCode(EC.TRUNCATED_FRAME, p.parse_step, good[:3], 2, spec)
        self.assertCode(EC.BAD_ENV_INDEX, p.parse_step, good, 3, spec)
        e = self.assertCode(EC.WRONG_OBSERVATION_SIZE, p.parse_step, good[:-1], 2, spec)
        self.assertIn("expected 76", e.detail)
        self.assertCode(EC.BAD_ENV_INDEX, p.parse_step, patched(4, b"\x02"), 2, spec)
        self.assertCode(EC.BAD_ENV_INDEX, p.parse_step, patched(4 + rec, b"\x00"), 2, spec)
        self.assertCode(EC.BAD_RESERVED_BITS, p.parse_step, patched(8, b"\x02"), 2, spec)
        self.assertCode(EC.BAD_RESERVED_BITS, p.parse_step, patched(8, b"\x04"), 2, spec)
        self.assertCode(EC.BAD_RESERVED_BITS, p.parse_step, patched(10, b"\x01"), 2, spec)
        self.assertCode(EC.NON_FINITE_REWARD, p.parse_step,
                        patched(4 + rec + 16, struct.pack("<f", math.inf)), 2, spec)
        # Record 1's observation element 2 (offset 4 + rec + 20 + 8): NaN, then beyond a limit.
        e = self.assertCode(EC.NON_FINITE_OBSERVATION, p.parse_step,
                            patched(4 + rec + 28, struct.pack("<f", math.nan)), 2, spec)
        self.assertEqual(e.detail, "step record 1 (env 1): observation element 2 is nan")
        e = self.assertCode(EC.NON_FINITE_OBSERVATION, p.parse_step,
                            patched(4 + rec + 28, struct.pack("<f", 1e38)), 2, spec, 1e30)
        self.assertIn("element 2 is 9.999999680285692e+37, beyond the learner's range of +-1e+30",
                      e.detail)  # float32 1e38, read as a double
        # Bytes are not looked at.
        p.parse_step(good, 2, p.ObservationSpec(p.DType.UINT8, (16,)))
        # The first bad record decides, whatever comes after it.
        both = bytearray(patched(8, b"\x04"))
        both[4 + rec:4 + rec + 1] = b"\x07"
        self.assertCode(EC.BAD_RESERVED_BITS, p.parse_step, bytes(both), 2, spec)
        # Records may come in any order.
        swapped = good[:4] + good[4 + rec:] + good[4:4 + rec]
        self.assertEqual(p.parse_step(swapped, 2, spec).env_index.tolist(), [1, 0])

    def test_encode_step_refuses_what_the_learner_refuses(self) -> None:
        spec = p.ObservationSpec(p.DType.FLOAT32, (4,))
        obs = np.zeros((2, 4), np.float32)
        ok = ([1, 2], [0.0, 0.0], [False, False], [False, False], obs)
        p.encode_step(spec, *ok)
        bad = [
            ([1, 2], [math.nan, 0.0], [False, False], [False, False], obs),
            ([1, 2], [1e39, 0.0], [False, False], [False, False], obs),  # inf as float32
            ([1, 2], [0.0, 0.0], [False, False], [False, True], obs),
            ([1, 2], [0.0, 0.0], [False, False], [False, False], obs.astype(np.float64)),
            ([1, 2], [0.0, 0.0], [False, False], [False, False], obs[:, :3]),
            ([1, 2], [0.0, 0.0], [False, False], [False, False],
             np.array([[0, 0, 0, 0], [0, math.nan, 0, 0]], np.float32)),
            ([1], [0.0, 0.0], [False, False], [False, False], obs),
        ]
        for i, args in enumerate(bad):
            with self.subTest(case=i), self.assertRaises(ValueError):
                p.encode_step(spec, *args)

    def test_who_may_send_what(self) -> None:
        actor_types = {1, 4, 6, 7, 8, 9, 10, 12}
        learner_types = {2, 3, 5, 6, 7, 8, 11, 13}
        for t in p.MessageType:
            self.assertEqual(p.actor_may_send(t), t in actor_types)
            self.assertEqual(p.learner_may_send(t), t in learner_types)
        self.assertEqual([p.code_name(c) for c in (0, 8, 20, 21, 22)],
                         ["none", "spec_mismatch", "auth_required", "non_finite_observation",
                          "unknown"])


if __name__ == "__main__":
    unittest.main()
