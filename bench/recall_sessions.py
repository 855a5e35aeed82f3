"""Notebook sessions, planted facts and questions for the recall-quality benchmark.

``bench/recall_quality.py`` runs these sessions cell by cell in real IPython kernels with
auto-retain on, then asks the questions and checks whether a memory holding the answer comes
back in the top 5. The benchmark only measures something real if the test collection is built
like an IR test collection, so this module is written to these rules:

- **Three personas, three vocabularies.** A data scientist forecasting bike-share demand, a
  microbiology lab's experiment log, and a teacher preparing an intro-statistics course. Each is
  35-50 cells of ordinary notebook work (loading, cleaning, helpers, small computations, looking
  at values) with the facts spread from the first cells to the last: a fact in cell 3 and one in
  cell 40 test different stretches of the transcript stream.
- **Six ways a fact is left in a notebook** (``FACT_KINDS``), each at least 10 times: a
  ``#`` comment, a printed note, a named value with a trailing comment, a result the cell shows
  (the answer is computed, so it lives only in the output), a ``%retain`` line (a deliberate
  memory), and an error message (the answer is in the exception the kernel shows). Kinds whose
  answer lives only in an output test whether outputs are retained at all; a plain BM25 over the
  cells' sources cannot find those.
- **Answers are short distinctive substrings** (a value, a name, an identifier) that occur in
  their own cell and in no other cell of any session, planted or distractor: a retrieved text
  holding one can only have come from that fact's cell. ``check`` verifies this over sources,
  and ``__main__`` also over everything the cells print, show or raise.
- **Questions are paraphrases**, asked as a person would a week later, in two sets; no question
  contains an answer, and each is answered by one fact. ``Fact.question``, the main set, is the
  issue's kind ("what did we decide about outliers?", "which file had the broken dates?"): it
  shares exactly one word with its cell, the fact's subject, and paraphrases the rest, because
  that is how people ask for what a notebook decided. ``Fact.strict``, the harder second set,
  shares at most one word of six or more letters with the cell and most often none, so that
  lexical overlap alone cannot find the cell and only retrieval by meaning, which is what
  long-term memory is for, does.
- **Distractors** (``distractor_sessions``) are generated from templates, deterministic from a
  seed: weather stations, stock levels, web logs, box scores, sequencing QC, budgets, sensors …
  in the same style (comments, named values, printed notes, the odd ``%retain`` decision about
  their own topic), so the planted facts compete with ~1 000 realistic cells. A generated cell
  that happens to contain a planted answer is drawn again, for any seed.
- **Everything runs** top to bottom in a fresh Python 3.10+ kernel with the standard library
  only, each cell in well under 0.1 s; only ``error message`` fact cells raise, and no later cell
  depends on one. Results are kept short so the extension's output caps (1 000 characters of a
  result, 500 of an error) never cut an answer off.

Run ``python -m bench.recall_sessions`` for the counts and every self-check, including executing
all cells.
"""

from __future__ import annotations

import ast
import contextlib
import io
import random
import re
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

FACT_KINDS = ("comment", "printed note", "named value", "result", "%retain", "error message")
SESSION_KINDS = ("data analysis", "lab log", "teaching", "distractor")
RESULT_CAP = 1000  # the extension keeps this much of a cell's shown value …
ERROR_CAP = 500  # … and this much of its "Type: message" error (_capture/transcript.py)
CELL_SECONDS = 0.1


@dataclass(frozen=True)
class Fact:
    """One planted fact: how it was left, its two questions, what counts as found."""

    kind: str  # one of FACT_KINDS: how the fact was left in the cell
    # the kind of question: names the fact's subject (its one word in common with the
    # cell), paraphrases the rest
    question: str
    answers: tuple[str, ...]  # substrings; a retrieved text containing ANY of them is a hit
    # the previous, stricter question: at most one word of six or more letters in common with
    # the cell, most often none at all (a harder second set)
    strict: str = ""


@dataclass(frozen=True)
class Cell:
    """One notebook cell as typed, and the fact planted in it (if any)."""

    source: str
    fact: Fact | None = None


@dataclass(frozen=True)
class Session:
    """One notebook: its file name, what kind of work it is, and its cells in order."""

    notebook: str
    kind: str  # "data analysis" | "lab log" | "teaching" | "distractor"
    cells: tuple[Cell, ...]


def _src(source: str) -> str:
    """Cell text written indented in this module, as the person typed it."""
    return textwrap.dedent(source).strip("\n")


def _cell(source: str) -> Cell:
    return Cell(_src(source))


def _fact(source: str, kind: str, question: str, *answers: str, strict: str) -> Cell:
    return Cell(_src(source), Fact(kind, question, answers, strict))


def _retain(text: str, question: str, *answers: str, strict: str) -> Cell:
    """A ``%retain`` cell: the whole cell is the one magic line."""
    return Cell(f"%retain {text}", Fact("%retain", question, answers, strict))


# ---------------------------------------------------------------------------------------------
# The planted sessions
# ---------------------------------------------------------------------------------------------


