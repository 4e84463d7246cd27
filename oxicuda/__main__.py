"""``python -m oxicuda COMMAND``: info, demo, bench, kernels, inspect."""

from __future__ import annotations

import importlib
import os
import sys

#: the exit status of a command whose reader went away (``| head``): the shell's for SIGPIPE
EXIT_BROKEN_PIPE = 128 + 13

# command -> (module with main(argv) -> int, one-line help)
COMMANDS = {
    "info": ("oxicuda.cli.info", "backend, driver and every device attribute kernels depend on"),
    "demo": ("oxicuda.cli.demo", "a short tour that runs real kernels and checks their results"),
    "bench": ("oxicuda.cli.bench", "side-by-side benchmarks against the vendor libraries"),
    "kernels": ("oxicuda.cli.kernels", "list or --validate every registered kernel configuration"),
    "inspect": ("oxicuda.cli.inspect", "print the PTX, registers and spills of one configuration"),
}


def _usage() -> str:
    lines = ["usage: python -m oxicuda [--version] COMMAND [ARGS]", "", "commands:"]
    lines += [f"  {name:<8} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "python -m oxicuda COMMAND --help describes one command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] in ("-V", "--version"):
        from oxicuda import __version__

        print(f"oxicuda {__version__}")
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"oxicuda: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[command][0])
    try:
        status = int(module.main(rest) or 0)
        sys.stdout.flush()  # a closed pipe can surface only here, on the last buffered write
    except BrokenPipeError:
        # the reader stopped reading (``| head -1``): end quietly. Point stdout at /dev/null so
        # that the interpreter's own flush at exit does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return status


if __name__ == "__main__":
    sys.exit(main())
