"""The entities a memory is about: what a cell names, what a text capitalises; as sent."""

from __future__ import annotations

from hindsight_magic._capture.entities import MAX_ENTITIES, entities_of
from hindsight_magic._delivery.items import MemoryItem, Route, request_item
from hindsight_magic._delivery.spool import decode, encode

CELL = """# S07 (Harbour Square) logs every return twice since its firmware update
# weather comes from the Eastfield airport feed; AUC checked with XGBoost
MIN_TRIP_S = 60  # under a minute is a failed unlock
trips = load_csv("data/trips_2024_04.csv")
def dedupe(rows):
    return rows
for i in range(3):
    x = i
print("NOTE: the Berkeley Lab sends Q3 numbers on Monday")
%retain magic lines are not Python
"""


def test_a_cell_names_its_files_terms_and_what_it_defines() -> None:
    found = entities_of(code=CELL)
    for name in ("trips_2024_04.csv", "Harbour Square", "Eastfield", "AUC", "XGBoost"):
        assert name in found, found
    for name in ("Berkeley Lab", "Q3", "MIN_TRIP_S", "dedupe"):
        assert name in found, found
    assert "trips" not in found  # a variable named by one word: see below
    assert len(found) <= MAX_ENTITIES


def test_a_number_with_a_dot_stays_whole_and_a_method_call_is_no_entity() -> None:
    text = "PM2.5 exceeds the WHO limit with model V1.2 (scikit-learn, df.groupby); PM10 does not."
    assert entities_of([text]) == ("PM2.5", "WHO", "V1.2", "PM10")
    assert entities_of(["The limit is for PM2."]) == ("PM2",)  # a full stop is not a decimal
    found = entities_of(code="# PM2.5 by station\nweekly = df.groupby('station')['pm25'].mean()")
    assert found == ("PM2.5",)


def test_a_variable_is_an_entity_when_its_name_is_made_of_parts() -> None:
    code = """rng = np.random.default_rng(0)
weekly = readings.resample("W").mean()
exceed = weekly > 15
trips = load()
df2, X_train, y_test = split(trips)
daily_pm25 = weekly.max()
MIN_TRIP_S = 60
stationCount = 12
sensor_12 = readings[12]
def weekly_report(frame):
    exceed = frame > 15
class Station:
    pass
"""
    found = entities_of(code=code)
    assert set(found) == {
        "daily_pm25", "MIN_TRIP_S", "stationCount", "sensor_12", "weekly_report", "Station"
    }  # fmt: skip


def test_no_sentence_starter_date_or_throwaway_name_is_an_entity() -> None:
    text = "Note: The model drops visits on Monday. Context: jupyter. Extract facts. Date: today"
    found = entities_of([text], code="x = 1\ni = 2\ndf = load()\n")
    lowered = {name.lower() for name in found}
    for word in ("note", "the", "monday", "context", "extract", "date", "x", "i", "df"):
        assert word not in lowered, found


def test_a_piece_of_a_long_cell_has_the_names_it_mentions() -> None:
    code = "\n".join(f"reading_{n} = {n}  # bench {n}" for n in range(30))
    piece = "\n".join(f"reading_{n} = {n}  # bench {n}" for n in range(25, 30))
    found = entities_of(code=code, within=piece)
    assert "reading_27" in found
    assert "reading_3" not in found


def test_prose_entities_come_from_a_retained_text() -> None:
    text = "The churn table double-counts Q3 refunds; dedupe on order_id. Ask Maria Lopez."
    assert entities_of([text]) == ("Q3", "order_id", "Maria Lopez")


def test_a_request_carries_the_entities_literally_and_redacted() -> None:
    key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"
    item = MemoryItem(f"Rotate {key} after the Berkeley Lab audit.", "2026-12-03T10:00:00+00:00")
    body = request_item(item, [key])
    names = [entity["text"] for entity in body["entities"]]
    assert "Berkeley Lab" in names
    assert not any(key[3:12] in name for name in names)
    assert key not in body["content"]
    assert body["resolve_entities"] is False  # a variable's name is not merged into another's


def test_a_cell_s_entities_survive_the_spool_and_go_with_its_request() -> None:
    item = MemoryItem(
        "[cell 4]\nMIN_TRIP_S = 60",
        "2026-12-03T10:00:00+00:00",
        metadata={"source": "autoretain", "cells": "4"},
        entities=("MIN_TRIP_S",),
    )
    decoded = decode(encode(Route("bank"), item))
    assert decoded is not None
    assert decoded[2].entities == ("MIN_TRIP_S",)
    assert [e["text"] for e in request_item(decoded[2], [])["entities"]] == ["MIN_TRIP_S"]
