"""``docs/architecture.md`` says what the code has: every public name is in it.

The architecture document is written by hand; this keeps its public face in step with
``hindsight_magic.__all__`` (it once listed "the five functions" beside 21 of them).
"""

from __future__ import annotations

import re
from pathlib import Path

import hindsight_magic as hm

ARCHITECTURE = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()


def test_every_public_name_is_in_the_architecture_document() -> None:
    face = ARCHITECTURE.split("## The public face", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([A-Za-z_][\w]*)`", face))
    missing = sorted(set(hm.__all__) - named)
    assert not missing, f"docs/architecture.md's public face lacks {missing}"


def test_every_module_the_document_names_exists() -> None:
    package = Path(hm.__file__).parent
    named = set(re.findall(r"`(_[a-z_]+(?:/[a-z_]+)*\.py)`", ARCHITECTURE))
    assert named, "no module named"
    missing = sorted(path for path in named if not (package / path).exists())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"
