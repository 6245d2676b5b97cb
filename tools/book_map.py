"""The map of the book: how the sessions build on each other, drawn from papers/sessions.yml.

    python tools/book_map.py           # write figures/book_map.svg (the landing page shows it)
    python tools/book_map.py --check   # exit 1 if figures/book_map.svg is not what it draws

Each session is a box in the lane (column) of the resource it is mostly about (`theme`: compute,
memory or communication; session 1, the foundation, spans them), a row per session from top to
bottom; an arrow runs from each session to those that build on it (`builds_on`).
"""

import argparse
import io
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import yaml  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402
from matplotlib.path import Path  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "figures" / "book_map.svg"
LANES = {  # theme: (column, heading, colour)
    "compute": (0, "Compute:\nkernels, number formats", "#fde8cf"),
    "memory": (1, "Memory:\nwhat is kept, and where", "#dff2dc"),
    "communication": (2, "Communication:\nparallelism, overlap", "#dbe9f6"),
}
BOX_W, BOX_H, ROW = 2.2, 0.62, 1.0  # in lane widths of 3 units and rows of 1


def sessions():
    return yaml.safe_load((ROOT / "papers" / "sessions.yml").read_text())["sessions"]


def place(session):
    """The centre of a session's box: a row per session, top to bottom; the lane's column
    (session 1, the foundation, spans all three)."""
    column = LANES[session["theme"]][0] if session["theme"] in LANES else 1
    return 3.0 * column + 1.5, -ROW * session["n"]


def box(ax, session, xy):
    (x, y), wide = xy, BOX_W if session["theme"] in LANES else 3 * 3.0 - 0.8
    patch = FancyBboxPatch(
        (x - wide / 2, y - BOX_H / 2),
        wide,
        BOX_H,
        boxstyle="round,pad=0.02,rounding_size=0.12",
        fc="white",
        ec="#444",
        lw=0.9,
        zorder=2,
    )
    ax.add_patch(patch)
    ax.text(x, y, f"{session['n']}  {session['short']}", ha="center", va="center",
            fontsize=10, zorder=3)  # fmt: skip
    return patch


def centre(patch):
    return patch.get_x() + patch.get_width() / 2, patch.get_y() + patch.get_height() / 2


def arrow(ax, start, end, boxes):
    """An arrow from session `start` to session `end`. Between lanes, or to the next row:
    straight, clipped to the boxes. Down a lane past other boxes: a curve from the right edge
    of one box to the right edge of the other, through the strip between the boxes and the
    lane's border, so that it passes the boxes between them."""
    (x0, y0), (x1, y1) = centre(boxes[start]), centre(boxes[end])
    if boxes[start].get_width() > BOX_W:  # from the foundation, which spans every lane
        x0 = x1
    style = dict(arrowstyle="-|>", mutation_scale=12, color="#666", lw=0.8, zorder=1)
    if x0 != x1 or abs(y1 - y0) <= ROW:
        ends = dict(patchA=boxes[start], patchB=boxes[end], shrinkA=1, shrinkB=1)
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), **ends, **style))
        return
    edge = x0 + BOX_W / 2
    control = (edge + 2 * 0.3, (y0 + y1) / 2)
    curve = Path(
        [(edge, y0), control, (edge, y1)], [Path.MOVETO, Path.CURVE3, Path.CURVE3]
    )
    ax.add_patch(FancyArrowPatch(path=curve, **style))


def draw(all_sessions):
    plt.rcParams.update({"svg.hashsalt": "book-map", "svg.fonttype": "none"})
    last = max(s["n"] for s in all_sessions)
    fig, ax = plt.subplots(figsize=(8.5, 0.42 * last + 1.2))
    for theme, (column, label, colour) in LANES.items():
        x = 3.0 * column
        ax.add_patch(
            plt.Rectangle((x + 0.05, -last - 0.6), 2.9, last + 0.3, color=colour)
        )
        ax.text(x + 1.5, 0.15, label, ha="center", va="center", fontsize=10.5)
    boxes = {s["n"]: box(ax, s, place(s)) for s in all_sessions}
    for s in all_sessions:
        for earlier in s["builds_on"]:
            arrow(ax, earlier, s["n"], boxes)
    ax.set_xlim(0, 9.0)
    ax.set_ylim(-last - 0.65, 0.75)
    ax.axis("off")
    fig.tight_layout(pad=0.2)
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
