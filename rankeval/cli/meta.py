"""The ``meta`` command group: meta-evaluation of measures over :mod:`rankeval.meta`.

Every command but ``repro`` evaluates its runs once with :func:`per_query_values` (the block
engine, as ``compare``) and works on the per-query rows of the long frame; ``repro`` calls
:func:`rankeval.meta.repro.reproducibility`, which evaluates the four runs itself. Each writes
one table (:class:`~rankeval.cli.meta_options.OutputOptions`: ``-f``, ``-o``, ``-p``), and takes the
evaluation options of ``compare`` (:class:`~rankeval.cli.meta_options.EvaluationOptions`); the plots
are the library's.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rankeval.cli.common import (
    block_size_of,
    engine_of,
    handled,
    require_measures,
    run_argument,
    run_arguments,
    run_sources,
    warnings_to_stderr,
)
from rankeval.cli.meta_options import (
    AlphaOption,
    EvaluationOptions,
    OutputOptions,
    PlotOption,
    SeedOption,
    SizesOption,
    alpha_of,
    meta_command,
    samples_of,
    seed_of,
    sizes_of,
)
from rankeval.cli.shared_options import RUNS_METAVAR, MeasureOption, QrelsArgument
from rankeval.errors import UsageError
from rankeval.options import check_choice

if TYPE_CHECKING:
    import pandas as pd

meta_app = typer.Typer(
    name="meta",
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Meta-evaluation: is a measure any good? (correlations of system rankings, discriminative "
    "power, swap rates, stability, topic-set size, reproducibility)",
)

RunsArgument = Annotated[
    list[str],
    typer.Argument(metavar=RUNS_METAVAR, help="The systems: run files; NAME=RUN names the run NAME."),
]


def per_query_values(
    qrels: list[str], runs: list[str], specs: list[str], how: EvaluationOptions
) -> tuple[list[pd.DataFrame], list[str]]:
    """Evaluate *runs* against each qrels of *qrels* with the measures of *specs*, as
    ``compare`` does (:meth:`rankeval.Evaluator.evaluate` on the block engine, with the
    evaluation options of *how*; a run read from stdin is read once).

    Returns:
        One frame per qrels, the per-query rows (``run, query_id, measure, value``; aggregate
        rows dropped), and the measure names in the order of *specs*.
    """
    require_measures(specs)
    run_args = run_arguments(runs)
    options = how.options()
    registry, measures = how.registry_and_measures(specs)
    chosen = engine_of(how.engine, how.scheduler, how.workers, how.memory_limit, how.debug)
    size = block_size_of(how.block_size)
    from rankeval.comparison.compare import read_once
    from rankeval.evaluator import Evaluator

    evaluators = [Evaluator(path, measures, options=options, registry=registry) for path in qrels]
    frames = []
    with warnings_to_stderr(how.quiet_ties):
        sources = read_once(run_sources(run_args))
        for evaluator in evaluators:
            frame = evaluator.evaluate(sources, jobs=how.jobs, engine=chosen, block_size=size)
            frames.append(frame[frame["query_id"].notna()])
    names = [str(name) for name in dict.fromkeys(frames[0]["measure"])]
    return frames, names


def _inputs(qrels: list[str | None], runs: list[str], how: EvaluationOptions) -> list[object]:
    """The files a command reads (no output may be one of them)."""
    return [*(q for q in qrels if q is not None), *(run_argument(r).path for r in runs), *(how.docinfo or [])]


def _check_runs(runs: list[str], command: str) -> None:
    if len(runs) < 2:
        raise UsageError(f"meta {command} needs at least 2 runs, got {len(runs)}")


@meta_command(meta_app, "corr")
def corr_cmd(
    qrels: QrelsArgument,
    runs: RunsArgument,
    out: OutputOptions,
    how: EvaluationOptions,
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="tau, tau_a, tau_b, tau_ap, tau_ap_a, tau_ap_b, spearman, pearson or rbo (the first "
            "ranking is the reference of the asymmetric ones).",
        ),
    ] = "tau_b",
    qrels2: Annotated[
        str | None,
        typer.Option(
            "--qrels2",
            metavar="QRELS",
            help="Rank the systems by the one -m measure under QRELS and under this qrels file.",
        ),
    ] = None,
    order: Annotated[
        Path | None,
        typer.Option(
            "--order",
            metavar="FILE",
            help="Correlate the one -m measure's ranking with a given ordering (the reference): "
            "FILE has one run per line, best first, as 'NAME' or 'NAME SCORE' (higher is better).",
        ),
    ] = None,
    persistence: Annotated[float, typer.Option("--rbo-p", help="RBO's persistence p.")] = 0.9,
    ci: Annotated[
        bool, typer.Option("--ci", help="Add a percentile bootstrap confidence interval over topics.")
    ] = False,
    samples: Annotated[int, typer.Option("--samples", metavar="N", help="Bootstrap samples of --ci.")] = 1000,
    alpha: Annotated[
        float, typer.Option("--alpha", metavar="A", help="--ci gives a 100(1-alpha)% interval.")
    ] = 0.05,
    seed: SeedOption = "0",
) -> None:
    """Correlation between the rankings of the runs by two measures (-m A -m B), or by one measure under two qrels files (-m A --qrels2 Q2)."""
    with handled(how.debug):
        from rankeval.meta.correlation import METHODS

        check_choice("--method", method, METHODS)
        number = seed_of(seed)
        if ci:
            samples_of(samples)
            alpha_of(alpha)
        out.check(_inputs([qrels, qrels2, *([str(order)] if order else [])], runs, how))
        _check_runs(runs, "corr")
        if order is not None and qrels2 is not None:
            raise UsageError("meta corr: give --order or --qrels2, not both")
        given = None if order is None else _given_order(order)
        both = [qrels] if qrels2 is None else [qrels, qrels2]
        frames, names = per_query_values(both, runs, measure, how)
        wanted = 1 if qrels2 is not None or order is not None else 2
        if len(names) != wanted:
            what = (
                "two measures (-m A -m B), or one with --qrels2 or --order"
                if wanted == 2
                else f"one measure with {'--order' if order else '--qrels2'}"
            )
            raise UsageError(f"meta corr needs {what}; the -m options give {len(names)}: {', '.join(names)}")
        sides = [(frames[0], names[0], qrels), (frames[-1], names[-1], both[-1])]
        if given is not None:
            sides = [(_order_frame(given, frames[0], str(order)), "order", str(order)), sides[0]]
        columns, row = _correlation_row(sides, method, persistence, samples if ci else 0, alpha, number)
        out.write(columns, [row])


def _given_order(path: Path) -> dict[str, float]:
    """The runs of an ordering file, each with its score: ``NAME SCORE`` as given, or for
    ``NAME`` lines (best first) the number of runs below it."""
    from rankeval.errors import InputError

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the ordering: {exc}", source=str(path)) from None
    entries = [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    scores: dict[str, float] = {}
    for n, fields in entries:
        if len(fields) > 2 or fields[0] in scores:
            what = "'NAME' or 'NAME SCORE'" if len(fields) > 2 else f"each run once ({fields[0]!r} again)"
            raise InputError(f"expected {what}", source=str(path), line=n)
        try:
            scores[fields[0]] = float(fields[1]) if len(fields) == 2 else float(len(entries) - len(scores))
        except ValueError:
            raise InputError(f"expected a number after the run name, found {fields[1]!r}", source=str(path), line=n) from None
    if len({len(f) for _, f in entries}) > 1:
        raise InputError("expected every line as 'NAME' or every line as 'NAME SCORE'", source=str(path))
    return scores


def _order_frame(scores: dict[str, float], frame: pd.DataFrame, path: str) -> pd.DataFrame:
    """A per-query frame in which each run of *frame* has its given score on every query (its
    mean is the score; a bootstrap over topics leaves it fixed)."""
    runs = sorted(set(frame["run"]))
    if set(runs) != set(scores):
        raise UsageError(
            f"the ordering {path} names other runs: missing {sorted(set(runs) - set(scores))}, "
            f"unknown {sorted(set(scores) - set(runs))}"
        )
    out = frame.copy()
    out["value"] = out["run"].map(scores).astype(float)
    out["measure"] = "order"
    return out


def _correlation_row(
    sides: list[tuple[pd.DataFrame, str, str]],
    method: str,
    persistence: float,
    samples: int,
    alpha: float,
    seed: int,
) -> tuple[list[str], list[Any]]:
    """The columns and the row of ``meta corr`` (*samples*: of the bootstrap interval, 0 for none)."""
    import numpy as np

    from rankeval.meta.correlation import correlation
    from rankeval.meta.values import per_query

    (x, y) = (per_query(frame, name) for frame, name, _ in sides)
    if x.runs != y.runs:
        raise UsageError("the two rankings score different runs")
    score = correlation(x.means(), y.means(), method, p=persistence)
    columns = ["method", "x_measure", "x_qrels", "y_measure", "y_qrels", "runs", "value"]
    row: list[Any] = [method, sides[0][1], sides[0][2], sides[1][1], sides[1][2], len(x.runs), score]
    if not samples:
        return columns, row
    # resample the topics both rankings have; a sample's ranking is its runs' mean scores there
    common = sorted(set(x.queries) & set(y.queries))
    rows_x = np.array([x.queries.index(q) for q in common])
    rows_y = np.array([y.queries.index(q) for q in common])
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(common), np.full(len(common), 1 / len(common)), size=samples)
    means_x = counts @ x.values[rows_x] / len(common)
    means_y = counts @ y.values[rows_y] / len(common)
    draws = np.array(
        [correlation(a, b, method, p=persistence) for a, b in zip(means_x, means_y, strict=True)]
    )
    low, high = np.nanquantile(draws, [alpha / 2, 1 - alpha / 2])
    columns += ["alpha", "ci_low", "ci_high", "samples", "topics", "seed", "undefined"]
    row += [alpha, float(low), float(high), samples, len(common), seed, int(np.isnan(draws).sum())]
    return columns, row


@meta_command(meta_app, "topics")
def topics_cmd(
    qrels: QrelsArgument,
    runs: RunsArgument,
    out: OutputOptions,
    how: EvaluationOptions,
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    min_diff: Annotated[
        float | None,
        typer.Option(
            "--min-diff", metavar="D", help="The smallest difference (t-test) or range (ANOVA) to detect."
        ),
    ] = None,
    width: Annotated[
        float | None,
        typer.Option("--width", metavar="W", help="The largest expected width of a confidence interval."),
    ] = None,
    alpha: AlphaOption = 0.05,
    beta: Annotated[
        float, typer.Option("--beta", metavar="B", help="Type II error rate (power 1 - beta).")
    ] = 0.20,
    systems: Annotated[
        int | None,
        typer.Option("--systems", metavar="M", help="Systems the ANOVA compares (default: the runs given)."),
    ] = None,
) -> None:
    """Topic-set-size design (Sakai 2016): the topics a paired t-test (ttest), a one-way ANOVA (anova) and a confidence interval (ci) need, from each measure's residual variance over these runs."""
    with handled(how.debug):
        from rankeval.meta.topics import topics_for_anova, topics_for_ci, topics_for_ttest, variance_estimate
        from rankeval.meta.values import per_query

        if min_diff is None and width is None:
            raise UsageError(
                "meta topics needs --min-diff D (t-test and ANOVA) or --width W (interval), or both"
            )
        alpha_of(alpha)
        alpha_of(beta, "--beta")
        out.check(_inputs([qrels], runs, how))
        _check_runs(runs, "topics")
        (frame,), names = per_query_values([qrels], runs, measure, how)
        columns = ["measure", "design", "topics", "variance", "alpha", "beta", "min_diff", "systems", "width"]
        rows: list[list[Any]] = []
        for name in names:
            matrix = per_query(frame, name)
            variance = variance_estimate(matrix.values)
            count = systems if systems is not None else len(matrix.runs)
            if min_diff is not None:
                n = topics_for_ttest(variance, min_diff, alpha, beta)
                rows.append([name, "ttest", n, variance, alpha, beta, min_diff, None, None])
                n = topics_for_anova(variance, min_diff, count, alpha, beta)
                rows.append([name, "anova", n, variance, alpha, beta, min_diff, count, None])
            if width is not None:
                n = topics_for_ci(variance, width, alpha)
                rows.append([name, "ci", n, variance, alpha, None, None, None, width])
        out.write(columns, rows)


