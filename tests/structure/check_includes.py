#!/usr/bin/env python3
"""check_includes.py — fails when a source file includes what its folder may not use.

fairq's folders are layers (docs/code-map.md): each may include headers only
of the folders LAYERS grants it, so dependencies run one way and the
structure cannot decay unnoticed. Headers are included by bare name (each
library exports its folder), so a name is resolved to the one folder that
holds it; a name two folders hold is an error too, as is a library header a
folder must not touch (libpq outside the store, CZMQ in the CLI...).

Usage: check_includes.py [ROOT]   (exit 0 clean, 1 violations, 2 usage)
"""
import os
import re
import sys

# Lowest layer first. A folder may include its own headers and those of the
# folders listed for it; nothing else of fairq's.
LAYERS = {
    "base": [],
    "log": ["base"],
    "runtime": ["base", "log"],
    "messages": ["base", "runtime"],
    "templates": ["base"],
    "channels": ["base", "templates"],
    "recipients": ["base"],
    "mailheaders": ["base"],
    "reports": ["base"],
    "unsubscribe": ["base", "recipients"],
    "console": [],
    "sql": ["base", "log", "recipients"],
    "leadership": ["base"],
    "metrics": ["base", "runtime", "sql", "leadership"],
    "config": ["base"],
    "fairness": ["base", "runtime"],
    "shaping": ["base"],
    "actors": ["base", "log", "runtime", "messages", "templates", "channels", "recipients",
               "unsubscribe", "sql", "leadership", "metrics", "config", "fairness", "shaping"],
    "api": ["base", "log", "runtime", "templates", "channels", "recipients", "mailheaders",
            "unsubscribe", "reports", "console", "sql", "leadership", "metrics", "config",
            "shaping"],
    "sender": ["base", "log", "runtime", "messages", "channels", "mailheaders", "config",
               "shaping"],
    "cli": ["base", "templates", "shaping"],
    "fairqd": ["base", "log", "runtime", "messages", "templates", "channels", "recipients",
               "mailheaders", "unsubscribe", "reports", "sql", "leadership", "metrics", "config", "fairness", "shaping",
               "actors", "api"],
}

# System headers that belong to one layer's job: the database to the store,
# ZeroMQ and msgpack to the runtime and what runs actors, HTTP serving to the
# API. A folder not listed for a header may not include it.
LIBRARIES = {
    "libpq-fe.h": ["sql"],
    "czmq.h": ["runtime", "messages", "metrics", "fairness", "actors", "api",
               "sender", "fairqd"],
    "zmq.h": ["runtime"],
    "msgpack.h": ["runtime", "messages"],
    "microhttpd.h": ["api", "fairqd"],
    "curl/curl.h": ["sender", "cli"],
    "gmime/gmime.h": ["reports"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_SUFFIXES = (".c", ".h", ".def")


def sources(root, folder):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(dirpath, name)


def main(argv):
    if len(argv) > 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1] if len(argv) == 2 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    folders = [f for f in LAYERS if os.path.isdir(os.path.join(root, f))]
    problems = []

    owner = {}  # header name -> the folder that holds it
    for folder in folders:
        for path in sources(root, folder):
            name = os.path.basename(path)
            if name.endswith(".c"):
                continue
            if name in owner and owner[name] != folder:
                problems.append(f"{name}: held by both {owner[name]}/ and {folder}/ "
                                "(an include by bare name would be ambiguous)")
            owner[name] = folder

    for folder in folders:
        allowed = set(LAYERS[folder]) | {folder}
        for path in sources(root, folder):
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    quote, header = match.groups()
                    where = f"{rel}:{number}"
                    if quote == "<":
                        users = LIBRARIES.get(header)
                        if users is not None and folder not in users:
                            problems.append(f"{where}: {folder}/ may not include <{header}> "
                                            f"(only {', '.join(u + '/' for u in users)})")
                        continue
                    if header.startswith("../") or "/" in header:
                        target = os.path.normpath(os.path.join(os.path.dirname(path), header))
                        top = os.path.relpath(target, root).split(os.sep)[0]
                        problems.append(f"{where}: include \"{header}\" by path; include by "
                                        f"name and link the library of {top}/ instead")
                        continue
                    home = owner.get(header)
                    if home is None:
                        continue  # generated (fq_migrations.c's) or a system header in quotes
                    if home not in allowed:
                        problems.append(f"{where}: {folder}/ may not include {header} "
                                        f"(from {home}/); {folder}/ may use "
                                        f"{', '.join(l + '/' for l in LAYERS[folder]) or 'nothing'}")

    for problem in problems:
        print(problem)
    if problems:
        print(f"check_includes: {len(problems)} forbidden include(s); "
              "the layers are in docs/code-map.md", file=sys.stderr)
        return 1
    print(f"check_includes: {len(folders)} folders, every include allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
