"""Layers against the real server: a course bank read beside the student's own, through the
magics a user types, checked by what recall shows and by what the server's REST API says.

Each test has its own banks, and each planted fact a token no other memory has.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from conftest import Notebook
from helpers import RunningServer, run_command, settled, wait_for

pytestmark = pytest.mark.integration


def token() -> str:
    return f"tok{uuid.uuid4().hex[:10]}"


def rest(server: RunningServer, bank: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.url}/v1/default/banks/{bank}", timeout=60)


def plant(server: RunningServer, bank: str, *facts: str) -> None:
    """Retain ``facts`` into ``bank`` as the teacher's own client would, and wait until they
    are indexed: the course bank this session will only read."""
    with rest(server, bank) as client:
        reply = client.post(
            "/memories",
            json={"items": [{"content": fact, "context": "course"} for fact in facts]},
        )
        assert reply.status_code == 200, reply.text
        settled(client)


def shown(book: Notebook, source: str) -> str:
    """What a cell shows: its value's text form, or its one error line."""
    cell = book.run(source)
    return repr(cell.result) if cell.error is None else str(cell.error)


def line_with(text: str, word: str) -> str:
    return next((line for line in text.splitlines() if word in line), "")


@pytest.fixture
def course_bank(hindsight_server: RunningServer) -> str:
    return f"course-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def student(notebook: Notebook, hindsight_server: RunningServer, bank_id: str) -> Notebook:
    notebook.connect(hindsight_server.url, bank_id)
    return notebook


def read_as_course(book: Notebook, server: RunningServer, bank: str, fact: str) -> None:
    """The teacher's ``fact`` planted in ``bank``, which ``book`` then reads as ``course``."""
    plant(server, bank, fact)
    assert book.run(f"%hindsight layer add {bank} --as course").error is None


def remembered(book: Notebook, fact: str, query: str) -> None:
    assert book.run(f"%retain {fact}").error is None
    wait_for(lambda: fact in shown(book, f"%recall --layer mine {query}"), 60, fact)


def test_a_course_fact_and_my_own_come_back_from_one_recall_each_labelled(
    student: Notebook, hindsight_server: RunningServer, course_bank: str
) -> None:
    word = token()
    course_fact = f"Course rule {word}: always use stratified folds for imbalanced labels."
    my_fact = f"My note {word}: the churn labels are imbalanced, 4 percent positive."
    plant(hindsight_server, course_bank, course_fact)
    remembered(student, my_fact, word)

    added = shown(student, f"%hindsight layer add {course_bank} --as course")
    with rest(hindsight_server, course_bank) as course:
        held = course.get("/memories/list", params={"limit": 1}).json()["total"]
    assert held >= 1
    count = f"{held} memory" if held == 1 else f"{held} memories"
    assert line_with(added, "course —").endswith(f"bank {course_bank} · {count}"), added
    assert "mine —" in added

    cell = student.run(f"%recall {word} stratified folds imbalanced labels")
    assert cell.error is None, cell.text
    result, both = cell.result, repr(cell.result)
    assert "layer: course" in line_with(both, course_fact), both
    assert "layer: mine" in line_with(both, my_fact), both
    assert {m.layer for m in result if word in m.text} == {"course", "mine"}
    html = result._repr_html_()
    assert "<td>course</td>" in html
    assert "<td>mine</td>" in html

    only_course = shown(student, f"%recall --layer course {word} folds labels")
    assert course_fact in only_course
    assert my_fact not in only_course
    only_mine = shown(student, f"%recall --layer mine {word} folds labels")
    assert my_fact in only_mine
    assert course_fact not in only_mine
    unknown = shown(student, f"%recall --layer lab {word}")
    assert unknown.startswith("No layer named 'lab': this session reads mine, course")
    assert "\n" not in unknown

    status = shown(student, "%hindsight status")
    assert f"bank {course_bank} · {count}" in status

    removed = shown(student, "%hindsight layer remove course")
    assert "course —" not in removed
    assert course_fact not in shown(student, f"%recall {word} stratified folds")


def test_every_write_path_refuses_a_layers_memory_and_the_course_bank_is_unchanged(
    student: Notebook, hindsight_server: RunningServer, course_bank: str
) -> None:
    word = token()
    course_fact = f"Course rule {word}: never tune on the test split."
    read_as_course(student, hindsight_server, course_bank, course_fact)
    with rest(hindsight_server, course_bank) as course:
        before = course.get("/memories/list", params={"limit": 100}).json()

    assert student.run(f"_r = %recall {word} test split").error is None
    result: Any = student.ip.user_ns["_r"]
    number = next(n for n, m in enumerate(result, 1) if course_fact in m.text)
    course_id = result[number - 1].id
    refusal = f"#{number} is from the layer 'course', which this session only reads"
    for command in (
        f"%hindsight forget #{number}",
        f"%hindsight correct #{number} tune on it after all",
        f"%hindsight delete #{number} --yes",
        f"%hindsight restore #{number}",
    ):
        said = shown(student, command)
        assert said.startswith(refusal), (command, said)
        assert "\n" not in said
    by_id = shown(student, f"%hindsight forget {course_id}")
    assert "from the layer 'course'" in by_id
    with pytest.raises(ValueError, match="from the layer 'course'"):
        result[number - 1].forget()
    purged = shown(student, f"%hindsight purge-matching {word} --yes")
    assert course_fact not in purged

    with rest(hindsight_server, course_bank) as course:
        after = course.get("/memories/list", params={"limit": 100}).json()
    assert after["total"] == before["total"]
    assert {(m["id"], m["text"]) for m in after["items"]} == {
        (m["id"], m["text"]) for m in before["items"]
    }


