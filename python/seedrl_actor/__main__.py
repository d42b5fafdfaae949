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
from typing import Callable, Sequence

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


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
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
    ap.add_argument("--learner", type=_address, metavar="HOST:PORT",
                    help="the learner's address (required unless --print-spec)")
    ap.add_argument("--env", required=True, metavar="ID",
                    help="gymnasium environment id, e.g. CartPole-v1 or ALE/Pong-v5")
    ap.add_argument("--env-import", action="append", default=[], metavar="MODULE[:FUNCTION]",
                    help="import MODULE before making --env, so that a third-party package "
                         "registers its environments; with :FUNCTION, also call "
                         "MODULE.FUNCTION() to register them (repeatable)")
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
    tls = ap.add_argument_group(
        "TLS 1.3 (docs/security.md)",
        "for links that leave the host: certificate files (the learner checks the actor's, the "
        "actor the learner's and its name), or a key derived from the shared secret")
    tls.add_argument("--tls-cert", metavar="FILE", default=None,
                     help="this actor's certificate chain (PEM)")
    tls.add_argument("--tls-key", metavar="FILE", default=None,
                     help="the private key of --tls-cert (PEM)")
    tls.add_argument("--tls-ca", metavar="FILE", default=None,
                     help="the CA certificates (PEM) the learner's certificate must chain to")
    tls.add_argument("--tls-server-name", metavar="NAME", default=None,
                     help="the name the learner's certificate must carry (default: the host in "
                          "--learner)")
    tls.add_argument("--tls-psk", action="store_true",
                     help="TLS with a pre-shared key derived from the shared secret (Python "
                          "3.13+)")
    ap.add_argument("--max-steps", type=_positive, default=None, metavar="N",
                    help="stop after N round trips (for tests)")
    ap.add_argument("--max-backoff", type=float, default=5.0, metavar="SECONDS",
                    help="longest wait between reconnection attempts (default 5)")
    atari = ap.add_argument_group(
        "Atari (ALE/ ids)",
        "ALE/ environments get the literature's preprocessing (docs/python-actor.md#atari): "
        "84x84 grayscale uint8 frames [84, 84], frame skip with a max-pool over the step's last "
        "two screens, no-op starts, a 108,000-frame episode limit, unclipped rewards")
    atari.add_argument("--frame-skip", type=_positive, default=None, metavar="N",
                       help="emulator frames per action (default 4)")
    atari.add_argument("--noop-max", type=_non_negative, default=None, metavar="N",
                       help="up to N no-op actions after each reset (default 30; 0: none)")
    atari.add_argument("--sticky-actions", type=_probability, default=None, metavar="P",
                       help="ALE's repeat_action_probability per emulator frame (default 0: "
                            "none; Machado et al. use 0.25)")
    atari.add_argument("--full-action-space", action="store_true", default=None,
                       help="all 18 Atari actions instead of the game's minimal set")
    atari.add_argument("--max-episode-frames", type=_non_negative, default=None, metavar="N",
                       help="truncate episodes after N emulator frames (default 108000; 0: no "
                            "limit)")
    atari.add_argument("--no-atari-preprocessing", action="store_true",
                       help="step the ALE environment as gymnasium.make returns it")
    ap.add_argument("--print-spec", action="store_true",
                    help="print the specs the hello would carry as JSON on stdout and exit "
                         "(no learner needed), e.g. {\"observation\": {\"dtype\": \"uint8\", "
                         "\"shape\": [84, 84]}, \"actions\": 6}")
    ap.add_argument("--version", action="version", version=f"seedrl-actor {__version__}")
    return ap


_ATARI_OPTIONS = {"frame_skip": "--frame-skip", "noop_max": "--noop-max",
                  "sticky_actions": "--sticky-actions",
                  "full_action_space": "--full-action-space",
                  "max_episode_frames": "--max-episode-frames"}


