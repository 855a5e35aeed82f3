"""``jupyter-config/``: the opt-in kernel configs really load the extension; nothing is silent.

Kernels are real (``jupyter_client``), each with its own ``IPYTHONDIR`` holding a copy of an
example file as ``profile_default/ipython_kernel_config.py``, and an empty
``JUPYTER_CONFIG_DIR`` so the user's own configuration cannot interfere.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from helpers import RunningServer
from kernels import Kernel

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "jupyter-config"
EAGER = EXAMPLES / "ipython_kernel_config.example.py"
LAZY = EXAMPLES / "ipython_kernel_config.lazy.example.py"
CONFIG_MARKERS = ("etc/ipython", "etc/jupyter", "_config.d", "profile_default", "nbconfig")
LOADED = "'hindsight_magic' in get_ipython().extension_manager.loaded"


class ConfigKernel(Kernel):
    """A kernel whose cell output comes back stripped (these tests compare whole outputs)."""

    def run(self, code: str, timeout_s: float = 60) -> str:
        return super().run(code, timeout_s).strip()


@pytest.fixture
def start_kernel(tmp_path: Path) -> Iterator[Any]:
    """``start_kernel(config_file_or_None, **env)``: a kernel with that file as its profile."""
    kernels: list[ConfigKernel] = []

    def start(config: Path | None, **env: str) -> ConfigKernel:
        home = tmp_path / f"kernel-{len(kernels)}"
        profile = home / "ipython" / "profile_default"
        profile.mkdir(parents=True)
        (home / "jupyter").mkdir()
        if config is not None:
            shutil.copy(config, profile / "ipython_kernel_config.py")
        env = {
            "IPYTHONDIR": str(home / "ipython"),
            "JUPYTER_CONFIG_DIR": str(home / "jupyter"),
            "HINDSIGHT_JOURNAL_PATH": str(home / "journal.db"),
            **env,
        }
        kernel = ConfigKernel(env, home)
        kernels.append(kernel)
        return kernel

    yield start
    for kernel in kernels:
        kernel.close()


def test_examples_exist_and_say_how_to_use_them() -> None:
    eager, lazy = EAGER.read_text(), LAZY.read_text()
    assert 'c.InteractiveShellApp.extensions = ["hindsight_magic"]' in eager
    assert "c.MagicsManager.lazy_magics" in lazy
    assert "c.HindsightMagics." in lazy
    readme = (EXAMPLES / "README.md").read_text()
    assert EAGER.name in readme
    assert LAZY.name in readme
    # %recall is IPython's own until the extension is loaded: no doc may offer it as lazy
    main_readme = (REPO / "README.md").read_text()
    snippet = main_readme.split("c.MagicsManager.lazy_magics = {", 1)[1].split("}", 1)[0]
    lazy_names = lazy.split("c.MagicsManager.lazy_magics = {", 1)[1].split("}", 1)[0]
    for text in (snippet, lazy_names):
        assert '"retain": "hindsight_magic"' in text
        assert '"recall":' not in text


def test_installing_the_package_adds_no_config_files() -> None:
    files = [str(path) for path in metadata.files("hindsight-magic") or []]
    assert files, "hindsight-magic is not installed"
    assert not [f for f in files if any(marker in f for marker in CONFIG_MARKERS)]
    # and nothing in this environment's config folders mentions the extension
    for folder in ("etc/jupyter", "etc/ipython"):
        root = Path(sys.prefix) / folder
        for path in root.rglob("*") if root.is_dir() else ():
            if path.is_file():
                assert "hindsight_magic" not in path.read_text(errors="replace"), path
    pyproject = (REPO / "pyproject.toml").read_text()
    assert "shared-data" not in pyproject
    assert "data_files" not in pyproject


def test_the_wheel_holds_no_config_and_no_examples(tmp_path: Path) -> None:
    pytest.importorskip("hatchling", reason="building the wheel offline needs hatchling")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path), str(REPO)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("hindsight_magic-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "hindsight_magic/__init__.py" in names
    assert not [n for n in names if ".data/" in n]  # no data files installed outside the package
    assert not [n for n in names if any(marker in n for marker in CONFIG_MARKERS)]
    assert not [n for n in names if "jupyter-config" in n or n.endswith(".example.py")]


@pytest.mark.integration
def test_a_kernel_without_the_config_does_not_load_it(start_kernel: Any) -> None:
    kernel = start_kernel(None)
    assert kernel.run(LOADED) == "False"
    assert "Line magic function `%retain` not found" in kernel.run("%retain nothing")
    assert kernel.run(LOADED) == "False"


@pytest.mark.integration
def test_the_extensions_config_loads_it_at_start(
    start_kernel: Any, hindsight_server: RunningServer
) -> None:
    kernel = start_kernel(EAGER, HINDSIGHT_API_URL=hindsight_server.url)
    assert kernel.run(LOADED) == "True"
    assert kernel.run("%retain --tags jupyter-config Loaded by the kernel config.") == (
        "1 memory queued."
    )
    assert kernel.run("%hindsight flush").startswith("Flushed: 1 memory accepted by the server.")
    # loaded at start: a question in the same cell as %load_ext is a question, not a help request
    asked = kernel.run("%load_ext hindsight_magic\n%recall what did the kernel config load?")
    assert "not found" not in asked
    assert "Loaded by the kernel config." in asked


@pytest.mark.integration
def test_the_lazy_config_loads_it_on_first_use(
    start_kernel: Any, hindsight_server: RunningServer
) -> None:
    kernel = start_kernel(LAZY, HINDSIGHT_API_URL=hindsight_server.url)
    assert kernel.run(LOADED) == "False"
    # As documented: IPython's own %recall (input history) answers until the extension loads.
    assert "Couldn't evaluate or find in history" in kernel.run("%recall xyzzy")
    assert kernel.run(LOADED) == "False"
    started = time.monotonic()
    assert kernel.run("%retain First use loads the extension.") == "1 memory queued."
    assert time.monotonic() - started < 30
    assert kernel.run(LOADED) == "True"
    # c.HindsightMagics.* in the same file reached the settings
    assert kernel.run("%hindsight config retain_every_n_cells") == (
        "retain_every_n_cells = 5   [IPython config]"
    )
    owner = "type(get_ipython().magics_manager.magics['line']['recall'].__self__).__name__"
    assert kernel.run(owner) == "'HindsightMagics'"  # now %recall searches memory
