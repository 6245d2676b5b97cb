"""The map of the book: how the sessions build on each other, drawn from papers/sessions.yml.

    python tools/book_map.py           # write figures/book_map.svg (the landing page shows it)
    python tools/book_map.py --check   # exit 1 if figures/book_map.svg is not what it draws

Each session is a box in the lane of the resource it is mostly about (`theme`: compute, memory
or communication; session 1, the foundation, spans them), in session order from left to right;
an arrow runs from each session to those that build on it (`builds_on`).
"""

import argparse
import io
import pathlib
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import yaml  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402
from matplotlib.path import Path  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "figures" / "book_map.svg"
LANES = {  # theme: (row, label, colour)
    "communication": (2, "Communication:\nparallelism, overlap", "#dbe9f6"),
    "compute": (1, "Compute:\nkernels, number formats", "#fde8cf"),
    "memory": (0, "Memory:\nwhat is kept, and where", "#dff2dc"),
}
BOX_W, BOX_H = 0.9, 0.62


def sessions():
    return yaml.safe_load((ROOT / "papers" / "sessions.yml").read_text())["sessions"]


def place(session):
    """The centre of a session's box: x by session number, y by lane (session 1 in the middle)."""
    row = LANES[session["theme"]][0] if session["theme"] in LANES else 1
    return float(session["n"]), 1.15 * row


def box(ax, session, xy):
    """The session's box (session 1, the foundation, spans the three lanes) and its label."""
    (x, y), tall = xy, BOX_H * (3.4 if session["theme"] not in LANES else 1)
    patch = FancyBboxPatch(
        (x - BOX_W / 2, y - tall / 2),
        BOX_W,
        tall,
        boxstyle="round,pad=0.02,rounding_size=0.08",
        fc="white",
        ec="#444",
        lw=0.9,
        zorder=2,
    )
    ax.add_patch(patch)
    name = "\n".join(textwrap.wrap(session["short"], 12, break_long_words=False))
    ax.text(x, y + 0.14, str(session["n"]), ha="center", va="center", fontsize=10,
            weight="bold", zorder=3)  # fmt: skip
    ax.text(x, y - 0.1, name, ha="center", va="center", fontsize=6.5, zorder=3)
    return patch


def centre(patch):
    return patch.get_x() + patch.get_width() / 2, patch.get_y() + patch.get_height() / 2


def arrow(ax, start, end, boxes):
    """An arrow from session `start` to session `end`. Between lanes: straight, clipped to the
    boxes. Within a lane: a curve from the edge of one box to the same edge of the other,
    through the strip between the boxes and the lane's border (0.31 to 0.5 from its middle:
    the apex at 0.44), so that it passes the boxes between them; below the boxes in the
    compute lane, above them in the others."""
    (x0, y0), (x1, y1) = centre(boxes[start]), centre(boxes[end])
    style = dict(arrowstyle="-|>", mutation_scale=12, color="#666", lw=0.8, zorder=1)
    if y0 != y1 or abs(x1 - x0) <= 1:
        ends = dict(patchA=boxes[start], patchB=boxes[end], shrinkA=1, shrinkB=1)
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), **ends, **style))
        return
    side = -1 if y0 == 1.15 * LANES["compute"][0] else 1
    edge = y0 + side * BOX_H / 2
    control = ((x0 + x1) / 2, edge + side * 2 * (0.44 - BOX_H / 2))
    curve = Path(
        [(x0, edge), control, (x1, edge)], [Path.MOVETO, Path.CURVE3, Path.CURVE3]
    )
    ax.add_patch(FancyArrowPatch(path=curve, **style))


def draw(all_sessions):
    plt.rcParams.update({"svg.hashsalt": "book-map", "svg.fonttype": "none"})
    fig, ax = plt.subplots(figsize=(17, 5))
    last = max(s["n"] for s in all_sessions)
    for theme, (row, label, colour) in LANES.items():
        y = 1.15 * row
        ax.add_patch(plt.Rectangle((-1.4, y - 0.5), last + 2.0, 1.0, color=colour, lw=0))
        ax.text(-1.3, y, label, va="center", ha="left", fontsize=9, color="#333")
    boxes = {s["n"]: box(ax, s, place(s)) for s in all_sessions}
    for s in all_sessions:
        for earlier in s["builds_on"]:
            arrow(ax, earlier, s["n"], boxes)
    ax.set_xlim(-1.45, last + 0.65)
    ax.set_ylim(-0.55, 2.85)
    ax.axis("off")
    fig.tight_layout()
    return fig


def svg(all_sessions):
    fig = draw(all_sessions)
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    drawn = svg(sessions())
    if args.check:
        same = OUT.exists() and OUT.read_text() == drawn
        print(f"{OUT.relative_to(ROOT)}: " + ("up to date" if same else "out of date"))
        return 0 if same else 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(drawn)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