def _bike_share() -> Session:
    """A data scientist forecasting hourly departures per dock for a city bike share."""
    cells = [
        _cell(
            r"""
            import csv
            import io
            import random
            import statistics
            from collections import Counter, defaultdict
            from datetime import date, datetime, timedelta
            """
        ),
        _fact(
            r"""
            # trips_2024_04.csv writes dates day-first (05/04/2024 is 5 April); March is ISO
            MARCH_HEAD = '''trip_id,started_at,station,duration_s,rider
            m-000001,2024-03-01 06:02:11,S03,412,member
            m-000002,2024-03-01 06:05:40,S11,1290,casual'''
            APRIL_HEAD = '''trip_id,started_at,station,duration_s,rider
            a-000001,01/04/2024 05:58:30,S07,655,member
            a-000002,05/04/2024 06:01:12,S02,808,member'''
            list(csv.DictReader(io.StringIO(APRIL_HEAD)))[1]
            """,
            "comment",
            "Which file had the broken dates?",
            "trips_2024_04.csv",
            strict="Which monthly file had the day and month the wrong way round?",
        ),
        _cell(
            r"""
            def parse_ts(text):
                for fmt in ("%Y-%m-%d %H:%M:%S", "%d/%m/%Y %H:%M:%S"):
                    try:
                        return datetime.strptime(text, fmt)
                    except ValueError:
                        pass
                raise ValueError(f"unparseable timestamp {text!r}")


            parse_ts("05/04/2024 06:01:12"), parse_ts("2024-03-01 06:02:11")
            """
        ),
        _cell(
            r"""
            # full months rebuilt from the ops team's hourly profile (same seed as their report)
            STATIONS = [f"S{i:02d}" for i in range(1, 21)]
            WEEKDAY_SHAPE = [1, 0, 0, 0, 1, 3, 8, 14, 18, 10, 7, 8,
                             9, 8, 8, 10, 14, 19, 15, 10, 7, 5, 3, 2]
            CASUAL_RATE = {"S18": 0.62, "S04": 0.41}


            def make_trips(month, seed):
                rng = random.Random(seed)
                trips = []
                day = date(2024, month, 1)
                while day.month == month:
                    for hour, weight in enumerate(WEEKDAY_SHAPE):
                        if day.weekday() >= 5:
                            weight = max(0, 11 - abs(hour - 14))
                        for _ in range(rng.randint(0, weight)):
                            station = rng.choice(STATIONS)
                            ebike = rng.random() < 0.3
                            duration = int(rng.lognormvariate(6.4, 0.5) * (1.4 if ebike else 1))
                            if rng.random() < 0.03:
                                duration = rng.randint(4, 59)
                            elif rng.random() < 0.004:
                                duration = rng.randint(7 * 3600, 30 * 3600)
                            start = datetime(2024, month, day.day, hour, rng.randrange(60))
                            casual = rng.random() < CASUAL_RATE.get(station, 0.25)
                            trip = {"start": start, "station": station, "duration_s": duration,
                                    "rider": "casual" if casual else "member", "ebike": ebike}
                            trips.append(trip)
                            if station == "S07" and rng.random() < 0.5:
                                trips.append(dict(trip))
                    day += timedelta(days=1)
                return trips
            """
        ),
        _cell(
            r"""
            march = make_trips(3, seed=3)
            april = make_trips(4, seed=4)
            len(march), len(april)
            """
        ),
        _cell(
            r"""
            march[:2]
            """
        ),
        _fact(
            r"""
            MIN_TRIP_S = 60  # under a minute is a failed unlock, not a ride
            short = [t for t in march + april if t["duration_s"] < MIN_TRIP_S]
            len(short), round(100 * len(short) / len(march + april), 1)
            """,
            "named value",
            "What's the minimum length for a ride to count?",
            "MIN_TRIP_S = 60",
            "failed unlock",
            strict="How brief can a ride be before we throw it away?",
        ),
        _cell(
            r"""
            durations = sorted(t["duration_s"] for t in march + april)
            [round(q) for q in statistics.quantiles(durations, n=10)]
            """
        ),
        _fact(
            r"""
            night = [t for t in march if t["start"].date() == date(2024, 3, 31)
                     and t["start"].hour < 4]
            print(len(night), "trips before 04:00 on 31 March")
            print("NOTE: the summer-time switch on 31 March makes end minus start negative "
                  "for rides across 02:00; use the dock's own duration_s, never end - start")
            """,
            "printed note",
            "Why did some rides end up with a length below zero?",
            "summer-time switch",
            strict="Why did a few rides come out with times below zero?",
        ),
        _fact(
            r"""
            MAX_TRIP_H = 6  # longer rentals are lost or stolen bikes; ops reports those separately
            long_ones = [t for t in march + april if t["duration_s"] > MAX_TRIP_H * 3600]
            len(long_ones), Counter(t["station"] for t in long_ones).most_common(3)
            """,
            "named value",
            "What's the upper limit on rental length, and why?",
            "MAX_TRIP_H = 6",
            "lost or stolen",
            strict="What's the upper limit on ride length, and why?",
        ),
        _cell(
            r"""
            def clean(trips):
                return [t for t in trips if MIN_TRIP_S <= t["duration_s"] <= MAX_TRIP_H * 3600]


            trips = clean(march) + clean(april)
            len(trips)
            """
        ),
        _fact(
            r"""
            # S07 (Harbour Square) logs every return twice since its firmware update: keep the first
            seen = set()
            deduped = []
            for t in trips:
                key = (t["station"], t["start"], t["duration_s"])
                if key not in seen:
                    seen.add(key)
                    deduped.append(t)
            len(trips) - len(deduped)
            """,
            "comment",
            "Which dock is double-counting returns?",
            "Harbour Square",
            strict="Which dock was double-counting bikes coming back?",
        ),
        _cell(
            r"""
            counts = Counter((t["station"], t["start"].date(), t["start"].hour) for t in deduped)
            len(counts), counts.most_common(1)
            """
        ),
        _fact(
            r"""
            print("NOTE: the target is departures per station-hour, zero hours included,",
                  "not trips per day")
            """,
            "printed note",
            "What exactly is the model's target?",
            "departures per station-hour",
            strict="What exactly is the model trying to predict?",
        ),
        _cell(
            r"""
            days = sorted({t["start"].date() for t in deduped})
            grid = {(s, d, h): counts.get((s, d, h), 0)
                    for s in STATIONS for d in days for h in range(24)}
            len(grid), sum(grid.values())
            """
        ),
        _fact(
            r"""
            riders = Counter(t["rider"] for t in deduped)
            {k: f"{100 * v / len(deduped):.1f}%" for k, v in riders.most_common()}
            """,
            "result",
            "What share of riders are subscribers?",
            "'member': '72.8%'",
            strict="What fraction of rides are taken by subscribers?",
        ),
        _cell(
            r"""
            daily = Counter(t["start"].date() for t in deduped)
            weekday = [n for d, n in daily.items() if d.weekday() < 5]
            weekend = [n for d, n in daily.items() if d.weekday() >= 5]
            round(statistics.mean(weekday)), round(statistics.mean(weekend))
            """
        ),
        _fact(
            r"""
            by_hour = Counter(t["start"].hour for t in deduped if t["start"].weekday() < 5)
            peak, n = by_hour.most_common(1)[0]
            f"weekday rush peaks at {peak}:00 ({n} departures over two months)"
            """,
            "result",
            "When is the rush at its worst on workdays?",
            "peaks at 17:00",
            strict="At what time of day are workdays busiest?",
        ),
        _retain(
            "Demand forecasts go to the city ops team every Monday; "
            "Priya Raman owns the dashboard.",
            "Who is responsible for the dashboard?",
            "Priya Raman",
            strict="Who is in charge of the weekly dashboard?",
        ),
        _cell(
            r"""
            WEATHER_CSV = '''hour,temp_c,rain_mm
            2024-04-02 07:00,6.1,0.0
            2024-04-02 08:00,6.8,1.2
            2024-04-02 09:00,7.4,2.9
            2024-04-02 10:00,8.0,0.4
            2024-04-02 11:00,9.3,0.0'''
            weather = list(csv.DictReader(io.StringIO(WEATHER_CSV)))
            [(w["hour"][-5:], float(w["rain_mm"])) for w in weather]
            """
        ),
        _fact(
            r"""
            # weather comes from the Eastfield airport feed, not our rooftop sensor, which reads
            # about 3 degrees warm in the afternoon sun
            wx = {w["hour"]: (float(w["temp_c"]), float(w["rain_mm"])) for w in weather}
            wx["2024-04-02 08:00"]
            """,
            "comment",
            "Where do we get the weather data from?",
            "Eastfield airport",
            strict="Where do the temperatures we feed the model come from?",
        ),
        _cell(
            r"""
            def check_range(name, values, lo, hi):
                bad = [v for v in values if not lo <= v <= hi]
                if bad:
                    raise ValueError(f"{name}: {len(bad)} of {len(values)} outside "
                                     f"[{lo}, {hi}], e.g. {bad[:3]}")
                return f"{name}: all {len(values)} within [{lo}, {hi}]"


            check_range("temp_c", [t for t, _ in wx.values()], -25, 40)
            """
        ),
        _fact(
            r"""
            RAIN_MM_WET = 0.5  # from 0.5 mm in an hour, departures fall by about half
            [h[-5:] for h, (_, rain) in wx.items() if rain >= RAIN_MM_WET]
            """,
            "named value",
            "How much precipitation does it take before departures drop?",
            "RAIN_MM_WET = 0.5",
            strict="How much rain makes an hour count as wet?",
        ),
        _fact(
            r"""
            dock_volts = {"S14 Quarry Lane": [12.6, 12.4, 9.8, 9.7, 12.5, 9.6]}
            for dock, volts in dock_volts.items():
                check_range(f"{dock} battery (V)", volts, 11.5, 14.8)
            """,
            "error message",
            "Which station's battery is running low?",
            "Quarry Lane",
            strict="Which dock has the weak power supply?",
        ),
        _cell(
            r"""
            per_station = Counter(t["station"] for t in deduped)
            per_station.most_common(5)
            """
        ),
        _fact(
            r"""
            quiet = sorted(d for (s, d, h), n in grid.items() if s == "S09" and h == 12 and n == 0)
            print(len(quiet), "noon hours without a departure at S09")
            print("NOTE: S09 Mill Pond was shut for roadworks 8-21 April;",
                  "mask it, those zeros aren't demand")
            """,
            "printed note",
            "Which station was closed for the roadworks?",
            "Mill Pond",
            strict="Which station was out of service because of construction?",
        ),
        _cell(
            r"""
            CLOSED = {("S09", date(2024, 4, d)) for d in range(8, 22)}
            grid = {k: v for k, v in grid.items() if (k[0], k[1]) not in CLOSED}
            len(grid)
            """
        ),
        _retain(
            "Rebalancing vans are planned from the 75th percentile of the forecast, not the "
            "mean: an empty dock costs more than a full one.",
            "What figure is rebalancing scheduled from?",
            "75th percentile",
            strict="Which forecast level do the truck crews schedule from?",
        ),
        _cell(
            r"""
            # hold out the last two weeks of April
            SPLIT = date(2024, 4, 17)
            train = {k: v for k, v in grid.items() if k[1] < SPLIT}
            test = {k: v for k, v in grid.items() if k[1] >= SPLIT}
            len(train), len(test)
            """
        ),
        _cell(
            r"""
            def mae(pred, actual):
                return statistics.fmean(abs(pred[k] - actual[k]) for k in actual)


            flat = statistics.fmean(train.values())
            baseline = dict.fromkeys(test, flat)
            round(mae(baseline, test), 3)
            """
        ),
        _fact(
            r"""
            cells = defaultdict(list)
            for (s, d, h), n in train.items():
                cells[(s, d.weekday() >= 5, h)].append(n)
            profile = {k: statistics.fmean(v) for k, v in cells.items()}
            shaped = {k: profile[(k[0], k[1].weekday() >= 5, k[2])] for k in test}
            scores = {"flat mean": mae(baseline, test),
                      "station x hour x day type": mae(shaped, test)}
            best = min(scores, key=scores.get)
            flat_mae = scores["flat mean"]
            f"kept {best}: MAE {scores[best]:.3f} against {flat_mae:.3f} for the flat mean"
            """,
            "result",
            "Which model beat the baseline, and by how much?",
            "MAE 0.263",
            strict="Which forecasting approach did we keep, and how big is its error?",
        ),
        _cell(
            r"""
            Counter(t["ebike"] for t in deduped)
            """
        ),
        _fact(
            r"""
            # e-bikes get a profile of their own: their rides run about 40% longer at every hour
            ebike = [t["duration_s"] for t in deduped if t["ebike"]]
            pedal = [t["duration_s"] for t in deduped if not t["ebike"]]
            round(statistics.median(ebike) / statistics.median(pedal), 2)
            """,
            "comment",
            "Why do electric bikes get a separate model?",
            "40% longer",
            strict="Why are electric bikes modelled apart from the others?",
        ),
        _fact(
            r"""
            upload = [(s, d.isoformat(), h, round(v, 2)) for (s, d, h), v in shaped.items()]
            if len(upload) > 5000:
                raise ValueError(f"the ops upload takes at most 5000 rows per file, "
                                 f"got {len(upload)}")
            """,
            "error message",
            "What's the size limit for an upload to the operations tool?",
            "at most 5000 rows",
            strict="How big can one file for the operations tool be?",
        ),
        _fact(
            r"""
            FEE_RISE = date(2024, 4, 1)  # monthly membership went from 9 to 12 euros on this day
            members = [t for t in deduped if t["rider"] == "member"]
            (sum(t["start"].date() < FEE_RISE for t in members),
             sum(t["start"].date() >= FEE_RISE for t in members))
            """,
            "named value",
            "When did the membership price go up, and by how much?",
            "9 to 12 euros",
            "FEE_RISE = date(2024, 4, 1)",
            strict="When did the subscription get more expensive, and by how much?",
        ),
        _retain(
            "Station IDs change on 1 May (S-numbers become BK- codes); the old-to-new lookup "
            "is station_map_v2 on the ops share.",
            "Where's the table for converting to the new dock codes?",
            "station_map_v2",
            strict="Where is the table that translates old dock codes to new ones?",
        ),
        _fact(
            r"""
            MAY_HEAD = '''trip_id,started_at,station,duration_s,rider_class
            y-000001,2024-05-01 06:01:09,BK-1003,377,subscriber'''
            row = next(csv.DictReader(io.StringIO(MAY_HEAD)))
            if "rider" not in row:
                raise ValueError(f"May preview has no 'rider' column; it has {list(row)}")
            """,
            "error message",
            "What's the customer-type column called in the latest file?",
            "rider_class",
            strict="What is the rider type field called in the newest file?",
        ),
        _cell(
            r"""
            s03_monday = [round(profile[("S03", False, h)], 1) for h in range(6, 10)]
            s03_monday
            """
        ),
        _fact(
            r"""
            fri = [abs(shaped[k] - test[k]) for k in test if k[1].weekday() == 4 and k[2] >= 17]
            print(f"Friday from 17:00: mean abs error {statistics.fmean(fri):.2f}")
            print("NOTE: Friday evenings are underpredicted by ~18%; a Friday flag goes into v2")
            """,
            "printed note",
            "When in the week is the forecast error largest?",
            "Friday evenings",
            strict="Which part of the week does the forecast come out too low?",
        ),
        _fact(
            r"""
            casual_share = {}
            for s in STATIONS:
                rides = [t for t in deduped if t["station"] == s]
                casual_share[s] = sum(t["rider"] == "casual" for t in rides) / len(rides)
            top = max(casual_share, key=casual_share.get)
            top, f"{casual_share[top]:.0%} casual riders"
            """,
            "result",
            "Which station has the most pay-as-you-go users?",
            "58% casual riders",
            strict="Which dock gets the most occasional, non-subscriber users?",
        ),
        _retain(
            "The 12 dockless pilot zones stay out of this analysis until the vendor fixes "
            "GPS jitter on parked bikes.",
            "Why are the pilot areas left out for now?",
            "GPS jitter",
            strict="Why are the free-floating trial areas left out?",
        ),
        _fact(
            r"""
            april_codes = Counter({"S03": 612, "S11": 540, "S21": 37, "S02": 498})
            unknown = {c: n for c, n in april_codes.items() if c not in STATIONS}
            if unknown:
                raise ValueError(f"dock codes missing from STATIONS: {unknown}")
            """,
            "error message",
            "Which code turned up that we didn't recognise?",
            "'S21': 37",
            strict="Which station code showed up in April that we had never seen?",
        ),
        _cell(
            r"""
            print(f"{len(deduped)} clean trips, {len(STATIONS)} docks, {len(days)} days")
            """
        ),
    ]
    return Session("bike-share-demand.ipynb", "data analysis", tuple(cells))


