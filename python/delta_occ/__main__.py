from .cli import run

if __name__ == "__main__":  # not again in a worker that multiprocessing's spawn starts
    run()
