"""The entry point. Ctrl-C is handled from its first instant: the handler is
installed before the command line's heavy imports, which an interrupt would
otherwise end with a traceback."""

import gc
import signal
import sys

from ctxpack import files
from ctxpack.errors import INTERRUPTED, INTERRUPTED_MESSAGE


def main() -> None:
    # Importing a command's modules allocates only what lives until exit: the
    # cycle collector would walk it a dozen times for nothing.
    gc.disable()
    signal.signal(signal.SIGINT, files.interrupt)
    try:
        from ctxpack.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write(f"error: {INTERRUPTED_MESSAGE}\n")
        sys.exit(INTERRUPTED)
    run()


if __name__ == "__main__":
    main()
