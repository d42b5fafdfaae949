"""Test support: skipping a test whose test tool (numpy, gymnasium, ale-py) is missing, except
in CI (CI=true), where a missing tool fails the test, naming it, instead of passing as a skip."""
from __future__ import annotations

import os
import unittest


def requires_tool(available: bool, missing: str):
    """unittest.skipUnless(available, missing) for a test tool; a failure in CI."""
    if available or os.environ.get("CI") != "true":
        return unittest.skipUnless(available, missing)
    reason = f"CI=true and a test tool is missing: {missing}"

    def fail(*_args, **_kwargs):
        raise AssertionError(reason)

    def decorate(obj):
        if isinstance(obj, type):
            obj.setUpClass = classmethod(fail)
            return obj
        return fail

    return decorate
