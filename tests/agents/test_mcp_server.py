"""``hindsight-magic mcp`` against the real server, driven by the official SDK's client over
stdio, beside real kernels: the notebook and its agents share one memory."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import (
    PLANTED_KEY,
    RunningServer,
    closing_all,
    free_port,
    server_settled,
    settled,
    wait_for,
)
from kernels import Kernel
from mcpkit import AGENT, error_line

pytestmark = pytest.mark.integration

TOOLS = {"recall", "retain", "reflect", "forget", "restore", "status", "verify"}


def token() -> str:
    return f"tok{uuid.uuid4().hex[:10]}"


@pytest.fixture
def env(mcp_env: dict[str, str], hindsight_server: RunningServer) -> dict[str, str]:
    return {**mcp_env, "HINDSIGHT_API_URL": hindsight_server.url}


@pytest.fixture
def kernel_in(env: dict[str, str]) -> Iterator[Any]:
    """``kernel_in(folder)``: a real kernel started there, on the same server and journal."""

    def start(folder: Path) -> Kernel:
        kernel = Kernel(env, folder)
        kernel.run("%load_ext hindsight_magic")
        return kernel

    with closing_all(start) as started:
        yield started


def test_the_sdk_client_lists_retains_recalls_reflects_and_forgets(
    mcp_client: Any, project_dir: Path, env: dict[str, str]
) -> None:
    agent = mcp_client(project_dir, env)
    tools = {tool.name: tool for tool in agent.tools()}
    assert set(tools) == TOOLS
    assert all(tool.description for tool in tools.values())
    for tool in tools.values():  # as written, not with the docstring's indentation
        assert not re.search(r"\n\s", tool.description or ""), tool.description
    assert {"query", "since", "until", "tags", "max_results", "as_of"} <= set(
        tools["recall"].input_schema["properties"]
    )
    word = token()
    retained = agent.text("retain", text=f"The {word} table double-counts Q3 refunds.")
    assert project_dir.name.lower() in retained

    found = agent.call("recall", query=f"{word} refunds")
    text = found.content[0].text
    assert f"The {word} table double-counts Q3 refunds." in text
    assert f"agent ({AGENT})" in text
    assert "<memories>" in text
    memory = next(m for m in found.structured_content["memories"] if word in m["text"])
    assert memory["handle"].startswith("#")
    assert memory["id"]

    answer = agent.call("reflect", question=f"What do we know about the {word} table?")
    assert not answer.is_error
    reply = answer.structured_content  # the server has no LLM: the memories, and a line
    assert reply["answered"] is False
    assert reply["note"].startswith("No answer was written: ")
    assert any(word in source["text"] for source in reply["sources"])
    assert "mock response" not in answer.content[0].text

    assert not agent.call("forget", id=memory["id"], reason="stale").is_error
    again = agent.call("recall", query=f"{word} refunds")
    assert memory["id"] not in {m["id"] for m in again.structured_content["memories"]}
    assert not agent.call("restore", id=memory["id"]).is_error
    assert "ok (Hindsight" in agent.text("status")
    assert word in agent.resource("hindsight://latest")

    # a fact dated when it was true is found in that window, and not in this week's
    assert "timestamp" in tools["retain"].input_schema["properties"]
    census = f"The {word} census moved to drones."
    assert not agent.call("retain", text=census, timestamp="2025-03-14").is_error
    march = agent.text("recall", query=f"{word} census", since="2025-03-01", until="2025-03-31")
    assert census in march
    assert census not in agent.text("recall", query=f"{word} census", since="7d")


def test_a_kernel_retain_not_yet_sent_is_found_by_the_agent_at_once(
    mcp_client: Any, kernel_in: Any, project_dir: Path, env: dict[str, str]
) -> None:
    kernel = kernel_in(project_dir)
    agent = mcp_client(project_dir, env)
    agent.tools()
    word = token()
    assert "queued" in kernel.run(f"%retain The {word} column is in cents, not dollars.")
    text = agent.text("recall", query=f"{word} column cents")  # one call, no waiting
    assert f"The {word} column is in cents, not dollars." in text
    kernel.run("%hindsight flush")  # the kernel still delivers it: one document, same id
    recalled = kernel.run(
        f"r = %recall {word} column cents\nprint(len([m for m in r if '{word}' in m.text]))"
    )
    assert recalled.strip().splitlines()[-1] == "1"


def test_the_agent_retain_is_found_by_a_kernel_with_agent_provenance(
    mcp_client: Any, kernel_in: Any, project_dir: Path, env: dict[str, str]
) -> None:
    agent = mcp_client(project_dir, env)
    kernel = kernel_in(project_dir)
    word = token()
    agent.text("retain", text=f"Dedupe the {word} table on order_id before joins.")
    shown = kernel.run(f"%recall {word} dedupe order_id")
    assert f"Dedupe the {word} table on order_id before joins." in shown
    assert f"agent ({AGENT})" in shown
    fields = kernel.run(
        f"r = %recall {word} dedupe\nm = next(m for m in r if '{word}' in m.text)\n"
        "print(m.provenance.source, m.provenance.agent, m.provenance.agent_version, "
        "m.provenance.project)"
    )
    assert fields.strip().splitlines()[-1] == f"agent {AGENT} 1.2.3 {project_dir.name.lower()}"


@contextlib.contextmanager
def cpu_burner(server_url: str) -> Iterator[None]:
    """Four processes spinning on two cores: the load at which an agent's retain was missed
    by the next read in two runs of three. Started once the server has finished earlier
    tests' work, so that what is measured is this test's retains under load."""
    import subprocess
    import sys

    server_settled(server_url)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(10)


def test_an_agent_retain_said_found_is_found_by_a_kernel_beside_a_cpu_burner(
    mcp_client: Any,
    kernel_in: Any,
    project_dir: Path,
    env: dict[str, str],
    hindsight_server: RunningServer,
) -> None:
    """What the agent's retain guarantees when it returns is true: when it says the notebooks
    find it now, the next read does (unless that read itself times out on the starved server:
    then the memory must be found once the load is gone); when it says the server is still
    indexing or too slow and the memory is queued, the memory is found once the load is gone."""
    agent = mcp_client(project_dir, env)
    kernel = kernel_in(project_dir)
    later = []
    with cpu_burner(hindsight_server.url):
        for _ in range(2):
            word = token()
            fact = f"The {word} sensor drifts after 40 minutes."
            said = agent.call("retain", text=fact).content[0].text
            shown = kernel.run(f"%recall {word} sensor drifts")  # at once, no waiting
            if "finds it now" in said and "timed out" in shown:
                later.append((word, fact))  # the read itself could not be done in time here
            elif "finds it now" in said:
                assert fact in shown, (said, shown)
            else:  # the agent was told the memory is not there yet, and why
                assert "still indexing" in said or "The memory is queued" in said, said
                later.append((word, fact))
    for word, fact in later:
        found = wait_for(
            lambda word=word: agent.text("recall", query=f"{word} sensor drifts"),
            120,
            f"the queued memory {word}",
            every_s=1,
            until=lambda text, fact=fact: fact in text,
        )
        assert fact in found


def test_the_agent_reads_a_revised_cell_as_current_and_as_of_before_the_revision(
    mcp_client: Any, project_dir: Path, env: dict[str, str]
) -> None:
    """A notebook cell changed between two runs: the agent's recall shows the revision,
    saying it replaced an earlier version; as of a moment before, the earlier one."""
    import time
    from datetime import datetime

    word = token()
    cell = "# the {w} threshold: flag sessions over {n} minutes\n{w}_threshold = {n}"
    kernel = Kernel(
        {**env, "HINDSIGHT_AUTO_RETAIN": "true", "JPY_SESSION_NAME": "sessions.ipynb"},
        project_dir,
    )
    try:
        kernel.run("%load_ext hindsight_magic")
        for minutes in (30, 45):
            if minutes == 45:
                before = datetime.now().astimezone().isoformat()
                time.sleep(1.5)
            kernel.run(cell.format(w=word, n=minutes), cell_id="threshold")
            kernel.run("%hindsight autoretain now")
            kernel.run("%hindsight flush")
            time.sleep(1)
    finally:
        kernel.shutdown()
    agent = mcp_client(project_dir, env)
    query = f"what is the {word} threshold for sessions?"
    now = wait_for(
        lambda: agent.text("recall", query=query),
        60,
        "the revision indexed and the earlier version superseded",
        every_s=1,
        until=lambda text: f"{word}_threshold = 45" in text and "= 30" not in text,
    )
    line = next(line for line in now.splitlines() if f"{word}_threshold = 45" in line)
    assert "replaces the version of" in line
    was = agent.text("recall", query=query, as_of=before)
    assert f"{word}_threshold = 30" in was
    assert f"{word}_threshold = 45" not in was
    assert "as-of" in error_line(agent.call("recall", query=query, as_of="the day before"))


def test_an_agent_in_project_b_does_not_see_project_a(
    mcp_client: Any, tmp_path: Path, env: dict[str, str]
) -> None:
    folder_a, folder_b = tmp_path / f"a{token()}", tmp_path / f"b{token()}"
    folder_a.mkdir(), folder_b.mkdir()
    word = token()
    mcp_client(folder_a, env).text("retain", text=f"The {word} survey ran in May.")
    agent_b = mcp_client(folder_b, env)
    found = agent_b.call("recall", query=f"{word} survey May")
    assert word not in found.content[0].text
    assert found.structured_content["tags"] == [f"project:{folder_b.name.lower()}"]


def test_the_agents_recall_labels_each_memory_with_its_layer(
    mcp_client: Any, project_dir: Path, env: dict[str, str], hindsight_server: RunningServer
) -> None:
    word = token()
    course = f"course-{uuid.uuid4().hex[:10]}"
    course_fact = f"Course rule {word}: calibrate the {word} sensor every morning."
    with httpx.Client(base_url=f"{hindsight_server.url}/v1/default/banks/{course}") as bank:
        bank.post(
            "/memories", json={"items": [{"content": course_fact}]}, timeout=60
        ).raise_for_status()
        settled(bank)
    agent = mcp_client(project_dir, {**env, "HINDSIGHT_LAYERS": f"course={course}"})
    my_fact = f"The {word} sensor drifted 2 degrees today."
    agent.text("retain", text=my_fact)
    found = agent.call("recall", query=f"{word} sensor calibrate drift")
    text = found.content[0].text
    assert "layer: course" in next(line for line in text.splitlines() if course_fact in line)
    assert "layer: mine" in next(line for line in text.splitlines() if my_fact in line)
    layers = {m["text"]: m["layer"] for m in found.structured_content["memories"]}
    assert layers[course_fact] == "course"
    assert layers[my_fact] == "mine"
    assert found.structured_content["layers"] == ["mine", "course"]


def test_a_planted_key_never_reaches_the_server_or_the_output(
    mcp_client: Any, project_dir: Path, env: dict[str, str], hindsight_server: RunningServer
) -> None:
    agent = mcp_client(project_dir, env)
    word = token()
    said = agent.text("retain", text=f"The {word} export uses the key {PLANTED_KEY} for S3.")
    assert PLANTED_KEY not in said
    found = agent.text("recall", query=f"{word} export key")
    assert word in found
    assert PLANTED_KEY not in found
    assert "[REDACTED]" in found
    listed = httpx.get(
        f"{hindsight_server.url}/v1/default/banks/jupyter/memories/list",
        params={"q": word, "limit": 50},
    ).json()
    assert listed["items"]
    assert PLANTED_KEY not in str(listed)


class Forwarder:
    """A TCP port that forwards to the real server once opened: a dead server, then a fixed one."""

    def __init__(self, target: str) -> None:
        self.port = free_port()
        host, port = target.removeprefix("http://").split(":")
        self._target = (host, int(port.rstrip("/")))
        self._listener: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def open(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()


def test_a_dead_server_and_bad_input_are_error_results_and_the_next_call_works(
    mcp_client: Any, project_dir: Path, env: dict[str, str], hindsight_server: RunningServer
) -> None:
    forwarder = Forwarder(hindsight_server.url)
    agent = mcp_client(project_dir, {**env, "HINDSIGHT_API_URL": forwarder.url})
    try:
        queued = error_line(agent.call("retain", text="Retained while the server is down."))
        assert forwarder.url in queued
        assert "The memory is queued" in queued
        dead = error_line(agent.call("recall", query="anything"))
        assert forwarder.url in dead
        assert "HINDSIGHT_API_URL" in dead
        assert "Nothing to search for" in error_line(agent.call("recall", query="  "))
        assert "max_results" in error_line(agent.call("recall", query="x", max_results="many"))
        assert "max_results" in error_line(agent.call("recall", query="x", max_results=True))
        assert "since" in error_line(agent.call("recall", query="x", since="the other day"))
        forwarder.open()  # the server is back
        word = token()
        wait_for(lambda: not agent.call("status").is_error, 30, "the server reachable again")
        agent.text("retain", text=f"The {word} job runs nightly.")
        assert f"The {word} job runs nightly." in agent.text("recall", query=f"{word} nightly")
    finally:
        forwarder.close()


def test_the_http_transport_serves_the_same_tools_to_the_token_holder_only(
    project_dir: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Any local process could call every tool over HTTP: the server takes a bearer token,
    made on first use, printed when it starts and in ``--print-config``."""
    import json
    import os
    import subprocess

    import anyio
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcpkit import COMMAND

    port = free_port()
    env = {**env, "HINDSIGHT_MAGIC_DATA_DIR": str(tmp_path / "data")}  # no token made yet
    args = ["mcp", "--transport", "http", "--port", str(port), "--project", str(project_dir)]
    server = subprocess.Popen(
        [COMMAND, *args],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    async def use(token: str) -> tuple[set[str], Any]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (
                read,
                write,
                *_,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            return tools, await session.call_tool("recall", {"query": "anything at all"})

    try:
        said: list[str] = []  # what it says when it starts (read aside: it may say nothing)
        threading.Thread(target=lambda: said.extend(server.stderr or ()), daemon=True).start()
        wait_for(lambda: any("Ctrl-C" in line for line in said), 30, "the start message")
        text = "".join(said)
        assert f"http://127.0.0.1:{port}/mcp" in text, text
        assert "Ctrl-C" in text, text
        token = next(line.split()[-1] for line in said if "Bearer" in line)

        def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_for(listening, 30, "the MCP server listening")
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        url = f"http://127.0.0.1:{port}/mcp"
        for wrong in ({}, {"Authorization": "Bearer not-the-token"}):
            assert httpx.post(url, json=hello, headers=wrong, timeout=30).status_code == 401
        tools, found = anyio.run(use, token)
        printed = subprocess.run(
            [COMMAND, *args, "--print-config", "claude"],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.terminate()
        server.wait(30)
    assert tools == TOOLS
    assert not found.is_error
    entry = json.loads(printed.stdout)["mcpServers"]["hindsight-magic"]
    assert entry["url"] == f"http://127.0.0.1:{port}/mcp"
    assert entry["headers"] == {"Authorization": f"Bearer {token}"}
