#!/usr/bin/env python3
"""The man pages (docs/man/) say what the programs' --help says.

For each program: every option its help texts show (the program's, and for
fairq each command's and subcommand's) is in its man page, every option the
man page names is in a help text, and the page's header carries the version
--version prints. Underscores count as dashes (the accepted alias).

    check_man_pages.py --man-dir DIR --fairq PATH --fairqd PATH --sender PATH
"""
import argparse
import re
import subprocess
import sys

OPTION = re.compile(r"--[a-z][a-z0-9_-]*[a-z0-9]")
# How the daemons' help explains the syntax ("--key=VALUE", "--some_key is
# --some-key"): words of the explanation, not options
SYNTAX_WORDS = {"--key", "--some-key"}
# A setting of the daemons' help: "  --name=VALUES  (ENV, default DEFAULT)"
SETTING = re.compile(r"^  (--[a-z0-9-]+)=\S+  \((\S+), default (.*)\)$", re.M)


def run(argv):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def options_in(text):
    return {o.replace("_", "-") for o in OPTION.findall(text)} - SYNTAX_WORDS


def man_text(path):
    """The page's text with roff's escapes of '-' undone."""
    with open(path, encoding="utf-8") as f:
        roff = f.read()
    # comments are not the page
    roff = "\n".join(l for l in roff.splitlines() if not l.startswith('.\\"'))
    roff = roff.replace("\\-", "-").replace("\\fB", "").replace("\\fI", "").replace("\\fR", "")
    return roff


def fairq_help_texts(fairq):
    top = run([fairq, "--help"])
    texts = [top]
    commands = re.findall(r"^  ([a-z]+)(?: [a-z]+)?\s{2,}", top.split("Commands:")[1].split("Global options")[0], re.M)
    for command in sorted(set(commands)):
        text = run([fairq, command, "--help"])
        texts.append(text)
        if "Subcommands" in text:
            for sub in re.findall(r"^  ([a-z]+) ", text.split("Subcommands")[1].split("Global options")[0], re.M):
                texts.append(run([fairq, command, sub, "--help"]))
    return "\n".join(texts)


def check(program, help_text, version_text, page, problems):
    before = len(problems)
    shown = options_in(help_text)
    man = man_text(page)
    in_man = options_in(man)
    for option in sorted(shown - in_man):
        problems.append(f"{page}: {program} --help shows {option}, the man page does not")
    for option in sorted(in_man - shown):
        problems.append(f"{page}: names {option}, which {program} --help does not show")
    # Each setting's entry (from its flag to the next .TP) names its
    # environment variable and its default as --help does
    entries = {}
    for entry in man.split(".TP\n"):
        first = OPTION.search(entry)
        if first and entry.lstrip().startswith(".B"):
            entries.setdefault(first.group(0), entry)
    for flag, env, default in SETTING.findall(help_text):
        entry = entries.get(flag, "")
        if env not in entry or f"default {default}" not in " ".join(entry.split()):
            problems.append(f"{page}: {flag}'s entry does not say {env} and default {default}, as --help does")
    version = version_text.split()[-1] if version_text.split() else "?"
    header = next((l for l in man.splitlines() if l.startswith(".TH ")), "")
    if f"{program} {version}" not in header:
        problems.append(f"{page}: header {header!r} does not name {program} {version} (--version)")
    if len(problems) == before:
        print(f"{page}: {len(shown)} options, in step with --help")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--man-dir", required=True)
    parser.add_argument("--fairq", required=True)
    parser.add_argument("--fairqd", required=True)
    parser.add_argument("--sender", required=True)
    args = parser.parse_args()
    problems = []
    check("fairq", fairq_help_texts(args.fairq), run([args.fairq, "--version"]),
          f"{args.man_dir}/fairq.1", problems)
    fairqd_help = run([args.fairqd, "--help"]) + run([args.fairqd, "token", "create", "--help"])
    check("fairqd", fairqd_help, run([args.fairqd, "--version"]), f"{args.man_dir}/fairqd.8", problems)
    check("fairq-sender", run([args.sender, "--help"]), run([args.sender, "--version"]),
          f"{args.man_dir}/fairq-sender.8", problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} differences between the man pages and --help")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
