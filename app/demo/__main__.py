"""`python -m app.demo` entry point; all logic lives in `app.demo.run`."""

from app.demo.run import main

if __name__ == "__main__":
    main()
