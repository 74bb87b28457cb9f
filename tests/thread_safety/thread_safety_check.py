#!/usr/bin/env python3
"""Clang's thread-safety analysis over the master's and the agent's sources.

The locks of cohort-master and cohort-agent are common/mutex.h's Mutex with Abseil's annotations
(ABSL_GUARDED_BY on what a mutex guards, ABSL_EXCLUSIVE_LOCKS_REQUIRED on the functions that
need it held, ABSL_LOCKS_EXCLUDED on those that take it). GCC, which builds the project, ignores
them; this check compiles every non-test source under the checked folders with clang++ and
-Wthread-safety -Werror=thread-safety, using the flags of the build's compile_commands.json. It
runs clang in syntax-only mode: the analysis is part of clang's semantic checks, so it sees
exactly what a full clang build would, without generating code (a minute or two on 2 cores
instead of a second build).

  thread_safety_check.py BUILD_DIR            check (exit 0: no violation)
  thread_safety_check.py BUILD_DIR --seeded   prove the check bites: drop the lock from a real
                                              master function in a copy and expect the failure

Each violation is printed as clang reports it: file, line, and which mutex is not held.
"""

import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKED = ("src/master/", "src/agent/")
CLANG = "clang++"
FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety"]
# What the seeded run removes: the lock of Master::ExpireLostAgents (master_agents.cc).
SEED_FILE = "src/master/master_agents.cc"
SEED_LOCKED = "MutexLock lock(&mu_);\n  ExpireLostAgentsLocked();"
SEED_EXPECTED = re.compile(r"calling function 'ExpireLostAgentsLocked' requires holding mutex 'mu_'")


def clang_command(entry, source):
    """The build's command for `entry`, as a clang syntax-only run on `source`."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out = [CLANG]
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-c", "-MF", "-MT", "-MQ"):
            skip = arg != "-c"
            continue
        if arg == entry["file"] or arg.startswith(("-W", "-M")):
            continue
        out.append(arg)
    return out + FLAGS + ["-Wno-unknown-warning-option", source], entry["directory"]


def entries(build_dir):
    path = os.path.join(build_dir, "compile_commands.json")
    with open(path) as f:
        commands = json.load(f)
    chosen = {}
    for e in commands:
        rel = os.path.relpath(e["file"], ROOT)
        if rel.startswith(CHECKED) and not rel.endswith("_test.cc") and "/testing/" not in rel:
            chosen[rel] = e
    return chosen


def run(command, cwd):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stderr


def check_all(build_dir):
    chosen = entries(build_dir)
    if not chosen:
        print(f"no master or agent sources in {build_dir}/compile_commands.json", file=sys.stderr)
        return 2
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = {rel: pool.submit(run, *clang_command(e, e["file"])) for rel, e in chosen.items()}
        for rel in sorted(futures):
            code, errors = futures[rel].result()
            if code != 0:
                failed.append(rel)
                print(f"--- {rel}\n{errors}", file=sys.stderr)
    print(f"thread safety: {len(chosen) - len(failed)} of {len(chosen)} sources pass "
          f"({' '.join(FLAGS[1:])})")
    for rel in failed:
        print(f"  FAILED {rel}")
    return 1 if failed else 0


def check_seeded(build_dir):
    chosen = entries(build_dir)
    entry = chosen.get(SEED_FILE)
    if entry is None:
        print(f"{SEED_FILE} is not in the build's compile commands", file=sys.stderr)
        return 2
    text = open(os.path.join(ROOT, SEED_FILE)).read()
    if text.count(SEED_LOCKED) != 1:
        print(f"{SEED_FILE} no longer holds the seeded lock:\n{SEED_LOCKED}", file=sys.stderr)
        return 2
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as f:
        f.write(text.replace(SEED_LOCKED, "ExpireLostAgentsLocked();"))
        seeded = f.name
    try:
        code, errors = run(*clang_command(entry, seeded))
    finally:
        os.unlink(seeded)
    print(errors)
    if code != 0 and SEED_EXPECTED.search(errors):
        print("seeded violation caught: the check fails when a master function drops its lock")
        return 0
    print(f"seeded violation NOT caught (clang exit {code})", file=sys.stderr)
    return 1


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    build_dir = os.path.abspath(argv[1])
    return check_seeded(build_dir) if "--seeded" in argv[2:] else check_all(build_dir)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
