"""Build the site in strict mode (a Sphinx warning is an error).

    python tools/build_site.py                      # make book: execute (jupyter-cache), build
    python tools/build_site.py --executed DIR OUT   # build from notebooks executed elsewhere

`make book` executes every notebook through jupyter-cache and builds `_build/html`, with the
decks (`_build/html/slides/`) and the Colab copies (`_build/colab/`). `make test` has already
executed every notebook once under nbval, which keeps them in `_build/executed/`
(tests/nbval_record.py); with --executed, the book's sources are copied to OUT/src with those
notebooks in place of sessions/*.ipynb and built with execution off, into OUT/src/_build/html.
"""

import argparse
import pathlib
import shutil
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOT_SOURCES = {
    ".git",
    ".venv",
    "_build",
    ".pytest_cache",
    "__pycache__",
    ".ipynb_checkpoints",
}


def jupyter_book(source, *args):
    """Run `jupyter-book build SOURCE ...` with this interpreter; the log if it warns or fails."""
    main = "from jupyter_book.cli.main import main; main()"
    cmd = [
        sys.executable,
        "-c",
        main,
        "build",
        str(source),
        "--warningiserror",
        "--keep-going",
    ]
    result = subprocess.run([*cmd, *args], capture_output=True, text=True)
    log = result.stdout + result.stderr
    # Sphinx's warnings read "WARNING: ..." (a kernel's own "[IPKernelApp] WARNING | ..." is not one)
    if result.returncode != 0 or "WARNING: " in log:
        raise SystemExit(f"the site's strict build failed:\n{log[-8000:]}")
    return log


def not_sources(folder, names):
    """What the staged copy leaves out: build outputs, caches, and every virtual environment
    (a folder holding pyvenv.cfg, whatever its name: .venv-floor holds gigabytes)."""
    folder = pathlib.Path(folder)
    return [n for n in names if n in NOT_SOURCES or (folder / n / "pyvenv.cfg").exists()]


def stage(executed, out):
    """A copy of the book's sources in OUT/src, the notebooks replaced by their executed copies."""
    src = out / "src"
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(ROOT, src, ignore=not_sources)
    for notebook in sorted((ROOT / "sessions").glob("[0-9][0-9]_*.ipynb")):
        ran = executed / "sessions" / notebook.name
        if not ran.exists() or ran.stat().st_mtime < notebook.stat().st_mtime:
            raise SystemExit(
                f"{ran} is missing or older than {notebook}: execute it first (make test)"
            )
        shutil.copyfile(ran, src / "sessions" / notebook.name)
    config = yaml.safe_load((src / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"  # nbval executed them already
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    return src


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--executed", type=pathlib.Path, help="notebooks executed elsewhere"
    )
    parser.add_argument(
        "out", nargs="?", type=pathlib.Path, help="with --executed: where to build"
    )
    args = parser.parse_args(argv)
    if args.executed:
        source = stage(
            args.executed.resolve(), (args.out or ROOT / "_build" / "site-test").resolve()
        )
    else:
        source = ROOT
    jupyter_book(source)
    print(f"built {source / '_build' / 'html'}")
    return source / "_build" / "html"


if __name__ == "__main__":
    main()