@meta_command(meta_app, "power")
def power_cmd(
    qrels: QrelsArgument,
    runs: RunsArgument,
    out: OutputOptions,
    how: EvaluationOptions,
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    test: Annotated[
        str,
        typer.Option(
            "--test", help="bootstrap (Sakai's paired bootstrap test) or tukey (randomised Tukey HSD)."
        ),
    ] = "bootstrap",
    samples: Annotated[
        int, typer.Option("--samples", metavar="N", help="Bootstrap resamples, or Tukey HSD trials.")
    ] = 1000,
    alpha: AlphaOption = 0.05,
    seed: SeedOption = "0",
    pairs: Annotated[
        bool, typer.Option("-q", "--pairs", help="Also print the ASL of each pair of runs.")
    ] = False,
    plot: PlotOption = None,
) -> None:
    """Discriminative power (Sakai 2006): the achieved significance level (ASL) of every pair of runs, the share of pairs significant at alpha and the difference needed for significance, per measure; --plot draws the ASL curves of all measures."""
    with handled(how.debug):
        from rankeval.meta.power import POWER_TESTS, discriminative_power, plot_asl_curves

        check_choice("--test", test, POWER_TESTS)
        samples_of(samples)
        alpha_of(alpha)
        number = seed_of(seed)
        out.check(_inputs([qrels], runs, how), plot)
        _check_runs(runs, "power")
        (frame,), names = per_query_values([qrels], runs, measure, how)
        powers = {
            name: discriminative_power(frame, name, test=test, samples=samples, alpha=alpha, seed=number)
            for name in names
        }
        columns = ["measure", "test", "samples", "alpha", "run_a", "run_b", "asl"]
        columns += ["pairs", "significant", "share", "delta"]
        rows: list[list[Any]] = []
        for name, power in powers.items():
            head = [name, test, samples, alpha]
            if pairs:
                rows += [
                    [*head, a, b, asl, None, None, None, None]
                    for (a, b), asl in zip(power.pairs, power.asl, strict=True)
                ]
            significant = int((power.asl < alpha).sum())
            rows.append([*head, None, None, None, len(power.pairs), significant, power.share, power.delta])
        if plot is not None:
            plot_asl_curves(powers, plot)
        out.write(columns, rows)


