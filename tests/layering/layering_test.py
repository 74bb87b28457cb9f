#!/usr/bin/env python3
"""The layering the folders' READMEs state, checked against every #include.

Each folder under src/ (and src/master/'s sub-folders) says in its README which folders it may
depend on: the first sentence after "May depend on" (or "Depends on") names them in backticks
(`common`, `wire`, `master/searcher`, ...). This test reads every #include "..." of a .h or .cc
file under src/ and fails, naming the file and the line, when a file includes a folder its
README does not allow. A folder may always include itself, its own sub-folders (the master's
facade its components) and the public headers under include/cohort/. Tests (`*_test.cc`) and
test support (`testing/` folders) may reach further (the agent's tests run a master in-process),
as the READMEs say; they are not checked.

Run: python3 tests/layering/layering_test.py [REPO]   (exit 0: no violation)
"""

import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
SRC = os.path.join(ROOT, "src")
RULE = re.compile(r"(?:May depend on|Depends on)[:\s](.*?)(?:\.\s|\.$|\n\n)", re.S)


def folders():
    """Every folder with a README: 'agent', 'master', 'master/db', ..."""
    out = []
    for top in sorted(os.listdir(SRC)):
        if os.path.isfile(os.path.join(SRC, top, "README.md")):
            out.append(top)
            for sub in sorted(os.listdir(os.path.join(SRC, top))):
                if os.path.isfile(os.path.join(SRC, top, sub, "README.md")):
                    out.append(top + "/" + sub)
    return out


def allowed(folder, known):
    """The folders `folder`'s README allows, as paths under src/."""
    text = open(os.path.join(SRC, folder, "README.md")).read()
    match = RULE.search(text)
    if not match:
        return None
    names = set()
    for name in re.findall(r"`([^`]+)`", match.group(1)):
        name = name.strip("/").replace("cohort_", "")
        parent = folder.split("/")[0]
        for candidate in (name, parent + "/" + name):
            if candidate in known:
                names.add(candidate)
    return names


def owner(rel, known):
    """The deepest folder with a README that holds src/`rel`."""
    parts = rel.split("/")
    for n in range(len(parts) - 1, 0, -1):
        if "/".join(parts[:n]) in known:
            return "/".join(parts[:n])
    return None


def main():
    known = folders()
    rules = {f: allowed(f, known) for f in known}
    missing = [f for f, r in rules.items() if r is None]
    violations = []
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for dirpath, _, files in os.walk(SRC):
        for name in files:
            if not name.endswith((".h", ".cc")) or name.endswith("_test.cc"):
                continue
            if "/testing" in dirpath[len(SRC):]:
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, SRC)
            mine = owner(rel, known)
            if mine is None or rules.get(mine) is None:
                continue
            for lineno, line in enumerate(open(path, errors="replace"), 1):
                m = include.match(line)
                if not m or m.group(1).startswith("cohort/"):
                    continue
                theirs = owner(m.group(1), known)
                if theirs is None or theirs == mine:
                    continue
                if theirs.startswith(mine + "/") or mine.startswith(theirs + "/"):
                    continue  # a folder and its own components
                if theirs in rules[mine] or theirs.split("/")[0] in rules[mine]:
                    continue
                violations.append(f"src/{rel}:{lineno}: {mine}/ includes \"{m.group(1)}\" "
                                  f"({theirs}/), which src/{mine}/README.md does not allow")
    for f in missing:
        print(f"src/{f}/README.md: no 'May depend on' sentence naming what it may include")
    for v in violations:
        print(v)
    print(f"{len(violations) + len(missing)} layering violation(s) in "
          f"{len(known)} folders")
    return 1 if violations or missing else 0


if __name__ == "__main__":
    sys.exit(main())
