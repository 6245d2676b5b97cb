"""The Colab copies (tools/colab.py): citations and the bibliography as plain Markdown, and no
notebook uses MyST that the conversion leaves behind."""

import pytest

from colab import (
    colab_copy,
    convert_markdown,
    load_bibliography,
    myst_left,
    repository_url,
)
from conftest import ROOT, load

BIB = load_bibliography()


def test_citations_become_linked_author_year_text():
    cited = []
    text = convert_markdown(
        "As {footcite:t}`dao2022flashattention` show, and others agree"
        " {footcite:p}`milakov2018online,dao2023flashattention2`.",
        BIB,
        cited,
    )
    assert text == (
        "As [Dao et al. (2022)](https://arxiv.org/abs/2205.14135) show, and others agree"
        " ([Milakov and Gimelshein, 2018](https://arxiv.org/abs/1805.02867);"
        " [Dao, 2024](https://arxiv.org/abs/2307.08691))."
    )
    assert cited == [
        "dao2022flashattention",
        "milakov2018online",
        "dao2023flashattention2",
    ]


def test_bibliography_lists_the_cited_works_in_order():
    cited = ["milakov2018online", "dao2022flashattention"]
    text = convert_markdown("## References\n\n```{footbibliography}\n```\n", BIB, cited)
    lines = text.splitlines()[2:]
    assert lines[0].startswith("- Maxim Milakov, Natalia Gimelshein (2018). *Online")
    assert lines[1].startswith(
        "- Tri Dao, Daniel Y. Fu, Stefano Ermon, Atri Rudra, Christopher Ré"
    )
    assert lines[1].endswith("<https://arxiv.org/abs/2205.14135>")


def test_admonitions_become_block_quotes():
    text = convert_markdown("```{warning}\nThe interpreter is slow.\n```", BIB, [])
    assert text == "> **Warning.**\n> The interpreter is slow."


@pytest.mark.parametrize(
    "myst",
    [
        "{ref}`sec`",
        "```{figure} a.png\n```",
        ":::{note}\nx\n:::",
        "(target)=",
        "% a comment",
    ],
)
def test_myst_outside_the_subset_is_reported(myst):
    assert myst_left(convert_markdown(myst, BIB, []))


def test_every_notebook_converts_to_plain_markdown(notebook):
    copy = colab_copy(load(notebook), notebook.name, BIB)
    for i, cell in enumerate(copy["cells"]):
        if cell["cell_type"] == "markdown":
            assert not myst_left(cell["source"]), f"{notebook.name} cell {i}: MyST left"
    assert repository_url() in copy["cells"][1]["source"]
    assert copy["metadata"]["accelerator"] == "GPU"


def test_the_repository_url_is_set_in_one_place():
    text = "\n".join(p.read_text() for p in (ROOT / "tools").glob("*.py"))
    assert "github.com/danielvegamyhre" not in text, "tools read the URL from _config.yml"