def _lab_log() -> Session:
    """A microbiology lab's log of growth-curve runs: parameters, instruments, reagents."""
    cells = [
        _cell(
            r"""
            import csv
            import io
            import math
            import random
            import statistics
            from collections import Counter
            from datetime import datetime, timedelta
            """
        ),
        _cell(
            r"""
            RUNS = {
                15: {"date": "2024-02-26", "strain": "WT", "media": "LB", "temp_c": 37},
                16: {"date": "2024-02-27", "strain": "dRpoS", "media": "LB", "temp_c": 37},
                17: {"date": "2024-02-28", "strain": "WT", "media": "M9-glc", "temp_c": 37},
                18: {"date": "2024-03-01", "strain": "PA-07", "media": "LB", "temp_c": 37},
                19: {"date": "2024-03-04", "strain": "WT", "media": "LB", "temp_c": 30},
            }
            len(RUNS)
            """
        ),
        _fact(
            r"""
            READ_EVERY_MIN = 15  # reading every 10 min warmed the plate by 0.4 C
            TIMES_H = [i * READ_EVERY_MIN / 60 for i in range(16 * 60 // READ_EVERY_MIN + 1)]
            len(TIMES_H), TIMES_H[-1]
            """,
            "named value",
            "What's the measurement interval for the plate?",
            "READ_EVERY_MIN = 15",
            strict="How often does the plate get measured during a run?",
        ),
        _cell(
            r"""
            def logistic_od(t_h, n0=0.01, k=1.2, rate=1.7, lag_h=1.5, bg=0.046):
                if t_h < lag_h:
                    return n0 + bg
                x = t_h - lag_h
                return k / (1 + (k - n0) / n0 * math.exp(-rate * x)) + bg


            def simulate_wells(seed, n_wells=8, **params):
                rng = random.Random(seed)
                return [
                    [round(logistic_od(t, **params) + rng.gauss(0, 0.003), 4) for t in TIMES_H]
                    for _ in range(n_wells)
                ]
            """
        ),
        _cell(
            r"""
            run15 = simulate_wells(15)
            run15[0][:8]
            """
        ),
        _fact(
            r"""
            # background: subtract the median of the media-only wells, not the mean
            # (a bubble in one blank throws the mean off)
            blanks15 = [0.046, 0.047, 0.045, 0.058, 0.046, 0.048]
            BLANK15 = statistics.median(blanks15)
            BLANK15, round(statistics.mean(blanks15), 4)
            """,
            "comment",
            "How do we correct for background?",
            "median of the media-only wells",
            strict="How do we take the empty wells' reading off the curves?",
        ),
        _cell(
            r"""
            def corrected(wells, blank):
                return [[max(v - blank, 0.001) for v in w] for w in wells]


            mean_curve15 = [statistics.fmean(col) for col in zip(*corrected(run15, BLANK15))]
            [round(v, 3) for v in mean_curve15[::8]]
            """
        ),
        _fact(
            r"""
            print("NOTE: LB lot 4471 was already cloudy before inoculation",
                  "(OD 0.09 in the blanks); bottles returned to Sigma, switching to lot 4502")
            """,
            "printed note",
            "Which broth bottles did we send back?",
            "lot 4471",
            strict="Which broth batch arrived spoiled?",
        ),
        _fact(
            r"""
            CONTAM_OD_MAX = 0.06  # a blank above this = contaminated media, redo the plate
            [b for b in blanks15 if b > CONTAM_OD_MAX]
            """,
            "named value",
            "What blank reading means the broth has gone bad?",
            "CONTAM_OD_MAX = 0.06",
            strict="What blank value tells us the medium is contaminated?",
        ),
        _fact(
            r"""
            # lag = first reading where the OD is at least double the starting OD
            # (the tangent method was too noisy with our plates)
            def lag_time(curve):
                start = curve[0]
                for t, v in zip(TIMES_H, curve):
                    if v >= 2 * start:
                        return t
                return None


            lag_time(mean_curve15)
            """,
            "comment",
            "Which method do we use to find the lag?",
            "at least double the starting OD",
            strict="How do we decide when the cells have left the lag phase?",
        ),
        _fact(
            r"""
            def doubling_time_min(curve, lo=0.05, hi=0.3):
                pts = [(t, math.log(v)) for t, v in zip(TIMES_H, curve) if lo <= v <= hi]
                fit = statistics.linear_regression([p[0] for p in pts], [p[1] for p in pts])
                return 60 * math.log(2) / fit.slope


            f"run 15 (WT, LB, 37 C): doubling time {doubling_time_min(mean_curve15):.1f} min"
            """,
            "result",
            "How fast does the wild type divide, judging by its curve?",
            "doubling time 27.2 min",
            strict="How fast does the wild type divide in rich medium?",
        ),
        _cell(
            r"""
            run16 = simulate_wells(16, lag_h=2.4, rate=1.5)
            blanks16 = [0.047, 0.046, 0.047, 0.048, 0.046, 0.045]
            curve16 = [statistics.fmean(c)
                       for c in zip(*corrected(run16, statistics.median(blanks16)))]
            lag_time(mean_curve15), lag_time(curve16)
            """
        ),
        _fact(
            r"""
            # reader B (the Tecan in room 2.14) creeps up ~0.03 OD after 6 h on a static plate;
            # everything from run 18 on goes on reader A
            static_plate = [0.512, 0.514, 0.519, 0.527, 0.536, 0.544]
            [round(v - static_plate[0], 3) for v in static_plate]
            """,
            "comment",
            "Which reader drifts upward after a few hours?",
            "Tecan in room 2.14",
            strict="Which instrument had the slow upward drift in its numbers?",
        ),
        _retain(
            "Incubator 3 is booked by the Alvarez group on Tuesdays and Thursdays; "
            "our plates go in incubator 1 on those days.",
            "When is the third incubator off-limits to us, and who has it?",
            "Alvarez group",
            "Tuesdays and Thursdays",
            strict="Which days can't we use the third incubator, and who has it?",
        ),
        _cell(
            r"""
            INCUBATOR_LOG = '''time,incubator,temp_c
            2024-02-28 22:00,2,37.0
            2024-02-28 23:00,2,36.9
            2024-02-29 00:00,2,35.1
            2024-02-29 01:00,2,33.4
            2024-02-29 02:00,2,31.9
            2024-02-29 03:00,2,31.2
            2024-02-29 04:00,2,31.3
            2024-02-29 07:30,2,36.8'''
            log = list(csv.DictReader(io.StringIO(INCUBATOR_LOG)))
            min(float(r["temp_c"]) for r in log)
            """
        ),
        _fact(
            r"""
            print("NOTE: run 17 is discarded: the incubator door was left ajar overnight",
                  "and the log bottoms out around 03:00")
            """,
            "printed note",
            "What happened to the incubator that made us scrap a run?",
            "door was left ajar",
            strict="Why did one of the February runs get thrown out?",
        ),
        _cell(
            r"""
            CIPRO_UG_ML = [0.03, 0.06, 0.125, 0.25, 0.5, 1, 2, 4]
            od18h = {
                "ATCC 27853": [0.91, 0.88, 0.52, 0.06, 0.05, 0.05, 0.04, 0.05],
                "PA-07": [0.93, 0.92, 0.90, 0.87, 0.81, 0.07, 0.05, 0.05],
            }
            {strain: max(ods) for strain, ods in od18h.items()}
            """
        ),
        _fact(
            r"""
            def mic(ods, cutoff=0.1):
                for conc, od in zip(CIPRO_UG_ML, ods):
                    if od < cutoff:
                        return conc
                return None


            {strain: f"MIC {mic(ods)} ug/mL" for strain, ods in od18h.items()}
            """,
            "result",
            "How much antibiotic does it take to stop the clinical strain growing?",
            "MIC 1 ug/mL",
            strict="What concentration of ciprofloxacin stops the clinical isolate from growing?",
        ),
        _fact(
            r"""
            SHAKE_RPM = 220  # at 250 the baffled flasks foamed over (run 12)
            FLASK_ML, CULTURE_ML = 250, 50
            CULTURE_ML / FLASK_ML
            """,
            "named value",
            "How fast do we spin the flasks?",
            "SHAKE_RPM = 220",
            strict="How fast is the shaker set for the flasks?",
        ),
        _cell(
            r"""
            def in_spec(label, values, lo, hi):
                bad = [v for v in values if not lo <= v <= hi]
                if bad:
                    raise ValueError(f"{label}: {len(bad)} of {len(values)} outside {lo}-{hi} "
                                     f"(min {min(values)}, max {max(values)})")
                return f"{label}: ok"


            in_spec("incubator 1 overnight", [36.9, 37.0, 37.1, 37.0], 36.5, 37.5)
            """
        ),
        _fact(
            r"""
            # the outer wells (rows A and H, columns 1 and 12) lose volume over 24 h:
            # they get sterile water, never samples
            ROWS = "ABCDEFGH"
            edge = [f"{r}{c}" for r in ROWS for c in range(1, 13) if r in "AH" or c in (1, 12)]
            inner = [f"{r}{c}" for r in ROWS[1:-1] for c in range(2, 12)]
            len(edge), len(inner)
            """,
            "comment",
            "What goes into the wells along the rim of the plate?",
            "they get sterile water",
            strict="What goes in the wells around the border of the plate?",
        ),
        _fact(
            r"""
            ph_by_batch = {"M9 0226": [7.02, 7.00, 7.01], "M9 0304": [6.62, 6.60, 6.63]}
            for batch, ph in ph_by_batch.items():
                in_spec(f"pH of {batch}", ph, 6.9, 7.1)
            """,
            "error message",
            "Which batch of minimal medium was too acidic?",
            "M9 0304",
            strict="Which bottle of minimal medium came out too acidic?",
        ),
        _fact(
            r"""
            print("NOTE: Jonas set up runs 20-22 at a 1:100 dilution instead of 1:1000,",
                  "so their lag times are not comparable")
            """,
            "printed note",
            "Who got the dilution wrong?",
            "Jonas",
            strict="Whose plates got the wrong inoculum ratio?",
        ),
        _cell(
            r"""
            starts = {n: datetime.fromisoformat(r["date"] + " 09:30") for n, r in RUNS.items()}
            [(n, (starts[n] + timedelta(hours=16)).strftime("%a %H:%M")) for n in starts]
            """
        ),
        _retain(
            "PA-07 is a clinical Pseudomonas isolate: only open it in the BSL-2 cabinet, "
            "never on the open bench.",
            "Where can we handle the Pseudomonas?",
            "BSL-2 cabinet",
            strict="Where are we allowed to handle the patient strain?",
        ),
        _cell(
            r"""
            round(max(mean_curve15), 3), round(max(curve16), 3)
            """
        ),
        _fact(
            r"""
            PLATE_MAX_AGE_D = 14  # older streak plates gave lags ~40 min longer (runs 9-11)
            streaked = datetime(2024, 2, 19)
            (datetime(2024, 3, 4) - streaked).days > PLATE_MAX_AGE_D
            """,
            "named value",
            "How many weeks can a streak be used for?",
            "PLATE_MAX_AGE_D = 14",
            strict="How many days can a colony plate be used before we restreak from the freezer?",
        ),
        _fact(
            r"""
            probe = [36.1, 36.2, 36.0, 36.2, 36.1]
            display = [37.0, 37.0, 37.0, 37.0, 37.0]
            offset = statistics.fmean(p - d for p, d in zip(probe, display))
            f"incubator 2 runs {offset:+.2f} C against the calibrated probe"
            """,
            "result",
            "How far is the second incubator from its set temperature?",
            "runs -0.88 C",
            strict="How far off is the second incubator's temperature?",
        ),
        _cell(
            r"""
            run19 = simulate_wells(19, rate=1.1, lag_h=2.0)
            curve19 = [statistics.fmean(c) for c in zip(*corrected(run19, BLANK15))]
            round(doubling_time_min(curve19), 1)
            """
        ),
        _fact(
            r"""
            SYNERGY_EXPORT = '''well;od600
            B2;0,412
            B3;0,398'''
            rows = list(csv.DictReader(io.StringIO(SYNERGY_EXPORT), delimiter=";"))
            [float(r["od600"]) for r in rows]
            """,
            "error message",
            "Why did the plate-reader export fail to parse?",
            "'0,412'",
            strict="Why couldn't we read the Synergy numbers?",
        ),
        _retain(
            "Switched to Greiner 655101 clear flat-bottom plates: the last Corning box had "
            "scratched well bottoms that read high.",
            "Which brand of plates are we ordering now, and why?",
            "Greiner 655101",
            strict="Why did we change microplate supplier?",
        ),
        _cell(
            r"""
            layout = {
                "KO-1": ["B2", "B3", "B4"],
                "KO-3": ["C2", "C3", "F7"],
                "KO-5": ["F7", "F8", "F9"],
            }
            sum(len(w) for w in layout.values())
            """
        ),
        _fact(
            r"""
            lags = {"WT run 15": lag_time(mean_curve15), "dRpoS run 16": lag_time(curve16)}
            extra = lags["dRpoS run 16"] - lags["WT run 15"]
            {k: f"{v:.2f} h" for k, v in lags.items()}, f"mutant lag is {extra:.2f} h longer"
            """,
            "result",
            "How much later does the mutant get going than the wild type?",
            "1.00 h longer",
            strict="How much later does the rpoS knockout start growing than the wild type?",
        ),
        _fact(
            r"""
            print("NOTE: from run 20 on, plates are sealed with Breathe-Easy film, not the lid;",
                  "evaporation went from 9% to 2%")
            """,
            "printed note",
            "What covering do we use now to cut evaporation?",
            "Breathe-Easy film",
            strict="What do we cover the plates with now?",
        ),
        _fact(
            r"""
            WELLS, UL_PER_WELL, DEAD_VOL_UL = 60, 180, 1500
            need_ml = (WELLS * UL_PER_WELL + DEAD_VOL_UL) / 1000
            if need_ml > 10:
                raise ValueError(f"inoculum needs {need_ml:.1f} mL but the biggest reservoir "
                                 "holds 10 mL; split it in two")
            """,
            "error message",
            "Why is one reservoir not enough for a full plate?",
            "needs 12.3 mL",
            strict="Why did the inoculum not fit in one trough?",
        ),
        _cell(
            r"""
            summary = {n: (r["strain"], r["media"], r["temp_c"]) for n, r in RUNS.items()}
            summary
            """
        ),
        _fact(
            r"""
            used = Counter(w for wells in layout.values() for w in wells)
            dups = [w for w, n in used.items() if n > 1]
            if dups:
                owners = [s for s, wells in layout.items() if dups[0] in wells]
                raise ValueError(f"well {dups[0]} assigned to two strains: {owners}")
            """,
            "error message",
            "Which knockouts ended up in the same well?",
            "['KO-3', 'KO-5']",
            strict="Which two knockouts ended up sharing a position on the plate?",
        ),
        _retain(
            "Dr. Okafor wants growth curves for all six knockouts before the 14 March "
            "group meeting.",
            "Who's expecting the knockout data, and by when?",
            "Okafor",
            strict="Who is waiting for the full set of mutant curves, and by when?",
        ),
        _cell(
            r"""
            done = [n for n in RUNS if n != 17]
            print(f"{len(done)} usable runs so far: {done}")
            """
        ),
    ]
    return Session("growth-curves-lab-log.ipynb", "lab log", tuple(cells))


