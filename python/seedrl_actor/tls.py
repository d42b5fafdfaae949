"""TLS 1.3 on the actor link (docs/security.md), with the standard `ssl` module.

Certificates: the actor presents its certificate and key and checks that the learner's
certificate chains to the CA file and names the host it dialled (or `server_name`). A
pre-shared key: the TLS key is HMAC-SHA256(shared secret, "seedrl TLS 1.3 PSK v1") under the
identity "seedrl", as the C++ side derives it (seedrl/transport/detail/tls_context.hpp); the
`ssl` module offers PSKs from Python 3.13 on.
"""

from __future__ import annotations

import hashlib
import hmac
import ssl

PSK_IDENTITY = "seedrl"
PSK_LABEL = b"seedrl TLS 1.3 PSK v1"


class TlsConfigError(ValueError):
    """A TLS setting that cannot be used: the message names the file or what is missing."""


def psk_from_secret(secret: bytes) -> bytes:
    """The TLS 1.3 pre-shared key both ends derive from the link's shared secret."""
    return hmac.new(secret, PSK_LABEL, hashlib.sha256).digest()


def client_context(cert: str | None = None, key: str | None = None, ca: str | None = None,
                   psk_secret: bytes | None = None) -> ssl.SSLContext:
    """An SSLContext for the actor's side: certificate files (all three) or a PSK secret."""
    certs = cert is not None or key is not None or ca is not None
    if certs == (psk_secret is not None):
        raise TlsConfigError("TLS takes certificate files (--tls-cert, --tls-key, --tls-ca) or "
                             "--tls-psk, " + ("not both" if certs else "and got neither"))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the learner and its name
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    if psk_secret is not None:
        if not hasattr(ctx, "set_psk_client_callback"):
            raise TlsConfigError("--tls-psk needs Python 3.13 or newer (ssl's PSK support); "
                                 "use certificates with this Python")
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the PSK authenticates the learner
        psk = psk_from_secret(psk_secret)
        ctx.set_psk_client_callback(lambda hint: (PSK_IDENTITY, psk))
        return ctx
    missing = [flag for flag, value in (("--tls-cert", cert), ("--tls-key", key),
                                        ("--tls-ca", ca)) if value is None]
    if missing:
        raise TlsConfigError("TLS with certificates needs " + " and ".join(missing) + " too")
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise TlsConfigError(f"cannot use the TLS certificate {cert} with the key {key}: "
                             f"{getattr(e, 'strerror', None) or e}") from None
    try:
        ctx.load_verify_locations(ca)
    except (OSError, ssl.SSLError) as e:
        raise TlsConfigError(f"cannot use the TLS CA certificates {ca}: "
                             f"{getattr(e, 'strerror', None) or e}") from None
    return ctx