@meta_command(meta_app, "swap")
def swap_cmd(
    qrels: QrelsArgument,
    runs: RunsArgument,
    out: OutputOptions,
    how: EvaluationOptions,
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    sizes: SizesOption = None,
    bins: Annotated[
        float, typer.Option("--bins", metavar="W", help="Width of a Δ bin, in the measure's units.")
    ] = 0.01,
    samples: Annotated[
        int, typer.Option("--samples", metavar="N", help="Pairs of topic sets drawn per size.")
    ] = 1000,
    replacement: Annotated[
        bool,
        typer.Option(
            "--replacement",
            help="Draw the two topic sets independently with replacement (Sanderson & Zobel 2005; sizes up "
            "to all topics), not disjoint without (Voorhees & Buckley 2002; up to half).",
        ),
    ] = False,
    seed: SeedOption = "0",
    plot: PlotOption = None,
) -> None:
    """Swap rates (Voorhees & Buckley 2002): how often two topic sets of each size order a pair of runs differently, by the difference Δ of their means on the first set; --plot draws one measure's rates."""
    with handled(how.debug):
        from rankeval.meta.stability import plot_swap_rates, swap_rates

        chosen = sizes_of(sizes)
        samples_of(samples)
        if not 0 < bins < float("inf"):
            raise UsageError(f"--bins must be a positive bin width, got {bins:g}")
        number = seed_of(seed)
        out.check(_inputs([qrels], runs, how), plot)
        _check_runs(runs, "swap")
        (frame,), names = per_query_values([qrels], runs, measure, how)
        if plot is not None and len(names) > 1:
            raise UsageError(
                f"meta swap --plot draws the swap rates of one measure; the -m options give {len(names)}"
            )
        rates = {
            name: swap_rates(
                frame, name, sizes=chosen, bins=bins, samples=samples, replacement=replacement, seed=number
            )
            for name in names
        }
        if plot is not None:
            plot_swap_rates(rates[names[0]], plot)
        columns = ["size", "bin", "pairs", "swaps", "rate"]
        rows = [[name, *row] for name, f in rates.items() for row in f[columns].itertuples(index=False)]
        out.write(["measure", *columns], rows)


