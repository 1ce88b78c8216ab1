"""Run-to-run noise: how far apart two results may be and still be the same result.

A point's value is the mean over its repetitions (each with its own seed); its spread is
their sample standard deviation. The standard error of that mean is sd / sqrt(n). A check
whose bound lies within two standard errors of the value it computed is judged "within
noise" rather than failed: another set of seeds could land on either side of the bound.
A point with one repetition has no measured spread, so no check on it can be within noise.
"""
import math

# How many standard errors a difference must exceed before it counts (about 95% for a
# normal mean).
Z = 2.0


def stderr(stat):
    """Standard error of a (mean, sd, n) value; NaN where the spread is unmeasured (n < 2)."""
    mean, sd, n = stat
    if n is None or n < 2 or sd is None or math.isnan(sd):
        return math.nan
    return sd / math.sqrt(n)


def ratio_band(a, b):
    """Half-width of the noise band of a / b for (mean, sd, n) values a and b (first-order
    propagation: var(a/b) = (ea/b)^2 + (a eb / b^2)^2, which holds for a = 0 too, as for no
    overdue request at all); NaN when either spread is unmeasured or b's mean is zero."""
    if b[0] == 0:
        return math.nan
    ea, eb = stderr(a), stderr(b)
    if math.isnan(ea) or math.isnan(eb):
        return math.nan
    return Z * math.sqrt((ea / b[0]) ** 2 + (a[0] * eb / b[0] ** 2) ** 2)


def difference_band(a, b):
    """Half-width of the noise band of a - b; NaN when either spread is unmeasured."""
    ea, eb = stderr(a), stderr(b)
    if math.isnan(ea) or math.isnan(eb):
        return math.nan
    return Z * math.sqrt(ea ** 2 + eb ** 2)


def value_band(a):
    """Half-width of the noise band of one point's mean."""
    e = stderr(a)
    return math.nan if math.isnan(e) else Z * e


def with_drift(band, value, scale_a, scale_b):
    """The band widened by the machine's speed drift between two speed-matched runs (their
    cost_scale, the engine's batch times over the profile's): a value measured at speeds that
    differ by d (relative) moves by about d itself, so that much is no finding. NaN scales
    leave the band as it is."""
    if scale_a is None or scale_b is None or math.isnan(scale_a) or math.isnan(scale_b) \
            or scale_b == 0:
        return band
    drift = abs(value) * abs(scale_a / scale_b - 1)
    return drift if math.isnan(band) else math.sqrt(band ** 2 + drift ** 2)


def bound_near(value, band, lo, hi):
    """Whether a value inside [lo, hi] lies within its noise band of a bound: it holds, but
    by less than the run-to-run spread, so another set of runs could land on either side."""
    if math.isnan(band):
        return False
    return any(b is not None and abs(value - b) <= band for b in (lo, hi))


def bound_within(value, band, lo, hi):
    """Whether a value outside [lo, hi] misses it by less than its noise band."""
    if math.isnan(band):
        return False
    if lo is not None and value < lo:
        return lo - value <= band
    if hi is not None and value > hi:
        return value - hi <= band
    return False


def describe(band, *stats, scales=None):
    """The band in words for a check's detail; where it is unmeasured, why (given the (mean,
    sd, n) values it came from): one run per point, or a ratio over zero. `scales`: the two
    runs' machine speeds where the band includes their drift (with_drift)."""
    if not math.isnan(band):
        reps = any((n or 0) >= 2 for _, _, n in stats)
        why = ["2 standard errors over the repetitions"] if reps else []
        if scales:
            why.append(f"the machine's speed drifted: the engine's batches took {scales[0]:.2f}x "
                       f"and {scales[1]:.2f}x the profile's times in the two points' runs")
        return f"noise: ± {band:.3g} ({'; '.join(why)})"
    if stats and all((n or 0) >= 2 for _, _, n in stats):
        return "no noise band: the ratio's denominator is zero"
    return "one run per point: no run-to-run spread to judge noise by"
