"""--env-import: environments from third-party packages, registered with gymnasium before
--env is made.

`package.module` is imported for its side effect (most packages register their ids on import);
`package.module:function` is imported and `function()` called, for packages that register
through a function. Both raise RegistrationError with what went wrong.
"""

from __future__ import annotations

import importlib
from typing import Iterable


class RegistrationError(ValueError):
    """An --env-import could not be imported or called."""


def import_registrations(names: Iterable[str]) -> None:
    """Imports each `module` or `module:function` (calling the function), in order."""
    for name in names:
        module_name, sep, function_name = name.partition(":")
        if not module_name or (sep and not function_name):
            raise RegistrationError(f"--env-import {name!r}: expected package.module or "
                                    "package.module:function")
        try:
            module = importlib.import_module(module_name)
        except Exception as e:  # ImportError, or the module's own error while registering
            raise RegistrationError(f"--env-import {name}: cannot import {module_name}: "
                                    f"{type(e).__name__}: {e}") from None
        if not sep:
            continue
        function = getattr(module, function_name, None)
        if not callable(function):
            raise RegistrationError(f"--env-import {name}: {module_name} has no function "
                                    f"{function_name}")
        try:
            function()
        except Exception as e:
            raise RegistrationError(f"--env-import {name}: {function_name}() failed: "
                                    f"{type(e).__name__}: {e}") from None
