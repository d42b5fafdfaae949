"""The authenticated actor link of docs/security.md: the shared secret and the actor's half of
the HMAC-SHA256 challenge-response.

The rules mirror include/seedrl/security/shared_secret.hpp and challenge.hpp so that a secret
that one side accepts the other accepts too, and both compute the same proofs:

    actor proof   Pa = HMAC-SHA256(K, "seedrl-auth-v1" || 0x01 || Nl || Na)
    learner proof Pl = HMAC-SHA256(K, "seedrl-auth-v1" || 0x02 || Nl || Na)

The secret comes from an environment variable or a file with mode 0600, never from the
command line: argv is readable by every user (ps, /proc/PID/cmdline) and lands in shell
history. Python cannot wipe memory reliably, so unlike the C++ side the key bytes are not
zeroed when dropped; keep actor processes' memory private as usual.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat

SECRET_ENV = "SEEDRL_AUTH_SECRET"
"""The environment variable seedrl's programs read the secret from by default."""
MIN_SECRET_SIZE = 16
"""Fewest secret bytes: proofs can be tested offline against recorded handshakes."""
MAX_SECRET_SIZE = 4096
"""Most secret bytes: catches a path that names the wrong file."""
AUTH_LABEL = b"seedrl-auth-v1"
ROLE_ACTOR = 0x01
ROLE_LEARNER = 0x02
NONCE_SIZE = 32
PROOF_SIZE = 32


class SecretError(Exception):
    """The secret could not be loaded; the message names the variable or path and the fix."""


def _strip_newline(data: bytes) -> bytes:
    """One trailing newline goes (editors and echo add one); other whitespace is secret."""
    return data[:-1] if data.endswith(b"\n") else data


def _checked(data: bytes, origin: str) -> bytes:
    if not data:
        raise SecretError(f"seedrl: the shared secret in {origin} is empty; generate one with "
                          "`head -c 32 /dev/urandom | base64`")
    if len(data) < MIN_SECRET_SIZE:
        raise SecretError(f"seedrl: the shared secret in {origin} is {len(data)} bytes; use at "
                          f"least {MIN_SECRET_SIZE} random bytes, e.g. from "
                          "`head -c 32 /dev/urandom | base64`")
    if len(data) > MAX_SECRET_SIZE:
        raise SecretError(f"seedrl: the shared secret in {origin} is longer than "
                          f"{MAX_SECRET_SIZE} bytes; is this the right file or variable?")
    return data


def secret_from_env(name: str = SECRET_ENV) -> bytes:
    """The secret in environment variable `name`, as bytes, one trailing newline removed."""
    origin = f"environment variable {name}"
    value = os.environb.get(os.fsencode(name))
    if value is None:
        raise SecretError(f"seedrl: {origin} is not set; put the shared secret in it (or use a "
                          "secret file)")
    return _checked(_strip_newline(value), origin)


def secret_from_file(path: str | os.PathLike[str]) -> bytes:
    """The secret in the file at `path`, which must be a regular file that neither group nor
    others may access (like ssh with private keys). The mode is checked on the opened file,
    so the file cannot be swapped between the check and the read."""
    origin = f"secret file {os.fspath(path)}"
    try:
        # O_NONBLOCK: a FIFO given by mistake must fail the regular-file check, not hang.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        raise SecretError(f"seedrl: cannot open {origin}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SecretError(f"seedrl: {origin} is not a regular file")
        if st.st_mode & 0o077:
            raise SecretError(f"seedrl: {origin} is accessible by group or others (mode "
                              f"{stat.S_IMODE(st.st_mode):04o}); run `chmod 600 "
                              f"{os.fspath(path)}` so that only its owner can read it")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_SECRET_SIZE:  # reading past the limit tells a long file apart
            chunk = os.read(fd, 512)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise SecretError(f"seedrl: cannot read {origin}: {e.strerror}") from None
    finally:
        os.close(fd)
    return _checked(_strip_newline(b"".join(chunks)), origin)


