"""Let ``%recall what did we decide?`` be a question, not a help request.

IPython reads a line ending in ``word?`` as ``%pinfo word``. For lines that call this
extension's line magics with text, this input transformer (registered on load, removed on
unload, and touching no other line) turns the line into the same ``run_line_magic`` call IPython
would make, with the text verbatim. ``%recall?`` alone still shows the help.
"""

from __future__ import annotations

import re

MAGICS = ("retain", "recall", "reflect")
_LINE = re.compile(
    r"^(?P<indent>\s*)(?P<target>(?:[A-Za-z_][\w.]*\s*=\s*)?)"
    rf"%(?P<name>{'|'.join(MAGICS)})(?P<sep>\s+)(?P<text>\S.*?\?+)\s*$"
)


def keep_question_marks(lines: list[str]) -> list[str]:
    """Rewrite ``%recall text?`` lines as explicit magic calls; other lines are untouched."""
    if not any("?" in line for line in lines):
        return lines
    result = []
    for line in lines:
        match = _LINE.match(line.rstrip("\n"))
        if match is None or match.group("text").startswith("?"):
            result.append(line)
            continue
        name, text = match.group("name"), match.group("text")
        call = f"get_ipython().run_line_magic({name!r}, {text!r})"
        newline = "\n" if line.endswith("\n") else ""
        result.append(f"{match.group('indent')}{match.group('target')}{call}{newline}")
    return result
