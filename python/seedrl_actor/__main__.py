"""Command line: python -m seedrl_actor --learner HOST:PORT --env ALE/Pong-v5 --envs 8.

Exit status: 0 after a clean stop (SIGINT, SIGTERM or --max-steps), 1 when the learner
refused the actor for good (the reason is printed), 2 for a usage or configuration error.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Sequence

from . import __version__
from .auth import SECRET_ENV, SecretError, load_secret


def _address(text: str) -> tuple[str, int]:
    """HOST:PORT, with [v6-address]:PORT for IPv6."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _actor_id(text: str) -> int:
    value = int(text)
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"must be in [0, 2^64), got {value}")
    return value


def _env_arg(text: str) -> tuple[str, object]:
    """KEY=VALUE for gymnasium.make; VALUE is read as JSON when it parses (4, true, 0.25)."""
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m seedrl_actor",
        # No abbreviations: `--auth-secret` must not quietly mean --auth-secret-file.
        allow_abbrev=False,
        description="A seedrl actor: steps K gymnasium environments and exchanges "
                    "observations for actions with a seedrl learner (docs/python-actor.md).",
        epilog=f"The shared secret comes from the {SECRET_ENV} environment variable or "
               "--auth-secret-file (mode 0600), never from the command line. Exit status: 0 "
               "after a clean stop, 1 when the learner refuses the actor, 2 for usage or "
               "configuration errors.")
    ap.add_argument("--learner", required=True, type=_address, metavar="HOST:PORT",
                    help="the learner's address")
    ap.add_argument("--env", required=True, metavar="ID",
                    help="gymnasium environment id, e.g. CartPole-v1 or ALE/Pong-v5")
    ap.add_argument("--envs", type=_positive, default=1, metavar="K",
                    help="environments stepped by this process (default 1)")
    ap.add_argument("--env-arg", type=_env_arg, action="append", default=[],
                    metavar="KEY=VALUE", help="keyword argument for gymnasium.make (repeatable)")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed env i with SEED + i at its first reset")
    ap.add_argument("--actor-id", type=_actor_id, default=os.getpid(),
                    help="actor_id in hello, for the learner's logs (default: the pid)")
    ap.add_argument("--name", default=None, help="name in hello (default: host:pid)")
    ap.add_argument("--auth-secret-file", metavar="FILE", default=None,
                    help=f"read the shared secret from FILE (mode 0600) instead of {SECRET_ENV}")
    ap.add_argument("--no-auth", action="store_true",
                    help=f"connect without authentication even when {SECRET_ENV} is set")
    ap.add_argument("--max-steps", type=_positive, default=None, metavar="N",
                    help="stop after N round trips (for tests)")
    ap.add_argument("--max-backoff", type=float, default=5.0, metavar="SECONDS",
                    help="longest wait between reconnection attempts (default 5)")
    ap.add_argument("--version", action="version", version=f"seedrl-actor {__version__}")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.no_auth and args.auth_secret_file:
        print("--no-auth and --auth-secret-file exclude each other", file=sys.stderr)
        return 2
    try:
        secret = None if args.no_auth else load_secret(args.auth_secret_file)
    except SecretError as e:
        print(e, file=sys.stderr)
        return 2
    # Imported here so that --help and secret errors do not wait for gymnasium.
    from .actor import Actor, ActorConfig, ActorRejected, SpaceError, make_env

    host, port = args.learner
    config = ActorConfig(host=host, port=port, seed=args.seed, actor_id=args.actor_id,
                         secret=secret, max_steps=args.max_steps, max_backoff=args.max_backoff)
    if args.name is not None:
        config.name = args.name
    kwargs = dict(args.env_arg)
    try:
        actor = Actor(config, lambda i: make_env(args.env, **kwargs), args.envs)
    except (SpaceError, ValueError) as e:
        print(f"seedrl actor: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # gymnasium's errors for unknown ids, missing extras, ...
        print(f"seedrl actor: cannot make {args.env}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    _install_signal_handlers(actor.request_stop)
    try:
        steps = actor.run()
    except ActorRejected as e:
        print(f"seedrl actor {config.name}: {e}", file=sys.stderr)
        return 1
    finally:
        actor.close()
    print(f"seedrl actor {config.name}: stopped after {steps} steps", file=sys.stderr)
    return 0


def _install_signal_handlers(stop) -> None:
    """The first SIGINT or SIGTERM asks for a clean stop (a close frame); a second one, if
    the stop hangs, exits at once."""
    requested = False

    def handler(signum: int, frame: object) -> None:
        nonlocal requested
        if requested:
            os._exit(130)
        requested = True
        stop()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


if __name__ == "__main__":
    sys.exit(main())