def load_secret(secret_file: str | None = None, env_name: str = SECRET_ENV) -> bytes | None:
    """The actor's secret: the file when one is given, else the environment variable when it
    is set, else None (no authentication)."""
    if secret_file:
        return secret_from_file(secret_file)
    if os.fsencode(env_name) in os.environb:
        return secret_from_env(env_name)
    return None


def compute_proof(secret: bytes, role: int, learner_nonce: bytes, actor_nonce: bytes) -> bytes:
    """HMAC-SHA256 over the 79 bytes label || role || Nl || Na (docs/security.md)."""
    if role not in (ROLE_ACTOR, ROLE_LEARNER):
        raise ValueError(f"role must be {ROLE_ACTOR} (actor) or {ROLE_LEARNER} (learner)")
    if len(learner_nonce) != NONCE_SIZE or len(actor_nonce) != NONCE_SIZE:
        raise ValueError(f"nonces are {NONCE_SIZE} bytes")
    message = AUTH_LABEL + bytes([role]) + bytes(learner_nonce) + bytes(actor_nonce)
    return hmac.new(secret, message, hashlib.sha256).digest()


def make_nonce() -> bytes:
    """32 bytes from the OS's CSPRNG; a predictable nonce would let proofs be replayed."""
    return secrets.token_bytes(NONCE_SIZE)


class ActorHandshake:
    """The actor's side of one connection's handshake, used once: respond() to the learner's
    auth_challenge, then verify_learner() on its auth_confirm; send hello only after it
    returned True. A retry is a new connection with a new object."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._learner_nonce: bytes | None = None
        self._actor_nonce: bytes | None = None
        self._verified = False
        self.authenticated = False

    def respond(self, learner_nonce: bytes, actor_nonce: bytes | None = None) -> tuple[bytes,
                                                                                       bytes]:
        """(Na, Pa) for auth_response. `actor_nonce` is for test vectors only: a reused nonce
        lets a recorded learner proof be replayed to this actor."""
        if self._learner_nonce is not None:
            raise RuntimeError("ActorHandshake.respond called twice")
        self._learner_nonce = bytes(learner_nonce)
        self._actor_nonce = make_nonce() if actor_nonce is None else bytes(actor_nonce)
        proof = compute_proof(self._secret, ROLE_ACTOR, self._learner_nonce, self._actor_nonce)
        return self._actor_nonce, proof

    def verify_learner(self, learner_proof: bytes) -> bool:
        """Whether the learner proved it knows the secret for this connection's nonces; the
        comparison takes the same time however many leading bytes are right."""
        if self._learner_nonce is None or self._actor_nonce is None:
            raise RuntimeError("ActorHandshake.verify_learner called before respond")
        if self._verified:
            raise RuntimeError("ActorHandshake.verify_learner called twice")
        self._verified = True
        expected = compute_proof(self._secret, ROLE_LEARNER, self._learner_nonce,
                                 self._actor_nonce)
        self.authenticated = hmac.compare_digest(expected, bytes(learner_proof))
        return self.authenticated


class LearnerHandshake:
    """The learner's side, for tests and Python tools that play the learner: challenge is
    sent in auth_challenge, verify_actor() returns the proof for auth_confirm or None."""

    def __init__(self, secret: bytes, learner_nonce: bytes | None = None) -> None:
        self._secret = secret
        self.challenge = make_nonce() if learner_nonce is None else bytes(learner_nonce)
        self._used = False

    def verify_actor(self, actor_nonce: bytes, actor_proof: bytes) -> bytes | None:
        if self._used:
            raise RuntimeError("LearnerHandshake.verify_actor called twice")
        self._used = True
        expected = compute_proof(self._secret, ROLE_ACTOR, self.challenge, actor_nonce)
        # Both checks run whatever the first says, so timing does not tell them apart.
        nonces_differ = not hmac.compare_digest(self.challenge, bytes(actor_nonce))
        proof_ok = hmac.compare_digest(expected, bytes(actor_proof))
        if not (nonces_differ and proof_ok):
            return None
        return compute_proof(self._secret, ROLE_LEARNER, self.challenge, actor_nonce)
