#!/usr/bin/python3
"""Test: scripts/store_miss_series.py's served misses on the tiny models (scripts/make-models
--tiny): with a host tier of one place and a request for the holder before each, every
request for the model waits for its load, in the same server process; and the report gives
both ratios per part, computed from those numbers (the first miss over the median of the
later ones, the median miss over the profile). No timing is asserted.

    check_miss_series.py SERVELAB
"""
import contextlib
import io
import os
import re
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(SRC, "scripts"))
import store_miss_series as series  # noqa: E402

MODELS = os.path.join(SRC, "models")


def main():
    servelab = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="check-miss-series-") as tmp:
        misses = series.served_misses(servelab, MODELS, "tiny_variant_0", "tiny_cnn", 3, tmp)
    assert len(misses) == 3, misses
    for load, compute in misses:
        assert load > 0 and compute > 0, misses  # each one loaded the model again
    profile = (2.0 * statistics.median(m[0] for m in misses), 10.0)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        series.report(1, profile, misses)
    text = out.getvalue()
    first_over_later = misses[0][0] / statistics.median(m[0] for m in misses[1:])
    assert f"load: first miss / median of later ones {first_over_later:.2f}; " \
           "median miss / profile 0.50" in text, text
    assert len(re.findall(r"^  miss \d: load", text, re.M)) == 3, text
    print("store_miss_series: 3 misses, each with its load")


if __name__ == "__main__":
    main()
