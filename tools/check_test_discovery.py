#!/usr/bin/env python3
"""Checks that ctest runs every Catch2 test case of the build's test binaries.

catch_discover_tests turns each binary's test names into a CMake list: a name with an
unbalanced '[' or ']' (e.g. "uniform on [0, 1)") silently swallows every later name into
one broken test, and half a suite stops running while ctest still says 100% passed; a ';' in a
name splits it into two tests that run nothing (a CMake list separator). This
compares, per binary, the test cases it lists with the ctest tests that run it.
Usage: check_test_discovery.py BUILD_DIR
"""
import collections
import json
import os
import subprocess
import sys


def main() -> int:
    build = sys.argv[1]
    shown = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                           capture_output=True, text=True).stdout
    per_binary = collections.Counter()
    for test in json.loads(shown)["tests"]:
        command = test.get("command") or []
        name = os.path.basename(command[0]) if command else ""
        # A discovered test runs its binary with the test's name as the first argument; a
        # binary registered whole (the GPU tests) is not discovered and not checked.
        if name.startswith("seedrl_") and name.endswith("_tests") and len(command) > 1 and \
                not command[1].startswith("-"):
            per_binary[command[0]] += 1
    if not per_binary:
        print("no Catch2 test binaries registered with ctest in", build)
        return 1
    bad = 0
    for binary, registered in sorted(per_binary.items()):
        if not os.path.exists(binary):
            continue  # not built in this tree (its ctest entry says so itself)
        # Catch2 v2 exits with the number of test cases it listed: not an error.
        listed = subprocess.run([binary, "--list-test-names-only"], capture_output=True,
                                text=True).stdout
        names = [n for n in listed.splitlines() if n.strip()]
        odd = [n for n in names if n.count("[") != n.count("]") or ";" in n]
        status = "ok" if registered == len(names) else "MISMATCH"
        print(f"{os.path.basename(binary)}: {len(names)} test cases, {registered} ctest tests: "
              f"{status}")
        if registered != len(names):
            bad += 1
            for n in odd:
                print(f"  unbalanced bracket or ';' in test name: {n!r}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