def _teaching() -> Session:
    """A teacher preparing week 7 of an intro-statistics course: grading, exercises, policy."""
    cells = [
        _cell(
            r"""
            import csv
            import io
            import random
            import statistics
            from collections import Counter
            from datetime import date, timedelta
            """
        ),
        _cell(
            r"""
            STUDENTS = [f"stu-{i:02d}" for i in range(1, 39)]
            SECTION = {s: "A" if i % 2 == 0 else "B" for i, s in enumerate(STUDENTS)}
            Counter(SECTION.values())
            """
        ),
        _fact(
            r"""
            # late homework loses 10% per day and is not accepted after 3 days (syllabus, sec. 4)
            def late_penalty(score, days_late):
                if days_late > 3:
                    return 0
                return round(score * (1 - 0.10 * days_late), 1)


            late_penalty(18, 0), late_penalty(18, 2), late_penalty(18, 4)
            """,
            "comment",
            "What happens to homework handed in past the deadline?",
            "loses 10% per day",
            strict="How do we mark assignments handed in past the deadline?",
        ),
        _cell(
            r"""
            def make_gradebook(seed):
                rng = random.Random(seed)
                book = {}
                for s in STUDENTS:
                    ability = rng.gauss(0, 1)
                    hw_done = min(1.0, max(0.2, 0.75 + 0.15 * ability + rng.gauss(0, 0.1)))
                    quizzes = [min(10, max(0, round(6.5 + 1.5 * ability + rng.gauss(0, 1.5))))
                               for _ in range(6)]
                    midterm = 62 + 12 * ability + 80 * (hw_done - 0.75) + rng.gauss(0, 8)
                    book[s] = {"hw_done": round(hw_done, 2), "quizzes": quizzes,
                               "midterm": min(100, max(20, round(midterm)))}
                return book


            book = make_gradebook(2024)
            book["stu-01"], len(book)
            """
        ),
        _fact(
            r"""
            DROP_LOWEST_QUIZZES = 2  # covers sick days without anyone needing a doctor's note


            def quiz_average(scores):
                kept = sorted(scores)[DROP_LOWEST_QUIZZES:]
                return 10 * statistics.fmean(kept)


            quiz_average(book["stu-01"]["quizzes"])
            """,
            "named value",
            "What's our policy for students who are sick on test day?",
            "DROP_LOWEST_QUIZZES = 2",
            strict="How many of the weekly tests are left out of the average?",
        ),
        _fact(
            r"""
            mids = sorted(b["midterm"] for b in book.values())
            q1, q2, q3 = statistics.quantiles(mids, n=4)
            f"midterm: median {q2:g}, middle half {q1:g} to {q3:g}, n={len(mids)}"
            """,
            "result",
            "What was the typical midterm score?",
            "median 64.5",
            strict="What was the typical mark on the mid-semester exam?",
        ),
        _cell(
            r"""
            sorted(Counter(10 * (m // 10) for m in mids).items())
            """
        ),
        _fact(
            r"""
            # the classic again: students read p = 0.03 as "a 3% chance the null hypothesis
            # is true"; exercise 4 is built around exactly that
            def p_value_two_sided(z):
                return 2 * (1 - statistics.NormalDist().cdf(abs(z)))


            round(p_value_two_sided(2.17), 3)
            """,
            "comment",
            "What's the usual misreading of a p-value?",
            "3% chance the null hypothesis",
            strict="What do people in the class get wrong about significance results?",
        ),
        _retain(
            "Week 9 lab uses the permutation-test worksheet instead of the t-test one; "
            "Mei Lin (TA) prints 45 copies on Monday.",
            "Who is photocopying the worksheet for the lab?",
            "Mei Lin",
            strict="Who is doing the photocopying for the upcoming lab session?",
        ),
        _cell(
            r"""
            def exercise_sample(seed, n=12, mu=250, sd=30):
                r = random.Random(seed)
                return [round(r.gauss(mu, sd)) for _ in range(n)]


            ex4 = exercise_sample(41)
            ex4, round(statistics.mean(ex4), 1), round(statistics.stdev(ex4), 1)
            """
        ),
        _fact(
            r"""
            EXERCISE_DATA = "reaction times (ms) of 40 volunteers"  # the cereal data confused
            # people last year: they argued about brand names instead of distributions
            EXERCISE_DATA.split(" (")[0]
            """,
            "named value",
            "Which example numbers do the exercises use now, and what got dropped?",
            "reaction times",
            "cereal data",
            strict="Which dataset are the practice problems built on now, and what did it replace?",
        ),
        _cell(
            r"""
            # exercise 4 solution: one-sample t statistic against 240 ms
            n = len(ex4)
            t_stat = (statistics.mean(ex4) - 240) / (statistics.stdev(ex4) / n ** 0.5)
            round(t_stat, 2)
            """
        ),
        _fact(
            r"""
            print("NOTE: office hours move to Wednesday 16:00-17:00 in room B112 from week 8")
            """,
            "printed note",
            "When and where are the student drop-in hours now?",
            "room B112",
            strict="When and where can students come by for help now?",
        ),
        _fact(
            r"""
            hw = [b["hw_done"] for b in book.values()]
            mt = [b["midterm"] for b in book.values()]
            f"homework completion vs midterm: r = {statistics.correlation(hw, mt):.2f}"
            """,
            "result",
            "How closely does doing the homework track exam results?",
            "midterm: r = 0.87",
            strict="How strongly is finishing the homework linked to exam scores?",
        ),
        _fact(
            r"""
            # quiz 3, question 5 had two defensible answers (the wording allowed both):
            # everyone gets the point
            for s in STUDENTS:
                book[s]["quizzes"][2] = min(10, book[s]["quizzes"][2] + 1)
            statistics.mean(b["quizzes"][2] for b in book.values())
            """,
            "comment",
            "Which item had ambiguous wording, and how did we fix the scores?",
            "quiz 3, question 5",
            strict="Which test item did we void, and what happened to the marks?",
        ),
        _cell(
            r"""
            RUBRIC = {"ex1": 10, "ex2": 10, "ex3": 15, "ex4": 20, "ex5": 25, "ex6": 15}
            RUBRIC
            """
        ),
        _fact(
            r"""
            WEIGHTS = {"homework": 0.25, "quizzes": 0.15, "midterm": 0.20, "final": 0.30}
            PARTICIPATION_WEIGHT = 0.10  # was 0.15; students said it rewarded talking over thinking
            round(sum(WEIGHTS.values()) + PARTICIPATION_WEIGHT, 10)
            """,
            "named value",
            "How much is talking in class worth toward the grade?",
            "PARTICIPATION_WEIGHT = 0.10",
            strict="How much does speaking up in class count toward the grade?",
        ),
        _fact(
            r"""
            points = sum(RUBRIC.values())
            if points != 100:
                raise ValueError(f"homework 7 rubric adds up to {points} points, not 100")
            """,
            "error message",
            "What was wrong with the rubric for assignment 7?",
            "95 points",
            strict="What was wrong with the marking scheme for assignment 7?",
        ),
        _cell(
            r"""
            RUBRIC["ex6"] = 20  # ex6 (the bootstrap one) was under-weighted
            sum(RUBRIC.values())
            """
        ),
        _fact(
            r"""
            print("NOTE: 14 of 38 used sd/sqrt(n) when asked for the spread of the data -",
                  "standard error vs standard deviation, the same mix-up as last year")
            """,
            "printed note",
            "How many students confused the two kinds of spread?",
            "14 of 38",
            "sd/sqrt(n)",
            strict="How many people confused the two measures of variability on the homework?",
        ),
        _cell(
            r"""
            def course_estimate(b):
                return 0.5 * quiz_average(b["quizzes"]) + 0.5 * b["midterm"]


            estimates = {s: round(course_estimate(b), 1) for s, b in book.items()}
            statistics.median(estimates.values())
            """
        ),
        _fact(
            r"""
            at_risk = sorted(s for s, e in estimates.items() if e < 45)
            at_risk
            """,
            "result",
            "Which students are at risk of failing?",
            "['stu-01', 'stu-02', 'stu-21', 'stu-30', 'stu-37']",
            strict="Which students are on track to fail the course?",
        ),
        _retain(
            "Regrade requests: by email, within 7 days of grades being posted; "
            "no regrades in person after class.",
            "How long do students have to ask for a regrade?",
            "within 7 days",
            strict="How long do students have to dispute a mark?",
        ),
        _cell(
            r"""
            def sample_means(k, n, seed=3):
                r = random.Random(seed)
                return [statistics.fmean(r.expovariate(1 / 5) for _ in range(n)) for _ in range(k)]
            """
        ),
        _fact(
            r"""
            # section B (Thursday 2pm) is a week behind: they have not seen the central limit
            # theorem yet, so they get this demo next week
            means = sample_means(500, 30)
            round(statistics.fmean(means), 2), round(statistics.stdev(means), 2)
            """,
            "comment",
            "Which section is running late on the material?",
            "Thursday 2pm",
            strict="Which group is lagging in the syllabus?",
        ),
        _cell(
            r"""
            VERSION_A = [3, 7, 12, 15, 21, 26]
            VERSION_B = [4, 8, 12, 16, 22, 27]
            len(VERSION_A), len(VERSION_B)
            """
        ),
        _fact(
            r"""
            common = sorted(set(VERSION_A) & set(VERSION_B))
            assert not common, f"versions A and B share bank question(s) {common}"
            """,
            "error message",
            "Which item is on both versions of the exam?",
            "question(s) [12]",
            strict="Which item appears on both forms of the exam?",
        ),
        _cell(
            r"""
            VERSION_B = [4, 8, 13, 16, 22, 27]
            sorted(set(VERSION_A) & set(VERSION_B))
            """
        ),
        _fact(
            r"""
            CURVE_TARGET = 72  # the department wants course medians near 72; we shift, never scale
            shift = CURVE_TARGET - statistics.median(estimates.values())
            round(shift, 1)
            """,
            "named value",
            "What class average is the department aiming for?",
            "CURVE_TARGET = 72",
            strict="What midpoint are we adjusting grades toward?",
        ),
        _fact(
            r"""
            def letter(x):
                for grade, floor in (("A", 85), ("B", 75), ("C", 65), ("D", 50)):
                    if x >= floor:
                        return grade
                return "F"


            dist = Counter(letter(e + shift) for e in estimates.values())
            ", ".join(f"{g}: {dist[g]}" for g in "ABCDF")
            """,
            "result",
            "How many students get each letter after the curve?",
            "A: 6, B: 11, C: 7, D: 7, F: 7",
            strict="After the curve, how many of each letter grade are there?",
        ),
        _fact(
            r"""
            print("NOTE: final project groups are three students, assigned by me",
                  "and mixed by major; no self-picked teams")
            """,
            "printed note",
            "How do we sort people into teams for the end-of-term work?",
            "mixed by major",
            strict="How are the end-of-term teams put together?",
        ),
        _retain(
            "Both students with extra-time accommodations take exams in room C020 with 50% "
            "more time.",
            "Where do people with accommodations sit their tests?",
            "room C020",
            strict="Where do students with accessibility arrangements write their tests?",
        ),
        _cell(
            r"""
            absences = {s: (i * 7) % 5 for i, s in enumerate(STUDENTS)}
            sum(1 for n in absences.values() if n >= 3)
            """
        ),
        _cell(
            r"""
            HOLIDAYS = {date(2024, 11, 28): "Thanksgiving", date(2024, 10, 14): "Columbus Day"}
            deadlines = [date(2024, 9, 12) + timedelta(weeks=k) for k in range(12)]
            deadlines[0], deadlines[-1]
            """
        ),
        _fact(
            r"""
            clash = [d for d in deadlines if d in HOLIDAYS]
            if clash:
                raise ValueError(f"homework due {clash[0]} falls on {HOLIDAYS[clash[0]]}; move it")
            """,
            "error message",
            "Which homework is due on a day off?",
            "2024-11-28",
            strict="Which due date lands on a day off?",
        ),
        _fact(
            r"""
            print("NOTE: for the final, calculators yes, phones no;",
                  "one A4 formula sheet, handwritten, both sides")
            """,
            "printed note",
            "What can students bring into the final?",
            "one A4 formula sheet",
            strict="What are students allowed to bring to the end-of-term exam?",
        ),
        _cell(
            r"""
            rooms = {"A": "Hall 1", "B": "Hall 2"}
            Counter(rooms[SECTION[s]] for s in STUDENTS)
            """
        ),
        _retain(
            "Next year: teach confidence intervals before hypothesis tests; this term's order "
            "left people unsure what a p-value estimates.",
            "What should we change about the topic order?",
            "confidence intervals before hypothesis tests",
            strict="What should we reorder in the course next time?",
        ),
        _fact(
            r"""
            LMS_CSV = '''student,hw7
            stu-04,18
            stu-11,20
            stu-04,15
            stu-19,17'''
            rows = list(csv.DictReader(io.StringIO(LMS_CSV)))
            twice = [s for s, n in Counter(r["student"] for r in rows).items() if n > 1]
            if twice:
                raise ValueError(f"hw7 upload has {twice} more than once: a late resubmission")
            """,
            "error message",
            "Who sent in a resubmission of assignment 7?",
            "['stu-04']",
            strict="Whose assignment 7 was in the upload two times?",
        ),
        _cell(
            r"""
            out = io.StringIO()
            writer = csv.writer(out)
            writer.writerow(["student", "estimate"])
            writer.writerows(sorted(estimates.items())[:3])
            out.getvalue()
            """
        ),
        _cell(
            r"""
            len(STUDENTS), len(at_risk)
            """
        ),
    ]
    return Session("stats101-week7-prep.ipynb", "teaching", tuple(cells))


