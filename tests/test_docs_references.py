"""docs/design.md is the design reference: nothing points outside the repository for it, every
``docs/design.md §N`` names a section that exists, every ``design.md#anchor`` link lands on a
heading, and every name listed in its §8 imports."""
from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"

OLD_NAME = "DESIGN" + ".md"
OUTSIDE = re.compile(r"\bDESIGN\b|shared/spec")   # the old shorthand ("DESIGN §5") and its path
SECTION_REF = re.compile(r"docs/design\.md\s*(?:,\s*)?§\s*(\d+[a-z]?)")
ANCHOR_REF = re.compile(r"design\.md#([A-Za-z0-9_-]+)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$", re.M)
SECTION_HEADING = re.compile(r"^#{2,3}\s+(\d+[a-z]?)\.\s", re.M)


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):   # not a git checkout (an sdist): walk the sources
        names = [str(p.relative_to(ROOT)) for d in ("src", "tests", "bench", "docs") for p in (ROOT / d).rglob("*")
                 if p.is_file()] + ["README.md", "pyproject.toml", "Makefile"]
    return [ROOT / n for n in names if (ROOT / n).is_file()]


def _texts() -> dict[str, str]:
    out = {}
    for p in _tracked_files():
        if p.resolve() == Path(__file__).resolve():
            continue   # this file spells out the patterns it looks for
        data = p.read_bytes()
        if b"\0" in data[:8192]:
            continue   # binary (checkpoints, images)
        try:
            out[str(p.relative_to(ROOT))] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return out


def _slug(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    t = re.sub(r"[`*_]", "", title.strip().lower())
    t = re.sub(r"[^\w\- ]", "", t)
    return t.replace(" ", "-")


def _design() -> str:
    assert DESIGN.is_file(), "docs/design.md is missing"
    return DESIGN.read_text(encoding="utf-8")


def test_design_doc_exists_with_its_sections():
    ids = SECTION_HEADING.findall(_design())
    for n in ("1", "2", "3", "3a", "4", "5", "6", "7", "7a", "7b", "7c", "8"):
        assert n in ids, f"docs/design.md has no section {n}"
    assert len(ids) == len(set(ids)), f"docs/design.md numbers a section twice: {ids}"


def test_no_file_points_to_a_design_document_outside_the_repository():
    bad = [f"{name}:{i}: {line.strip()[:100]}"
           for name, text in _texts().items()
           for i, line in enumerate(text.splitlines(), 1) if OLD_NAME in line or OUTSIDE.search(line)]
    assert not bad, "references to a design document outside the repository (use docs/design.md §N):\n" + "\n".join(bad)


def test_every_section_reference_exists():
    ids = set(SECTION_HEADING.findall(_design()))
    bad = []
    for name, text in _texts().items():
        refs = SECTION_REF.findall(text)
        if name == "docs/design.md":   # its own bare "§N" cross-references too
            refs += re.findall(r"§(\d+[a-z]?)\b", text)
        bad += [f"{name}: §{r}" for r in refs if r not in ids]
    assert not bad, f"references to sections docs/design.md does not have ({sorted(ids)}):\n" + "\n".join(bad)


def test_every_anchor_link_lands_on_a_heading():
    slugs = {_slug(t) for _, t in HEADING.findall(_design())}
    bad = [f"{name}: #{a}" for name, text in _texts().items() for a in ANCHOR_REF.findall(text) if a not in slugs]
    assert not bad, "links to anchors docs/design.md does not have:\n" + "\n".join(bad)


def _public_names() -> list[str]:
    text = _design()
    start = re.search(r"^## 8\. ", text, re.M)
    assert start, "docs/design.md has no §8"
    rows = [ln for ln in text[start.start():].splitlines() if ln.startswith("|")]   # the tables, not the notes
    return sorted(set(re.findall(r"`(navrl(?:\.\w+)+)`", "\n".join(rows))))


@pytest.mark.parametrize("dotted", _public_names())
def test_public_name_imports(dotted):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as e:
            if e.name is not None and not ".".join(parts[:cut]).startswith(e.name):
                raise   # a dependency is missing, not the name
            continue
        for attr in parts[cut:]:
            assert hasattr(obj, attr), f"docs/design.md §8 names {dotted}, which does not exist"
            obj = getattr(obj, attr)
        return
    pytest.fail(f"docs/design.md §8 names {dotted}, whose module does not import")
