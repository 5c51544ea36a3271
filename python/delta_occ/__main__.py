import sys

from .cli import main

if __name__ == "__main__":  # not again in a worker that multiprocessing's spawn starts
    sys.exit(main())