def planted_sessions() -> tuple[Session, ...]:
    """The three sessions with planted facts: a data analysis, a lab log, a teaching session."""
    return (_bike_share(), _lab_log(), _teaching())


# ---------------------------------------------------------------------------------------------
# Distractor sessions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Topic:
    """One kind of unrelated notebook work: its records and the decisions made about them."""

    notebooks: tuple[str, ...]  # file name stems
    rows: str  # the records' variable name
    noun: str  # what the records are, plural
    key: str  # the categorical field
    keys: tuple[str, ...]
    fields: tuple[tuple[str, float, float, int], ...]  # numeric field, low, high, decimals
    notes: tuple[str, ...]  # decisions about its own data ({k} a key, {f} a field, {v} a value)


_TOPICS = (
    _Topic(
        ("weather-stations-qc", "regional-rainfall", "wind-survey-2023"),
        "readings",
        "readings",
        "station",
        ("Kestrel Ridge", "Lowmoor", "Pinecrest", "Dunmore Quay", "Saltmarsh", "Hollins Gap"),
        (
            ("temp_c", -8, 34, 1),
            ("rain_mm", 0, 42, 1),
            ("wind_kmh", 0, 95, 0),
            ("humidity", 18, 100, 0),
        ),
        (
            "{k} sits next to a car park, its afternoon temp_c runs high",
            "the {k} gauge was serviced in May, compare it only after that",
            "{f} above {v} means a stuck sensor, not weather",
            "{k} moved to 10-minute logging, resample before joining",
        ),
    ),
    _Topic(
        ("warehouse-stock-check", "inventory-reorder-points", "sku-shrinkage"),
        "stock",
        "stock lines",
        "warehouse",
        ("Leeds DC", "Rotterdam", "Depot 4", "Northgate", "Felixstowe", "Brno"),
        (
            ("qty_on_hand", 0, 900, 0),
            ("unit_cost", 0.4, 85, 2),
            ("weekly_sales", 0, 260, 0),
            ("lead_time_d", 2, 45, 0),
        ),
        (
            "{k} counts pallets, not units, until the scanner upgrade",
            "{f} above {v} is a keying error, check the delivery note",
            "{k} stocktake is quarterly, so its shrinkage shows up in bursts",
            "ignore lines with {f} over {v}, those are bundles",
        ),
    ),
    _Topic(
        ("web-logs-latency", "api-error-budget", "cdn-traffic"),
        "requests",
        "requests",
        "endpoint",
        ("/api/search", "/api/cart", "/login", "/static/app.js", "/api/orders", "/healthz"),
        (
            ("latency_ms", 3, 2400, 0),
            ("bytes_out", 200, 90000, 0),
            ("retries", 0, 4, 0),
            ("cpu_ms", 1, 400, 0),
        ),
        (
            "{k} is hit by the load balancer probe, leave it out of user latency",
            "{f} over {v} comes from the nightly batch job, not users",
            "{k} is cached at the edge, so origin numbers undercount it",
            "report p95 of {f}, the mean hides the slow tail",
        ),
    ),
    _Topic(
        ("basketball-box-scores", "league-shooting-splits", "player-minutes"),
        "games",
        "games",
        "team",
        ("Harbor Hawks", "Valley Foxes", "Iron City", "Lakeside", "Summit Owls", "Red Mesa"),
        (
            ("points", 62, 131, 0),
            ("rebounds", 25, 62, 0),
            ("turnovers", 4, 24, 0),
            ("three_pct", 18, 52, 1),
        ),
        (
            "{k} played two overtime games, scale {f} to 48 minutes",
            "games with {f} under {v} were forfeits",
            "{k} changed coach mid-season, split the season there",
            "compare {f} per 100 possessions, pace differs a lot",
        ),
    ),
    _Topic(
        ("rnaseq-counts-qc", "gene-expression-batch", "variant-depths"),
        "libs",
        "libraries",
        "sample",
        ("liver_1", "liver_2", "kidney_1", "kidney_2", "lung_1", "lung_2"),
        (
            ("reads_m", 8, 62, 1),
            ("mapped_pct", 71, 98, 1),
            ("dup_pct", 4, 39, 1),
            ("gc_pct", 38, 56, 1),
        ),
        (
            "{k} was resequenced, use the second flow cell only",
            "libraries with {f} under {v} go back to the core",
            "{k} and its pair ran on different days, add a batch term",
            "samples with {f} above {v} get flagged in the QC sheet",
        ),
    ),
    _Topic(
        ("dept-budget-2025", "travel-spend-review", "opex-forecast"),
        "lines",
        "budget lines",
        "dept",
        ("Facilities", "Marketing", "Research", "Legal", "IT", "Finance"),
        (("amount_eur", 120, 48000, 2), ("headcount", 1, 60, 0), ("variance_pct", -35, 40, 1)),
        (
            "{k} books its annual licences in January, spread them over the year",
            "flag any line with {f} over {v} for the CFO",
            "{k} merged with another team in Q2, restate the first quarter",
            "amount_eur is in thousands in the old export, multiply before comparing",
        ),
    ),
    _Topic(
        ("line3-vibration", "boiler-sensors", "cold-store-temps"),
        "samples",
        "samples",
        "sensor",
        ("VX-11", "VX-12", "TH-04", "TH-07", "PR-2", "PR-9"),
        (("reading", 0.1, 14, 2), ("battery_v", 2.6, 3.3, 2), ("rssi_dbm", -98, -41, 0)),
        (
            "{k} was remounted in week 12, earlier {f} values are not comparable",
            "drop samples with {f} below {v}, the radio drops bits then",
            "{k} reports every 5 minutes instead of every minute",
            "a {f} above {v} is a spike from the forklift, not the machine",
        ),
    ),
    _Topic(
        ("courier-route-times", "van-fuel-use", "parcel-delays"),
        "drops",
        "drops",
        "route",
        ("R12 North", "R14 Docks", "R20 Ring", "R03 Old Town", "R07 Airport"),
        (("drop_min", 2, 38, 1), ("km", 0.3, 24, 1), ("parcels", 1, 14, 0)),
        (
            "{k} has a pedestrian zone, its {f} is not comparable",
            "drops with {f} over {v} are failed deliveries, count them apart",
            "{k} changed driver in March, check the handover week",
            "use drop_min per parcel, not per drop",
        ),
    ),
    _Topic(
        ("library-loans", "branch-footfall", "ebook-usage"),
        "loans",
        "loans",
        "branch",
        ("Eastgate", "Millbrook", "Old Market", "Northfield", "Quayside"),
        (("loan_days", 1, 42, 0), ("renewals", 0, 5, 0), ("late_fee", 0, 12, 2)),
        (
            "{k} was closed for refurbishment in July, leave July out for it",
            "loans with {f} over {v} are staff loans",
            "{k} counts renewals as new loans in the old system",
            "fees were waived in the March amnesty, set late_fee to zero for March",
        ),
    ),
    _Topic(
        ("building-energy-meters", "solar-yield", "heat-pump-cop"),
        "meters",
        "meter readings",
        "building",
        ("Block A", "Block C", "Annex", "Gym", "Lab West", "Sports Hall"),
        (("kwh", 12, 940, 1), ("peak_kw", 2, 120, 1), ("outdoor_c", -6, 31, 1)),
        (
            "{k} has its own PV, so its grid kwh understates use",
            "daily {f} over {v} means the meter double-read",
            "{k} heating runs on gas, keep it out of the heat pump figures",
            "normalise kwh by degree days before comparing winters",
        ),
    ),
    _Topic(
        ("restaurant-orders", "menu-margins", "delivery-app-orders"),
        "orders",
        "orders",
        "dish",
        ("ramen", "pho", "katsu curry", "bibimbap", "gyoza", "laksa"),
        (("price", 4.5, 19.5, 2), ("prep_min", 3, 28, 0), ("rating", 1, 5, 0)),
        (
            "{k} was off the menu for two weeks, mind the gap",
            "orders with {f} above {v} were catering, leave them out",
            "{k} got a new recipe in spring, compare ratings after that",
            "the app rounds rating, do not read much into small differences",
        ),
    ),
    _Topic(
        ("air-quality-pm25", "no2-roadside", "ozone-summer"),
        "obs",
        "observations",
        "site",
        ("Kings Road", "Parkside", "Ferry Lane", "Hilltop", "Market St", "Canal Walk"),
        (("pm25", 2, 88, 1), ("no2", 5, 110, 1), ("o3", 10, 140, 1)),
        (
            "{k} is a roadside site, do not average it with the background sites",
            "{f} over {v} on bonfire night is real, keep it",
            "{k} had its inlet replaced, the week before reads low",
            "use the 24-hour mean of {f} for the limit value, not hourly",
        ),
    ),
)

