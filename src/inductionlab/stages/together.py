"""Several commands in one process: the analyses that read only one model and seed run one
after another in one interpreter, so the package and torch are imported once (about two
CPU seconds a process) and not once per stage. Each command still runs as itself: its own
options, its own record naming it as the writer of its files, its own progress lines."""
from __future__ import annotations

from .commands import THREADS, Option, command, say


@command("together", "run several inductionlab commands in this one process, one after another",
         commands=Option("each a whole command line without the word inductionlab, quoted as "
                         "one argument", type=str, many=True),
         threads=THREADS)
def together(commands, threads):
    import shlex

    from ..process_cost import part_cost
    from .commands import COMMANDS
    from .registry import build_parser, run_command

    parser = build_parser()
    parsed = []
    for line in commands:  # every line parsed before any runs: a typo costs nothing
        words = shlex.split(line)
        if words[:1] == ["together"]:
            raise ValueError(f"{line!r}: together runs other commands, not itself")
        args = parser.parse_args(words)
        if "threads" in COMMANDS[args.command].options:
            args.threads = threads
        parsed.append((words, args))
    for i, (words, args) in enumerate(parsed, 1):
        say(f"[{i}/{len(parsed)}] inductionlab {args.command}")
        with part_cost(args.command, words):
            run_command(args)
