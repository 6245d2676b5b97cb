"""Presenting live: JupyterLab with RISE opens a session notebook (its Colab copy, which reads
as plain Markdown) as a slideshow. A screenshot of its first slide goes to _build/screenshots/.

RISE 0.43's own bundle logs "Maximum call stack size exceeded" in the console, with any
notebook (a two-cell one too), so this test checks what the presenter sees, not the console."""

import secrets
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from test_browser import SHOTS

pytestmark = pytest.mark.site
NOTEBOOK = "02_flash_attention.ipynb"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def jupyter_lab(site):
    port, token = free_port(), secrets.token_hex(8)
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        "--allow-root",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={site.parent}",
    ]
    lab = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    else:
        lab.kill()
        pytest.fail("JupyterLab did not start in 60 s")
    yield base, token
    lab.terminate()
    lab.wait(timeout=30)


def test_rise_presents_a_session_notebook(site, jupyter_lab, browser):
    base, token = jupyter_lab
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{base}/rise/colab/sessions/{NOTEBOOK}?token={token}")  # under _build/
    slide = page.wait_for_selector(".reveal .slides section.present", timeout=60_000)
    page.wait_for_timeout(2000)  # MathJax
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"rise__{NOTEBOOK}.png"))
    assert "Session 2: FlashAttention" in slide.inner_text()
    assert page.locator(".reveal .slides section").count() > 10, "one section per slide"
    assert page.locator("mjx-container").count() > 0, "the math is typeset"
    assert "{footcite" not in page.content(), "citations show as text, not MyST roles"
    page.close()