_GENERIC_NOTES = (
    "{k} sends its data a day late, so the latest day is incomplete",
    "use the median of {f}, a handful of huge values drag the mean around",
    "{k} is left out of the totals until its backfill arrives",
    "{f} under {v} looks odd but is real, keep it",
    "round {f} before grouping, the export adds float noise",
    "check {f} against last quarter before sending anything",
    "{f} above {v} needs a second look before the monthly report",
    "anything with {f} below {v} came from the old system",
    "{f} over {v} only shows up in the first week, a known ramp-up",
    "treat {f} above {v} as the top band in the summary table",
)


def _value(rng: random.Random, field: tuple[str, float, float, int]) -> str:
    """A plausible value of ``field``, written as a person would."""
    _, lo, hi, decimals = field
    value = rng.uniform(lo + (hi - lo) * 0.2, hi - (hi - lo) * 0.1)
    return str(round(value)) if decimals == 0 else f"{value:.{min(decimals, 2)}f}"


def _note(
    rng: random.Random,
    topic: _Topic,
    field: tuple[str, float, float, int] | None = None,
    value: str | None = None,
) -> str:
    """A decision about the topic's own data; about ``field`` and ``value`` when given, so a
    comment agrees with the code under it."""
    given, field = field, field or rng.choice(topic.fields)
    notes = topic.notes + _GENERIC_NOTES
    if value is not None:
        notes = tuple(n for n in notes if "{f}" in n and "{v}" in n)
    elif given is not None:
        notes = tuple(n for n in notes if "{v}" not in n)
    return rng.choice(notes).format(
        k=rng.choice(topic.keys), f=field[0], v=value or _value(rng, field)
    )