def test_a_layer_whose_bank_is_gone_is_skipped_with_one_notice(
    student: Notebook, hindsight_server: RunningServer, course_bank: str
) -> None:
    word = token()
    my_fact = f"My note {word}: the refunds table double-counts Q3."
    remembered(student, my_fact, word)
    student.run(f"%hindsight config layers=gone={course_bank}")  # never made on the server
    said = shown(student, f"%recall {word} refunds")
    assert my_fact in said
    notice = f"(Layer 'gone' (bank {course_bank}) was skipped: there is no such bank.)"
    assert said.splitlines()[1] == notice, said
    assert said.count("skipped") == 1
    listed = shown(student, "%hindsight layer list")
    assert f"gone — bank {course_bank} · cannot be read: there is no such bank" in listed
    refused = shown(student, f"%hindsight layer add {course_bank}-other --as other")
    assert refused.startswith(f"There is no bank '{course_bank}-other' on the server")


def test_a_papermill_run_reads_the_layers_hindsight_layers_names(
    tmp_path: Path, hindsight_server: RunningServer, bank_id: str, course_bank: str
) -> None:
    word = token()
    course_fact = f"Course rule {word}: report recall at 5, not accuracy."
    plant(hindsight_server, course_bank, course_fact)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext hindsight_magic"),
        nbformat.v4.new_code_cell(f"r = %recall {word} report recall\nprint(repr(r))"),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, tmp_path / "homework.ipynb")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "JPY_"))}
    env.update(
        HINDSIGHT_API_URL=hindsight_server.url,
        HINDSIGHT_BANK_ID=bank_id,
        HINDSIGHT_SCOPING="global",
        HINDSIGHT_LAYERS=f"course={course_bank}",
        HINDSIGHT_JOURNAL_PATH=str(tmp_path / "journal.sqlite3"),
        HINDSIGHT_AUTO_RETAIN="false",
        HINDSIGHT_MENTAL_MODELS="false",
    )
    papermill = Path(sys.executable).with_name("papermill")
    command = [str(papermill), "homework.ipynb", "out.ipynb", "--cwd", str(tmp_path)]
    run_command(command, env, tmp_path, 300)
    ran = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    printed = "".join(output.get("text", "") for output in ran.cells[1].outputs)
    assert "layer: course" in line_with(printed, course_fact), printed


def test_a_course_snapshot_is_restored_once_and_read_as_a_layer(
    student: Notebook, hindsight_server: RunningServer, course_bank: str, tmp_path: Path
) -> None:
    import hindsight_magic as hm
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    word = token()
    course_fact = f"Course rule {word}: plot the residuals before trusting the fit."
    plant(hindsight_server, course_bank, course_fact)
    settings = HindsightSettings(
        api_url=hindsight_server.url, bank_id=course_bank, scoping="global", journal_path="off"
    )
    teacher = HindsightSession(settings, start_worker=False)
    try:
        hm.snapshot(tmp_path / "course.zip", session=teacher)
    finally:
        teacher.close()
    gone = httpx.delete(f"{hindsight_server.url}/v1/default/banks/{course_bank}", timeout=60)
    gone.raise_for_status()  # as on a new server: the course is not on it

    added = shown(student, f"%hindsight layer add {tmp_path / 'course.zip'} --as course")
    assert added.splitlines()[0].startswith(f"Restored bank '{course_bank}' from course.zip")
    assert f"course — bank {course_bank} ·" in added
    found = shown(student, f"%recall {word} residuals fit")
    assert "layer: course" in line_with(found, course_fact), found

    student.run("%hindsight layer remove course")
    again = shown(student, f"%hindsight layer add {tmp_path / 'course.zip'} --as course")
    assert again.splitlines()[0] == (
        f"Bank '{course_bank}' is already on the server: read as it is, not restored again."
    )
    refused = shown(student, f"%hindsight layer add {tmp_path / 'missing.zip'}")
    assert refused.startswith("No manifest beside the archive"), refused
    assert "\n" not in refused


class CutOff(httpx.BaseTransport):
    """The real server, except that requests for one bank find nothing listening (as a team
    server that is down would)."""

    def __init__(self, bank: str) -> None:
        self._bank = f"/banks/{bank}/"
        self._real = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self._bank in request.url.path:
            raise httpx.ConnectError("connection refused", request=request)
        return self._real.handle_request(request)

    def close(self) -> None:
        self._real.close()


