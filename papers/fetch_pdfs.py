"""Download the reading group's annotated PDFs into papers/pdf/ and verify them (`make papers`).

Each PDF named in papers/sessions.yml is fetched from the group's repository at the pinned commit and kept
only if its SHA-256 equals the one in papers/SHA256SUMS; a file whose sum differs is refused (not written)
and the command exits with status 1. When papers/pdf/ holds verified copies, the site links to them
instead of to GitHub (papers/book_sessions.py).

    python papers/fetch_pdfs.py [--base-url URL] [--dest DIR]
"""

import argparse
import hashlib
import pathlib
import sys
import tempfile
import urllib.request
from urllib.parse import quote

import yaml

HERE = pathlib.Path(__file__).resolve().parent
SESSIONS = HERE / "sessions.yml"
SUMS = HERE / "SHA256SUMS"
DEST = HERE / "pdf"


def load_sessions(path=SESSIONS):
    return yaml.safe_load(pathlib.Path(path).read_text())


def annotated_paths(sessions):
    """Upstream paths of every annotated PDF, in session order."""
    return [
        p["annotated"]
        for s in sessions["sessions"]
        for p in s["papers"]
        if "annotated" in p
    ]


def local_name(path):
    """papers/pdf/ name of an upstream path: 'session_2/flash_attention_[annotated].pdf' ->
    'session_2_flash_attention_annotated.pdf' (the names SHA256SUMS uses)."""
    return path.replace("/", "_").replace("[", "").replace("]", "")


def pinned_url(sessions, path):
    """The PDF's page on GitHub at the pinned commit (brackets encoded as %5B %5D)."""
    return f"{sessions['upstream_repo']}/blob/{sessions['upstream_commit']}/{quote(path)}"


def raw_url(sessions, path, base_url=None):
    """Where the PDF's bytes are: raw.githubusercontent.com at the pinned commit, or `base_url`/path."""
    if base_url is None:
        repo = sessions["upstream_repo"].removeprefix("https://github.com/")
        base_url = (
            f"https://raw.githubusercontent.com/{repo}/{sessions['upstream_commit']}"
        )
    return f"{base_url.rstrip('/')}/{quote(path)}"


def read_sums(path=SUMS):
    sums = {}
    for line in pathlib.Path(path).read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            sums[name.lstrip("*")] = digest
    return sums


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def verified_copies(dest=DEST, sums_path=SUMS):
    """{local name: path} of the PDFs in `dest` whose SHA-256 matches SHA256SUMS."""
    sums = read_sums(sums_path)
    dest = pathlib.Path(dest)
    return (
        {f.name: f for f in sorted(dest.glob("*.pdf")) if sums.get(f.name) == sha256(f)}
        if dest.is_dir()
        else {}
    )


def fetch(sessions, sums, dest, base_url=None, timeout=60):
    """Download each annotated PDF not yet verified in `dest`; returns the names refused or not fetched."""
    dest.mkdir(parents=True, exist_ok=True)
    failed = []
    for path in annotated_paths(sessions):
        name = local_name(path)
        if name not in sums:
            print(f"refused {name}: no SHA-256 for it in SHA256SUMS")
            failed.append(name)
            continue
        if (dest / name).exists() and sha256(dest / name) == sums[name]:
            print(f"ok      {name} (already here)")
            continue
        url = raw_url(sessions, path, base_url)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                data = response.read()
        except OSError as error:
            print(f"failed  {name}: {url}: {error}")
            failed.append(name)
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != sums[name]:
            print(
                f"refused {name}: SHA-256 {digest} differs from SHA256SUMS {sums[name]}"
            )
            failed.append(name)
            continue
        with tempfile.NamedTemporaryFile(
            dir=dest, delete=False
        ) as tmp:  # never leave a half-written PDF
            tmp.write(data)
        pathlib.Path(tmp.name).replace(dest / name)
        print(f"ok      {name}")
    return failed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--base-url", help="fetch from BASE_URL/<upstream path> instead of GitHub"
    )
    parser.add_argument("--dest", type=pathlib.Path, default=DEST)
    parser.add_argument("--sessions", type=pathlib.Path, default=SESSIONS)
    parser.add_argument("--sums", type=pathlib.Path, default=SUMS)
    args = parser.parse_args(argv)
    failed = fetch(
        load_sessions(args.sessions), read_sums(args.sums), args.dest, args.base_url
    )
    if failed:
        print(f"{len(failed)} PDF(s) not fetched: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