def _q(text: str) -> str:
    """``text`` as a double-quoted string literal (how people type them)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _preamble(rng: random.Random, topic: _Topic, seed: int) -> list[str]:
    """The first cells of a distractor: imports, its records, two helpers."""
    consts = topic.key.upper() + "S"
    fields: list[str] = []
    for name, lo, hi, decimals in topic.fields:
        if decimals == 0:
            fields.append(f'        "{name}": rng.randint({int(lo)}, {int(hi)}),')
        else:
            fields.append(f'        "{name}": round(rng.uniform({lo}, {hi}), {decimals}),')
    n = rng.randrange(240, 480)
    month = rng.randrange(1, 7)
    data = "\n".join(
        [
            f"rng = random.Random({seed})",
            f"start = date(2024, {month}, 1)",
            f"{topic.rows} = [",
            "    {",
            f'        "{topic.key}": rng.choice({consts}),',
            '        "day": start + timedelta(days=rng.randrange(120)),',
            *fields,
            "    }",
            f"    for _ in range({n})",
            "]",
            f"len({topic.rows})",
        ]
    )
    helpers = _src(
        f"""
        def col(name):
            return [r[name] for r in {topic.rows}]


        def pct(part, whole):
            return round(100 * part / whole, 1) if whole else 0.0


        {topic.rows}[0]
        """
    )
    return [
        _src(
            """
            import csv
            import io
            import random
            import statistics
            from collections import Counter, defaultdict
            from datetime import date, timedelta
            """
        ),
        f"{consts} = [{', '.join(_q(k) for k in topic.keys)}]",
        data,
        helpers,
    ]


# Each template writes one cell from the topic, using only the names the preamble defines
# (and its own temporaries), so any cell runs whatever came before it.
_Template = Callable[[random.Random, _Topic], str]


def _field(rng: random.Random, t: _Topic) -> str:
    return _q(rng.choice(t.fields)[0])


def _t_head(rng: random.Random, t: _Topic) -> str:
    return f"{t.rows}[:{rng.randint(2, 4)}]"


def _t_count(rng: random.Random, t: _Topic) -> str:
    return f"Counter(r[{_q(t.key)}] for r in {t.rows}).most_common({rng.randint(2, 5)})"


def _t_mean(rng: random.Random, t: _Topic) -> str:
    fn = rng.choice(("mean", "median", "fmean"))
    return f"round(statistics.{fn}(col({_field(rng, t)})), 2)"


def _t_by_key(rng: random.Random, t: _Topic) -> str:
    f = rng.choice(t.fields)[0]
    fn = rng.choice(("mean", "median", "stdev"))
    name = f"{f}_by_{t.key}"
    return _src(
        f"""
        {name} = defaultdict(list)
        for r in {t.rows}:
            {name}[r[{_q(t.key)}]].append(r[{_q(f)}])
        {{k: round(statistics.{fn}(v), 2) for k, v in sorted({name}.items())}}
        """
    )


def _t_quantiles(rng: random.Random, t: _Topic) -> str:
    n = rng.choice((4, 5, 10))
    return f"[round(q, 2) for q in statistics.quantiles(col({_field(rng, t)}), n={n})]"


def _t_top(rng: random.Random, t: _Topic) -> str:
    order = rng.choice(("reverse=True", "reverse=False"))
    f = _field(rng, t)
    return f"sorted({t.rows}, key=lambda r: r[{f}], {order})[:{rng.randint(2, 4)}]"


def _t_minmax(rng: random.Random, t: _Topic) -> str:
    f = _field(rng, t)
    return f"min(col({f})), max(col({f}))"


def _t_threshold(rng: random.Random, t: _Topic) -> str:
    field = rng.choice(t.fields)
    value = _value(rng, field)
    name = rng.choice(("flagged", "kept", "suspect", "subset", "odd"))
    if rng.random() < 0.5:  # a decision about this very cut-off …
        note = _note(rng, t, field, value)
        below = any(word in note for word in (" under ", " below "))
        op = rng.choice(("<", "<=") if below else (">", ">="))
    else:  # … or about the data it looks at
        note = _note(rng, t, field)
        op = rng.choice((">", ">=", "<", "<="))
    return _src(
        f"""
        # {note}
        {name} = [r for r in {t.rows} if r[{_q(field[0])}] {op} {value}]
        len({name}), pct(len({name}), len({t.rows}))
        """
    )


def _t_const(rng: random.Random, t: _Topic) -> str:
    field = rng.choice(t.fields)
    value = _value(rng, field)
    const = rng.choice(("MAX_", "LIMIT_", "CUTOFF_")) + field[0].upper()
    return _src(
        f"""
        {const} = {value}  # {_note(rng, t, field, value)}
        sum(1 for r in {t.rows} if r[{_q(field[0])}] > {const})
        """
    )


def _t_const_only(rng: random.Random, t: _Topic) -> str:
    field = rng.choice(t.fields)
    value = _value(rng, field)
    const = rng.choice(("THRESHOLD_", "ALERT_")) + field[0].upper()
    return f"{const} = {value}  # {_note(rng, t, field, value)}"


def _t_print_summary(rng: random.Random, t: _Topic) -> str:
    f = rng.choice(t.fields)[0]
    return _src(
        f"""
        n_keys = len(set(col({_q(t.key)})))
        total = sum(col({_q(f)}))
        print(f"{{len({t.rows})}} {t.noun} from {{n_keys}} {t.key}s, {f} total {{total:.1f}}")
        """
    )


def _t_print_note(rng: random.Random, t: _Topic) -> str:
    return f'print("NOTE: {_note(rng, t)}")'


def _t_stdev(rng: random.Random, t: _Topic) -> str:
    return f"round(statistics.stdev(col({_field(rng, t)})), 3)"


def _t_corr(rng: random.Random, t: _Topic) -> str:
    a, b = rng.sample([_q(f[0]) for f in t.fields], 2)
    return f"round(statistics.correlation(col({a}), col({b})), 3)"


def _t_csv(rng: random.Random, t: _Topic) -> str:
    field = rng.choice(t.fields)
    lines = [f"{rng.choice(t.keys)},{_value(rng, field)}" for _ in range(rng.randint(3, 5))]
    body = "\n".join([f"{t.key},{field[0]}", *lines])
    return (
        f"snippet = '''{body}'''\n"
        "parsed = list(csv.DictReader(io.StringIO(snippet)))\n"
        f"round(sum(float(p[{_q(field[0])}]) for p in parsed), 2), len(parsed)"
    )


def _t_weekly(rng: random.Random, t: _Topic) -> str:
    return _src(
        f"""
        weekly = Counter(r["day"].isocalendar()[1] for r in {t.rows})
        sorted(weekly.items())[:{rng.randint(3, 6)}]
        """
    )


def _t_weekday(rng: random.Random, t: _Topic) -> str:
    return _src(
        f"""
        names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        by_day = defaultdict(list)
        for r in {t.rows}:
            by_day[names[r["day"].weekday()]].append(r[{_field(rng, t)}])
        {{d: round(statistics.fmean(by_day[d]), 1) for d in names if by_day[d]}}
        """
    )


def _t_filter_key(rng: random.Random, t: _Topic) -> str:
    return f"[r for r in {t.rows} if r[{_q(t.key)}] == {_q(rng.choice(t.keys))}][:2]"


def _t_outliers(rng: random.Random, t: _Topic) -> str:
    f = _field(rng, t)
    z = rng.choice((2, 2.5, 3))
    return _src(
        f"""
        mu, sd = statistics.mean(col({f})), statistics.stdev(col({f}))
        outliers = [r for r in {t.rows} if abs(r[{f}] - mu) > {z} * sd]
        len(outliers), round(mu, 2), round(sd, 2)
        """
    )


def _t_dates(rng: random.Random, t: _Topic) -> str:
    return 'min(col("day")), max(col("day"))'


def _t_hist(rng: random.Random, t: _Topic) -> str:
    field = rng.choice(t.fields)
    width = max(1, round((field[2] - field[1]) / rng.choice((5, 8, 10))))
    return f"sorted(Counter(int(v // {width}) * {width} for v in col({_q(field[0])})).items())"


def _t_share(rng: random.Random, t: _Topic) -> str:
    return _src(
        f"""
        totals = defaultdict(float)
        for r in {t.rows}:
            totals[r[{_q(t.key)}]] += r[{_field(rng, t)}]
        grand = sum(totals.values())
        {{k: pct(v, grand) for k, v in sorted(totals.items())}}
        """
    )


def _t_helper(rng: random.Random, t: _Topic) -> str:
    field = rng.choice(t.fields)
    fn = rng.choice(("between", "in_band", "window", "select_range"))
    lo, hi = sorted((_value(rng, field), _value(rng, field)), key=float)
    return _src(
        f"""
        def {fn}(rows, lo, hi):
            return [r for r in rows if lo <= r[{_q(field[0])}] <= hi]


        len({fn}({t.rows}, {lo}, {hi}))
        """
    )


def _t_monthly(rng: random.Random, t: _Topic) -> str:
    return _src(
        f"""
        monthly = defaultdict(list)
        for r in {t.rows}:
            monthly[r["day"].strftime("%Y-%m")].append(r[{_field(rng, t)}])
        {{m: round(statistics.fmean(v), 1) for m, v in sorted(monthly.items())}}
        """
    )


def _t_join(rng: random.Random, t: _Topic) -> str:
    return f'", ".join(sorted(set(col({_q(t.key)}))))'


def _t_compare(rng: random.Random, t: _Topic) -> str:
    f = _field(rng, t)
    a, b = rng.sample(t.keys, 2)
    return _src(
        f"""
        a = [r[{f}] for r in {t.rows} if r[{_q(t.key)}] == {_q(a)}]
        b = [r[{f}] for r in {t.rows} if r[{_q(t.key)}] == {_q(b)}]
        round(statistics.mean(a) - statistics.mean(b), 2), len(a), len(b)
        """
    )


def _t_best_day(rng: random.Random, t: _Topic) -> str:
    return _src(
        f"""
        day_total = defaultdict(float)
        for r in {t.rows}:
            day_total[r["day"]] += r[{_field(rng, t)}]
        best_day = max(day_total, key=day_total.get)
        best_day, round(day_total[best_day], 1)
        """
    )


def _t_retain(rng: random.Random, t: _Topic) -> str:
    note = _note(rng, t)
    if "_" not in note.split()[0]:  # a sentence, unless it starts with a column name
        note = note[0].upper() + note[1:]
    return f"%retain {note}."


_TEMPLATES: tuple[tuple[_Template, int], ...] = (
    (_t_head, 3),
    (_t_count, 4),
    (_t_mean, 5),
    (_t_by_key, 6),
    (_t_quantiles, 3),
    (_t_top, 4),
    (_t_minmax, 3),
    (_t_threshold, 6),
    (_t_const, 4),
    (_t_const_only, 2),
    (_t_print_summary, 3),
    (_t_print_note, 2),
    (_t_stdev, 2),
    (_t_corr, 3),
    (_t_csv, 2),
    (_t_weekly, 2),
    (_t_weekday, 3),
    (_t_filter_key, 3),
    (_t_outliers, 3),
    (_t_dates, 1),
    (_t_hist, 3),
    (_t_share, 3),
    (_t_helper, 2),
    (_t_monthly, 3),
    (_t_join, 1),
    (_t_compare, 3),
    (_t_best_day, 2),
    (_t_retain, 1),
)


def _planted_answers() -> tuple[str, ...]:
    return tuple(a for _, _, fact in facts(planted_sessions()) for a in fact.answers)


def distractor_sessions(
    count: int = 7, cells_each: int = 140, seed: int = 0
) -> tuple[Session, ...]:
    """``count`` sessions of unrelated notebook work, ``cells_each`` runnable cells each.

    Deterministic from ``seed``. Topics do not repeat until all are used. A drawn cell whose
    source holds a planted answer, or repeats an earlier cell, is drawn again, so no seed puts an
    answer in a distractor's source (``check_run`` also looks at what the cells show).
    """
    rng = random.Random(seed)
    answers = _planted_answers()
    templates = [t for t, _ in _TEMPLATES]
    weights = [w for _, w in _TEMPLATES]
    sessions: list[Session] = []
    topics: list[_Topic] = []
    for i in range(count):
        if not topics:
            topics = rng.sample(_TOPICS, len(_TOPICS))
        topic = topics.pop()
        sources = _preamble(rng, topic, rng.randrange(10_000))
        while len(sources) < cells_each:
            for _ in range(50):
                source = rng.choices(templates, weights)[0](rng, topic)
                if source not in sources and not any(a in source for a in answers):
                    break
            else:  # pragma: no cover - a template that keeps hitting an answer
                source = f"len({topic.rows})"
            sources.append(source)
        stem = rng.choice(topic.notebooks)
        suffix = f"-{i // len(_TOPICS) + 1}" if i >= len(_TOPICS) else ""
        cells = tuple(Cell(s) for s in sources[:cells_each])
        sessions.append(Session(f"{stem}{suffix}.ipynb", "distractor", cells))
    return tuple(sessions)


# ---------------------------------------------------------------------------------------------
# Facts and self-checks
# ---------------------------------------------------------------------------------------------


def facts(sessions: Sequence[Session]) -> list[tuple[Session, int, Fact]]:
    """(session, cell index, fact) for every planted fact, in session and cell order."""
    return [
        (session, i, cell.fact)
        for session in sessions
        for i, cell in enumerate(session.cells)
        if cell.fact is not None
    ]


# Words of six letters or more that say nothing about a subject: sharing them is no giveaway.
_COMMON = frozenset(
    {
        "because",
        "before",
        "should",
        "during",
        "between",
        "without",
        "through",
        "whether",
        "around",
        "across",
        "others",
        "against",
        "within",
        "rather",
        "another",
        "anything",
        "something",
        "always",
        "almost",
        "already",
    }
)
_NAMED_VALUE = re.compile(r"^\s*[A-Z][A-Z0-9_]*\s*(?:,\s*[A-Z][A-Z0-9_]*\s*)*=.*#")


def _stems(text: str) -> set[str]:
    """Words of 6+ letters, by their first six (so "curves" and "curve's" count as one)."""
    words = re.findall(r"[A-Za-z]+", text)
    return {w.lower()[:6] for w in words if len(w) >= 6 and w.lower() not in _COMMON}


# Words of four letters or more that carry no subject (with the contractions' stems, as
# "didn't" splits into "didn" and "t"): a question may share them with its cell freely.
_STOP_WORDS = frozenset(
    [
        "about",
        "above",
        "after",
        "again",
        "against",
        "also",
        "always",
        "almost",
        "already",
        "among",
        "another",
        "anything",
        "around",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "could",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "either",
        "else",
        "even",
        "ever",
        "every",
        "from",
        "further",
        "have",
        "having",
        "here",
        "hers",
        "herself",
        "himself",
        "into",
        "itself",
        "just",
        "many",
        "might",
        "more",
        "most",
        "much",
        "must",
        "myself",
        "neither",
        "once",
        "only",
        "onto",
        "other",
        "others",
        "ours",
        "ourselves",
        "over",
        "rather",
        "same",
        "shall",
        "should",
        "some",
        "something",
        "such",
        "than",
        "that",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "until",
        "upon",
        "very",
        "were",
        "what",
        "whatever",
        "when",
        "where",
        "whether",
        "which",
        "while",
        "whom",
        "whose",
        "will",
        "with",
        "within",
        "without",
        "would",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "aren",
        "couldn",
        "didn",
        "doesn",
        "hadn",
        "hasn",
        "haven",
        "shouldn",
        "wasn",
        "weren",
        "wouldn",
    ]
)


def _word_key(word: str) -> str:
    """A word as compared: lower-cased, a plural "s" dropped, its first five letters
    ("dates" and "date", "plates" and "plate's" count as one word)."""
    word = word.lower()
    if word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


def _words(text: str) -> dict[str, str]:
    """The content words of a text (4+ letters, not a stop word) by their key, each as first
    written. Identifiers split at ``_`` and digits, so ``MAX_TRIP_H`` holds "trip"."""
    found: dict[str, str] = {}
    for word in re.findall(r"[A-Za-z]+", text):
        if len(word) >= 4 and word.lower() not in _STOP_WORDS:
            found.setdefault(_word_key(word), word)
    return found


def _shared(question: str, cell_text: str) -> list[str]:
    """The question's content words that its cell's text also has, as the question writes them."""
    asked, cell = _words(question), _words(cell_text)
    return sorted(word for key, word in asked.items() if key in cell)


def _in_answer(word: str, answers: Sequence[str]) -> bool:
    """Whether a word is part of an answer string (as written, or as a compared word)."""
    keys = {key for answer in answers for key in _words(answer)}
    return _word_key(word) in keys or any(word.lower() in a.lower() for a in answers)


def _shown_text(outcome: Outcome) -> str:
    """Everything a run cell showed: its value (both renderings), its error, what it printed."""
    parts = (outcome.value, outcome.display, outcome.error, outcome.stdout)
    return "\n".join(part for part in parts if part)


def cell_texts(sessions: Sequence[Session]) -> dict[tuple[str, int], str]:
    """(notebook, cell index) -> the fact cell's source and what it shows when its session is
    run, for every fact cell: the text a question's words are compared with."""
    texts: dict[tuple[str, int], str] = {}
    for session in sessions:
        if any(cell.fact is not None for cell in session.cells):
            runs = execute(session)
            for i, cell in enumerate(session.cells):
                if cell.fact is not None:
                    texts[(session.notebook, i)] = f"{cell.source}\n{_shown_text(runs[i])}"
    return texts


