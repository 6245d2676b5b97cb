"""`make papers`: download annotated PDFs, keep those whose SHA-256 matches, refuse the others (offline,
against a local HTTP server standing in for GitHub)."""

import functools
import hashlib
import http.server
import sys
import threading

import pytest
import yaml

from conftest import ROOT, SESSIONS

sys.path.insert(0, str(ROOT / "papers"))
import fetch_pdfs  # noqa: E402


def test_every_annotated_pdf_has_a_sum_and_every_sum_a_pdf():
    names = {fetch_pdfs.local_name(p) for p in fetch_pdfs.annotated_paths(SESSIONS)}
    assert names == set(fetch_pdfs.read_sums()), (
        "papers/SHA256SUMS and papers/sessions.yml disagree"
    )


def test_pinned_url_encodes_brackets():
    url = fetch_pdfs.pinned_url(SESSIONS, "session_2/flash_attention_[annotated].pdf")
    assert url.endswith(
        "/blob/4582b213dc737da7153046fbd42ad34d8a186b4c/session_2/flash_attention_%5Bannotated%5D.pdf"
    )


@pytest.fixture
def server(tmp_path):
    """A local HTTP server with three 'annotated PDFs'; the second one's bytes do not match its sum."""
    root = tmp_path / "upstream"
    papers = [
        {
            "key": f"k{i}",
            "title": f"paper {i}",
            "arxiv": f"0000.0000{i}",
            "annotated": f"session_{i}/paper_[annotated].pdf",
        }
        for i in range(3)
    ]
    sessions = {
        "upstream_repo": "https://github.com/example/group",
        "upstream_commit": "0" * 40,
        "sessions": [
            {"n": i, "title": f"s{i}", "papers": [p]} for i, p in enumerate(papers)
        ],
    }
    sums = []
    for i, paper in enumerate(papers):
        body = f"%PDF-1.4 fake paper {i}\n".encode()
        (root / f"session_{i}").mkdir(parents=True)
        (root / paper["annotated"]).write_bytes(
            body if i != 1 else b"%PDF-1.4 tampered\n"
        )
        sums.append(
            f"{hashlib.sha256(body).hexdigest()}  {fetch_pdfs.local_name(paper['annotated'])}"
        )
    (tmp_path / "sessions.yml").write_text(yaml.safe_dump(sessions))
    (tmp_path / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), handler
    )  # port 0: the OS picks a free one
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield tmp_path, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def run(tmp_path, url):
    return fetch_pdfs.main(
        [
            "--base-url",
            url,
            "--dest",
            str(tmp_path / "pdf"),
            "--sessions",
            str(tmp_path / "sessions.yml"),
            "--sums",
            str(tmp_path / "SHA256SUMS"),
        ]
    )


def test_download_keeps_good_and_refuses_tampered(server, capsys):
    tmp_path, url = server
    assert run(tmp_path, url) == 1, "a refused file must make the command fail"
    out = capsys.readouterr().out
    assert "refused session_1_paper_annotated.pdf: SHA-256" in out
    got = sorted(p.name for p in (tmp_path / "pdf").iterdir())
    assert got == ["session_0_paper_annotated.pdf", "session_2_paper_annotated.pdf"], got
    verified = fetch_pdfs.verified_copies(tmp_path / "pdf", tmp_path / "SHA256SUMS")
    assert sorted(verified) == got


def test_second_run_skips_verified_and_a_fixed_upstream_completes(server, capsys):
    tmp_path, url = server
    run(tmp_path, url)
    (tmp_path / "upstream" / "session_1" / "paper_[annotated].pdf").write_bytes(
        b"%PDF-1.4 fake paper 1\n"
    )
    assert run(tmp_path, url) == 0
    out = capsys.readouterr().out
    assert "ok      session_0_paper_annotated.pdf (already here)" in out
    assert len(fetch_pdfs.verified_copies(tmp_path / "pdf", tmp_path / "SHA256SUMS")) == 3


def test_a_copy_changed_on_disk_is_not_verified(server):
    tmp_path, url = server
    run(tmp_path, url)
    (tmp_path / "pdf" / "session_0_paper_annotated.pdf").write_bytes(b"edited")
    assert "session_0_paper_annotated.pdf" not in fetch_pdfs.verified_copies(
        tmp_path / "pdf", tmp_path / "SHA256SUMS"
    )
