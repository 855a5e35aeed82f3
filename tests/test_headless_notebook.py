"""Which notebook a headless run executes, read from the command line of the kernel's parent.

The runners are stand-ins: real processes whose command lines are papermill's, nbconvert's and
``jupyter execute``'s (a script of that name, or a module run with ``-m``) and which start a
Python child where the runner would start the kernel, in the folder the runner starts it in
(nbconvert and ``jupyter execute``: the notebook's). The real runners, a kernel and the server
are in ``tests/memory/test_headless_server.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# what the runner starts: the "kernel", in the folder it is told, which reports what it found
RUNNER = """\
import os, subprocess, sys
probe = os.environ["PROBE"]
done = subprocess.run([sys.executable, "-c", probe], cwd=os.environ["KERNEL_CWD"])
sys.exit(done.returncode)
"""
PROBE = """\
import json
from hindsight_magic._machine import headless_notebook, headless_notebook_path
found = headless_notebook()
path = headless_notebook_path()
print(json.dumps(found and [found.name, str(found.path) if found.path else None, str(path)]))
"""


def run_as(folder: Path, runner: list[str], args: list[str], kernel_cwd: Path) -> object:
    """What the kernel finds when ``runner args`` (run in ``folder``) starts it."""
    stand_ins = folder / "stand-ins"
    (stand_ins / "bin").mkdir(parents=True, exist_ok=True)
    for module in ("nbconvert", "papermill"):  # what ``python -m nbconvert`` runs, here
        (stand_ins / module).mkdir(exist_ok=True)
        (stand_ins / module / "__init__.py").write_text("")
        (stand_ins / module / "__main__.py").write_text(RUNNER)
    env = {**os.environ, "PROBE": PROBE, "KERNEL_CWD": str(kernel_cwd)}
    if runner[0] == "-m":
        command = [sys.executable, *runner]
        env["PYTHONPATH"] = os.pathsep.join([str(stand_ins), env.get("PYTHONPATH", "")])
    else:
        script = stand_ins / "bin" / runner[0]
        script.write_text(RUNNER)
        command = [sys.executable, str(script)]
    done = subprocess.run(
        [*command, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("runner", "args"),
    [
        (["jupyter-nbconvert"], ["--to", "notebook", "--execute", "runs/report.ipynb"]),
        (["jupyter-nbconvert"], ["--execute", "runs/report.ipynb", "--output", "out.ipynb"]),
        (["-m", "nbconvert"], ["--execute", "--output=out.ipynb", "runs/report.ipynb"]),
        (["jupyter-execute"], ["runs/report.ipynb", "--output=out.ipynb"]),
        (["papermill"], ["-p", "source", "old.ipynb", "runs/report.ipynb", "out.ipynb"]),
        (["-m", "papermill"], ["runs/report.ipynb", "runs/out.ipynb", "--cwd", "runs"]),
    ],
    ids=[
        "jupyter nbconvert",
        "--output",
        "python -m nbconvert",
        "jupyter execute",
        "papermill",
        "python -m papermill",
    ],
)
def test_a_headless_run_names_its_notebook_and_where_it_is(
    tmp_path: Path, runner: list[str], args: list[str]
) -> None:
    """As the command line gives it (what provenance shows), and its absolute path, against
    the runner's working directory (the kernel runs in the notebook's folder)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    path = str(runs / "report.ipynb")
    assert run_as(tmp_path, runner, args, runs) == ["runs/report.ipynb", path, path]


def test_of_several_notebooks_the_one_in_the_kernel_s_folder_is_named(tmp_path: Path) -> None:
    """nbconvert runs each notebook it is given in a kernel started in that notebook's folder;
    two in one folder cannot be told apart."""
    for folder in ("first", "second"):
        (tmp_path / folder).mkdir()
    args = ["--execute", "first/a.ipynb", "second/b.ipynb"]
    found = run_as(tmp_path, ["jupyter-nbconvert"], args, tmp_path / "second")
    path = str(tmp_path / "second" / "b.ipynb")
    assert found == ["second/b.ipynb", path, path]
    args = ["--execute", "second/a.ipynb", "second/b.ipynb"]
    assert run_as(tmp_path, ["jupyter-nbconvert"], args, tmp_path / "second") is None


def test_an_absolute_path_and_a_url_are_named_as_given(tmp_path: Path) -> None:
    notebook = str(tmp_path / "report.ipynb")
    args = ["--execute", notebook]
    assert run_as(tmp_path, ["jupyter-nbconvert"], args, tmp_path) == [notebook] * 3
    url = "s3://reports/weekly.ipynb"
    assert run_as(tmp_path, ["papermill"], [url, "out.ipynb"], tmp_path) == [url, None, "None"]


def test_other_parents_name_no_notebook(tmp_path: Path) -> None:
    """A Python script (``pm.execute_notebook`` leaves no trace), or a tool that is not a
    runner, with notebooks on its command line: no name (the ``notebook`` setting gives one)."""
    for runner in (["run_reports.py"], ["jupyter-trust"], ["nbconvert-helper"]):
        assert run_as(tmp_path, runner, ["report.ipynb"], tmp_path) is None
