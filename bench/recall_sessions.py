"""Notebook sessions, planted facts and questions for the recall-quality benchmark.

``bench/recall_quality.py`` runs these sessions cell by cell in real IPython kernels with
auto-retain on, then asks the questions and checks whether a memory holding the answer comes
back in the top 5. The three planted sessions are notebooks, ``bench/notebooks/*.ipynb`` (open
them in Jupyter to read or edit them): each planted fact's kind, question, strict question and
answers are in its cell's ``recall_fact`` metadata, the kind of work in the notebook's
``recall_session`` metadata; ``load_session`` reads them. The distractors are generated here,
and ``check`` holds both to the rules. The benchmark only measures something real if the test
collection is built like an IR test collection, so it is made to these rules:

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
from pathlib import Path

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


PLANTED = (  # the notebooks with planted facts, in bench/notebooks/
    "bike-share-demand.ipynb",  # a data analysis
    "growth-curves-lab-log.ipynb",  # a lab log
    "stats101-week7-prep.ipynb",  # a teaching session
)
NOTEBOOKS = Path(__file__).parent / "notebooks"


def load_session(path: Path) -> Session:
    """A planted session from its notebook: the code cells' sources in order, each planted
    fact from its cell's ``recall_fact`` metadata (kind, question, strict question, answers),
    the kind of work from the notebook's ``recall_session`` metadata."""
    import nbformat

    book = nbformat.read(str(path), as_version=4)
    cells = []
    for cell in book.cells:
        if cell.cell_type != "code":
            continue
        planted = cell.metadata.get("recall_fact")
        fact = None
        if planted is not None:
            fact = Fact(
                planted["kind"],
                planted["question"],
                tuple(planted["answers"]),
                planted.get("strict", ""),
            )
        cells.append(Cell(cell.source, fact))
    return Session(path.name, book.metadata["recall_session"]["kind"], tuple(cells))


def planted_sessions() -> tuple[Session, ...]:
    """The three sessions with planted facts: a data analysis, a lab log, a teaching session."""
    return tuple(load_session(NOTEBOOKS / name) for name in PLANTED)


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