@meta_command(meta_app, "stability")
def stability_cmd(
    qrels: QrelsArgument,
    runs: RunsArgument,
    out: OutputOptions,
    how: EvaluationOptions,
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    sizes: SizesOption = None,
    samples: Annotated[
        int, typer.Option("--samples", metavar="N", help="Topic subsets drawn per size.")
    ] = 1000,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="Correlation with the ranking on all topics (the reference): tau, tau_a, tau_b, tau_ap, "
            "tau_ap_a, tau_ap_b, spearman, pearson or rbo.",
        ),
    ] = "tau_b",
    seed: SeedOption = "0",
    plot: PlotOption = None,
) -> None:
    """Stability under topic sampling: the correlation between the ranking of the runs on all topics and on random subsets of each size (mean, sd, 5% and 95% quantiles); --plot draws one line per measure."""
    with handled(how.debug):
        from rankeval.meta.correlation import METHODS
        from rankeval.meta.stability import plot_stability, topic_subset_stability

        check_choice("--method", method, METHODS)
        chosen = sizes_of(sizes)
        samples_of(samples)
        number = seed_of(seed)
        out.check(_inputs([qrels], runs, how), plot)
        _check_runs(runs, "stability")
        (frame,), names = per_query_values([qrels], runs, measure, how)
        results = {
            name: topic_subset_stability(
                frame, name, sizes=chosen, samples=samples, method=method, seed=number
            )
            for name in names
        }
        if plot is not None:
            plot_stability(results, plot)
        columns = ["size", "samples", "mean", "std", "q05", "q95"]
        rows = [
            [name, method, *row] for name, f in results.items() for row in f[columns].itertuples(index=False)
        ]
        out.write(["measure", "method", *columns], rows)