def test_a_layer_that_cannot_be_reached_is_skipped_and_the_rest_answer(
    hindsight_server: RunningServer, bank_id: str, course_bank: str
) -> None:
    import hindsight_magic as hm
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    word = token()
    course_fact = f"Course rule {word}: log every seed you use."
    plant(hindsight_server, course_bank, course_fact)
    team = f"team-{uuid.uuid4().hex[:8]}"
    plant(hindsight_server, team, f"Team note {word}: the seed is 7.")
    settings = HindsightSettings(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        scoping="global",
        layers=f"course={course_bank},team={team}",
        journal_path="off",
        mental_models=False,
    )
    session = HindsightSession(settings, start_worker=False, transport=CutOff(team))
    try:
        result = hm.recall(f"{word} seed", session=session)
        listed = repr(hm.layers(session=session))
    finally:
        session.close()
    text = repr(result)
    assert course_fact in text
    assert "Team note" not in text
    skipped = [line for line in text.splitlines() if "skipped" in line]
    assert len(skipped) == 1, text
    assert skipped[0].startswith(f"(Layer 'team' (bank {team}) was skipped: ")
    assert f"team — bank {team} · cannot be read: " in listed


def test_reflect_gives_the_course_to_the_server_and_lists_it_with_its_layer(
    student: Notebook, hindsight_server: RunningServer, course_bank: str
) -> None:
    word = token()
    course_fact = f"Course rule {word}: report the confidence interval with every estimate."
    remembered(student, f"My note {word}: the estimate was 0.42.", word)
    read_as_course(student, hindsight_server, course_bank, course_fact)
    cell = student.run(f"%%reflect\nWhat should I report with the {word} estimate?")
    assert cell.error is None, cell.text
    answer = cell.result  # no LLM: the memories that bear on it, from every layer
    assert not answer.answered
    shown = repr(answer).split("\n\n", 1)[1]
    assert "layer: course" in line_with(shown, course_fact), shown
    assert {m.layer for m in answer.based_on.memories if course_fact in m.text} == {"course"}


def test_a_course_the_teacher_revised_shows_its_current_version_to_every_student(
    student: Notebook, hindsight_server: RunningServer, course_bank: str, tmp_path: Path
) -> None:
    """The teacher re-runs the lecture with a cell changed: a student reading the course bank
    sees the revision (saying it replaced an earlier version), not both; and a re-published
    snapshot of the course replaces the one a student's layer was restored from."""
    import time

    from kernels import Kernel

    word = token()
    rule = "# course rule {w}: keep {n} percent of the data for the test set\n{w}_test = {n}"
    env = {
        "HINDSIGHT_API_URL": hindsight_server.url,
        "HINDSIGHT_BANK_ID": course_bank,
        "HINDSIGHT_SCOPING": "global",
        "HINDSIGHT_MENTAL_MODELS": "false",
        "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "teacher.sqlite3"),
        "JPY_SESSION_NAME": "lecture.ipynb",
        "HINDSIGHT_AUTO_RETAIN": "true",  # the student's shell has it off
    }
    teacher = Kernel(env, tmp_path)
    try:
        teacher.run("%load_ext hindsight_magic")
        for percent, archive in ((20, "course-1.zip"), (25, "course-2.zip")):
            teacher.run(rule.format(w=word, n=percent), cell_id="split")
            teacher.run("%hindsight autoretain now")
            teacher.run("%hindsight flush --timeout 60")
            with rest(hindsight_server, course_bank) as client:
                settled(client)
            time.sleep(1)
            teacher.run(f"%hindsight snapshot {tmp_path / archive}")
    finally:
        teacher.shutdown()

    assert student.run(f"%hindsight layer add {course_bank} --as course").error is None
    found = shown(student, f"%recall {word} test set percent")
    line = line_with(found, f"{word}_test")
    assert f"{word}_test = 25" in line, found
    assert "replaces the version of" in line
    assert f"{word}_test = 20" not in found

    # on a server the course is not on yet: the first snapshot, then the re-published one
    student.run("%hindsight layer remove course")
    httpx.delete(f"{hindsight_server.url}/v1/default/banks/{course_bank}", timeout=60)
    first = shown(student, f"%hindsight layer add {tmp_path / 'course-1.zip'} --as course")
    assert first.startswith(f"Restored bank '{course_bank}' from course-1.zip"), first
    old = shown(student, f"%recall {word} test set percent")
    assert f"{word}_test = 20" in old
    student.run("%hindsight layer remove course")
    newer = shown(student, f"%hindsight layer add {tmp_path / 'course-2.zip'} --as course")
    assert "It replaces the snapshot of" in newer.splitlines()[0], newer
    now = shown(student, f"%recall {word} test set percent")
    assert f"{word}_test = 25" in now
    assert f"{word}_test = 20" not in now
    student.run("%hindsight layer remove course")
    again = shown(student, f"%hindsight layer add {tmp_path / 'course-1.zip'} --as course")
    assert "already on the server: read as it is" in again  # an older snapshot never wins
