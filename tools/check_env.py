"""Check that an existing interpreter (BOOK_PYTHON) has what the book needs.

    $BOOK_PYTHON tools/check_env.py

Every package of requirements.txt must be installed (at any version: the pins are the book's
own CI environment), and torch and Triton at least at the book's floor. Exits 1 naming what is
missing, with the pip command that adds it."""

import importlib.metadata
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLOOR = {"torch": (2, 11), "triton": (3, 6)}  # as the setup cell's FLOOR


def required(path=ROOT / "requirements.txt"):
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [re.split(r"[=<>!~\[ ]", line)[0] for line in lines if line]


def problems(names):
    missing, old = [], []
    for name in names:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
            continue
        if (
            name in FLOOR
            and tuple(map(int, re.findall(r"\d+", version)[:2])) < FLOOR[name]
        ):
            old.append(
                f"{name} {version} (the book needs {'.'.join(map(str, FLOOR[name]))}+)"
            )
    return missing, old


def main():
    missing, old = problems(required())
    for problem in old:
        print(f"{sys.executable}: too old: {problem}")
    if missing:
        print(f"{sys.executable} lacks: {', '.join(missing)}")
        print(f"  add them with: {sys.executable} -m pip install {' '.join(missing)}")
    if missing or old:
        return 1
    print(f"{sys.executable} has everything the book needs.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
