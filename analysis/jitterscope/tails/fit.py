"""Extreme-value view of latency: how often levels at and beyond the observed maximum are exceeded.

Per thread (:func:`fit_tail` on one series, :func:`analyze_tails` on a dataset):

1. **Threshold** by an automated, stated rule.  Candidates are the values with
   ``k`` exceedances, ``k`` geometric from ``min(n/5, 10000)`` down to 100.  A
   GPD is fitted above each.  Chosen: the *lowest* candidate ``i`` whose shape
   agrees with that of every higher candidate ``j``:
   ``|xi_j - xi_i| <= z (1 + xi_i) sqrt(1/k_j - 1/k_i)`` (if the GPD with shape
   ``xi_i`` holds above ``u_i``, estimates above nested thresholds differ by
   roughly independent increments of that variance, Wadsworth 2016), with
   ``z`` Bonferroni-corrected for the number of higher candidates at 5 %.  This
   is the parameter-stability plot (Coles 2001 §4.3.4) read by a rule; the
   mean-residual-life curve, linear above a valid threshold with slope
   ``xi / (1 - xi)``, is reported as a cross-check (``mrl_xi``).
2. **Fit**: GPD by maximum likelihood (:mod:`jitterscope.gpd`); goodness of fit
   by Anderson-Darling with a parametric-bootstrap p-value (on at most
   :data:`GOF_MAX` exceedances), and the QQ correlation.
3. **Exceedance probability** ``P(latency > x)`` per wake-up and **return levels**
   (exceeded about once per hour / day at the thread's wake-up rate, i.e. an
   expected count of one) with **profile-likelihood** intervals of the joint
   binomial x GPD likelihood.
4. **Cross-check** by block maxima: GEV vs Gumbel (likelihood-ratio test) and the
   GEV shape against the GPD shape.
5. **Assumptions** (:mod:`jitterscope.tailchecks`): independence (Ljung-Box on
   exceedance indicators and on block maxima, extremal index) and stationarity
   (first vs second half).  Any failed check gates the result: it is marked
   *indicative only* and the sentence says why.
6. **No extrapolation from a model that does not hold.**  When a check of the model
   itself fails (:data:`MODEL_CHECKS`: threshold stability, goodness of fit, a QQ
   correlation under :data:`QQ_MIN`, or a tail rate or level that changed during the
   capture) or the shape is at least :data:`XI_MAX`, the fit gives no return level and
   no exceedance probability beyond the observed maximum (``extrapolated`` is False,
   ``withheld`` says why): such a tail mixes mechanisms (a body and rare stalls), and
   one GPD fitted across them returns levels of 10^8 µs and more.  Levels within the
   data get the empirical fraction with a Clopper-Pearson interval, and
   ``large_events`` (:mod:`.rates`) counts the events above fixed levels per hour,
   with a Poisson interval, whether or not the fit extrapolates.  Independence
   failures alone keep the numbers, marked indicative (their intervals are too narrow).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, stats

from ..dataset import Dataset, ThreadInfo, column_values, iter_thread_batches
from ..derive import require_wakeups
from ..errors import AnalysisError
from ..format import format_p, format_resampled_p, jsonable
from . import gpd
from .accumulator import MAX_EXCEEDANCES, TailAccumulator, TailSummary, block_size_for, summarize_series
from .checks import ALPHA, INDEPENDENCE_CAVEAT, Check, check_block_maxima, check_exceedances
from .rates import RATE_LEVELS_NS, EventRate, event_rates

MIN_EXCEEDANCES = 100
N_CANDIDATES = 12
STABILITY_ALPHA = 0.05
GOF_MAX = 1000
GOF_RESAMPLES = 199
"""Parametric-bootstrap samples of the goodness-of-fit p-value: its floor is 1/200 = 0.005."""
QQ_POINTS = 400
RETURN_CURVE_POINTS = 10
"""Goodness of fit is tested on a random subsample of at most this many exceedances (cost, and
with many thousands A² rejects any model for the rounding of the clock alone)."""
RETURN_PERIODS_S = (("hour", 3600.0), ("day", 86400.0))
XI_MAX = 0.5
"""Shapes at or above this give no extrapolation.  At xi >= 1/2 the GPD has infinite variance and
return levels grow like p^-xi: a once-per-day level is then mostly the model's, and on latency
(bounded by physics within one mechanism) a shape that large comes from fitting one GPD across
a body and rare stalls (Coles 2001 §4.3; the demo's two-mechanism tails fit 1.2 and 4.1)."""
QQ_MIN = 0.95
"""A QQ correlation below this fails the goodness-of-fit check whatever Anderson-Darling says
(A² is computed on a subsample and misses a few extreme points that one mechanism cannot explain)."""
MODEL_CHECKS = ("threshold stability", "goodness of fit", "QQ correlation", "exceedance rate, first vs second half",
                "block maxima, first vs second half")
"""Checks whose failure means the GPD does not describe this tail, so nothing is extrapolated from it."""

EVT_PROMISE = (
    "What extreme-value theory can promise: if wake-ups are independent and identically distributed and the "
    "tail above the threshold follows a generalised Pareto law (true for nearly every distribution above a high "
    "enough threshold), the fit gives calibrated estimates, with intervals, of how often levels at and a little "
    "beyond the observed maximum are exceeded. What it cannot promise: a worst case. A mechanism that never "
    "fired during the capture (an SMI storm, thermal throttling, another workload, a firmware change) is "
    "invisible to it, and the further a return period reaches beyond the capture's length the more the answer "
    "rests on the model rather than on the data. A latency bound for a real-time system still needs captures "
    "under worst-case load and an argument about the mechanisms."
)


@dataclass(frozen=True)
class ThresholdCandidate:
    """A GPD fit above one candidate threshold (the parameter-stability and mean-residual-life diagnostics)."""

    threshold_ns: float
    exceedances: int
    xi: float
    xi_se: float
    sigma_ns: float
    modified_scale_ns: float
    mean_excess_ns: float


@dataclass(frozen=True)
class Interval:
    """An estimate with a confidence interval (``lower``/``upper`` may be 0 or inf: not bounded by the data)."""

    estimate: float
    lower: float
    upper: float


@dataclass(frozen=True)
class ReturnLevel:
    """The latency exceeded about once per ``period`` at this wake-up rate (expected count one)."""

    period: str
    wakeups: float
    level_ns: Interval
    extrapolation: float
    """Return period over capture length; far above 1 the answer rests on the model."""


@dataclass(frozen=True)
class BlockMaxima:
    """GEV vs Gumbel on block maxima, a cross-check of the GPD shape."""

    block_size: int
    maxima_ns: tuple[float, ...]
    gev_xi: float
    gev_xi_se: float
    gev_loc_ns: float
    gev_scale_ns: float
    gumbel_loc_ns: float
    gumbel_scale_ns: float
    lr_statistic: float
    lr_p_value: float
    sentence: str
    independent: bool = True
    """False when neighbouring maxima are correlated: the LR test's p-value is then too small (indicative)."""


@dataclass(frozen=True)
class TailFit:
    """Peaks-over-threshold result of one thread."""

    thread: int
    cpu: int
    n: int
    rate_hz: float
    confidence: float
    threshold_ns: float
    threshold_quantile: float
    exceedances: int
    candidates: tuple[ThresholdCandidate, ...]
    mrl_xi: float
    xi: float
    xi_se: float
    sigma_ns: float
    ad_statistic: float
    ad_p_value: float
    qq_correlation: float
    qq_points_ns: tuple[tuple[float, float], ...]
    """(model quantile, observed exceedance size) at plotting positions (i - 0.5)/k, at most QQ_POINTS."""
    observed_max_ns: float
    exceedance_probabilities: tuple[tuple[float, Interval], ...]
    return_levels: tuple[ReturnLevel, ...]
    return_curve: tuple[tuple[float, float, float, float], ...]
    """(return period in wake-ups, level, lower, upper) in ns, from the threshold's period up to beyond a day."""
    empirical_return: tuple[tuple[float, float], ...]
    """(return period n / i in wake-ups, i-th largest latency), the largest values only."""
    block_maxima: BlockMaxima | None
    checks: tuple[Check, ...]
    assumptions_ok: bool
    verdict: str
    extrapolated: bool = True
    """Whether return levels and exceedance probabilities beyond the observed maximum are given."""
    withheld: str = ""
    """Why they are not (empty when they are)."""
    large_events: tuple[EventRate, ...] = ()
    """Declustered events above fixed levels per hour, counted in the data (model-free)."""
    unit: str = "wake-up"
    """What one value of the series is: a timer's wake-up, or a poll loop's interruption (its length)."""

    def to_json(self) -> dict[str, Any]:
        return jsonable(dataclasses.asdict(self), inf_as_string=True)


@dataclass(frozen=True)
class TailsReport:
    """Tail fits of every thread of a dataset, plus what EVT can and cannot promise."""

    dataset: str
    threads: tuple[TailFit, ...]
    skipped: tuple[tuple[int, str], ...]
    promise: str = EVT_PROMISE
    levels_ns: tuple[float, ...] = ()
    """The levels asked for (``--level-us``), in ns: each thread's P(latency > level) is in its
    ``exceedance_probabilities`` unless withheld (beyond the observed maximum of a fit that does not
    extrapolate)."""
    unit: str = "wake-up"
    """What one value is: ``wake-up`` (its latency) or ``interruption`` (a poll dataset: its length)."""

    def to_json(self) -> dict[str, Any]:
        return jsonable(dataclasses.asdict(self), inf_as_string=True)


def shape_text(xi: float, se: float) -> str:
    """``ξ = 0.213 ± 0.041``, or the shape with its undefined uncertainty said in words (never ``± nan``)."""
    if np.isfinite(se):
        return f"ξ = {xi:.3f} ± {se:.3f}"
    why = ": ξ < −0.5, where maximum likelihood is not regular" if xi < -0.5 else ""
    return f"ξ = {xi:.3f} (standard error undefined{why})"


def choose_threshold(values: np.ndarray) -> tuple[tuple[ThresholdCandidate, ...], int]:
    """Candidate thresholds with their GPD fits, and the index of the chosen one (rule in the module docstring).

    Raises
    ------
    AnalysisError
        Fewer than 5 x 50 values, or too few distinct values above the candidates.
    """
    return _choose_threshold(np.sort(np.asarray(values))[::-1].astype(float), np.asarray(values).size)


def _choose_threshold(desc: np.ndarray, n: int, unit: str = "wake-up") -> tuple[tuple[ThresholdCandidate, ...], int]:
    """:func:`choose_threshold` from the largest values in descending order (at least min(n/5, 10^4) + 1)."""
    k_max = min(n // 5, MAX_EXCEEDANCES)
    if k_max < MIN_EXCEEDANCES:
        raise AnalysisError(f"{n} {unit}s are too few for a tail fit (need at least {5 * MIN_EXCEEDANCES})")
    ks = np.unique(np.geomspace(MIN_EXCEEDANCES, k_max, N_CANDIDATES).round().astype(int))[::-1]
    candidates = []
    for k in ks:
        u = desc[k]
        y = desc[desc > u] - u
        if y.size < MIN_EXCEEDANCES // 2:
            continue  # ties: too few distinct values above this level
        fit = gpd.fit_gpd(y)
        candidates.append(ThresholdCandidate(
            threshold_ns=float(u), exceedances=int(y.size), xi=fit.xi, xi_se=fit.xi_se, sigma_ns=fit.sigma,
            modified_scale_ns=fit.sigma - fit.xi * float(u), mean_excess_ns=float(y.mean())))
    if not candidates:
        raise AnalysisError("latencies take too few distinct values for a tail fit (heavily rounded data?)")
    candidates.sort(key=lambda c: c.threshold_ns)
    for i in range(len(candidates) - 1):
        if _is_stable(candidates, i):
            return tuple(candidates), i
    return tuple(candidates), len(candidates) - 1


def _is_stable(candidates: Sequence[ThresholdCandidate], i: int) -> bool:
    """Whether candidate ``i``'s shape agrees with every higher candidate's (the rule in the module docstring)."""
    cand, higher = candidates[i], candidates[i + 1:]
    if not higher:
        return False
    z = stats.norm.isf(STABILITY_ALPHA / (2 * len(higher)))  # Bonferroni over the higher candidates
    # standard errors under the hypothesis that the shape above u_i is xi_i: (1 + xi_i) / sqrt(k)
    one_plus = 1 + max(cand.xi, -0.5)
    return all(abs(cand.xi - h.xi) <= z * one_plus * np.sqrt(max(1 / h.exceedances - 1 / cand.exceedances, 1e-12))
               for h in higher)


def clock_resolution(values: np.ndarray) -> float:
    """The largest power-of-ten step (ns) all values are multiples of, when it is at least 10 ns; else 1."""
    ints = np.asarray(values)
    if not np.issubdtype(ints.dtype, np.integer):
        if not np.all(ints == np.round(ints)):
            return 1.0
        ints = ints.astype(np.int64)
    step = 1
    for candidate in (10, 100, 1000, 10_000):
        if np.all(ints % candidate == 0):
            step = candidate
    return float(step) if step >= 10 else 1.0


def _mrl_xi(candidates: tuple[ThresholdCandidate, ...], chosen: int) -> float:
    """Shape implied by the slope b of mean excess vs threshold above the chosen one: xi = b / (1 + b)."""
    above = candidates[chosen:]
    if len(above) < 3:
        return float("nan")
    u = np.array([c.threshold_ns for c in above])
    e = np.array([c.mean_excess_ns for c in above])
    w = np.array([c.exceedances for c in above], dtype=float)
    slope = np.polyfit(u, e, 1, w=np.sqrt(w))[0]
    return float(slope / (1 + slope))


def fit_block_maxima(values: np.ndarray, block_size: int, gpd_xi: float, gpd_se: float) -> BlockMaxima:
    """GEV and Gumbel fits of maxima of consecutive blocks of ``block_size`` wake-ups; LR test of xi = 0."""
    n_blocks = values.size // block_size
    maxima = values[: n_blocks * block_size].reshape(n_blocks, block_size).max(axis=1).astype(float)
    return _fit_maxima(maxima, block_size, gpd_xi, gpd_se)


def _fit_maxima(maxima: np.ndarray, block_size: int, gpd_xi: float, gpd_se: float,
                unit: str = "wake-up") -> BlockMaxima:
    n_blocks = maxima.size
    gum_loc, gum_scale = stats.gumbel_r.fit(maxima)
    ll_gum = float(stats.gumbel_r.logpdf(maxima, gum_loc, gum_scale).sum())

    def nll(p: np.ndarray) -> float:
        value = -stats.genextreme.logpdf(maxima, p[0], p[1], np.exp(p[2])).sum()
        return float(value) if np.isfinite(value) else 1e300

    start = np.array([-0.1, gum_loc, np.log(gum_scale)])
    res = optimize.minimize(nll, start, method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-9, "maxiter": 4000})
    best = res.x if res.fun < nll(np.array([0.0, gum_loc, np.log(gum_scale)])) else np.array(
        [0.0, gum_loc, np.log(gum_scale)])
    ll_gev = max(-float(nll(best)), ll_gum)
    lr = 2 * (ll_gev - ll_gum)
    p = float(stats.chi2.sf(lr, 1))
    xi_gev = -float(best[0])  # scipy's c is -xi
    se = _gev_xi_se(nll, best)
    z = abs(xi_gev - gpd_xi) / np.hypot(se, gpd_se) if np.isfinite(se) else float("nan")
    sentence = (
        f"block maxima ({n_blocks} blocks of {block_size} {unit}s): GEV shape {shape_text(xi_gev, se)}; "
        + (f"Gumbel (ξ = 0) rejected at α = {ALPHA:g} (LR = {lr:.1f}, {format_p(p)})" if p < ALPHA
           else f"Gumbel (ξ = 0) not rejected at α = {ALPHA:g} (LR = {lr:.1f}, {format_p(p)})")
        + ("; agrees with the GPD shape" if z <= 2 else f"; differs from the GPD shape ({z:.1f} standard errors)")
    )
    return BlockMaxima(
        block_size=block_size, maxima_ns=tuple(maxima.tolist()), gev_xi=xi_gev, gev_xi_se=se,
        gev_loc_ns=float(best[1]), gev_scale_ns=float(np.exp(best[2])), gumbel_loc_ns=float(gum_loc),
        gumbel_scale_ns=float(gum_scale), lr_statistic=float(lr), lr_p_value=p, sentence=sentence)


def _gev_xi_se(nll: Any, best: np.ndarray) -> float:
    """Standard error of xi from a central-difference Hessian of the negative log-likelihood."""
    steps = np.array([1e-3, 1e-3 * max(abs(best[1]), 1.0), 1e-3])
    hess = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            ei, ej = np.eye(3)[i] * steps[i], np.eye(3)[j] * steps[j]
            hess[i, j] = (nll(best + ei + ej) - nll(best + ei - ej) - nll(best - ei + ej)
                          + nll(best - ei - ej)) / (4 * steps[i] * steps[j])
    try:
        cov = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        return float("nan")
    return float(np.sqrt(cov[0, 0])) if cov[0, 0] > 0 else float("nan")


def fit_tail(
    latency_ns: np.ndarray,
    *,
    interval_ns: int,
    thread: int = 0,
    cpu: int = -1,
    levels_ns: tuple[float, ...] = (),
    confidence: float = 0.90,
    seed: int = 0,
) -> TailFit:
    """Peaks-over-threshold analysis of one thread's latency series (in wake-up order).

    Parameters
    ----------
    latency_ns : ndarray
        Latencies in ns, in wake-up order (order matters for the independence checks).
    interval_ns : int
        The thread's wake-up interval; sets the rate for return levels.
    levels_ns : tuple of float
        Latencies at which to give P(latency > x); the observed maximum is always included.
    confidence : float
        Level of the profile-likelihood intervals.
    seed : int
        Seed of the goodness-of-fit bootstrap.

    Returns
    -------
    TailFit

    Raises
    ------
    AnalysisError
        Too few wake-ups (fewer than 250) or too few distinct values.
    """
    values = np.asarray(latency_ns)
    if values.ndim != 1 or interval_ns <= 0:
        raise AnalysisError("fit_tail needs a 1-D latency series and a positive interval")
    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must be in (0, 1), not {confidence}")
    return fit_summary(summarize_series(values, levels_ns=levels_ns, seed=seed), interval_ns=interval_ns,
                       thread=thread, cpu=cpu, confidence=confidence, seed=seed)


def fit_summary(
    summary: TailSummary, *, interval_ns: int, thread: int = 0, cpu: int = -1, confidence: float = 0.90,
    seed: int = 0, rate_hz: float | None = None, unit: str = "wake-up",
) -> TailFit:
    """Peaks-over-threshold analysis from a streamed :class:`~jitterscope.tailacc.TailSummary` (as :func:`fit_tail`).

    ``rate_hz`` (with ``unit``): values per second when they do not come one per ``interval_ns`` (a poll
    loop's interruptions: their count over the time polled); it sets the return periods, and the levels
    of the events counted leave out the one interval (a missed period means nothing there).

    Rounded values (clock resolution above 1 ns) are spread uniformly over their rounding interval by the
    summary; levels at or below the threshold get the empirical fraction of recorded values above them.

    Returns
    -------
    TailFit

    Raises
    ------
    AnalysisError
        Too few wake-ups (fewer than 500) or too few distinct values.
    """
    if interval_ns <= 0 or not 0 < confidence < 1:
        raise AnalysisError(f"a tail fit needs a positive interval and a confidence in (0, 1), not {confidence}")
    resolution, n = summary.resolution, summary.n
    candidates, chosen = _choose_threshold(summary.top_ns, n, unit)
    cand = candidates[chosen]
    u = cand.threshold_ns
    above = summary.top_ns > u
    by_position = np.argsort(summary.top_index[above], kind="stable")
    positions = summary.top_index[above][by_position]
    y = summary.top_ns[above][by_position] - u
    fit = gpd.fit_gpd(y)
    k = y.size
    gof_y = y if k <= GOF_MAX else np.random.default_rng(seed).choice(y, GOF_MAX, replace=False)
    a2, ad_p = gpd.gof_pvalue(gof_y, fit if k <= GOF_MAX else gpd.fit_gpd(gof_y), n_boot=GOF_RESAMPLES, seed=seed)
    probs = (np.arange(1, k + 1) - 0.5) / k
    model = fit.isf(1 - probs)
    qq = float(np.corrcoef(np.sort(y), model)[0, 1])
    keep = np.unique(np.linspace(0, k - 1, min(k, QQ_POINTS)).round().astype(int))
    qq_points = tuple(zip(model[keep].tolist(), np.sort(y)[keep].tolist(), strict=True))
    observed_max = summary.observed_max_ns  # as recorded, before any spreading of rounded values
    rate = 1e9 / interval_ns if rate_hz is None else float(rate_hz)
    block = summary.block_size
    bm = _fit_maxima(summary.maxima_ns, block, fit.xi, fit.xi_se, unit) if summary.maxima_ns.size >= 20 else None
    stable = _is_stable(candidates, chosen)
    rounding = (f"; values are multiples of {resolution:g} ns and were spread uniformly over their rounding "
                "interval before fitting" if resolution > 1 else "")
    threshold_check = Check(
        "threshold stability", float(chosen), None, stable,
        f"threshold {u / 1000:.3f} µs ({k} exceedances) is the lowest of {len(candidates)} candidates whose shape "
        f"agrees with every higher one{rounding}" if stable else
        f"no candidate threshold has a shape that agrees with every higher one; the highest ({k} exceedances) "
        f"is used — the tail looks like a mixture of mechanisms, which one GPD cannot describe{rounding}")
    # two checks, each decided by its own rule: Anderson-Darling by its p-value (as every test), the QQ
    # correlation by its bound; one line "p = 0.32 FAIL" would mix them
    gof = Check("goodness of fit", a2, ad_p, ad_p >= ALPHA,
                f"Anderson-Darling A² = {a2:.2f} on {gof_y.size} exceedances, parametric bootstrap "
                f"{format_resampled_p(ad_p, GOF_RESAMPLES)} — " + (
                    "the GPD describes the exceedances" if ad_p >= ALPHA else "the exceedances do not follow a GPD"),
                resamples=GOF_RESAMPLES)
    qq_check = Check("QQ correlation", qq, None, qq >= QQ_MIN,
                     f"QQ correlation {qq:.4f} (bound {QQ_MIN}) — " + (
                         "the largest exceedances lie on the GPD's quantiles" if qq >= QQ_MIN else
                         f"the largest exceedances do not follow the GPD (QQ correlation under {QQ_MIN})"))
    checks = (threshold_check, gof, qq_check, *check_exceedances(positions, n))
    if bm is not None:
        bm_checks = check_block_maxima(np.asarray(bm.maxima_ns))
        checks += bm_checks
        if not bm_checks[0].passed:  # the LR test's chi-squared null assumes independent maxima
            bm = dataclasses.replace(bm, sentence=bm.sentence + f" — the LR test {INDEPENDENCE_CAVEAT}",
                                     independent=False)
    failed = [c.name for c in checks if not c.passed]
    model_failed = [name for name in failed if name in MODEL_CHECKS]
    reasons = model_failed + ([f"shape ξ = {fit.xi:.2f} ≥ {XI_MAX}"] if fit.xi >= XI_MAX else [])
    extrapolated = not reasons
    withheld = "" if extrapolated else (
        "the tail mixes mechanisms, which one generalised Pareto law cannot describe (" + "; ".join(reasons)
        + "): no return level or exceedance probability beyond the observed maximum is given; the rate of the "
        "large events is counted instead")
    counts = dict(zip(summary.levels_ns, summary.above_levels, strict=True))
    exceed = []
    for level in sorted({observed_max, *summary.levels_ns}):
        if level <= u or (not extrapolated and level <= observed_max):
            # within the data: the fraction recorded above it (exact for asked levels, from the kept top otherwise)
            above = counts[level] if level in counts else int(np.count_nonzero(summary.top_ns > level))
            if level >= observed_max:
                above = 0
            exceed.append((level, Interval(above / n, *_binomial_interval(above, n, confidence))))
        elif extrapolated:
            estimate = gpd.exceedance_ci(y, k, n, level - u, confidence, fit)
            # beyond the data the model is asked no further than its longest return period (once per day at this
            # rate), as for the return levels: a level whose whole interval is rarer than that is withheld (said
            # as "rarer than once per day"), not printed as 1e-158 (the profile's grid ends there too)
            if level <= observed_max or estimate[2] >= 1 / (rate * RETURN_PERIODS_S[-1][1]):
                exceed.append((level, Interval(*estimate)))
    returns = []
    curve = []
    if extrapolated:
        for name, seconds in RETURN_PERIODS_S:
            wakeups = rate * seconds
            if 1 / wakeups >= k / n:
                continue
            est, lo, hi = gpd.return_level_ci(y, k, n, 1 / wakeups, confidence, fit)
            returns.append(ReturnLevel(name, wakeups, Interval(u + est, u + lo, u + hi), wakeups / n))
        longest = max([r.wakeups for r in returns] + [10.0 * n])
        for periods in np.geomspace(2 * n / k, longest, RETURN_CURVE_POINTS):
            est, lo, hi = gpd.return_level_ci(y, k, n, 1 / periods, confidence, fit)
            curve.append((float(periods), u + est, u + lo, u + hi))
    top = summary.top_ns[:min(k, QQ_POINTS)]
    empirical = tuple(zip((n / np.arange(1, top.size + 1)).tolist(), top.tolist(), strict=True))
    large = event_rates(summary.top_ns, summary.top_index, n=n, rate_hz=rate, confidence=confidence,
                        levels_ns=_rate_levels(u, float(interval_ns) if rate_hz is None else u,
                                               float(summary.top_ns[-1]), observed_max))
    if not failed:
        verdict = "assumptions hold as far as these checks can tell" + ("" if extrapolated else f", but {withheld}")
    elif extrapolated:
        verdict = "ASSUMPTIONS NOT MET (" + "; ".join(failed) + "): tail numbers are indicative only"
    else:
        verdict = "ASSUMPTIONS NOT MET: " + withheld
    return TailFit(
        thread=thread, cpu=cpu, n=n, rate_hz=rate, confidence=confidence, threshold_ns=u,
        threshold_quantile=1 - k / n, exceedances=k, candidates=candidates, mrl_xi=_mrl_xi(candidates, chosen),
        xi=fit.xi, xi_se=fit.xi_se, sigma_ns=fit.sigma, ad_statistic=a2, ad_p_value=ad_p, qq_correlation=qq,
        qq_points_ns=qq_points, observed_max_ns=observed_max, exceedance_probabilities=tuple(exceed),
        return_levels=tuple(returns), return_curve=tuple(curve), empirical_return=empirical, block_maxima=bm,
        checks=checks, assumptions_ok=not failed, verdict=verdict, extrapolated=extrapolated, withheld=withheld,
        large_events=large, unit=unit)


def _binomial_interval(count: int, n: int, confidence: float) -> tuple[float, float]:
    """Clopper-Pearson interval of a proportion ``count / n`` (exact, conservative)."""
    alpha = 1 - confidence
    lower = 0.0 if count == 0 else float(stats.beta.ppf(alpha / 2, count, n - count + 1))
    upper = 1.0 if count == n else float(stats.beta.ppf(1 - alpha / 2, count + 1, n - count))
    return lower, upper


def _rate_levels(threshold: float, interval: float, smallest_kept: float, observed_max: float) -> tuple[float, ...]:
    """Levels for :func:`~.rates.event_rates`: the threshold, one interval (a missed period) and 100 µs, 1 ms,
    10 ms, those the kept values reach down to, up to the first one above the maximum (its count, 0, is news)."""
    levels = sorted({threshold, interval, *RATE_LEVELS_NS})
    chosen = []
    for level in levels:
        if level < smallest_kept:
            continue
        chosen.append(level)
        if level >= observed_max:
            break
    return tuple(chosen)


def analyze_tails(
    dataset: Dataset, *, levels_ns: tuple[float, ...] = (), confidence: float = 0.90,
) -> TailsReport:
    """Tail fit of every thread of ``dataset``; threads too short for a fit are listed in ``skipped`` with why.

    Raises
    ------
    AnalysisError
        Histogram-only or empty dataset, or no thread long enough for a fit.
    """
    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must be in (0, 1), not {confidence}")
    fits, skipped = [], []
    for info, summary in summarize_threads(dataset, levels_ns=levels_ns):
        try:
            fits.append(fit_summary(summary, interval_ns=info.interval_ns, thread=info.thread, cpu=info.cpu,
                                    confidence=confidence))
        except AnalysisError as exc:
            skipped.append((info.thread, str(exc)))
    if not fits:
        reason = skipped[0][1] if skipped else "no threads"
        raise AnalysisError(f"{dataset.path}: no thread can be tail-fitted ({reason}); capture for longer")
    return TailsReport(str(dataset.path), tuple(fits), tuple(skipped), levels_ns=tuple(float(x) for x in levels_ns))


def summarize_threads(
    dataset: Dataset, *, levels_ns: tuple[float, ...] = (), seed: int = 0,
) -> tuple[tuple[ThreadInfo, TailSummary], ...]:
    """One streaming pass: a :class:`~jitterscope.tailacc.TailSummary` per thread with rows, by thread index.

    Memory is bounded (a few row groups plus about 10^4 values per thread), whatever the dataset's length.
    Block sizes come from the metadata's per-thread sample counts, or a pass over the ``thread`` column
    where those are missing.

    Raises
    ------
    AnalysisError
        Histogram-only dataset, or no rows.
    """
    require_wakeups(dataset, "a latency tail fit")
    if dataset.is_histogram:
        raise AnalysisError(
            f"{dataset.path}: histogram-only dataset has no wake-up series; a tail fit needs the individual "
            "wake-ups in order (cyclictest -v, jitterdebugger samples, a capture)"
        )
    lengths = _thread_lengths(dataset)
    accumulators: dict[int, TailAccumulator] = {}
    infos: dict[int, ThreadInfo] = {}
    for info, batch in iter_thread_batches(dataset, ["expected_ns", "actual_ns"], check=False):
        latency = column_values(batch, "actual_ns") - column_values(batch, "expected_ns")  # no pandas import
        if info.thread not in accumulators:
            infos[info.thread] = info
            accumulators[info.thread] = TailAccumulator(block_size_for(lengths.get(info.thread, 0)), levels_ns, seed)
        accumulators[info.thread].update(latency)
    if not accumulators:
        raise AnalysisError(f"{dataset.path}: dataset has no rows; capture for longer")
    return tuple((infos[t], accumulators[t].result()) for t in sorted(accumulators))


def _thread_lengths(dataset: Dataset) -> dict[int, int]:
    """Rows per thread: the metadata's sample counts when every thread has one, else counted."""
    threads = dataset.metadata.threads
    if threads and all(t.samples > 0 for t in threads) and sum(t.samples for t in threads) == dataset.num_rows:
        return {t.thread: t.samples for t in threads}
    counts: dict[int, int] = {}
    for batch in dataset.iter_batches(["thread"]):
        values, n = np.unique(column_values(batch, "thread"), return_counts=True)
        for thread, count in zip(values.tolist(), n.tolist(), strict=True):
            counts[thread] = counts.get(thread, 0) + count
    return counts
