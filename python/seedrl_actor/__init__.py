"""seedrl's actor client in Python: steps gymnasium environments for a seedrl learner.

The wire protocol (docs/protocol.md) is in `seedrl_actor.protocol`, the authenticated
handshake (docs/security.md) in `seedrl_actor.auth`, and the actor loop in
`seedrl_actor.actor`. Run it with `python -m seedrl_actor --learner HOST:PORT --env ID`.

This module imports nothing heavy, so that the codec can be used without gymnasium.
"""

__version__ = "0.1.0"