def _env_factory(args: argparse.Namespace) -> Callable[[int], object]:
    """make_env(i) for the actor: ALE/ ids with the Atari preprocessing unless asked not to.
    Raises ValueError for Atari options that would not apply."""
    from .registration import import_registrations

    import_registrations(args.env_import)  # RegistrationError is a ValueError
    kwargs = dict(args.env_arg)
    given = [flag for name, flag in _ATARI_OPTIONS.items() if getattr(args, name) is not None]
    atari = args.env.startswith("ALE/") and not args.no_atari_preprocessing
    if given and not atari:
        raise ValueError(f"{', '.join(given)}: only for ALE/ environments with the Atari "
                         "preprocessing")
    if not atari:
        from .actor import make_env

        return lambda i: make_env(args.env, **kwargs)
    from .atari import MAX_EPISODE_FRAMES, make_atari

    options = dict(
        frame_skip=4 if args.frame_skip is None else args.frame_skip,
        noop_max=30 if args.noop_max is None else args.noop_max,
        sticky_action_probability=args.sticky_actions or 0.0,
        full_action_space=bool(args.full_action_space),
        max_episode_frames=(MAX_EPISODE_FRAMES if args.max_episode_frames is None
                            else args.max_episode_frames or None))
    return lambda i: make_atari(args.env, **options, make_kwargs=kwargs)


def _print_spec(args: argparse.Namespace) -> int:
    """--print-spec: the hello's specs for --env and its options, as one line of JSON."""
    from . import protocol as p
    from .actor import SpaceError, observation_note, specs_from_spaces

    try:
        env = _env_factory(args)(0)
        try:
            obs, act = specs_from_spaces(env.observation_space, env.action_space)
            note = observation_note(env.observation_space)
        finally:
            env.close()
    except (SpaceError, ValueError) as e:
        print(f"seedrl actor: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # gymnasium's errors for unknown ids, missing extras, ...
        print(f"seedrl actor: cannot make {args.env}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if note:
        print(f"seedrl actor: {args.env}: {note}", file=sys.stderr, flush=True)
    spec = {"env": args.env,
            "observation": {"dtype": obs.dtype.name.lower(), "shape": list(obs.shape)}}
    if act.kind == p.ActionKind.DISCRETE:
        spec["actions"] = act.num_actions
    else:
        # One [low, high] per element, row-major, as the version-2 hello carries them; an
        # unbounded side is -Infinity or Infinity (Python's json and strtod both read them).
        lows, highs = act.bound_arrays()
        spec["action"] = {"kind": "continuous", "shape": list(act.shape),
                          "low": [float(x) for x in lows], "high": [float(x) for x in highs]}
    print(json.dumps(spec), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.print_spec:
        return _print_spec(args)
    if args.learner is None:
        ap.error("the following arguments are required: --learner")
    if args.no_auth and args.auth_secret_file:
        print("--no-auth and --auth-secret-file exclude each other", file=sys.stderr)
        return 2
    try:
        secret = None if args.no_auth else load_secret(args.auth_secret_file)
    except SecretError as e:
        print(e, file=sys.stderr)
        return 2
    tls_context = None
    if args.tls_cert or args.tls_key or args.tls_ca or args.tls_psk or args.tls_server_name:
        from .tls import TlsConfigError, client_context
        if args.tls_psk and secret is None:
            print("--tls-psk derives the TLS key from the shared secret: set "
                  f"{SECRET_ENV} or --auth-secret-file", file=sys.stderr)
            return 2
        try:
            tls_context = client_context(args.tls_cert, args.tls_key, args.tls_ca,
                                         secret if args.tls_psk else None)
        except TlsConfigError as e:
            print(f"seedrl actor: {e}", file=sys.stderr)
            return 2
    # Imported here so that --help and secret errors do not wait for gymnasium.
    from .actor import Actor, ActorConfig, ActorRejected, SpaceError

    host, port = args.learner
    config = ActorConfig(host=host, port=port, seed=args.seed, actor_id=args.actor_id,
                         secret=secret, max_steps=args.max_steps, max_backoff=args.max_backoff,
                         tls=tls_context, tls_server_name=args.tls_server_name)
    if args.name is not None:
        config.name = args.name
    try:
        actor = Actor(config, _env_factory(args), args.envs)
    except (SpaceError, ValueError) as e:
        print(f"seedrl actor: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # gymnasium's errors for unknown ids, missing extras, ...
        print(f"seedrl actor: cannot make {args.env}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if actor.batch.observation_note:
        print(f"seedrl actor: {args.env}: {actor.batch.observation_note}", file=sys.stderr,
              flush=True)
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