def overlap_counts(sessions: Sequence[Session]) -> dict[str, Counter[str]]:
    """For each question set ("question", "strict"): how many questions share 0, 1 or 2+
    content words with their cell's text (``cell_texts``)."""
    texts = cell_texts(sessions)
    counts: dict[str, Counter[str]] = {"question": Counter(), "strict": Counter()}
    for session, index, fact in facts(sessions):
        text = texts[(session.notebook, index)]
        for name, question in (("question", fact.question), ("strict", fact.strict)):
            n = len(_shared(question, text))
            counts[name][str(n) if n < 2 else "2+"] += 1
    return counts


def _shape_problem(cell: Cell, fact: Fact) -> str | None:
    """Whether the cell leaves the fact the way its kind says."""
    src, lines = cell.source, cell.source.splitlines()
    hit = [line for line in lines if any(a in line for a in fact.answers)]
    if fact.kind == "comment" and not any(line.lstrip().startswith("#") for line in hit):
        return "no answer in a # comment"
    if fact.kind == "printed note":
        at = src.find("print(")
        if at < 0 or not any(a in src[at:] for a in fact.answers):
            return "no answer inside a print(...)"
    if fact.kind == "named value" and not any(_NAMED_VALUE.match(line) for line in hit):
        return "no NAME = value  # comment line"
    if fact.kind == "%retain" and (len(lines) != 1 or not src.startswith("%retain ")):
        return "a %retain cell must be the one %retain line"
    if fact.kind == "result":
        body = ast.parse(_runnable(src)).body
        if not body or not isinstance(body[-1], ast.Expr):
            return "a result cell must end in an expression"
    return None


def _runnable(source: str) -> str:
    """The cell as plain Python: a ``%retain`` line becomes a no-op (the extension's magic)."""
    return "\n".join(
        "pass" if line.lstrip().startswith("%retain") else line for line in source.splitlines()
    )


def check(sessions: Sequence[Session]) -> list[str]:
    """Problems with the collection; [] when fine. Static, except that the sessions holding facts
    are run once for what their fact cells show (``cell_texts``), since a question's words are
    compared with those too."""
    problems: list[str] = []
    found = facts(sessions)
    texts = cell_texts(sessions)
    kinds = Counter(fact.kind for _, _, fact in found)
    for kind in FACT_KINDS:
        if kinds[kind] < 10:
            problems.append(f"only {kinds[kind]} facts of kind {kind!r} (want 10+)")
    planted = [s for s in sessions if s.kind != "distractor"]
    if planted and sorted(s.kind for s in planted) != sorted(SESSION_KINDS[:3]):
        problems.append(f"planted sessions are {[s.kind for s in planted]}, want one of each")
    names = Counter(s.notebook for s in sessions)
    problems += [f"notebook name {n!r} used {k} times" for n, k in names.items() if k > 1]
    for s in sessions:
        if s.kind not in SESSION_KINDS:
            problems.append(f"{s.notebook}: unknown kind {s.kind!r}")
        where = [i for i, c in enumerate(s.cells) if c.fact is not None]
        if s.kind == "distractor":
            if where:
                problems.append(f"{s.notebook}: a distractor carries facts")
        else:
            if len(where) < 22:
                problems.append(f"{s.notebook}: {len(where)} facts (want 22+)")
            if not 35 <= len(s.cells) <= 50:
                problems.append(f"{s.notebook}: {len(s.cells)} cells (want 35-50)")
            thirds = {3 * i // len(s.cells) for i in where}
            if thirds != {0, 1, 2}:
                problems.append(f"{s.notebook}: facts not spread over the session ({thirds})")
        for i, c in enumerate(s.cells):
            for line in c.source.splitlines():
                stripped = line.lstrip()
                if stripped.startswith(("%", "!")) and not stripped.startswith("%retain "):
                    problems.append(f"{s.notebook}[{i}]: magic or shell line {line!r}")
            try:
                ast.parse(_runnable(c.source))
            except SyntaxError as error:
                problems.append(f"{s.notebook}[{i}]: syntax error {error}")
    everywhere = [(s, i, c.source) for s in sessions for i, c in enumerate(s.cells)]
    for session, index, fact in found:
        at = f"{session.notebook}[{index}] {fact.kind}"
        cell = session.cells[index]
        if fact.kind not in FACT_KINDS:
            problems.append(f"{at}: unknown kind")
        if not fact.answers:
            problems.append(f"{at}: no answers")
        if not fact.question or not fact.strict:
            problems.append(f"{at}: wants both a question and a strict question")
        for answer in fact.answers:
            for name, question in (("question", fact.question), ("strict", fact.strict)):
                if answer.lower() in question.lower():
                    problems.append(f"{at}: answer {answer!r} is in its {name}")
            if fact.kind not in ("result", "error message") and answer not in cell.source:
                problems.append(f"{at}: answer {answer!r} is not in its cell")
            for other, i, source in everywhere:
                if answer in source and not (other is session and i == index):
                    problems.append(f"{at}: answer {answer!r} also in {other.notebook}[{i}]")
        shape = _shape_problem(cell, fact)
        if shape:
            problems.append(f"{at}: {shape}")
        # the main set: exactly one word in common with the cell, its subject, not an answer's
        shared = _shared(fact.question, texts[(session.notebook, index)])
        if len(shared) != 1:
            problems.append(f"{at}: question shares {shared} with its cell (want its subject)")
        problems += [
            f"{at}: question shares {word!r}, part of an answer"
            for word in shared
            if _in_answer(word, fact.answers)
        ]
        # the strict set: at most one word of six or more letters in common with the source
        stems = _stems(fact.strict) & _stems(cell.source)
        if len(stems) > 1:
            problems.append(f"{at}: strict question shares {sorted(stems)} with its cell")
    asked = [q for _, _, f in found for q in (f.question, f.strict) if q]
    questions = Counter(" ".join(q.lower().split()) for q in asked)
    problems += [f"duplicate question {q!r}" for q, n in questions.items() if n > 1]
    return problems


# ---------------------------------------------------------------------------------------------
# Running the cells
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one executed cell showed: its value, its error, what it printed, its time."""

    value: str | None  # repr() of the last expression's value (None: nothing shown)
    display: str | None  # the same as IPython's text/plain shows it (its pretty printer)
    error: str | None  # "Type: message", as the kernel shows it
    stdout: str
    seconds: float


def _pretty_printer() -> Callable[[object], str]:
    """IPython's pretty printer when IPython is installed (a kernel wraps long dicts and lists
    over lines with it), else ``repr``: this module itself needs only the standard library."""
    try:
        from IPython.lib.pretty import pretty
    except ImportError:
        return repr
    return pretty


def execute(session: Session) -> list[Outcome]:
    """Run the session's cells in order in one fresh namespace, the way IPython would.

    ``%retain`` lines are no-ops; the last statement, when an expression, is evaluated and its
    value kept (None is not shown, as in IPython). An error stops only its own cell.
    """
    pretty = _pretty_printer()
    namespace: dict[str, object] = {"__name__": "__main__"}
    outcomes: list[Outcome] = []
    for i, cell in enumerate(session.cells):
        tree = ast.parse(_runnable(cell.source))
        last: ast.expr | None = None
        if tree.body and isinstance(final := tree.body[-1], ast.Expr):
            tree.body.pop()
            last = final.value
        value: object = None
        error: str | None = None
        out = io.StringIO()
        start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(tree, f"<{session.notebook} cell {i}>", "exec"), namespace)
                if last is not None:
                    code = compile(ast.Expression(last), f"<cell {i}>", "eval")
                    value = eval(code, namespace)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - start
        if value is None:
            outcomes.append(Outcome(None, None, error, out.getvalue(), seconds))
        else:
            outcomes.append(Outcome(repr(value), pretty(value), error, out.getvalue(), seconds))
    return outcomes


def check_run(sessions: Sequence[Session]) -> list[str]:
    """Problems found by running every cell: errors, answers missing from what cells show,
    answers showing up in other cells' outputs, slow cells."""
    problems: list[str] = []
    runs = {id(s): execute(s) for s in sessions}
    for s in sessions:
        for i, (cell, run) in enumerate(zip(s.cells, runs[id(s)], strict=True)):
            at = f"{s.notebook}[{i}]"
            fact = cell.fact
            if run.seconds > CELL_SECONDS:
                problems.append(f"{at}: took {run.seconds:.3f} s")
            if run.error and (fact is None or fact.kind != "error message"):
                problems.append(f"{at}: raised {run.error}")
            if fact is None:
                continue
            if fact.kind == "error message":
                if run.error is None:
                    problems.append(f"{at}: error message fact did not raise")
                elif not any(a in run.error[:ERROR_CAP] for a in fact.answers):
                    problems.append(f"{at}: answer not in the error {run.error!r}")
            if fact.kind == "result":
                for shown in (run.value, run.display):
                    if not any(a in (shown or "")[:RESULT_CAP] for a in fact.answers):
                        problems.append(f"{at}: answer {fact.answers} not in the value {shown!r}")
    # A planted answer may only appear in its own cell's source and outputs.
    outputs = {
        (id(s), i): "\n".join(x for x in (r.value, r.display, r.error, r.stdout) if x)
        for s in sessions
        for i, r in enumerate(runs[id(s)])
    }
    for session, index, fact in facts(sessions):
        for s in sessions:
            for i in range(len(s.cells)):
                if s is session and i == index:
                    continue
                for answer in fact.answers:
                    if answer in outputs[(id(s), i)]:
                        problems.append(
                            f"{session.notebook}[{index}]: answer {answer!r} also shown by "
                            f"{s.notebook}[{i}]"
                        )
    return problems


def main() -> int:
    """Counts, the static checks and a full run of every cell; exit status 1 on problems."""
    planted = planted_sessions()
    sessions = planted + distractor_sessions()
    found = facts(sessions)
    kinds = Counter(f.kind for _, _, f in found)
    print("facts per kind:")
    for kind in FACT_KINDS:
        print(f"  {kind:14} {kinds[kind]}")
    print("sessions:")
    for s in sessions:
        n = sum(c.fact is not None for c in s.cells)
        print(f"  {s.notebook:34} {s.kind:14} {len(s.cells):4} cells {n:3} facts")
    print(f"total: {sum(len(s.cells) for s in sessions)} cells, {len(found)} facts")
    print("content words a question shares with its cell (source and what it shows):")
    for name, counts in overlap_counts(sessions).items():
        print(f"  {name:8} 0: {counts['0']:3}   1: {counts['1']:3}   2+: {counts['2+']:3}")
    problems = check(sessions) + check_run(sessions)
    for problem in problems:
        print("PROBLEM:", problem)
    print("no problems" if not problems else f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