@meta_command(meta_app, "repro", engine=False)
def repro_cmd(
    qrels: QrelsArgument,
    orig_base: Annotated[str, typer.Argument(metavar="ORIG_BASE", help="The original baseline run.")],
    orig_adv: Annotated[str, typer.Argument(metavar="ORIG_ADV", help="The original advanced run.")],
    rep_base: Annotated[str, typer.Argument(metavar="REP_BASE", help="The reproduced baseline run.")],
    rep_adv: Annotated[str, typer.Argument(metavar="REP_ADV", help="The reproduced advanced run.")],
    out: OutputOptions,
    how: EvaluationOptions,
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    qrels2: Annotated[
        str | None,
        typer.Option(
            "--qrels2",
            metavar="QRELS",
            help="Replicability: the reproduced runs are judged by this qrels file (another collection).",
        ),
    ] = None,
    per_topic: Annotated[
        bool, typer.Option("-q", "--per-topic", help="Also print KTU and RBO of each topic.")
    ] = False,
) -> None:
    """Reproducibility (or, with --qrels2, replicability) of an experiment, as repro_eval 0.5 measures it (Breuer et al. 2020): KTU and RBO of the rankings, RMSE, nRMSE and t-test p-values of each run, effect ratio (ER) and delta relative improvement (DeltaRI) per measure (default: repro_eval's measures). Runs are cut to their top 1000 documents unless -M is given, as repro_eval does."""
    with handled(how.debug):
        from rankeval.measures.plugins import using_registry
        from rankeval.meta.repro import REPRO_EVAL_MEASURES, RUN_LENGTH, reproducibility

        runs = [orig_base, orig_adv, rep_base, rep_adv]
        out.check([*_inputs([qrels, qrels2], [], how), *runs])
        options = how.options()
        if how.max_docs is None:
            options = replace(options, max_docs=RUN_LENGTH)
        registry, measures = how.registry_and_measures(measure or list(REPRO_EVAL_MEASURES))
        with warnings_to_stderr(how.quiet_ties), using_registry(registry):
            result = reproducibility(
                qrels,
                original={"baseline": orig_base, "advanced": orig_adv},
                reproduced={"baseline": rep_base, "advanced": rep_adv},
                measures=measures,
                reproduced_qrels=qrels2,
                options=options,
            )
        frame = result.to_frame()
        if not per_topic:
            frame = frame[frame["topic"].isna()]
        # per measure, in the order given (KTU and RBO, which no measure has, first)
        order = {name: k for k, name in enumerate(result.measures)}
        frame = frame.assign(order=[order.get(m, -1) for m in frame["measure"]]).sort_values(
            "order", kind="stable"
        )
        columns = ["what", "run", "measure", "topic", "value"]
        out.write(columns, frame[columns].itertuples(index=False))
