"""Whether a check's words name the quantity it computes.

A check's `says:` is what a reader takes the verdict to be about, so it must name the metric
the check reads (throughput, latency, attainment, overdue, accuracy...) and, for a ratio, the
point on each side of it ("128 in flight over 1", "all members over one"); for highest,
lowest and value, the point it is about. A check that computes greedy-all over greedy-one
while its words say "SLO attainment at least 0.95" fails this lint: it names one side only.

A value's words: a number as written ("128"; 1 and 2 also as "one", "two"), a policy's name
or its usual name in the papers (NAME_WORDS), and whatever the experiment's `labels:` map
gives it ({sweep path: {value: words}}, which the plots use too).
"""
import re

import yaml

METRIC_WORDS = {
    "throughput_rps": ["throughput"],
    "latency_mean_ms": ["latency"],
    "latency_p50_ms": ["p50", "median"],
    "latency_p80_ms": ["p80"],
    "latency_p90_ms": ["p90"],
    "latency_p99_ms": ["p99", "tail"],
    "latency_p999_ms": ["p999", "p99.9", "99.9th"],
    "latency_max_ms": ["max"],
    "slo_attainment": ["attainment", "within the slo"],
    "overdue": ["overdue"],
    "accuracy": ["accura"],
    "loads": ["load", "swap"],
    "mean_batch_size": ["batch"],
    "pss_mb": ["memory", "pss"],
    "latency_ms": ["latency"],
    "load_ms": ["load"],
    "speedup": ["speedup"],
    "first_answer_ms": ["first answer"],
    "hot_ms": ["hot"],
    "compute_share": ["compute share"],
    "share_load": ["load share"],
    "share_read": ["read share"],
    "share_deserialize": ["deserialize share"],
    "share_copy": ["copy share"],
    "share_map": ["mapping share"],
    "share_load_wait": ["load wait share"],
    "share_compute": ["compute share"],
    "share_queue": ["queue share"],
    "share_other": ["http and preprocessing share"],
    "backup_extra_load": ["extra load"],
    "backup_wasted_s": ["wasted"],
}
# Registered names and the words the pages and papers use for them.
NAME_WORDS = {
    "none": ["no batching", "none"],
    "gre": ["gre", "gpu rest engine"],
    "rafiqi-ewma": ["rafiqi"],
    "rafiqi-aimd": ["rafiqi", "aimd"],
    "rafiki-greedy": ["greedy"],
    "greedy": ["greedy"],
    "rafiki-rl": ["rl"],
    "fixed": ["fixed", "clipper"],
    "clipper": ["clipper"],
    "clipper-aimd": ["clipper", "aimd"],
    "all": ["all", "every"],
    "one": ["one"],
    "least-loaded": ["least-loaded"],
}
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def _load(v):
    if isinstance(v, str) and v.strip().startswith("{"):
        try:
            return yaml.safe_load(v)
        except yaml.YAMLError:
            return v
    return v


def _scalar_words(key, v):
    if isinstance(v, list):
        return [w for x in v for w in _scalar_words(key, x)]
    if isinstance(v, bool):
        return [key] if v else [f"no {key}", f"not {key}"]
    if isinstance(v, (int, float)):
        out = [f"{v:g}"]
        return out + ([NUMBER_WORDS[int(v)]] if v in NUMBER_WORDS else [])
    text = str(v)
    return NAME_WORDS.get(text, []) + [text]


def label_of(labels, path, v):
    """The words an experiment's `labels:` give value `v` of `path`, or None. A path's labels
    are a map {value: words} or, for values that are maps, a list of [value, words] pairs."""
    entries = (labels or {}).get(path) or []
    pairs = entries.items() if isinstance(entries, dict) else entries
    want = _load(v)
    for value, words in pairs:
        if _load(value) == want or str(value) == str(v) or _same_scalar(value, v):
            return str(words)
    return None


def _same_scalar(a, b):
    """A label's key and a swept value as results.db stores it (text: "false", "0.002") name
    the same scalar; a flag never equals a number (True == 1 in Python)."""
    def scalar(x):
        if not isinstance(x, str):
            return x
        try:
            return yaml.safe_load(x)
        except yaml.YAMLError:
            return x
    a, b = scalar(a), scalar(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return not isinstance(a, (dict, list)) and a == b


def value_words(path, v, other, labels):
    """Words that name value `v` of sweep path `path` apart from `other` (the other side)."""
    label = label_of(labels, path, v)
    words = [label] if label else []
    v, other = _load(v), _load(other)
    if isinstance(v, dict):
        o = other if isinstance(other, dict) else {}
        differing = [k for k in v if o.get(k) != v.get(k)] or list(v)
        for k in differing:
            words += _scalar_words(k, v[k])
        return words
    return words + _scalar_words(path.split(".")[-1], v)


def _named(text, words, prefix=False):
    """Whether `text` holds one of `words` as a whole word (as a word's start with prefix)."""
    for w in words:
        pattern = r"(?<![\w.])" + re.escape(str(w).lower()) + ("" if prefix else r"(?![\w])")
        if re.search(pattern, text):
            return True
    return False


def _side_problems(text, sel, other, labels, side):
    out = []
    for path, v in (sel or {}).items():
        if path == "metric":
            continue
        if other is not None and other.get(path) == v:
            continue  # the same on both sides: not what tells them apart
        words = value_words(path, v, (other or {}).get(path), labels)
        if not _named(text, words):
            out.append(f"its words do not name {side} {path} = {v} "
                       f"(any of: {', '.join(map(str, dict.fromkeys(words)))})")
    return out


def problems(check, labels=None):
    """What the check's words fail to name (a list of messages; empty when they name it)."""
    labels = labels or {}
    text = " ".join(str(check.get("says", "")).split()).lower()
    test = check.get("test")
    metrics = {check.get("metric", "throughput_rps")}
    for k in ("of", "over"):
        if isinstance(check.get(k), dict) and "metric" in check[k]:
            metrics.add(check[k]["metric"])
    if test == "ratio" and all(isinstance(check.get(k), dict) and "metric" in check[k]
                               for k in ("of", "over")):
        metrics.discard(check.get("metric", "throughput_rps"))
        metrics |= {check["of"]["metric"], check["over"]["metric"]}
    out = [f"its words do not name the metric {m} (any of: {', '.join(METRIC_WORDS[m])})"
           for m in sorted(metrics)
           if m in METRIC_WORDS and not _named(text, METRIC_WORDS[m], prefix=True)]
    if test == "ratio":
        of, over = dict(check.get("of") or {}), dict(check.get("over") or {})
        out += _side_problems(text, of, over, labels, "the numerator's")
        out += _side_problems(text, over, of, labels, "the denominator's")
    elif test in ("highest", "lowest", "value"):
        out += _side_problems(text, check.get("at") or {}, None, labels, "the point's")
    return out
